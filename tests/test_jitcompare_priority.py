"""How %jitcompare shares its budget: the jitted figure gets the repeats its interval needs whatever
eager costs; eager is cut first and says so; an eager first call that would outlast the budget is
stopped (or, where the operations it would dispatch one by one already cost many times the time
left, not run), and the whole comparison ends within the budget and a tenth.

The functions here are slow only when they run with values (eagerly): traced, they cost nothing,
so their jit is quick and the budget is what eager's cost is measured against. The wall-time bound
is a promise of the budget, checked from outside around the call; the figures themselves are not
judged by time here (``benchmarks/bench_jitcompare.py`` does that against hand loops).
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import pytest

from jaxmagic.timing import budget, compare
from jaxmagic.timing.session import MIN_REPEATS, RESERVED_SHARE, WALL_MARGIN
from jaxmagic.tracing.call import Call

# Sized to the CPU's costs: a TPU compiles these loops for longer than the budget leaves a first
# call, and its host callbacks cost about the floor itself (10 ms).
CPU_TIMED = "the budgets are sized to the CPU's compile and callback costs"


def slow_when_eager(seconds: float):
    """``x + 1`` that, called with values, first waits ``seconds`` in small Python steps."""

    def f(x):
        if not isinstance(x, jax.core.Tracer):
            end = time.perf_counter() + seconds
            while time.perf_counter() < end:
                time.sleep(0.002)
        return x + 1

    return f


def timed_compare(call, **settings):
    start = time.perf_counter()
    result = compare(call, **settings)
    return result, time.perf_counter() - start


@pytest.mark.parametrize("eager_s", [0.0, 0.05, 0.4, 30.0], ids=["free", "50 ms", "400 ms", "30 s"])
def test_jit_gets_its_repeats_whatever_eager_costs_and_the_wall_time_holds(eager_s):
    budget = 2.0
    result, wall = timed_compare(Call(slow_when_eager(eager_s), (jnp.ones(8),), {}), budget=budget)
    jit = result.modes["jit"]
    assert jit.source == "repeats" and jit.repeat == 7  # the repeats asked for, each of many calls
    assert result.pipelined["jit"].repeat == jit.repeat
    assert wall <= budget * WALL_MARGIN + result.compile.first_call_s, (wall, result.warnings)  # the rule's exemption
    eager = result.modes.get("eager")
    if eager_s >= 0.4:  # cut first: fewer calls, then one call, stopped when its time was up
        assert eager is None or eager.repeat < 7 or eager.loops < jit.loops
    if eager_s == 0.0:
        assert eager is not None and eager.source == "repeats"


def test_the_jitted_repeats_are_set_aside_as_long_as_asked_before_eager_s_first_call():
    """Calls a repeat are what make it agree with a hand timeit loop (a machine's clock and caches
    settle over tens of milliseconds): before eager's first call, the jitted repeats are set aside
    as long as asked, up to a quarter of the budget, so an eager call that would outlast the budget is
    stopped with that quarter still left (before, only 10 ms a repeat were: eager ran to 90% of it)."""
    result = compare(Call(slow_when_eager(30.0), (jnp.ones(8),), {}), budget=2.0)
    (stopped,) = [n for n in result.facts if n.kind == "stopped"]
    assert stopped.facts["seconds"] <= (1 - RESERVED_SHARE) * result.budget + 0.1, stopped.text
    assert result.modes["jit"].repeat == 7


def stuck_when_eager(seconds: float):
    """``x + 1`` that, called with values, first waits ``seconds`` in one step that cannot be
    stopped (as eager control flow compiling its body, or one long kernel)."""

    def f(x):
        if not isinstance(x, jax.core.Tracer):
            time.sleep(seconds)
        return x + 1

    return f


@pytest.mark.skipif(jax.default_backend() != "cpu", reason=CPU_TIMED)
def test_an_eager_call_that_runs_past_its_stop_leaves_the_jitted_repeats_their_floor():
    """An eager first call that cannot be stopped in time (BlackJAX's ``nuts.step`` compiles its
    ``while_loop`` eagerly) eats the time set aside for jit's repeats: they still last
    ``budget.FLOOR_S`` each, never one call (one call of 0.16 ms read 15% off a hand loop)."""
    result = compare(Call(stuck_when_eager(1.9), (jnp.ones(8),), {}), budget=2.0)
    jit = result.modes["jit"]
    assert jit.source == "repeats" and jit.repeat == 7
    assert jit.loops * jit.median >= 0.9 * budget.FLOOR_S, (jit.loops, jit.median, result.warnings)


def test_an_eager_call_longer_than_the_budget_is_stopped_and_said_as_a_lower_bound():
    budget = 1.5
    result, wall = timed_compare(Call(slow_when_eager(60.0), (jnp.ones(8),), {}), budget=budget)
    assert wall <= budget * WALL_MARGIN + result.compile.first_call_s  # the compiled first call: exempt
    eager = result.modes["eager"]
    assert eager.source == "stopped" and eager.lower_bound and eager.repeat == 1
    assert result.calls["eager"] == 1
    (stopped,) = [n for n in result.facts if n.kind == "stopped"]
    assert stopped.mode == "eager" and stopped.text.startswith("eager: 1 call, ≥ ")
    assert stopped.facts["seconds"] == pytest.approx(eager.median)
    # what the figures rest on: a speed-up of at least this much, a break-even of at most
    assert result.speedup == pytest.approx(eager.median / result.modes["jit"].median)
    assert result.speedup_interval is None


@pytest.mark.skipif(jax.default_backend() != "cpu", reason=CPU_TIMED)
def test_op_by_op_whose_dispatches_alone_outlast_the_budget_is_not_run_and_says_why():
    def many_steps(x):
        return jax.lax.scan(lambda c, _: (jnp.sin(c) * 0.5 + 0.1, None), x, length=1_000_000)[0]

    budget = 2.0
    result, wall = timed_compare(Call(many_steps, (jnp.ones(()),), {}), modes="jit,op-by-op", budget=budget)
    assert wall <= budget * WALL_MARGIN + result.compile.first_call_s  # the compiled first call: exempt
    assert list(result.modes) == ["jit"] and result.calls.get("op-by-op", 0) == 0
    (not_run,) = [n for n in result.facts if n.kind == "not_run"]
    assert not_run.mode == "op-by-op" and not_run.facts["dispatches"] >= 3_000_000
    assert "op-by-op: not run" in not_run.text and "--budget" in not_run.text


def test_eager_that_fits_is_measured_both_ways_and_the_compiled_figure_needs_its_minimum():
    def f(x):
        return jnp.sum(jnp.tanh(x) * 2)

    result = compare(Call(f, (jnp.ones(256),), {}), budget=3.0)
    for mode in ("eager", "jit"):
        waited, pipelined = result.modes[mode], result.pipelined[mode]
        assert waited.source == "repeats" and pipelined.repeat == waited.repeat and pipelined.loops == waited.loops
    assert result.loop_speedup == pytest.approx(result.pipelined["eager"].median / result.pipelined["jit"].median)
    assert MIN_REPEATS >= 3


def test_an_eager_repeat_past_its_time_is_stopped_between_two_calls_never_inside_one():
    """Calls that turn slow after the warm-up (10 ms, then 200 ms each) outrun every repeat's plan:
    the repeat is stopped, within the budget, and every call that started also finished (an
    exception raised inside a call can leave JAX's caches half-filled)."""
    calls = {"started": 0, "finished": 0}

    def slows_down(x):
        if not isinstance(x, jax.core.Tracer):
            calls["started"] += 1
            end = time.perf_counter() + (0.01 if calls["started"] <= 4 else 0.2)
            while time.perf_counter() < end:
                time.sleep(0.002)
            calls["finished"] += 1
        return x + 1

    budget = 2.0
    result, wall = timed_compare(Call(slows_down, (jnp.ones(8),), {}), budget=budget)
    assert calls["started"] == calls["finished"] > 4
    assert wall <= budget * WALL_MARGIN + result.compile.first_call_s, (wall, result.warnings)
    jit = result.modes["jit"]
    assert jit.repeat == 7 and jit.loops >= 100  # not starved by the eager calls that ran past their time
    assert any(n.kind in ("stopped_early", "budget_cut") and n.mode in ("eager", None) for n in result.facts), [
        n.kind for n in result.facts
    ]


def test_a_garbage_collection_during_a_first_call_is_not_the_call_s_cost():
    """A long session's heap can take a second to collect; the collection falls wherever Python
    allocates next. As ``timeit`` does for its loops, the first calls run with collection paused:
    an eager ``x + 1`` whose first call would have paid for one is measured, not stopped."""
    import gc

    state = {"inside": False, "paid": 0}

    def pay_for_a_collection(phase, info):
        if phase == "start" and state["inside"]:
            state["paid"] += 1
            time.sleep(0.5)  # what collecting a large heap costs

    def allocates_cycles(x):
        if not isinstance(x, jax.core.Tracer):
            state["inside"] = True
            try:
                for _ in range(2_000):  # cyclic garbage: past any threshold below
                    cycle: list = []
                    cycle.append(cycle)
            finally:
                state["inside"] = False
        return x + 1

    thresholds = gc.get_threshold()
    gc.callbacks.append(pay_for_a_collection)
    gc.set_threshold(100, 10, 10)
    try:
        result, wall = timed_compare(Call(allocates_cycles, (jnp.ones(8),), {}), budget=2.0)
    finally:
        gc.callbacks.remove(pay_for_a_collection)
        gc.set_threshold(*thresholds)
    assert state["paid"] == 0
    assert result.modes["eager"].source == "repeats"
    assert wall <= 2.0 * WALL_MARGIN + result.compile.first_call_s


def compiles_at_every_eager_call(sleep_s: float):
    """``x + 1`` that, called with values, first sleeps ``sleep_s`` and then runs a ``lax.fori_loop``
    over a closure made anew at each call, as BlackJAX's ``nuts.step`` does: JAX compiles the loop
    again at every eager call, so its first call less its compiling says nothing of the next."""

    def f(x):
        if not isinstance(x, jax.core.Tracer):
            time.sleep(sleep_s)
            scale = float(x[0])  # a new closure each call

            def body(i, c):
                for _ in range(60):
                    c = jnp.sin(c * scale + i)
                return c

            jax.block_until_ready(jax.lax.fori_loop(0, 3, body, x))
        return x + 1

    return f


@pytest.mark.skipif(jax.default_backend() != "cpu", reason=CPU_TIMED)
def test_an_eager_figure_from_a_first_call_that_compiled_is_a_lower_bound():
    """With no time left for a second eager call, the figure is its first call less its compiling:
    a later eager call may compile again (it does here, and in BlackJAX's ``nuts.step``, where this
    read 41 ms of a 680 ms call), so it is shown as a lower bound and the note says why."""
    result = compare(Call(compiles_at_every_eager_call(0.7), (jnp.ones(8),), {}), budget=1.5)
    eager = result.modes["eager"]
    assert eager.source == "first call, compiled", (eager, result.warnings)
    assert eager.lower_bound and result.speedup_interval is None
    (single,) = [n for n in result.facts if n.kind == "single_sample"]
    assert single.facts["compiled"] >= 1 and "at least" in single.text and "compile again" in single.text
    started = time.perf_counter()  # the truth: a later call, timed by hand, is no faster than the bound
    jax.block_until_ready(compiles_at_every_eager_call(0.7)(jnp.ones(8)))
    assert time.perf_counter() - started >= eager.median


def compiles_a_large_program_when_eager():
    """``x + 1`` that, called with values, first runs a large jitted function: its first eager call
    compiles it, all of that inside JAX (traced, it costs nothing: jit's first call is quick)."""

    def inner(x):
        for step in range(400):
            x = jnp.sin(x) * 1.001 + step
        return x

    inner_jit = jax.jit(inner)

    def f(x):
        if not isinstance(x, jax.core.Tracer):
            jax.block_until_ready(inner_jit(x))
        return x + 1

    return f


def _compiles(thunk) -> int:
    """How many programs JAX compiled while ``thunk`` ran (its own count, ``jax_log_compiles``)."""
    import logging

    seen = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())  # type: ignore[method-assign]
    logging.getLogger("jax").addHandler(handler)
    try:
        with jax.log_compiles(True):
            jax.block_until_ready(thunk())
    finally:
        logging.getLogger("jax").removeHandler(handler)
    return sum(message.startswith("Compiling") for message in seen)


def test_an_eager_first_call_inside_jax_past_its_time_is_not_stopped_there_and_says_so():
    """Eager's first call spends its time inside JAX, compiling the inner jit: it is not stopped
    there (an exception inside JAX's lowering left a function compiling again at every later call),
    so it runs past the time the budget left it. The report says by how much, the comparison ends
    within the budget and a tenth plus that, and the user's function then runs from JAX's caches."""
    probe = compiles_a_large_program_when_eager()
    started = time.perf_counter()
    jax.block_until_ready(probe(jnp.ones(8)))
    compiling_s = time.perf_counter() - started
    f = compiles_a_large_program_when_eager()
    budget_s = 0.75 * compiling_s  # eager's first call gets about half of what it takes
    result, wall = timed_compare(Call(f, (jnp.ones(8),), {}), budget=budget_s)
    late = [n for n in result.facts if n.facts.get("late_s")]
    # stopped once back in the user's code (while it compiled: no figure, said), or run to its end
    assert [n.kind for n in late] in (["stopped"], ["stopped_compiling"], ["first_call_overran"]), result.warnings
    assert "inside JAX or a library" in late[0].text
    if not any(n.kind == "budget_overrun" for n in result.facts):  # jit's needed repeats may pass it, said
        assert wall <= budget_s * WALL_MARGIN + late[0].facts["late_s"], (wall, result.warnings)
    _compiles(lambda: f(jnp.ones(8)))  # what a stopped first call left to compile
    assert _compiles(lambda: f(jnp.ones(8))) == 0


def test_an_eager_call_far_longer_than_foretold_in_the_repeats_says_how_far_past_it_ran():
    """One eager call in the repeats runs far longer than the warm-up foretold (it pauses 0.5 s,
    as a call that compiles again would): a call is never stopped inside, so the repeats end past
    eager's time, and the note says by how much."""
    started, paused = [0.0], []

    def f(x):
        if not isinstance(x, jax.core.Tracer) and not paused and time.perf_counter() - started[0] > 0.6:
            paused.append(True)
            time.sleep(0.5)
        return x + 1

    started[0] = time.perf_counter()
    result, wall = timed_compare(Call(f, (jnp.ones(8),), {}), budget=1.0)
    assert paused, result.warnings  # the pause fell inside the comparison
    # cut short after it, or, where it fell in eager's last repeat, said on its own
    (late,) = [n for n in result.facts if n.kind in ("stopped_early", "repeat_overran") and n.mode == "eager"]
    assert late.facts["late_s"] > 0 and "past the time eager was left" in late.text, late.text
    assert wall >= 1.1  # the paused call ended 1.1 s in at the earliest: past the budget, as the note says


@pytest.mark.skipif(jax.default_backend() != "cpu", reason=CPU_TIMED)
def test_jitted_repeats_on_a_machine_that_slows_down_keep_their_floor_as_a_duration():
    """A busy machine makes each jitted call far slower than the warm-up foretold (under a loaded
    CI, a 7 µs call took 170 µs): where the budget is spent and the repeats run at their floor, the
    floor is ``budget.FLOOR_S`` of calls at what they were seen to cost, not a count planned on a
    quiet moment, so the seven repeats still end within the budget (before: 7 × 0.24 s on 1.5 s)."""
    calls, busy = [], []

    def f(x):
        def host(v):
            calls.append(None)
            if len(calls) == 1:
                time.sleep(1.3)  # a first call that spends the budget (exempt, as compiling is)
            elif busy:
                time.sleep(5e-3)  # another program took the core
            return v

        return jax.pure_callback(host, jax.ShapeDtypeStruct(x.shape, x.dtype), x + 1)

    def on_progress(step):
        if step.stage == "repeat":
            busy.append(True)

    budget_s = 1.5
    start = time.perf_counter()
    result = compare(Call(f, (jnp.ones(8),), {}), modes="jit", budget=budget_s, on_progress=on_progress)
    wall = time.perf_counter() - start
    jit = result.modes["jit"]
    assert busy and jit.source == "repeats" and jit.repeat == 7
    assert wall <= budget_s * WALL_MARGIN + result.compile.first_call_s, (wall, result.warnings)
    assert jit.loops * jit.median >= 0.9 * budget.FLOOR_S, (jit.loops, jit.median)


def test_a_late_call_in_eager_s_last_repeat_is_said_though_nothing_was_cut():
    """The pause falls in the very last call of eager's last repeat (3 calls waited for, then 3
    pipelined): no repeat is left to cut, and the note still says how far past its time it ran."""
    last_repeat, calls = [], []

    def f(x):
        if not isinstance(x, jax.core.Tracer) and last_repeat:
            calls.append(None)
            if len(calls) == 6:
                time.sleep(1.2)
        return x + 1

    def on_progress(step):
        if step.stage == "repeat" and step.index == step.of:
            last_repeat.append(True)

    result, wall = timed_compare(
        Call(f, (jnp.ones(8),), {}), modes="eager", loops=3, repeat=2, budget=1.0, on_progress=on_progress
    )
    assert len(calls) == 6 and result.modes["eager"].repeat == 2, result.warnings
    (late,) = [n for n in result.facts if n.kind == "repeat_overran"]
    assert late.mode == "eager" and late.facts["late_s"] >= wall - 1.0 - 0.1, (late.facts, wall)
    assert "past the time eager was left" in late.text and "no call is stopped" in late.text, late.text


def test_an_eager_first_call_stopped_while_jax_compiles_its_operations_gives_no_figure():
    """Eager code's first call compiles each operation it runs for the first time (an Optax step
    on a cold process: 2 s, then 5 ms a call). Stopped while compiling, its time is no bound on a
    later call: no eager figure, speed-up or break-even, and the note says why (before: "eager ≥
    1.4 s", "at least 31,000× faster", a break-even of 1 call)."""

    def f(x):
        total = 0.0
        for k in range(120):  # a shape of its own each time: every operation compiles on first sight
            total = total + jnp.sin(jnp.full((k + 1, 29), 1.0) * x).sum()
        return total

    result = compare(Call(f, (jnp.float32(0.5),), {}), budget=3.0)  # jit's compile leaves eager a share
    (said,) = [n for n in result.facts if n.kind == "stopped_compiling"]
    assert said.mode == "eager" and said.facts["compilations"] > 0, said.facts
    assert "not measured" in said.text and "compiling" in said.text and "--budget" in said.text, said.text
    assert "eager" not in result.modes and result.speedup is None and result.break_even_calls is None
    assert result.modes["jit"].source == "repeats"
