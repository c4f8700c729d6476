"""``%jaxpr --compile-time``: what compiling costs by phase (tracing, lowering, XLA compile), where
tracing spent its time by source line, and how many equations each line made, with the hint that
a Python loop was unrolled; ``JaxprReport.line_counts`` always."""

import jax
import pytest

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
