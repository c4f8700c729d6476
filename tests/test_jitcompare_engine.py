"""The engines behind %jitcompare, without a shell: statistics, break-even, warnings, the result
check, memory figures, the first-call split and the budget, on real JAX."""

import math
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmagic
from jaxmagic.errors import UsageProblem
from jaxmagic.timing import Timing, agreement, compare, footprint, modes, stopwatch
from jaxmagic.timing.comparison import break_even
from jaxmagic.timing.session_report import _timing_warnings
from jaxmagic.tracing.call import Call


def test_public_names():
    assert jaxmagic.compare is compare and jaxmagic.Timing is Timing
    assert jaxmagic.CompileCost is stopwatch.CompileCost
    assert jaxmagic.Comparison.__name__ == "Comparison"


def test_timing_statistics_match_the_statistics_module():
    runs = [3e-6, 1e-6, 2e-6, 10e-6]
    t = Timing("jit", runs, loops=1000)
    assert t.median == statistics.median(runs) and t.mean == statistics.fmean(runs)
    assert t.stdev == pytest.approx(statistics.stdev(runs))
    assert (t.best, t.worst, t.repeat, t.loops) == (1e-6, 10e-6, 4, 1000)
    assert Timing("jit", [1e-3], loops=1).stdev == 0.0


@pytest.mark.parametrize(
    "eager, jit_first, jit",
    [
        (1e-3, 0.1, 1e-4),
        (1e-3, 0.0005, 1e-4),
        (1e-4, 0.5, 1e-4),
        (1e-4, 0.02, 2e-4),
        (5e-3, 1.0, 3e-3),
        (2e-3, 0.031, 1e-3),
        (2e-3, 0.003, 1e-3),
    ],
)
def test_break_even_is_the_first_call_count_where_jit_has_cost_no_more(eager, jit_first, jit):
    n = break_even(eager, jit_first, jit)

    def jit_cost(k):
        return jit_first + (k - 1) * jit

    def eager_cost(k):
        return k * eager

    if math.isinf(n):
        assert all(jit_cost(k) > eager_cost(k) for k in (1, 10, 10**6, 10**12))
    else:
        assert jit_cost(n) <= eager_cost(n) + 1e-15
        assert n == 1 or jit_cost(n - 1) > eager_cost(n - 1)


def test_slow_repeat_warning_as_timeit_gives_it():
    plans = {"jit": stopwatch_plan(100)}
    steady = _timing_warnings({"jit": Timing("jit", [1e-3, 1.1e-3, 1.2e-3], loops=100)}, plans, 1e-9, set())
    jumpy = _timing_warnings({"jit": Timing("jit", [1e-3, 1.1e-3, 9e-3], loops=100)}, plans, 1e-9, set())
    assert steady == []
    (note,) = jumpy  # a fact with its number, and its sentence
    assert (note.kind, note.mode, note.warning) == ("uneven_repeats", "jit", True)
    assert note.facts["ratio"] == pytest.approx(9.0)
    assert "slowest repeat took 9.0× longer than the fastest" in note.text


def test_timer_resolution_warning_depends_on_how_long_a_repeat_lasts():
    timing = Timing("jit", [2e-6, 2e-6], loops=10)
    short = _timing_warnings({"jit": timing}, {"jit": stopwatch_plan(10)}, 5e-8, set())
    assert [n.kind for n in short] == ["timer_floor"] and "timer's resolution" in short[0].text
    assert short[0].facts["stretch_s"] == pytest.approx(2e-5)
    long_repeats = Timing("jit", [2e-6, 2e-6], loops=100_000)
    assert _timing_warnings({"jit": long_repeats}, {"jit": stopwatch_plan(100_000)}, 5e-8, set()) == []


def stopwatch_plan(loops):
    from jaxmagic.timing.session import _Plan

    return _Plan(loops=loops, repeat=3)


def test_agreement_checks_structure_shape_values_and_exact_integers():
    base = {"a": jnp.ones(3), "b": (jnp.arange(3), 2.0)}
    assert agreement.mismatch(base, {"a": jnp.ones(3), "b": (jnp.arange(3), 2.0)}) is None
    assert "structure differs" in str(agreement.mismatch(base, {"a": jnp.ones(3)}))
    assert "shape differs" in str(agreement.mismatch(base, {"a": jnp.ones(4), "b": (jnp.arange(3), 2.0)}))
    off_by_one = agreement.mismatch(base, {"a": jnp.ones(3), "b": (jnp.arange(3) + jnp.array([0, 0, 1]), 2.0)})
    assert off_by_one.where == "output['b'][0]" and "(at index (2,))" in off_by_one.detail
    nan = agreement.mismatch(jnp.array([1.0, jnp.nan]), jnp.array([1.0, 1.0]))
    assert "NaN" in nan.detail
    assert agreement.mismatch(jnp.array([1.0, jnp.nan]), jnp.array([1.0, jnp.nan])) is None
    assert agreement.mismatch(jnp.ones(2), jnp.ones(2) * 1.01) is not None
    assert agreement.mismatch(jnp.ones(2), jnp.ones(2) * 1.01, rtol=0.05) is None
    assert agreement.mismatch(jnp.ones(2, jnp.bfloat16), jnp.ones(2, jnp.bfloat16) * 1.005) is None
    assert agreement.mismatch(0.1 * 3, jnp.float32(0.1) * 3) is None  # a Python float against float32
    assert agreement.mismatch(np.float64(0.1) * 3, np.float64(0.3) + 1e-6) is not None


def test_intermediate_bytes_follow_inner_jit_calls():
    inner = jax.jit(lambda v: jnp.sin(v) * 2)
    closed = jax.make_jaxpr(lambda v: inner(v) + 1)(jnp.ones(100))
    assert footprint.intermediate_bytes(closed) == 2 * 400  # sin, mul inside the inner jit; add is the output


def test_first_call_records_the_compile_work_and_a_second_first_call_has_none():
    def fresh(v):
        return jnp.cos(v) * 3

    runner = modes.build("jit", Call(fresh, (jnp.ones(16),), {}))
    cost, output = stopwatch.first_call(runner)
    assert cost.trace_s > 0 and cost.lower_s > 0 and cost.compile_s > 0 and cost.compilations == 1
    assert cost.one_time_s + cost.run_s == pytest.approx(cost.first_call_s)
    again, _ = stopwatch.first_call(runner)
    assert again.compilations == 0 and again.one_time_s == 0
    assert float(output[0]) == pytest.approx(3 * math.cos(1.0))


def test_jit_mode_compiles_even_a_function_the_session_has_already_compiled():
    def seen(v):
        return jnp.tan(v)

    jax.jit(seen)(jnp.ones(4)).block_until_ready()  # the notebook's own jit of it
    cost, _ = stopwatch.first_call(modes.build("jit", Call(seen, (jnp.ones(4),), {})))
    assert cost.compilations == 1  # the first call is measured as a first call, not a cache hit


def test_donated_arguments_get_a_fresh_copy_for_every_call():
    @jax.jit
    def plus(state):
        return state + 1

    call = Call(plus, (jnp.ones(4),), {}, donate_argnums=(0,))
    runner = modes.build("jit", call)
    stopwatch.timed_loop(runner, 3, stopwatch.waiter(runner.call()))
    assert not call.args[0].is_deleted()


def test_op_by_op_mode_runs_under_disable_jit_only_while_it_runs():
    seen = []

    def probe(v):
        seen.append(jax.config.jax_disable_jit)
        return v

    runner = modes.build("op-by-op", Call(probe, (jnp.ones(2),), {}))
    runner.call()
    assert seen == [True] and not jax.config.jax_disable_jit


def test_parse_modes():
    assert modes.parse_modes(None) == ("eager", "jit")
    assert modes.parse_modes(["JIT", " eager "]) == ("jit", "eager")
    with pytest.raises(UsageProblem, match="unknown mode `vmap`"):
        modes.parse_modes("eager,vmap")
    with pytest.raises(UsageProblem, match="xla_force_host_platform_device_count=8"):
        modes.parse_modes("pmap", device_count=1)
    assert modes.parse_modes("all", device_count=8) == ("eager", "jit", "op-by-op", "sharded", "pmap")


def test_a_tiny_budget_goes_to_jit_first_and_says_in_words_what_eager_did_not_get():
    def f(v):
        return jnp.sum(jnp.sin(v) ** 2)

    result = compare(Call(f, (jnp.ones(256),), {}, source="f(v)"), budget=1e-3)
    jit = result.modes["jit"]
    assert jit.source == "repeats" and jit.repeat >= 3  # the repeats its median needs, past the budget
    assert "eager" not in result.modes and result.speedup is None  # no number where none was measured
    (not_run,) = [n for n in result.facts if n.kind == "not_run"]
    assert not_run.mode == "eager" and "eager: not run" in not_run.text and not_run.warning
    (overrun,) = [n for n in result.facts if n.kind == "budget_overrun"]
    # what the repeats did not fit in: the budget the first calls had spent, not "calls so long"
    assert "budget spent by the first calls" in overrun.text and overrun.facts["left_s"] < 1e-3, overrun.text
    assert result.name == "f(v)" and not result.interrupted


def test_auto_ranging_fills_about_a_fifth_of_a_second_per_repeat():
    def f(v):
        return v * 2

    result = compare(Call(f, (jnp.ones(16),), {}), modes="jit", repeat=2, budget=30)
    timing = result.modes["jit"]
    assert timing.source == "repeats" and timing.repeat == 2
    assert timing.loops > 100  # a ~µs call: many calls per repeat, not one
    assert timing.loops * timing.best > 0.02  # sized for 0.2 s: even a slow repeat is far above a few ms


def test_one_pause_during_the_calibration_run_does_not_shrink_every_repeat():
    """The run that sizes the repeats takes the fastest of its loops, as timeit reports its best:
    a single pause of the machine (here, one call of the user's callback that sleeps) must not
    make every later repeat far shorter than the fifth of a second it is sized for."""
    seen = []
    pause_at = [None]  # the call that pauses, inside the calibration run

    def pause_once(v):
        seen.append(None)
        if len(seen) == pause_at[0]:
            time.sleep(0.06)
        return v

    def f(v):
        return jax.pure_callback(pause_once, jax.ShapeDtypeStruct(v.shape, v.dtype), v)

    def by_hand() -> float:
        """The median of 200 calls timed by hand: what a call costs now (a loaded machine's load changes)."""
        times = []
        for _ in range(200):
            start = time.perf_counter()
            jax.block_until_ready(runner.call())
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    runner = modes.build("jit", Call(f, (jnp.ones(16),), {}))
    _, output = stopwatch.first_call(runner)
    wait = stopwatch.waiter(output)
    before = by_hand()
    single = stopwatch.timed_loop(runner, 1, wait)
    # the pause falls inside the calibration run: about halfway through the calls it makes (40 calls in,
    # at most), whatever a call costs on this machine (a TPU's callback costs a round trip to the host)
    pause_at[0] = len(seen) + max(2, min(40, int(stopwatch.CALIBRATION_S / before / 2)))
    sized = stopwatch.estimate(runner, wait, single_call_s=single)
    assert len(seen) >= pause_at[0]  # and it did
    after = by_hand()
    assert sized.timed < 2 * max(before, after), (sized, before, after)


def test_numpy_arguments_and_python_scalars_in_the_output():
    def f(v, scale):
        return {"y": v * scale, "scale": scale}

    result = compare(Call(f, (np.ones(8, np.float32), 2.0), {}, static_argnums=(1,)), loops=2, repeat=2)
    assert list(result.modes) == ["eager", "jit"]
    assert not [w for w in result.warnings if "differ" in w]


def test_every_timed_call_waits_for_its_result():
    def heavy(a):
        return jnp.tanh(a @ a)

    a = jnp.ones((700, 700)) / 700
    blocked = jax.jit(heavy)
    blocked(a).block_until_ready()
    by_hand = []
    for _ in range(3):
        start = time.perf_counter()
        blocked(a).block_until_ready()
        by_hand.append(time.perf_counter() - start)
    result = compare(Call(heavy, (a,), {}), modes="jit", loops=3, repeat=3)
    # Without waiting, a call would only be dispatched: a few µs instead of the milliseconds of work
    # (a thousandth of it), far below a tenth even on a machine busy with other work.
    assert result.modes["jit"].best > 0.1 * min(by_hand)


def test_garbage_collection_is_paused_while_timing_as_timeit_does():
    import gc

    seen = []

    def probe(v):
        seen.append(gc.isenabled())
        return v + 1

    compare(Call(probe, (jnp.ones(2),), {}), modes="eager", loops=3, repeat=2)
    assert seen[0] is True  # the first call runs as the user's code normally runs
    assert seen[-6:] == [False] * 6  # the timed repeats
    assert gc.isenabled()


def test_a_first_call_served_by_the_persistent_cache_is_said(tmp_path):
    import json
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(f"""
        import json, jax, jax.numpy as jnp
        jax.config.update("jax_compilation_cache_dir", {str(tmp_path)!r})
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
        from jaxmagic import Call, compare

        def f(x):
            return jnp.tanh(x) * 3 + 1

        cold = compare(Call(f, (jnp.ones(64),), {{}}), loops=2, repeat=2)
        warm = compare(Call(f, (jnp.ones(64),), {{}}), loops=2, repeat=2)  # a new wrapper: the disk cache
        print(json.dumps([cold.first_calls["jit"].persistent_cache_hits, warm.first_calls["jit"].persistent_cache_hits,
                          [n for n in warm.notes if "persistent compilation cache" in n],
                          [n for n in cold.notes if "persistent compilation cache" in n]]))
    """)
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "JAX_PLATFORMS": "cpu"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    cold_hits, warm_hits, warm_notes, cold_notes = json.loads(done.stdout.strip().splitlines()[-1])
    assert (cold_hits, warm_hits) == (0, 1)
    assert len(warm_notes) == 1 and cold_notes == []
