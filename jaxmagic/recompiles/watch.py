"""Watching JAX compile: the listeners that turn each compilation into a ``RecompileEvent``.

While at least one ``RecompileLog`` watches, jaxmagic listens to ``jax.monitoring``'s trace, lower
and backend-compile duration events (and the persistent cache's hit and miss events). They fire
only when something compiles, so a call that hits JAX's caches runs no jaxmagic code at all.
At each compilation it reads the jitted call from the stack, describes its abstract signature,
compares it with the nearest earlier compilation of the same function, and hands the event to
every watching log. It also turns on ``jax_explain_cache_misses`` and keeps JAX's explanation text
(``raw``) without letting it reach the user's output, unless the user had turned it on.
When the last log stops watching, every listener, filter and setting is restored.

>>> import jax, jax.numpy as jnp
>>> with watch_recompiles() as log:
...     _ = jax.jit(lambda x: x + 1)(jnp.ones(2))
>>> log.total, is_installed()
(1, False)
"""

from __future__ import annotations

import contextlib
from typing import Iterator

from jaxmagic.recompiles.compilations import FUNCTIONS_REMEMBERED
from jaxmagic.recompiles.hub import _HUB, attach, detach, is_installed
from jaxmagic.recompiles.log import DEFAULT_CAPACITY, RecompileLog
from jaxmagic.tracing.sources import CellNamer, no_cells

__all__ = [
    "watch_recompiles",
    "attach",
    "detach",
    "is_installed",
    "watching_logs",
    "forget",
    "internal_errors",
    "FUNCTIONS_REMEMBERED",
]


@contextlib.contextmanager
def watch_recompiles(
    *functions: str,
    include_internal: bool = False,
    max_compiles: int | None = None,
    capacity: int = DEFAULT_CAPACITY,
    cell_namer: CellNamer = no_cells,
    explain: bool = False,
) -> Iterator[RecompileLog]:
    """Record every compilation inside the ``with`` block in a ``RecompileLog``.

    ``functions`` limits it to those names; ``include_internal`` also records JAX's own
    compilations; with ``max_compiles`` a function compiling more often raises
    ``RecompileLimitExceeded`` at the call that went over (and at the end of the block); with
    ``explain`` each event also keeps JAX's own explanation text in ``raw``.

    >>> import jax, jax.numpy as jnp
    >>> double = jax.jit(lambda x: x * 2)
    >>> with watch_recompiles() as log:
    ...     _ = double(jnp.ones(2)); _ = double(jnp.ones(2))
    >>> log.total
    1
    """
    log = RecompileLog(
        functions,
        include_internal=include_internal,
        max_compiles=max_compiles,
        capacity=capacity,
        cell_namer=cell_namer,
        scope="the block",
        explain=explain,
    )
    attach(log)
    try:
        yield log
    finally:
        detach(log)
    over = log.over_limit()
    if over:
        raise log.limit_error(over[0])


def watching_logs() -> list[RecompileLog]:
    """The logs watching now."""
    with _HUB.lock:
        return list(_HUB.logs)


def forget() -> None:
    """Forget every signature remembered for comparison (the next compilations are first calls)."""
    with _HUB.lock:
        _HUB.memory.clear()


def internal_errors() -> list[str]:
    """Failures inside jaxmagic's listeners (never raised into the user's code), newest last."""
    return list(_HUB.errors)
