"""``at-assignment``: ``x.at[i] = v`` (or ``x.at[i] += v``), which reads as an update but assigns
to the ``.at`` helper, which takes no assignment. ``.at[i]`` is followed by a method that returns
the updated copy: ``x = x.at[i].set(v)`` (``.add``, ``.multiply``, ... for ``+=``, ``*=``).

>>> import jax.numpy as jnp
>>> from jaxmagic.doctor.case import Case
>>> def reset(x):
...     x.at[0] = 0.0
...     return x
>>> try:
...     reset(jnp.ones(3))
... except TypeError as exc:
...     found = AT_ASSIGNMENT.diagnose(Case(exc, None, lambda filename: None))
>>> found.fix.splitlines()[1].strip(), found.variable
('x = x.at[0].set(0.0)', 'x')
"""

from __future__ import annotations

import ast

from jaxmagic.doctor.declared import Declared, Line, Replace
from jaxmagic.doctor.pitfall_in_place_update import item_assigned


def at_assignment(line: Line) -> dict | None:
    """The assignment to ``array.at[index]``: the array, the index, the value and the method that does it."""
    found = item_assigned(line.statement())
    helper = found[1].value if found is not None else None
    if found is None or not (isinstance(helper, ast.Attribute) and helper.attr == "at"):
        return None
    statement, target, method = found
    return {"statement": statement, "array": helper.value, "index": target.slice, "value": statement.value,
            "method": method}  # fmt: skip


AT_ASSIGNMENT = Declared(
    "at-assignment",
    "An assignment to x.at[i] instead of a call of its method",
    at_assignment,
    raised=TypeError,
    messages=("'_IndexUpdateHelper' object does not support item assignment", "'_IndexUpdateRef' and '"),
    order=4,
    explanation="{statement} ({where}) assigns to `{array}.at[{index}]`, which takes no assignment: `.at[...]` only "
    "says where to update, and a method of it (`.set`, `.add`, ...) makes the updated copy.",
    rewrite=(Replace("statement", "{array} = {array}.at[{index}].{method}({value})"),),
    fix_note="Call `.{method}(...)` and rebind {array} to the copy it returns; under `jit` XLA updates in place.",
    variable="array",
)
