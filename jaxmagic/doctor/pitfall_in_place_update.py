"""``in-place-update``: ``x[0] = 1`` (or ``x[i] += v``) on a JAX array. JAX arrays are immutable,
with or without ``jit``; the functional form ``x = x.at[0].set(1)`` makes an updated copy (which
XLA turns back into an in-place update where it can).

>>> import jax.numpy as jnp
>>> def reset(x):
...     x[0] = 0.0
...     return x
>>> try:
...     reset(jnp.ones(3))
... except TypeError as exc:
...     case = Case(exc, None, lambda filename: None)
>>> found = describe(case, in_place_update(case))
>>> found.fix.splitlines()[1].strip()
'x = x.at[0].set(0.0)'
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.case import Case, function_source
from jaxmagic.doctor.clues import Span
from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.registry import describes, pitfall
from jaxmagic.words import code, place, say

_METHODS = {ast.Add: "add", ast.Sub: "subtract", ast.Mult: "multiply", ast.Div: "divide", ast.Pow: "power"}


@dataclass(frozen=True)
class InPlaceUpdate:
    """What ``match`` found: the assignment, the array, the index, the value and the ``.at`` method."""

    statement: ast.stmt
    array: ast.expr
    index: ast.expr
    value: ast.expr
    method: str  # "set", "add", ...


@pitfall(
    "in-place-update",
    "An in-place update of a JAX array (x[i] = v)",
    "error",
    order=5,
    messages=("JAX arrays are immutable and do not support in-place item assignment",),
)
def in_place_update(case: Case) -> InPlaceUpdate | None:
    """``in-place-update``: an item assignment to a JAX array (the match; ``describe`` says it)."""
    if not (isinstance(case.exc, TypeError) and case.says("in-place-update")):
        return None
    frame = case.innermost
    statement = case.statement(frame) if frame is not None else None
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target, value, method = statement.targets[0], statement.value, "set"
    elif isinstance(statement, ast.AugAssign) and type(statement.op) in _METHODS:
        target, value, method = statement.target, statement.value, _METHODS[type(statement.op)]
    else:
        return None
    if not isinstance(target, ast.Subscript):
        return None
    return InPlaceUpdate(statement, target.value, target.slice, value, method)


@describes("in-place-update")
def describe(case: Case, found: InPlaceUpdate) -> Diagnosis:
    """The update rewritten with ``.at[...]``, in words and as the user's code changed."""
    frame = case.innermost
    parsed = case.parsed(frame)
    array = clues.source_of(parsed, found.array)
    index = clues.source_of(parsed, found.index)
    if isinstance(found.index, ast.Tuple) and not found.index.elts:
        index = "()"
    new = f"{array} = {array}.at[{index}].{found.method}({clues.source_of(parsed, found.value)})"
    where = case.where(frame)
    return case.diagnosis(
        "in-place-update",
        explanation=say(
            "{} ({}) changes {} in place, but JAX arrays are immutable (with or without {}): an array never "
            "changes once made.",
            code(clues.source_of(parsed, found.statement)),
            place(where),
            code(array),
            code("jit"),
        ),
        fix=function_source(case, frame, [rewrites.Edit(Span.of(found.statement), new)]) or new,
        fix_note=say(
            "{} returns an updated copy; rebind the name to it. Under {} XLA reuses the memory, so it "
            "costs no copy there.",
            code(f"{array}.at[{index}].{found.method}(...)"),
            code("jit"),
        ),
        where=where,
        variable=array,
    )
