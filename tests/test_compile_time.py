"""``%jaxpr --compile-time``: what compiling costs by phase (tracing, lowering, XLA compile), where
tracing spent its time by source line, and how many equations each line made, with the hint that
a Python loop was unrolled; ``JaxprReport.line_counts`` always."""

import jax
import jax.numpy as jnp
import pytest

from jaxmagic.doctor import rewrites

SETUP = """def unrolled(x):
    for _ in range(1200):
        x = jnp.sin(x) * 0.5
    return x.sum()

x = jnp.ones(8)
"""


@pytest.fixture
def unrolled_defined(run):
    run(SETUP).assert_ok()


def test_equations_by_line_add_up_to_jax_s_count(ip, run, unrolled_defined):
    report = run("%jaxpr -o --max-eqns 5 unrolled(x)").assert_ok().result
    truth = jax.make_jaxpr(ip.user_ns["unrolled"])(ip.user_ns["x"])
    assert sum(report.line_counts.values()) == len(truth.jaxpr.eqns) == report.n_eqns
    top, count = next(iter(report.line_counts.items()))
    assert top.endswith(" line 3") and count == 2400
    assert report.trace_line_seconds is None, "sampling only with --compile-time"


def test_compile_time_names_the_line_that_made_the_equations(run, unrolled_defined):
    shown = run("%jaxpr -o --compile-time --max-eqns 5 unrolled(x)").assert_ok()
    report = shown.result
    assert report.trace_seconds > 0 and report.lower_seconds > 0 and report.compile_seconds > 0
    if report.trace_samples.reliable:
        slowest = next(iter(report.trace_line_seconds))
        assert slowest.endswith(" line 3"), report.trace_line_seconds
        assert "sampled only" not in shown.text
    else:  # native code held the interpreter: no split by line, and the user is told why
        assert report.trace_line_seconds == {} and "not split by line" in shown.text
    assert "tracing" in shown.text and "XLA compile" in shown.text and "2,400" in shown.text
    assert "lax.fori_loop or lax.scan" in shown.text and "jm-compile-time" in shown.html
    assert "x = jnp.sin(x) * 0.5" in shown.text


def test_no_hint_when_no_line_dominates(run):
    run("def small(v):\n    a = jnp.sin(v)\n    return jnp.cos(a)").assert_ok()
    shown = run("%jaxpr --compile-time small(jnp.ones(3))").assert_ok()
    assert "lax.fori_loop" not in shown.text and "compile time:" in shown.text


def test_uneven_samples_are_not_split_by_line(run, unrolled_defined):
    """A sampler that looks rarely (here every 0.2 s, longer than the trace) cannot split the time."""
    from jaxmagic.tracing import trace_sampling

    interval = trace_sampling.INTERVAL_S
    trace_sampling.INTERVAL_S = 0.2
    try:
        shown = run("%jaxpr -o --compile-time --max-eqns 5 unrolled(x)").assert_ok()
    finally:
        trace_sampling.INTERVAL_S = interval
    assert not shown.result.trace_samples.reliable and shown.result.trace_line_seconds == {}
    assert "not split by line" in shown.text and "2,400" in shown.text


def test_the_unrolled_loop_is_measured_as_lax_fori_loop_and_the_rewrite_shown_runs_to_the_same_values(ip, run):
    run(
        "def smooth(v, w):\n    for i in range(120):\n        v = jnp.tanh(v @ w) * 0.5 + i\n    return v\n"
    ).assert_ok()
    run("v0, w0 = jnp.ones((2, 4)), jnp.eye(4) / 4").assert_ok()
    shown = run("%jaxpr -o --compile-time --max-eqns 5 smooth(v0, w0)").assert_ok()
    found = shown.result.loop_alternative
    assert found is not None and found.check == "same" and found.where.line == 2
    assert found.equations_before == len(jax.make_jaxpr(ip.user_ns["smooth"])(ip.user_ns["v0"], ip.user_ns["w0"]).eqns)
    assert found.equations_after < found.equations_before / 100
    assert "rewritten as `lax.fori_loop` below" in shown.text and "same values on your arguments" in shown.text
    lax = rewrites.jax_names(ip.user_ns).lax  # as the user's namespace spells it: `jax.lax`, or `lax` imported
    assert f"v = {lax}.fori_loop(0, 120, loop_body, v)" in shown.text
    # the code shown, run as the user would run it: the same values as their loop, jitted
    expected = jax.jit(ip.user_ns["smooth"])(ip.user_ns["v0"], ip.user_ns["w0"])
    run(found.code.replace("def smooth(", "def smooth_fori(")).assert_ok()
    got = ip.user_ns["smooth_fori"](ip.user_ns["v0"], ip.user_ns["w0"])
    assert jnp.allclose(got, expected, rtol=1e-5)
    # where jaxmagic measured: the user's function and namespace as they were
    assert ip.user_ns["smooth"].__code__.co_firstlineno == 1


def test_a_loop_the_rewrite_cannot_carry_is_only_hinted(run):
    run(
        "def collect(v):\n    out = []\n    for i in range(300):\n        out.append(jnp.sin(v) + i)\n    return jnp.stack(out)\n"
    ).assert_ok()
    shown = run("%jaxpr -o --compile-time --max-eqns 5 collect(jnp.ones(3))").assert_ok()
    assert shown.result.loop_alternative is None
    assert "lax.fori_loop or lax.scan" in shown.text and "rewritten as" not in shown.text
