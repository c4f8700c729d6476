"""Ctrl-C and threads. A ``KeyboardInterrupt`` raised while a magic traces, times or watches (from
inside the user's own function, as Ctrl-C arrives, or as a real SIGINT) stops it cleanly: the user
sees their own frames, and JAX's configuration, ``disable_jit``, the listeners, ``sys.stdout`` and
the namespace are as they were. Compilations in a background thread are recorded without errors,
and what a background thread prints is neither swallowed nor taken for the user's call."""

from __future__ import annotations

import io
import os
import signal
import sys
import threading

import jax
import pytest
from conftest import assert_no_internals
from jax._src import monitoring
from outcomes import Snapshot

from jaxmagic.magics.failures import MagicInterrupted
from jaxmagic.recompiles import RecompileLimitExceeded, watch

INTERRUPTER = '''
import jax, jax.numpy as jnp
x = jnp.ones(3)
calls = [0]
def interrupt_at(n, *, only_while_tracing=False):
    """A function that raises KeyboardInterrupt on its n-th call, as Ctrl-C would arrive there."""
    def fn(a):
        if only_while_tracing and not isinstance(a, jax.core.Tracer):
            return jnp.sin(a) * 2
        calls[0] += 1
        if calls[0] >= n:
            raise KeyboardInterrupt
        return jnp.sin(a) * 2
    return fn
'''


@pytest.fixture
def interrupter(run):
    run(INTERRUPTER).assert_ok()


def _listeners() -> tuple[int, int]:
    return len(monitoring.get_event_duration_listeners()), len(monitoring.get_event_listeners())


class State:
    """Everything a Ctrl-C must leave as it was."""

    def __init__(self, ip):
        self.snapshot = Snapshot(ip)
        self.listeners = _listeners()
        self.stdout = sys.stdout
        self.watching = watch.is_installed()

    def assert_restored(self, defined=frozenset()):
        self.snapshot.assert_kept(defined=defined)
        assert jax.config.jax_disable_jit is False, "jax.disable_jit() was left on"
        assert _listeners() == self.listeners
        assert sys.stdout is self.stdout
        assert watch.is_installed() == self.watching


def assert_interrupted_in_users_code(result, user_line: str):
    assert isinstance(result.error, KeyboardInterrupt), repr(result.error)
    assert isinstance(result.error, MagicInterrupted) or "%%recompiles" in result.shown_traceback
    assert "KeyboardInterrupt" in result.shown_traceback
    assert user_line in result.shown_traceback, result.shown_traceback
    assert_no_internals(result)
    if isinstance(result.error, MagicInterrupted):  # the user's frames only, JAX's as well as ours left out
        jax_dir = os.path.dirname(jax.__file__)
        assert jax_dir not in result.shown_traceback and "jax/_src" not in result.shown_traceback, (
            result.shown_traceback
        )


# ------------------------------------------------------------------------------------------------
# Ctrl-C


def test_interrupt_while_tracing_for_jaxpr(ip, run, interrupter):
    run("calls[0] = 0\nstop_now = interrupt_at(1)").assert_ok()
    state = State(ip)
    result = run("%jaxpr stop_now(x)")
    assert_interrupted_in_users_code(result, "raise KeyboardInterrupt")
    state.assert_restored()
    run("%jaxpr jnp.cos(x)").assert_ok()  # and the next magic works


def test_interrupt_while_evaluating_the_arguments(ip, run, interrupter):
    run("calls[0] = 0\nstop_now = interrupt_at(1)").assert_ok()
    state = State(ip)
    result = run("%jaxpr jnp.sin(stop_now(x))")
    assert_interrupted_in_users_code(result, "%jaxpr jnp.sin(stop_now(x))")
    state.assert_restored()


def test_interrupt_in_a_jaxpr_cell_keeps_what_ran_before_it(ip, run, interrupter):
    state = State(ip)
    result = run("%%jaxpr\nbefore_the_stop = 1\nraise KeyboardInterrupt\njnp.sin(x)")
    assert_interrupted_in_users_code(result, "raise KeyboardInterrupt")
    state.assert_restored(defined={"before_the_stop"})


@pytest.mark.parametrize(
    "stop_at, phase",
    [
        (1, "the first jit call"),  # the compiled modes come first: the first call is jit's tracing
        (2, "the first eager call"),
        # eager's later calls warm up, size and run the repeats: how many the warm-up takes depends
        # on the machine's speed, so the fifth call lands in the warm-up or in the first repeat
        (5, ("the eager mode", "(eager)")),
    ],
)
def test_interrupt_while_timing_reports_what_was_measured(ip, run, interrupter, stop_at, phase):
    run(f"calls[0] = 0\nstop_now = interrupt_at({stop_at})").assert_ok()
    state = State(ip)
    result = run("%jitcompare -o --plain -n 2 -r 5 --budget 5 stop_now(x)").assert_ok()
    comparison = result.result
    assert comparison.interrupted
    phases = (phase,) if isinstance(phase, str) else phase
    assert any(
        w.startswith("Interrupted (Ctrl-C) while") and any(p in w.split(":")[0] for p in phases)
        for w in comparison.warnings
    ), comparison.warnings
    assert result.stdout.startswith("interrupted: ")
    state.assert_restored()


def test_interrupt_while_jit_traces_under_the_timing(ip, run, interrupter):
    run("calls[0] = 0\nstop_when_traced = interrupt_at(1, only_while_tracing=True)").assert_ok()
    state = State(ip)
    comparison = run("%jitcompare -o -q -n 2 -r 3 --budget 5 stop_when_traced(x)").assert_ok().result
    # jit is timed first: stopped while it traces, nothing was measured, and the report says so
    assert comparison.interrupted and comparison.first_calls == {} and comparison.modes == {}
    state.assert_restored()


def test_interrupt_in_a_recompiles_cell_still_shows_its_log_and_unhooks(ip, run, interrupter):
    state = State(ip)
    result = run("%%recompiles\nquick = jax.jit(lambda a: a + 1)\nquick(x)\nraise KeyboardInterrupt")
    assert_interrupted_in_users_code(result, "raise KeyboardInterrupt")
    assert "quick" in result.html or "<lambda>" in result.html  # the compilation before the stop is listed
    state.assert_restored(defined={"quick"})


def test_a_real_sigint_during_a_recompiles_cell(ip, run):
    run("import time").assert_ok()
    state = State(ip)
    timer = threading.Timer(0.5, os.kill, args=(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        result = run("%%recompiles\ntime.sleep(30)")
    finally:
        timer.cancel()
    assert_interrupted_in_users_code(result, "time.sleep(30)")
    state.assert_restored()


def test_interrupt_under_the_session_watch_leaves_it_working(ip, run, interrupter):
    errors_before = watch.internal_errors()  # the process's latest 20: other tests ran here
    run("%recompiles on").assert_ok()
    try:
        run("calls[0] = 0\nstop_now = jax.jit(interrupt_at(1))").assert_ok()
        result = run("stop_now(x)")
        assert isinstance(result.error, KeyboardInterrupt)
        assert_no_internals(result)
        run("after = jax.jit(lambda a: a * 3)\nafter(x)").assert_ok()
        log = run("%recompiles -o show").assert_ok().result
        assert log.counts.get("<lambda> (line 1)", 0) >= 1
        assert watch.internal_errors() == errors_before  # a new failure would join (and shift) the list
    finally:
        run("%recompiles off")
    assert not watch.is_installed()
    assert jax.config.values["jax_explain_cache_misses"] is False


def test_interrupt_while_the_watch_reads_a_compilation_shows_no_internals(ip, run):
    # A static value whose repr raises KeyboardInterrupt: as if Ctrl-C arrived just as jaxmagic's
    # listener described the compiled call.
    run(
        "class Touchy:\n"
        "    def __hash__(self):\n        return 1\n"
        "    def __eq__(self, other):\n        return isinstance(other, Touchy)\n"
        "    def __repr__(self):\n        raise KeyboardInterrupt\n"
        "touchy = jax.jit(lambda a, s: a * 2, static_argnums=1)\nx = jnp.ones(3)"
    ).assert_ok()
    run("%recompiles on").assert_ok()
    try:
        result = run("touchy(x, Touchy())")
        assert isinstance(result.error, KeyboardInterrupt)
        assert "raise KeyboardInterrupt" in result.shown_traceback
        assert_no_internals(result)
        run("later = jax.jit(lambda a: a - 1)\nlater(x)").assert_ok()
        log = run("%recompiles -o show").assert_ok().result
        assert log.counts.get("<lambda> (line 1)", 0) >= 1  # the watch goes on
    finally:
        run("%recompiles off")
    assert not watch.is_installed()


# ------------------------------------------------------------------------------------------------
# Threads

THREADED = """
import threading, time
import jax, jax.numpy as jnp
worker_errors = []
@jax.jit
def in_background(a):
    return a * 2
def compile_in_background(sizes, name="worker"):
    def work():
        try:
            for n in sizes:
                in_background(jnp.ones(n)).block_until_ready()
        except BaseException as exc:
            worker_errors.append(repr(exc))
    thread = threading.Thread(target=work, name=name)
    thread.start()
    return thread
"""


def test_background_compilations_are_recorded_by_the_session_watch(ip, run):
    run(THREADED).assert_ok()
    errors_before = watch.internal_errors()  # the process's latest 20: other tests ran here
    run("%recompiles on").assert_ok()
    try:
        run("worker = compile_in_background(range(1, 6))").assert_ok()
        shown = run("worker.join(); x = jnp.ones(2)").assert_ok()
        assert "[recompiles]" not in shown.stdout  # a notebook's panel updates; nothing is printed in cells
        log = run("%recompiles -o show in_background").assert_ok().result
        assert [e.thread for e in log.events] == ["worker"] * 5
        assert [e.kinds for e in log.events][1:] == [["shape"]] * 4
        assert run("worker_errors").result == []
        assert watch.internal_errors() == errors_before  # a new failure would join (and shift) the list
    finally:
        run("%recompiles off")


def test_a_background_thread_over_the_limit_is_not_interrupted_the_cell_reports_it(ip, run):
    run(THREADED).assert_ok()
    result = run("%%recompiles --max 1\ncompile_in_background(range(10, 13)).join()")
    assert isinstance(result.error, RecompileLimitExceeded)
    assert "`in_background` compiled 3 times" in str(result.error)
    assert run("worker_errors").result == []  # the worker ran to its end


def test_the_session_limit_from_a_background_thread_is_reported_once_after_the_cell(ip, run):
    run(THREADED).assert_ok()
    run("%recompiles on --max 1").assert_ok()
    try:
        first = run("compile_in_background(range(20, 24)).join()")
        second = run("compile_in_background(range(30, 32)).join()")
    finally:
        run("%recompiles off")
    assert first.error is None and second.error is None
    assert first.stderr.count("%recompiles --max 1:") == 1 and "in_background" in first.stderr
    assert "%recompiles --max 1:" not in second.stderr
    assert run("worker_errors").result == []


def test_background_compilations_while_timing_are_the_workers_not_the_timings(ip, run):
    run(THREADED).assert_ok()
    run("%recompiles on").assert_ok()
    try:
        run("def timed(a):\n    return jnp.tanh(a) * 2\nvalues = jnp.ones(64)").assert_ok()
        shown = run(
            "worker = compile_in_background(range(40, 44))\n"
            "%jitcompare -q -n 5 -r 3 --budget 2 timed(values)\n"
            "worker.join()"
        ).assert_ok()
        log = run("%recompiles -o show").assert_ok().result
    finally:
        run("%recompiles off")
    assert log.counts.get("in_background") == 4
    assert "timed" not in log.counts  # %jitcompare's own compilations are its measurement, never the user's
    assert {e.thread for e in log.events if e.function == "in_background"} == {"worker"}
    assert_no_internals(shown)


CHATTER = """
import threading, time
chatter_stop = threading.Event()
def chatter():
    while not chatter_stop.is_set():
        print("from the background thread")
        time.sleep(0.002)
chatter_thread = threading.Thread(target=chatter, daemon=True)
"""


def test_what_a_background_thread_prints_during_timing_is_shown_not_counted(ip, run):
    run(CHATTER + "def quiet(a):\n    return a * 2\nvalues = jnp.ones(8)").assert_ok()
    try:
        shown = run("chatter_thread.start()\n%jitcompare -o --plain -n 2000 -r 3 --budget 3 quiet(values)").assert_ok()
    finally:
        run("chatter_stop.set(); chatter_thread.join()")
    assert shown.stdout.count("from the background thread") >= 10  # it reached the cell's output
    assert not any("printed" in note for note in shown.result.notes), shown.result.notes


def test_the_doctor_copies_only_what_the_traced_call_printed():
    from jaxmagic.doctor import watch_prints

    screen = io.StringIO()
    previous, sys.stdout = sys.stdout, screen
    try:
        with watch_prints() as printed:
            print("from the call")
            worker = threading.Thread(target=print, args=("from the worker",))
            worker.start()
            worker.join()
    finally:
        sys.stdout = previous
    assert printed.text == "from the call\n"
    assert screen.getvalue().splitlines() == ["from the call", "from the worker"]


def test_two_threads_compiling_at_once_each_get_their_own_cause():
    """Two threads compile the same function at once, one changing shapes, the other dtypes: every
    compilation's cause is about its own call, and none is said to be compared with a
    compilation "made while nothing watched" (the other thread's was watched)."""
    import jax.numpy as jnp

    from jaxmagic import watch_recompiles

    def body(a):
        return jnp.sin(a) * 2

    shared = jax.jit(body)
    barrier = threading.Barrier(2)
    errors = []

    def work(values):
        try:
            for value in values:
                barrier.wait(timeout=60)
                shared(value).block_until_ready()
        except BaseException as exc:  # noqa: BLE001 — reported by the assertion below
            errors.append(repr(exc))

    by_shape = [jnp.ones(n) for n in range(2, 8)]
    by_dtype = [jnp.ones((3, 3), d) for d in (jnp.float32, jnp.int32, jnp.float16, jnp.int8, jnp.uint8, jnp.int16)]
    with watch_recompiles() as log:
        threads = [
            threading.Thread(target=work, args=(by_shape,), name="shapes"),
            threading.Thread(target=work, args=(by_dtype,), name="dtypes"),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == []
    assert sorted(e.thread for e in log.events) == ["dtypes"] * 6 + ["shapes"] * 6
    for event in log.events:
        for cause in event.causes:
            assert "nothing watched" not in cause.message, (event.thread, event.signature, cause.message)
            assert cause.after is None or cause.after in event.signature, (event.thread, event.signature, cause)
