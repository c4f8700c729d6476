"""A deadline that stopped a call leaves the interpreter as it found it: code run afterwards, in
this process, JAX's profiler included, runs as it would have without it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

import jax.numpy as jnp
import pytest

from jaxmagic.timing import stopwatch
from jaxmagic.timing.deadline import Overran, stop_after
from jaxmagic.timing.modes import build
from jaxmagic.tracing.call import Call

AFTER_A_STOP = textwrap.dedent(
    """
    import sys, tempfile, time
    import jax, jax.numpy as jnp
    from jaxmagic.timing.deadline import Overran, stop_after
    ending = sys.argv[1]
    try:
        with stop_after(0.2):
            end = time.perf_counter() + (5.0 if ending == "stopped" else 0.2)
            while time.perf_counter() < end:
                time.sleep(0.001)
    except Overran:
        print("stopped")
    f = jax.jit(lambda v: jnp.sin(v).sum())
    with tempfile.TemporaryDirectory() as folder, jax.profiler.trace(folder):
        jax.block_until_ready(f(jnp.ones(100)))
    print("profiled")
    """
)


@pytest.mark.parametrize("ending", ["stopped", "ended as it fired"])
def test_the_profiler_runs_after_a_deadline(tmp_path, ending):
    script = tmp_path / "after_a_stop.py"
    script.write_text(AFTER_A_STOP)
    done = subprocess.run(
        [sys.executable, str(script), ending], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == "profiled"


def test_a_deadline_that_fires_as_the_block_ends_is_raised_nowhere_else():
    for _ in range(200):
        try:
            with stop_after(0.0005):
                sum(range(2000))
        except Overran:
            pass
    total = 0
    for step in range(100_000):  # an Overran left pending would land in this loop
        total += step
    assert total == sum(range(100_000))


@pytest.mark.parametrize("seconds", [1e300, float("inf"), float("nan"), 1e10])
def test_a_deadline_too_far_off_to_wait_for_runs_the_block_with_no_thread_failing(seconds):
    failures = []
    hook, threading.excepthook = threading.excepthook, failures.append
    try:
        with stop_after(seconds):
            done = sum(range(10))
        time.sleep(0.05)  # a timer thread that failed has reported it by now
    finally:
        threading.excepthook = hook
    assert done == 45 and failures == []


@pytest.mark.parametrize("loop", ["timed", "pipelined"])
def test_a_loop_given_a_time_to_stop_stops_between_two_calls_before_one_that_would_end_past_it(loop):
    starts, ends = [], []

    def twenty_ms(x):
        starts.append(time.perf_counter())
        time.sleep(0.02)
        ends.append(time.perf_counter())
        return x + 1

    runner = build("eager", Call(twenty_ms, (jnp.ones(3),), {}))
    stopwatch.first_call(runner)
    starts.clear(), ends.clear()
    stop_at = time.perf_counter() + 0.1
    with pytest.raises(Overran):
        if loop == "timed":
            stopwatch.timed_loop(runner, 50, stopwatch.waiter(jnp.ones(3)), stop_at=stop_at)
        else:
            stopwatch.pipelined_loop(runner, 50, stop_at=stop_at)
    # The rule, judged by when calls started (a busy machine may stretch a call's 20 ms, which no
    # rule foresees): no call started that the one before foresaw ending past the time...
    assert 1 <= len(ends) <= 5 and all(start + 0.02 <= stop_at + 0.005 for start in starts[1:]), (starts, stop_at)
    # ...and the loop stopped only where the next call, as long as the last, would have ended past it
    assert ends[-1] + (ends[-1] - starts[-1]) > stop_at - 0.01, (starts, ends, stop_at)
    ends.clear()
    assert stopwatch.timed_loop(runner, 3, stopwatch.waiter(jnp.ones(3)), stop_at=time.perf_counter() + 10) > 0.06
    assert len(ends) == 3


class _SlowToCollect:
    """An object whose finalizer runs a while: a stop delivered then is reported by Python as
    "Exception ignored" and lost, as one in any finalizer of the user's (a weakref callback, a
    ``__del__`` closing a file) would be."""

    def __del__(self):
        end = time.perf_counter() + 0.02
        while time.perf_counter() < end:
            pass


def test_a_stop_lost_in_a_finalizer_is_made_again_until_the_block_stops():
    ignored, hook = [], sys.unraisablehook
    sys.unraisablehook = ignored.append  # where Python reports what it swallowed in a finalizer
    started = time.perf_counter()
    try:
        with pytest.raises(Overran), stop_after(0.05):
            while time.perf_counter() < started + 0.2:  # the deadline comes while a finalizer runs
                _SlowToCollect()  # collected at once: nearly all the time is spent in its finalizer
            while time.perf_counter() < started + 5.0:  # then plain Python, where a stop is taken
                pass
    finally:
        sys.unraisablehook = hook
    assert time.perf_counter() - started < 2.0 and ignored, ignored[:3]  # lost once at least, then made again
