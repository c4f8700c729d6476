"""The doctor: JAX's classic JIT traps recognised in an exception, or noticed while tracing, and
explained in plain words with the fix written as the user's own code changed.

``diagnose(exception)`` answers a ``Diagnosis`` or ``None`` (not a trap it knows: the traceback
stands). ``observe_trace(fn, closed_jaxpr, printed_text)`` answers warnings for code that traced
fine but will not do what it seems to; ``observe_cell()`` warnings after a cell (a global that
a compiled function read, since bound to a new value). None of them ever raises. ``PITFALLS`` lists every trap it
knows, each declared once by its recogniser (see ``registry``).

>>> import jax, jax.numpy as jnp
>>> @jax.jit
... def relu_or_tanh(x, use_relu):
...     if use_relu:
...         return jnp.maximum(0, x)
...     return jnp.tanh(x)
>>> try:
...     relu_or_tanh(jnp.ones(3), True)
... except Exception as exc:
...     found = diagnose(exc)
>>> found.pitfall, found.variable, found.static_argnames
('python-control-flow', 'use_relu', ('use_relu',))
"""

from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.engine import diagnose, observe_cell, observe_trace, use_cell_namer
from jaxmagic.doctor.prints import PrintedText, watch_prints
from jaxmagic.doctor.registry import DOCS, PITFALLS, Pitfall, internal_errors

__all__ = [
    "DOCS",
    "PITFALLS",
    "Diagnosis",
    "Pitfall",
    "PrintedText",
    "diagnose",
    "internal_errors",
    "observe_cell",
    "observe_trace",
    "use_cell_namer",
    "watch_prints",
]
