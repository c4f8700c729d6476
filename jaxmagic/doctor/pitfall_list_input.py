"""``list-input``: a Python list (or tuple) passed to a ``jax.numpy`` function, which takes arrays
only, so that a list is never silently turned into many traced scalars. The fix converts it once:
``jnp.sum(jnp.array([1, 2, 3]))``.

>>> import jax.numpy as jnp
>>> from jaxmagic.doctor.case import Case
>>> def total():
...     return jnp.sum([1, 2, 3])
>>> try:
...     total()
... except TypeError as exc:
...     found = LIST_INPUT.diagnose(Case(exc, None, lambda filename: None))
>>> found.fix.splitlines()[-1].strip()
'return jnp.sum(jnp.array([1, 2, 3]))'
"""

from __future__ import annotations

import ast
import re

from jaxmagic.doctor.declared import Declared, Line, Replace

_DETAIL = re.compile(
    r"(?P<function>\w+) requires ndarray or scalar arguments, got <class '(?P<type>\w+)'> at position (?P<position>\d+)"
)


def list_input(line: Line) -> dict | None:
    """The call and its list argument at the position JAX names, and the argument's Python type."""
    detail = _DETAIL.search(line.message)
    if detail is None or detail.group("type") not in ("list", "tuple"):
        return None
    call = line.expression(ast.Call)
    position = int(detail.group("position"))
    if not isinstance(call, ast.Call) or position >= len(call.args):
        return None
    return {"call": call, "argument": call.args[position], "type": detail.group("type")}


LIST_INPUT = Declared(
    "list-input",
    "A Python list passed to a jax.numpy function",
    list_input,
    raised=TypeError,
    messages=("requires ndarray or scalar arguments, got <class 'list'> at position",),
    says=False,  # a tuple is read by the same pattern
    order=6,
    explanation="{call} ({where}) gets a Python {type!s} ({argument}). {jnp} functions take arrays only: JAX "
    "does not turn a list into an array for you, because under a transformation every element would become a "
    "traced value of its own.",
    rewrite=(Replace("argument", "{jnp}.array({argument})"),),
    fix_note="Make it one array first, with `{jnp}.array`.",
)
