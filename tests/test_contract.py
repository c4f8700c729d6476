"""The attributes DESIGN.md promises on every report (what ``-o`` returns) are there, and hold what
they say: these names are the user-facing contract."""

import math

CONTRACT = {
    "JaxprReport": "jaxpr text stablehlo hlo cost memory primitive_counts n_eqns source_lines"
    " values first_nonfinite peak_bytes live_at_peak",
    "Comparison": "modes compile speedup break_even_calls warnings",
    "Timing": "median mean stdev best worst loops repeat all_runs",
    "CompileCost": "trace_s lower_s compile_s first_call_s",
    "RecompileLog": "events counts",
    "RecompileEvent": "function defined_at call_site compile_s causes advice raw",
    "Cause": "kind argument before after message",
    "Diagnosis": "pitfall explanation fix where",
}
CAUSE_KINDS = {
    "first_call",
    "shape",
    "dtype",
    "weak_type",
    "static_value",
    "pytree_structure",
    "sharding",
    "device",
    "config",
    "redefined_function",
    "jit_options",
    "caches_cleared",
    "unknown",
}


def check(obj, name):
    assert type(obj).__name__ == name
    missing = [a for a in CONTRACT[name].split() if not hasattr(obj, a)]
    assert missing == [], f"{name} lacks {missing}"


def test_every_report_has_the_promised_attributes(run):
    run("x = jnp.ones(3)\n@jax.jit\ndef f(x):\n    return jnp.sin(x).sum()").assert_ok()
    jaxpr = run("%jaxpr -o f(x)").assert_ok().result
    comparison = run("%jitcompare -o -q -n 2 -r 2 f(x)").assert_ok().result
    log = run("%%recompiles -o\nf(jnp.ones(4))\nf(jnp.ones(5))").assert_ok().result
    run("import jaxmagic\ndef g(v):\n    if v.sum() > 0:\n        return v\n    return -v").assert_ok()
    diagnosis = (
        run("try:\n    jax.jit(g)(x)\nexcept Exception as e:\n    found = jaxmagic.diagnose(e)\nfound")
        .assert_ok()
        .result
    )

    check(jaxpr, "JaxprReport")
    assert jaxpr.n_eqns == sum(jaxpr.primitive_counts.values())
    check(comparison, "Comparison")
    for timing in comparison.modes.values():
        check(timing, "Timing")
        assert len(timing.all_runs) == timing.repeat and timing.best <= timing.median <= timing.worst
    check(comparison.compile, "CompileCost")
    assert comparison.speedup == comparison.modes["eager"].median / comparison.modes["jit"].median
    assert comparison.break_even_calls >= 1 or math.isinf(comparison.break_even_calls)
    check(log, "RecompileLog")
    assert log.counts == {"f": 2}
    event = log.events[-1]
    check(event, "RecompileEvent")
    cause = event.causes[0]
    check(cause, "Cause")
    assert cause.kind in CAUSE_KINDS
    assert (cause.kind, cause.argument, cause.before, cause.after) == ("shape", "x", "f32[4]", "f32[5]")
    check(diagnosis, "Diagnosis")
    assert diagnosis.pitfall == "python-control-flow"


def test_trace_refuses_a_display_option_and_names_the_view_that_takes_it():
    import jax.numpy as jnp
    import pytest

    import jaxmagic

    call = jaxmagic.Call(jnp.sin, (jnp.ones(3),), {})
    with pytest.raises(TypeError, match=r"JaxprView\(trace\(call\), stage='hlo'\)"):
        jaxmagic.trace(call, stage="hlo")
    with pytest.raises(TypeError, match="unexpected keyword argument 'transform'"):
        jaxmagic.trace(call, transform=("grad",))
    shown = jaxmagic.JaxprView(jaxmagic.trace(call), stage="hlo").to_text()
    assert "sine" in shown or "sin" in shown
