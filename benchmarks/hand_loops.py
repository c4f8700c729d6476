"""The truth of a timing benchmark: a hand ``timeit`` loop over the user's own call, written as a
user writes it in ``%timeit`` (``f(x).block_until_ready()``), with no frame of the benchmark's
around the call: two lambdas around a call of 5 µs added 4–6% to it.

>>> import jax.numpy as jnp
>>> median, best = hand_seconds(Thunk(jnp.sin, (jnp.ones(3),), {}), repeat=3)
>>> 0 < best <= median < 1
True
"""

from __future__ import annotations

import contextlib
import io
import statistics
import timeit
from dataclasses import dataclass

import jax

HAND_REPEAT = 5


@dataclass(frozen=True)
class Thunk:
    """``function(*args, **kwargs)``, held apart so that a hand loop times the call itself."""

    function: object
    args: tuple
    kwargs: dict

    def __call__(self):
        return self.function(*self.args, **self.kwargs)  # type: ignore[operator]


def hand_seconds(thunk, repeat: int = HAND_REPEAT) -> tuple[float, float]:
    """Seconds per call, (median, best), of ``timeit.repeat`` over the call with
    ``block_until_ready``, the calls per repeat chosen by ``timeit``'s own auto-ranging (after one
    warm-up call). A call that returns one array waits by its own method, as a hand loop does
    (``jax.block_until_ready`` walks a pytree first, about 1.5 µs a call here); a ``Thunk``'s call is
    the statement itself, anything else callable is called as ``thunk()``."""
    with contextlib.redirect_stdout(io.StringIO()):
        output = jax.block_until_ready(thunk())
        if isinstance(thunk, Thunk):  # the call itself in timeit's loop, as %timeit runs a statement
            names = {"f": thunk.function, "a": thunk.args, "k": thunk.kwargs, "jax": jax}
            call = "f(*a, **k)"
        else:
            names, call = {"thunk": thunk, "jax": jax}, "thunk()"
        statement = f"{call}.block_until_ready()" if isinstance(output, jax.Array) else f"jax.block_until_ready({call})"
        timer = timeit.Timer(statement, globals=names)
        number, total = timer.autorange()
        if total / number > 0.5:  # a slow call: fewer repeats, as %timeit does
            repeat = 3
        runs = [t / number for t in timer.repeat(repeat=repeat, number=number)]
    return statistics.median(runs), min(runs)
