"""Honest timing of one ``Runner``: every timed call waits for its whole output, the first call is
timed apart with the compile work JAX records during it, and loops are sized timeit-style.

>>> import jax.numpy as jnp
>>> from jaxmagic.tracing.call import Call
>>> from jaxmagic.timing.modes import build
>>> runner = build("jit", Call(jnp.cos, (jnp.ones(4),), {}))
>>> first, output = first_call(runner)
>>> first.compilations >= 1, first.first_call_s >= first.compile_s > 0
(True, True)
>>> seconds = timed_loop(runner, 5, waiter(output))
>>> seconds > 0
True
>>> pipelined_loop(runner, 5) > 0  # 5 calls, then one wait for the last
True
"""

from __future__ import annotations

import contextlib
import functools
import gc
import itertools
import math
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import jax

from jaxmagic import _jax_private
from jaxmagic.timing.deadline import Overran

TIMER = time.perf_counter
TARGET_REPEAT_S = 0.1  # grow the calls per repeat until its calls, each waited for, last this long
# (then as many calls in a pipelined loop, never longer: a repeat lasts at most 0.2 s, as %timeit's do)
CALIBRATION_S = 0.02  # how long the run that estimates a call's time may last
CALIBRATION_LOOPS = 4  # in as many loops: the fastest one sizes the repeats


@dataclass(frozen=True)
class CompileCost:
    """What the first call of a mode cost, and how JAX spent it.

    ``trace_s``, ``lower_s`` and ``compile_s`` are the tracing (Python -> jaxpr), lowering
    (jaxpr -> StableHLO) and XLA compiling that JAX recorded during the call (through
    ``jax.monitoring``); ``first_call_s`` is the whole first call, measured around it;
    ``run_s`` is the rest: dispatching and running the freshly compiled program.
    ``compilations`` counts XLA compilations (eager mode compiles each primitive once);
    ``persistent_cache_hits`` how many of them JAX's persistent compilation cache served.

    >>> cost = CompileCost(trace_s=0.01, lower_s=0.02, compile_s=0.05, first_call_s=0.1, compilations=1)
    >>> round(cost.run_s, 3), round(cost.one_time_s, 3)
    (0.02, 0.08)
    """

    trace_s: float
    lower_s: float
    compile_s: float
    first_call_s: float
    compilations: int = 0
    persistent_cache_hits: int = 0  # executables JAX's persistent compilation cache served

    @property
    def one_time_s(self) -> float:
        """Tracing, lowering and compiling: what later calls no longer pay; never more than the
        first call (the phases JAX 0.8 reports overlap: their sum can pass the call's wall time)."""
        return min(self.first_call_s, self.trace_s + self.lower_s + self.compile_s)

    @property
    def run_s(self) -> float:
        """The first call without tracing, lowering and compiling."""
        return max(0.0, self.first_call_s - self.one_time_s)


@contextlib.contextmanager
def compile_events() -> Iterator[dict[str, list[float]]]:
    """Collect the durations JAX records for tracing, lowering and compiling in this thread.

    Yields ``{"trace": [...], "lower": [...], "compile": [...], "persistent_cache_hits": [...]}``
    (seconds; one entry per executable the persistent cache served), filled as JAX works.

    >>> import jax.numpy as jnp
    >>> ones = jnp.ones(3)
    >>> with compile_events() as events:
    ...     _ = jax.jit(lambda v: jnp.sinh(v) * 7)(ones)
    >>> len(events["compile"])
    1
    """
    kinds = {name: kind for kind, name in _jax_private.compile_event_names().items()}
    found: dict[str, list[float]] = {kind: [] for kind in (*kinds.values(), "persistent_cache_hits")}
    thread = threading.get_ident()

    def listen(event: str, duration_secs: float, **_):
        kind = kinds.get(event)
        if kind is not None and threading.get_ident() == thread:
            found[kind].append(duration_secs)

    def hit(event: str, **_):
        if event == _jax_private.PERSISTENT_CACHE_HIT_EVENT and threading.get_ident() == thread:
            found["persistent_cache_hits"].append(0.0)

    jax.monitoring.register_event_duration_secs_listener(listen)
    jax.monitoring.register_event_listener(hit)
    try:
        yield found
    finally:
        with contextlib.suppress(Exception):
            _jax_private.unregister_duration_listener(listen)
        with contextlib.suppress(Exception):
            _jax_private.unregister_event_listener(hit)


def waiter(output: Any) -> Callable[[Any], Any]:
    """How to wait for outputs shaped like ``output``: a single array's own method, or
    ``jax.block_until_ready`` on the whole pytree.

    >>> import jax.numpy as jnp
    >>> waiter({"a": jnp.ones(2)}) is jax.block_until_ready, waiter(jnp.ones(2)) is jax.block_until_ready
    (True, False)
    """
    if isinstance(output, jax.Array):
        return _wait_array
    return jax.block_until_ready


def _wait_array(output):
    return output.block_until_ready()


def first_call(runner) -> tuple[CompileCost, Any]:
    """Run the mode's first call, timed whole, with the compile work JAX recorded inside it; garbage
    collection paused, as in every timed call (a collection is not the call's cost)."""
    args, kwargs = runner.fresh_arguments()
    with runner.context(), compile_events() as events, gc_paused():
        start = TIMER()
        try:
            output = runner.fn(*args, **kwargs)
        except Overran as stop:  # what it had compiled when stopped: the time says nothing of a later call
            stop.compilations, stop.compile_s = len(events["compile"]), sum(events["compile"])
            raise
        jax.block_until_ready(output)
        elapsed = TIMER() - start
    cost = CompileCost(
        trace_s=sum(events["trace"]),
        lower_s=sum(events["lower"]),
        compile_s=sum(events["compile"]),
        first_call_s=elapsed,
        compilations=len(events["compile"]),
        persistent_cache_hits=len(events["persistent_cache_hits"]),
    )
    return cost, output


def timed_loop(runner, loops: int, wait: Callable[[Any], Any], *, stop_at: float | None = None) -> float:
    """Seconds that ``loops`` calls took, each waited for; donated arguments are re-created
    outside the timed region (then each call is timed on its own and the times are summed).

    With ``stop_at`` (a reading of ``TIMER``), ``Overran`` is raised between two calls, before one
    that the last call's time says would end past it: the loop of a mode that runs operation by
    operation is stopped there, never inside a call (where an exception would land in the middle
    of JAX's own work). At most one call runs past ``stop_at``.
    """
    fn, args, kwargs = runner.fn, runner.args, runner.kwargs
    with runner.context():
        if runner.donates:
            total = previous = 0.0
            for _ in range(loops):
                args, kwargs = runner.fresh_arguments()
                start = TIMER()
                if stop_at is not None and start + previous > stop_at:
                    raise Overran
                wait(fn(*args, **kwargs))
                previous = TIMER() - start
                total += previous
            return total
        if stop_at is not None:
            start = before = TIMER()
            previous = 0.0
            for _ in itertools.repeat(None, loops):
                if before + previous > stop_at:
                    raise Overran
                wait(fn(*args, **kwargs))
                after = TIMER()
                previous, before = after - before, after
            return before - start
        if wait is _wait_array:  # the common case, as lean as a hand-written `f(x).block_until_ready()` loop
            timer = TIMER
            start = timer()
            for _ in itertools.repeat(None, loops):
                fn(*args, **kwargs).block_until_ready()
            return timer() - start
        start = TIMER()
        for _ in itertools.repeat(None, loops):
            wait(fn(*args, **kwargs))
        return TIMER() - start


def pipelined_loop(runner, loops: int, *, stop_at: float | None = None) -> float:
    """Seconds that ``loops`` calls took when none is waited for until the last one, whose result
    is: dispatching each call overlaps the device's work on the previous ones, as in a training
    loop. Donated arguments are copied for all the calls before the clock starts. ``stop_at`` as
    for ``timed_loop``, judged by the time each call took to dispatch."""
    fn = runner.fn
    with runner.context():
        if runner.donates:
            calls = [runner.fresh_arguments() for _ in range(loops)]
        else:
            calls = itertools.repeat((runner.args, runner.kwargs), loops)
        out = None
        start = before = TIMER()
        if stop_at is None:
            for args, kwargs in calls:
                out = fn(*args, **kwargs)
        else:
            previous = 0.0
            for args, kwargs in calls:
                if before + previous > stop_at:
                    raise Overran
                out = fn(*args, **kwargs)
                after = TIMER()
                previous, before = after - before, after
        jax.block_until_ready(out)
        return TIMER() - start


@functools.cache
def dispatch_floor() -> float:
    """Seconds that JAX takes at the least to dispatch one operation on its own here: the floor
    under what an uncompiled call of many operations costs (its estimate is a lower bound).
    Measured once per process (its first measurement compiles the operation it times).

    >>> 0 < dispatch_floor() < 0.01
    True
    """
    x = jax.numpy.zeros(())
    negate = jax.lax.neg
    jax.block_until_ready(negate(x))
    best = math.inf
    for _ in range(3):
        start = TIMER()
        for _ in range(20):
            negate(x)
        best = min(best, (TIMER() - start) / 20)
    return best


@dataclass(frozen=True)
class Estimate:
    """Seconds per call from a short run: ``timed`` (what a repeat measures), ``wall`` (what it
    costs, donated copies included), over ``calls`` calls.

    >>> Estimate(timed=1e-5, wall=1.2e-5, calls=2000).calls
    2000
    """

    timed: float
    wall: float
    calls: int


def estimate(runner, wait, *, single_call_s: float) -> Estimate:
    """Seconds per call from a calibration run of about ``CALIBRATION_S``.

    ``single_call_s`` is a call already measured; when it is that long, it is the estimate.
    Otherwise the run is a few short loops, each sized by the fastest call seen so far, and a
    call's time is the fastest loop's, as ``timeit`` reports its best: one pause of the machine
    during the run (a busy neighbour, the system's own work) cannot make every repeat that the
    estimate sizes many times shorter than asked. ``wall`` is the whole run over its calls: what
    a call costs the budget, pauses included.
    """
    if single_call_s >= CALIBRATION_S:
        return Estimate(single_call_s, single_call_s, 1)
    fastest, calls = single_call_s, 0
    start = TIMER()
    for _ in range(4 * CALIBRATION_LOOPS):
        loop = max(1, min(10_000_000, int(CALIBRATION_S / CALIBRATION_LOOPS / max(fastest, 1e-7))))
        fastest = min(fastest, timed_loop(runner, loop, wait) / loop)
        calls += loop
        if TIMER() - start >= CALIBRATION_S:
            break
    wall = TIMER() - start
    return Estimate(fastest, wall / calls, calls)


def auto_loops(per_call_s: float, target_s: float = TARGET_REPEAT_S) -> int:
    """Calls per repeat so that a repeat lasts about ``target_s`` (at least one call).

    >>> auto_loops(0.001), auto_loops(0.5), auto_loops(3e-6)
    (100, 1, 33334)
    """
    return max(1, math.ceil(target_s / max(per_call_s, 1e-9)))


def timer_overhead() -> float:
    """The smallest time two readings of the timer can be apart: the floor of any measurement.

    >>> 0 <= timer_overhead() < 1e-3
    True
    """
    best = math.inf
    for _ in range(200):
        start = TIMER()
        best = min(best, TIMER() - start)
    resolution = time.get_clock_info("perf_counter").resolution
    return max(best, resolution)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Garbage collection off while timing, as ``timeit`` does (a collection is not the call's cost).

    >>> with gc_paused():
    ...     gc.isenabled()
    False
    >>> gc.isenabled()
    True
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class LineCounter:
    """A stand-in for ``sys.stdout`` that counts the lines written to it: ``counts[key]`` grows.

    >>> counts = {}
    >>> with contextlib.redirect_stdout(LineCounter(counts, "eager")):
    ...     print("one"); print("two")
    >>> counts
    {'eager': 2}
    """

    def __init__(self, counts: dict, key: str):
        self.counts, self.key = counts, key
        counts.setdefault(key, 0)

    def write(self, text: str) -> int:
        self.counts[self.key] += text.count("\n")
        return len(text)

    def flush(self) -> None:
        pass
