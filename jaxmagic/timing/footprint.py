"""Memory per mode: what XLA's memory analysis says a compiled program needs (read by
``jaxmagic.compiled.memory``), and what running the same jaxpr op by op writes out as separate arrays (the intermediates that fusion can keep away).

>>> import jax, jax.numpy as jnp
>>> closed = jax.make_jaxpr(lambda x: jnp.sum(jnp.sin(x) * 2))(jnp.ones(1000))
>>> intermediate_bytes(closed)  # sin and mul: 4000 bytes each; the sum is the output
8000
"""

from __future__ import annotations

import numpy as np

from jaxmagic.tracing.listing import all_equations, sub_jaxprs

# Primitives whose body runs equation by equation under ``jax.disable_jit()``; other equations
# with a body (loops, conditionals) are counted by their outputs only.
_CALL_PRIMITIVES = {
    "pjit",
    "jit",
    "closed_call",
    "core_call",
    "remat",
    "checkpoint",
    "custom_jvp_call",
    "custom_vjp_call",
    "custom_vjp_call_jaxpr",
}


def intermediate_bytes(closed_jaxpr) -> int:
    """Bytes of every array the jaxpr's equations produce besides its outputs, as op-by-op (eager)
    execution writes each one out; bodies of inner ``jit`` calls are counted equation by equation,
    loop and conditional bodies by their outputs only (so this is a lower bound)."""
    top = getattr(closed_jaxpr, "jaxpr", closed_jaxpr)
    outputs = {id(var) for var in top.outvars}
    total = 0
    for eqn in all_equations(top, into=_runs_its_body):
        if _runs_its_body(eqn) and sub_jaxprs(eqn.params):
            continue  # its body's equations are counted instead
        total += sum(_aval_bytes(var.aval) for var in eqn.outvars if id(var) not in outputs)
    return total


def _runs_its_body(eqn) -> bool:
    return eqn.primitive.name in _CALL_PRIMITIVES


def _aval_bytes(aval) -> int:
    shape = getattr(aval, "shape", None)
    dtype = getattr(aval, "dtype", None)
    if shape is None or dtype is None:
        return 0
    try:
        return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    except TypeError:  # extended dtypes (PRNG keys) have no NumPy item size
        return 0
