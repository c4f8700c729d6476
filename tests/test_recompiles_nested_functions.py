"""A function's recompilation is explained as its own, even when JAX also traced a nested function
inside it (a ``lax.scan`` body lambda, a ``jax.checkpoint``-ed lambda), with or without JAX's own
explanations."""

import pytest

SETUP = """
from jax import lax

@jax.jit
def cumulative(xs):
    return lax.scan(lambda c, x: (c + x, c), 0.0, xs)[1]

def smooth(x):
    return jnp.sum(jax.checkpoint(lambda v: jnp.sin(v) ** 2)(x))

smooth_grad = jax.jit(jax.grad(smooth))
"""


@pytest.mark.parametrize("explain", ["", " --explain"])
def test_a_nested_lambda_does_not_replace_the_function_s_own_cause(run, explain):
    suffix = "_explained" if explain else ""  # each case defines its own functions: none is re-defined
    run(SETUP.replace("cumulative", "cumulative" + suffix).replace("smooth", "smooth" + suffix)).assert_ok()
    log = (
        run(
            f"%%recompiles -o{explain}\ncumulative{suffix}(jnp.ones(3))\ncumulative{suffix}(jnp.ones(4))\n"
            f"smooth{suffix}_grad(jnp.ones(3))\nsmooth{suffix}_grad(jnp.ones(5))"
        )
        .assert_ok()
        .result
    )
    second = [e for e in log.events if e.function in ("cumulative" + suffix, "smooth" + suffix)]
    kinds = [[c.kind for c in e.causes] for e in second]
    assert kinds == [["first_call"], ["shape"], ["first_call"], ["shape"]], kinds
    assert all(c.argument in ("xs", "x") for e in second[1::2] for c in e.causes)


def test_distinct_functions_first_compiled_from_one_call_site_are_first_compilations(run):
    run(
        "@jax.jit\ndef mean_abs(x):\n    return jnp.mean(jnp.abs(x))\n"
        "@jax.jit\ndef rms(x):\n    return jnp.sqrt(jnp.mean(x ** 2))\n"
        "@jax.jit\ndef peak(x):\n    return jnp.max(x)\n"
    ).assert_ok()
    log = run("%%recompiles -o\nfor metric in (mean_abs, rms, peak):\n    metric(jnp.ones(7))").assert_ok().result
    assert log.counts == {"mean_abs": 1, "rms": 1, "peak": 1}
    assert [[c.kind for c in e.causes] for e in log.events] == [["first_call"]] * 3, (
        "three distinct functions called from one line are not one function re-defined"
    )
