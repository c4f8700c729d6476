"""%jitcompare of a function wrapped in checkify compares what the user reads of its error
(``err.get()``: a message or None), not the error's bookkeeping, which eager and jit number
differently for the same outcome; a real difference in the values is still reported."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from jax.experimental import checkify

from jaxmagic.timing.agreement import mismatch


def positive_log(x):
    checkify.check(jnp.all(x > 0), "x must be positive")
    return jnp.log(x)


@pytest.mark.parametrize("x", [jnp.ones(3), jnp.array([-1.0, 1.0])], ids=["passes", "fails its check"])
def test_eager_and_jit_results_of_a_checkified_function_agree(x):
    checked = checkify.checkify(positive_log)
    with jax.disable_jit():
        eager = checked(x)
    compiled = jax.jit(checked)(x)
    assert (eager[0].get() is None) == (compiled[0].get() is None)
    assert mismatch(eager, compiled) is None


def test_a_real_difference_beside_a_checkify_error_is_still_found():
    checked = checkify.checkify(positive_log)
    err, out = jax.jit(checked)(jnp.ones(3))
    found = mismatch((err, out), (err, out + 1))
    assert found is not None and "values differ" in found.detail


def test_jitcompare_of_a_checkified_function_reports_no_difference(run):
    run("from jax.experimental import checkify").assert_ok()
    run(
        "def positive_log(x):\n"
        "    checkify.check(jnp.all(x > 0), 'x must be positive')\n"
        "    return jnp.log(x)\n"
        "checked = checkify.checkify(positive_log)"
    ).assert_ok()
    shown = run("%jitcompare -o --budget 1 checked(jnp.ones(3))").assert_ok()
    assert not any("differ" in warning for warning in shown.result.warnings)
