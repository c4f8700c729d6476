"""``shape-struct-argument``: a ``jax.ShapeDtypeStruct`` given to an ordinary call. It is a shape
and a dtype with no values: enough for JAX to trace (``jax.eval_shape``, ``f.trace(...)``,
``f.lower(...)``), not to run. The fix asks the question it can answer: ``jax.eval_shape(f, ...)``
gives the output's shapes and dtypes, running nothing.

>>> import jax, jax.numpy as jnp
>>> from jaxmagic.doctor.case import Case
>>> double = jax.jit(lambda x: x * 2)
>>> try:
...     out = double(jax.ShapeDtypeStruct((3,), jnp.float32))
... except TypeError as exc:
...     print(SHAPE_STRUCT.diagnose(Case(exc, None, lambda filename: None)).fix)
out = jax.eval_shape(double, jax.ShapeDtypeStruct((3,), jnp.float32))
"""

from __future__ import annotations

import ast

from jaxmagic.doctor.declared import Declared, Line, Replace


def shape_struct_argument(line: Line) -> dict | None:
    """The user's call, in the failing statement, that was given the ``ShapeDtypeStruct``."""
    call = line.expression(ast.Call)
    if not isinstance(call, ast.Call) or line.statement() is None or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    keywords = [f"{k.arg}={line.text(k.value)}" if k.arg else f"**{line.text(k.value)}" for k in call.keywords]
    arguments = ", ".join([line.text(a) for a in [call.func, *call.args]] + keywords)
    return {"call": call, "callee": call.func, "arguments": arguments}


SHAPE_STRUCT = Declared(
    "shape-struct-argument",
    "A jax.ShapeDtypeStruct passed where values are needed",
    shape_struct_argument,
    raised=TypeError,
    messages=("of type <class 'jax.ShapeDtypeStruct'> is not a valid JAX type",),
    order=9,
    explanation="{call} ({where}) is given a `jax.ShapeDtypeStruct`: a shape and a dtype with no values. A call "
    "runs the function, which needs arrays; a `ShapeDtypeStruct` is for asking JAX what the function would do "
    "without running it.",
    rewrite=(Replace("call", "{jax}.eval_shape({arguments})"),),
    shown="statement",
    fix_note="To know the output's shapes and dtypes, ask `{jax}.eval_shape` (nothing runs); to see the program, "
    "`%jaxpr {callee}(...)`; to run it, pass arrays of that shape (`jnp.zeros(shape, dtype)`).",
    function="callee",
)
