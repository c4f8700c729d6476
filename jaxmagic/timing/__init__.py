"""Call -> eager / jit / sharded / pmap runs, honestly timed -> ``Comparison``.

Each mode's first call is timed apart (with the tracing, lowering and compiling JAX did inside
it); then calls are timed in repeats, the modes taking turns, every call waiting for its whole
output, within a time budget.

>>> import jax.numpy as jnp
>>> from jaxmagic.tracing.call import Call
>>> def f(x):
...     return jnp.sum(jnp.sin(x) ** 2)
>>> result = compare(Call(f, (jnp.ones(1000),), {}), repeat=3, loops=5)
>>> sorted(result.modes), result.modes["jit"].loops, result.modes["jit"].repeat
(['eager', 'jit'], 5, 3)
>>> result.compile.compile_s > 0, result.speedup > 0
(True, True)
"""

from jaxmagic.timing.comparison import Comparison, CompileCost, Timing
from jaxmagic.timing.session import DEFAULT_BUDGET_S, DEFAULT_REPEAT, check_settings, compare

__all__ = ["Comparison", "CompileCost", "Timing", "DEFAULT_BUDGET_S", "DEFAULT_REPEAT", "check_settings", "compare"]
