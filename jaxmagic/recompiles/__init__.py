"""Every compilation of a watched scope, with its causes: ``RecompileEvent`` and ``RecompileLog``.

A ``RecompileLog`` collects the ``RecompileEvent`` of each compilation while it watches (see
``jaxmagic.recompiles.watch``): which function compiled, where it was called, how long tracing, lowering and
XLA took, and why it compiled again (``Cause`` objects naming the parameter that changed). The log
is a bounded ring buffer; its ``counts`` keep counting past it. When one function keeps compiling
for the same cause, ``headlines`` says so with the fix.

>>> import jax, jax.numpy as jnp
>>> from jaxmagic import watch_recompiles
>>> @jax.jit
... def scale(x):
...     return x * 2
>>> with watch_recompiles() as log:
...     for n in (3, 4, 5):
...         _ = scale(jnp.ones(n))
>>> log.counts
{'scale': 3}
>>> [cause.kind for event in log.events for cause in event.causes]
['first_call', 'shape', 'shape']
>>> log.events[1].causes[0].message
'shape of `x` changed: f32[3] → f32[4] (axis 0: 3 → 4)'
"""

from jaxmagic.recompiles.causes import CAUSE_KINDS, Cause
from jaxmagic.recompiles.events import RecompileEvent, RecompileLimitExceeded
from jaxmagic.recompiles.log import DEFAULT_CAPACITY, RecompileLog, matches

__all__ = [
    "Cause",
    "CAUSE_KINDS",
    "RecompileEvent",
    "RecompileLog",
    "RecompileLimitExceeded",
    "DEFAULT_CAPACITY",
    "matches",
]
