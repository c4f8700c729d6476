"""What is left of a function after ahead-of-time compilation, and a shape with no values: %jaxpr
traces a jax.ShapeDtypeStruct as the shape and dtype it is; %jitcompare, which runs the call, asks
for an array; a Lowered or Compiled object is a UsageError that says what to pass instead."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError


def test_jaxpr_traces_a_shape_dtype_struct(run):
    run("def double(x):\n    return x * 2").assert_ok()
    shown = run("%jaxpr -o double(jax.ShapeDtypeStruct((3,), jnp.float32))").assert_ok()
    assert shown.result.primitive_counts.get("mul") == 1
    assert [(v.aval.shape, str(v.aval.dtype)) for v in shown.result.jaxpr.jaxpr.invars] == [((3,), "float32")]


def test_jitcompare_asks_for_an_array_in_place_of_a_shape_dtype_struct(run):
    run("def double(x):\n    return x * 2").assert_ok()
    shown = run("%jitcompare double(jax.ShapeDtypeStruct((3,), jnp.float32))")
    assert isinstance(shown.error, UsageError)
    assert "`x` is a jax.ShapeDtypeStruct" in str(shown.error) and "jnp.zeros((3,), jnp.float32)" in str(shown.error)


@pytest.mark.parametrize("magic", ["%jaxpr", "%jitcompare"])
@pytest.mark.parametrize("stage", ["lower(jnp.ones(3))", "lower(jnp.ones(3)).compile()"])
def test_an_ahead_of_time_object_is_a_usage_error_that_says_what_to_pass(run, magic, stage):
    run(f"def double(x):\n    return x * 2\nahead = jax.jit(double).{stage}").assert_ok()
    shown = run(f"{magic} ahead(jnp.ones(3))")
    assert isinstance(shown.error, UsageError), shown.error
    message = str(shown.error)
    assert "`ahead` is ahead-of-time" in message and f"{magic} f(x)" in message
    if magic == "%jitcompare":
        assert "no eager form" in message
    else:
        assert "ahead.as_text()" in message
