"""``list-input``: a Python list (or tuple) passed to a ``jax.numpy`` function, which takes arrays
only, so that a list is never silently turned into many traced scalars. The fix converts it once:
``jnp.sum(jnp.array([1, 2, 3]))``.

>>> import jax.numpy as jnp
>>> def total():
...     return jnp.sum([1, 2, 3])
>>> try:
...     total()
... except TypeError as exc:
...     case = Case(exc, None, lambda filename: None)
>>> found = describe(case, list_input(case))
>>> found.fix.splitlines()[-1].strip()
'return jnp.sum(jnp.array([1, 2, 3]))'
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.case import Case, function_source
from jaxmagic.doctor.clues import Span
from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.registry import describes, pitfall
from jaxmagic.words import code, place, say

_DETAIL = re.compile(
    r"(?P<function>\w+) requires ndarray or scalar arguments, got <class '(?P<type>\w+)'> at position (?P<position>\d+)"
)


@dataclass(frozen=True)
class ListInput:
    """What ``match`` found: the call, the list argument, its Python type."""

    call: ast.Call
    argument: ast.expr
    type_name: str


@pitfall(
    "list-input",
    "A Python list passed to a jax.numpy function",
    "error",
    order=6,
    messages=("requires ndarray or scalar arguments, got <class 'list'> at position",),
)
def list_input(case: Case) -> ListInput | None:
    """``list-input``: the list argument at the position JAX names (the match)."""
    detail = _DETAIL.search(case.message) if isinstance(case.exc, TypeError) else None
    if detail is None or detail.group("type") not in ("list", "tuple"):
        return None
    frame = case.innermost
    call = case.expression(frame, ast.Call) if frame is not None else None
    position = int(detail.group("position"))
    if not isinstance(call, ast.Call) or position >= len(call.args):
        return None
    return ListInput(call, call.args[position], detail.group("type"))


@describes("list-input")
def describe(case: Case, found: ListInput) -> Diagnosis:
    """The list wrapped in ``jnp.array``, in words and as the user's code changed."""
    frame = case.innermost
    parsed = case.parsed(frame)
    jn = case.names(frame)
    written = clues.source_of(parsed, found.argument)
    converted = f"{jn.jnp}.array({written})"
    where = case.where(frame)
    return case.diagnosis(
        "list-input",
        explanation=say(
            "{} ({}) gets a Python {} ({}). {} functions take arrays only: JAX does not turn a list into an array "
            "for you, because under a transformation every element would become a traced value of its own.",
            code(clues.source_of(parsed, found.call)),
            place(where),
            found.type_name,
            code(written),
            code(jn.jnp),
        ),
        fix=function_source(case, frame, [rewrites.Edit(Span.of(found.argument), converted)]) or converted,
        fix_note=say("Make it one array first, with {}.", code(f"{jn.jnp}.array")),
        where=where,
    )
