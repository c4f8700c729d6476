"""``shape-struct-argument``: a ``jax.ShapeDtypeStruct`` given to an ordinary call. It is a shape
and a dtype with no values: enough for JAX to trace (``jax.eval_shape``, ``f.trace(...)``,
``f.lower(...)``), not to run. The fix asks the question it can answer: ``jax.eval_shape(f, ...)``
gives the output's shapes and dtypes, running nothing.

>>> import jax, jax.numpy as jnp
>>> double = jax.jit(lambda x: x * 2)
>>> try:
...     out = double(jax.ShapeDtypeStruct((3,), jnp.float32))
... except TypeError as exc:
...     case = Case(exc, None, lambda filename: None)
>>> print(describe(case, shape_struct_argument(case)).fix)
out = jax.eval_shape(double, jax.ShapeDtypeStruct((3,), jnp.float32))
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.case import Case
from jaxmagic.doctor.clues import Span
from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.registry import describes, pitfall
from jaxmagic.words import code, place, say


@dataclass(frozen=True)
class ShapeStructCall:
    """The call given a ``ShapeDtypeStruct``, in the statement that makes it."""

    call: ast.Call
    statement: ast.stmt


@pitfall(
    "shape-struct-argument",
    "A jax.ShapeDtypeStruct passed where values are needed",
    "error",
    order=9,
    messages=("of type <class 'jax.ShapeDtypeStruct'> is not a valid JAX type",),
)
def shape_struct_argument(case: Case) -> ShapeStructCall | None:
    """The user's call, in the failing statement, that was given the ``ShapeDtypeStruct``."""
    if not (isinstance(case.exc, TypeError) and case.says("shape-struct-argument")):
        return None
    frame = case.innermost
    call = case.expression(frame, ast.Call) if frame is not None else None
    statement = case.statement(frame) if frame is not None else None
    if not isinstance(call, ast.Call) or statement is None or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    return ShapeStructCall(call, statement)


@describes("shape-struct-argument")
def describe(case: Case, found: ShapeStructCall) -> Diagnosis:
    """The call asked of ``jax.eval_shape`` instead: the output's shapes, nothing run."""
    frame = case.innermost
    parsed = case.parsed(frame)
    call = found.call
    callee = case.text(frame, call.func)
    arguments = [case.text(frame, a) for a in call.args]
    arguments += [
        f"{k.arg}={case.text(frame, k.value)}" if k.arg else f"**{case.text(frame, k.value)}" for k in call.keywords
    ]
    jax_name = case.names(frame).jax
    new = f"{jax_name}.eval_shape({', '.join([callee, *arguments])})"
    statement = found.statement
    fixed = rewrites.with_edits(
        parsed.lines, statement.lineno, statement.end_lineno, [rewrites.Edit(Span.of(call), new)]
    )
    where = case.where(frame)
    return case.diagnosis(
        "shape-struct-argument",
        explanation=say(
            "{} ({}) is given a {}: a shape and a dtype with no values. A call runs the function, which needs "
            "arrays; a {} is for asking JAX what the function would do without running it.",
            code(case.text(frame, call)),
            place(where),
            code("jax.ShapeDtypeStruct"),
            code("ShapeDtypeStruct"),
        ),
        fix=fixed,
        fix_note=say(
            "To know the output's shapes and dtypes, ask {} (nothing runs); to see the program, {}; to run it, "
            "pass arrays of that shape ({}).",
            code(f"{jax_name}.eval_shape"),
            code(f"%jaxpr {callee}(...)"),
            code("jnp.zeros(shape, dtype)"),
        ),
        where=where,
        function=callee,
    )
