"""``grad-of-integer``: ``jax.grad`` (or ``value_and_grad``, ``jacfwd``...) asked to differentiate
with respect to an integer, such as ``grad(jnp.tanh)(2)``. A derivative needs an input that can
move by a small amount; ``2`` is an int, so JAX refuses. The fix passes the same number as a float.

>>> import jax, jax.numpy as jnp
>>> from jaxmagic.doctor.case import Case
>>> grad_tanh = jax.grad(jnp.tanh)
>>> try:
...     slope = grad_tanh(2)
... except TypeError as exc:
...     print(GRAD_OF_INTEGER.diagnose(Case(exc, None, lambda filename: None)).fix)
slope = grad_tanh(2.0)
"""

from __future__ import annotations

import ast

import numpy as np

from jaxmagic.doctor.declared import Declared, Line, Replace


def _as_float(line: Line, node: ast.expr) -> str | None:
    """``node``, an integer argument, written as a float: ``2`` -> ``2.0``, ``n`` -> ``float(n)``,
    an integer array ``x`` -> ``x.astype(jnp.float32)``; ``None`` where it is not an integer."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return f"{node.value}.0"
    if not isinstance(node, ast.Name):
        return None
    value = line.frame.lookup(node.id)
    if type(value) is int:
        return f"float({node.id})"
    dtype = getattr(value, "dtype", None)
    if dtype is not None and np.issubdtype(dtype, np.integer):
        return f"{node.id}.astype({line.jax_names.jnp}.float32)"
    return None


def grad_of_integer(line: Line) -> dict | None:
    """The integer argument of the failing call: the only one, or the first where the first is."""
    call = line.expression(ast.Call)
    if call is None or line.statement() is None:
        return None
    floats = [(node, _as_float(line, node)) for node in call.args]
    integers = [(node, text) for node, text in floats if text is not None]
    if floats and floats[0][1] is not None and len(integers) > 1:
        integers = integers[:1]  # grad differentiates the first argument unless told otherwise
    if len(integers) != 1:
        return None
    node, text = integers[0]
    return {"argument": node, "floated": text, "callee": call.func}


GRAD_OF_INTEGER = Declared(
    "grad-of-integer",
    "A gradient with respect to an integer",
    grad_of_integer,
    raised=TypeError,
    messages=("grad requires real- or complex-valued inputs",),
    order=13,
    explanation="{argument} is an integer, and {callee} ({where}) differentiates with respect to it. A derivative "
    "asks how the output moves when the input moves by a tiny amount, which an integer cannot do, so JAX only "
    "differentiates with respect to floats (or complex numbers).",
    rewrite=(Replace("argument", "{floated}"),),
    shown="statement",
    fix_note="Pass the same number as a float: the gradient is then taken at that point. (JAX's `allow_int=True` "
    "accepts the integer but gives a gradient of type `float0`, with no values: rarely what you want.)",
    function="callee",
)
