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
    """An object whose finalizer runs a while, in a loop of its own: a stop raised there would be
    lost (Python reports it as "Exception ignored"), and the finalizer's work cut short."""

    started = finished = 0

    def __del__(self):
        _SlowToCollect.started += 1
        end = time.perf_counter() + 0.02
        while time.perf_counter() < end:
            pass
        _SlowToCollect.finished += 1


def test_a_finalizer_runs_whole_and_the_block_still_stops():
    ignored, hook = [], sys.unraisablehook
    sys.unraisablehook = ignored.append  # where Python reports what it swallowed in a finalizer
    started = time.perf_counter()
    try:
        with pytest.raises(Overran), stop_after(0.05):
            while time.perf_counter() < started + 5.0:  # nearly all the time is spent in finalizers
                _SlowToCollect()
    finally:
        sys.unraisablehook = hook
    assert time.perf_counter() - started < 2.0
    assert ignored == [] and _SlowToCollect.started == _SlowToCollect.finished > 0


def test_a_stop_the_users_code_swallows_is_made_again_until_the_block_stops():
    swallowed = []
    started = time.perf_counter()
    with pytest.raises(Overran), stop_after(0.05):
        for _ in range(10**8):  # a loop that calls nothing outside its ``try``
            if swallowed:
                break
            try:
                sum(range(100))
            except BaseException as caught:  # the user's own code, swallowing everything
                swallowed.append(type(caught))
        while time.perf_counter() < started + 5.0:
            sum(range(100))
    assert time.perf_counter() - started < 2.0 and swallowed == [Overran], swallowed


class _Tracked:
    """A context manager of the user's, counting what it opened and closed."""

    opened = closed = 0

    def __enter__(self):
        _Tracked.opened += 1

    def __exit__(self, *exc_info):
        _Tracked.closed += 1


@pytest.mark.parametrize("deadline_s", [0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08])
def test_a_stop_never_skips_the_users_own_cleaning_up(deadline_s):
    """Whatever the user's code was doing, its ``with`` is closed and its ``finally`` runs."""
    _Tracked.opened = _Tracked.closed = 0
    tried = finished = 0
    started = time.perf_counter()
    with pytest.raises(Overran), stop_after(deadline_s):
        while time.perf_counter() < started + 5.0:
            try:
                tried += 1
                with _Tracked():
                    pass
            finally:
                finished += 1
    assert _Tracked.opened == _Tracked.closed and tried == finished, (_Tracked.opened, _Tracked.closed)


USERS_MODULE = textwrap.dedent(
    """
    import jax, jax.numpy as jnp

    def inner(x):
        for step in range(300):
            x = jnp.sin(x) * 1.001 + step
        return x

    def eager_call(x):  # run without an outer jit: its inner jit traces, lowers and compiles on first use
        return jax.jit(inner)(x).sum() + 1
    """
)


def _compiled_during(thunk) -> list[str]:
    """What JAX logged compiling while ``thunk`` ran (``jax_log_compiles``)."""
    import logging

    import jax

    seen: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())  # type: ignore[method-assign]
    logger = logging.getLogger("jax")
    logger.addHandler(handler)
    try:
        with jax.log_compiles(True):
            jax.block_until_ready(thunk())
    finally:
        logger.removeHandler(handler)
    return [message for message in seen if message.startswith("Compiling")]


@pytest.mark.parametrize("share", [0.15, 0.35, 0.55, 0.75])
def test_a_stop_lands_in_the_users_code_and_leaves_jax_s_caches_whole(tmp_path, monkeypatch, share):
    """Stopped while JAX traced, lowered or compiled the user's inner jit, the stop comes out of a
    call to or from the user's code (the model's, or the block's own), never from inside JAX: the next call compiles what the stopped one did not
    finish, and the one after compiles nothing (stopped inside JAX's lowering, a function was
    compiled again at every later call)."""
    import importlib
    import traceback

    import jax

    from jaxmagic.tracing.sources import is_jaxmagic_file

    (tmp_path / "users_model.py").write_text(USERS_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "users_model", raising=False)
    model = importlib.import_module("users_model")
    x = jnp.ones(64)
    started = time.perf_counter()
    jax.block_until_ready(jax.jit(model.inner).lower(x).compile()(x))  # as long as the first call takes
    first_call_s = time.perf_counter() - started
    jax.clear_caches()
    try:
        with stop_after(share * first_call_s):
            jax.block_until_ready(model.eager_call(x))
    except Overran as stopped:
        frames = [f.filename for f in traceback.extract_tb(stopped.__traceback__) if not is_jaxmagic_file(f.filename)]
        users = (model.__file__, __file__)  # the user's model, or this block
        # raised in the user's code, or in a function it called, as that function started
        assert frames[-1] in users or frames[-2] in users, frames[-3:]
    _compiled_during(lambda: model.eager_call(x))
    assert _compiled_during(lambda: model.eager_call(x)) == []
