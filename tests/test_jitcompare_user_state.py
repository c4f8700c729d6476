"""Timing leaves the user's state alone: donated arguments are copied whether given by position or
by keyword, in jit and sharded modes; results JAX compares specially (typed PRNG keys) are
compared without failing."""

import pytest

DONATING = """
import functools
@functools.partial(jax.jit, donate_argnums=(0,))
def relax(state, k):
    return state * 0.5 + k
state = jnp.arange(4.0)
"""


@pytest.mark.parametrize("modes", ["eager,jit", "jit"])
def test_a_donated_argument_given_by_keyword_is_copied(run, modes):
    run(DONATING).assert_ok()
    result = run(f"%jitcompare -q -o -r 2 -n 3 --modes {modes} relax(state=state, k=1.0)").assert_ok().result
    assert list(result.modes) == modes.split(",")
    assert run("state.is_deleted()").assert_ok().result is False
    assert run("state.tolist()").assert_ok().result == [0.0, 1.0, 2.0, 3.0]


def test_a_donated_argument_given_by_position_is_still_copied(run):
    run(DONATING).assert_ok()
    run("%jitcompare -q -r 2 -n 3 relax(state, 1.0)").assert_ok()
    assert run("state.is_deleted()").assert_ok().result is False


def test_results_holding_typed_prng_keys_are_compared(run):
    run(
        "def split_keys(key):\n    a, b = jax.random.split(key)\n    return a, b, jax.random.normal(b, (3,))\n"
        "key = jax.random.key(0)"
    ).assert_ok()
    result = run("%jitcompare -q -o -r 2 -n 3 split_keys(key)").assert_ok().result
    assert not any("differ" in w for w in result.warnings), result.warnings
    assert list(result.modes) == ["eager", "jit"]


def test_where_xla_rewrites_the_algebra_both_values_are_shown(run):
    import jax
    import jax.numpy as jnp

    def f(x):
        return jnp.log(jnp.exp(x))

    with jax.disable_jit():
        eager = float(f(jnp.float32(100.0)))
    compiled = float(jax.jit(f)(jnp.float32(100.0)))
    if eager == compiled:
        pytest.skip("this XLA does not rewrite log(exp(x))")
    run("def logexp(x):\n    return jnp.log(jnp.exp(x))\nhundred = jnp.float32(100.0)").assert_ok()
    warnings = " ".join(run("%jitcompare -q -o -r 2 -n 3 logexp(hundred)").assert_ok().result.warnings)
    assert f"values differ: {eager:g} vs {compiled:g}" in warnings and "differ by NaN" not in warnings
    assert "log(exp(x)) becomes x" in warnings


def test_numpy_arguments_are_put_on_the_device_first_and_said(run):
    run("import numpy as np\ndef scaled(x):\n    return x * 2\nhost = np.arange(6.0)").assert_ok()
    result = run("%jitcompare -q -o -r 2 -n 3 scaled(host)").assert_ok().result
    assert any("eager: 1 NumPy array was given; eager and jit ran on device copies" in n for n in result.notes)
    assert run("type(host).__module__").assert_ok().result == "numpy"  # the user's array is left as it was
