"""What users really do, held up: JAX's errors shown as JAX's, the public functions' arguments
checked, nothing compiled said rather than "0 ns", lambdas kept apart by their line, the session's
log on unloading, IPython's idioms (``;``, a shape given as an argument), and option values that are
refused, never run, in every magic's line and cell form."""

from __future__ import annotations

import pytest
from conftest import assert_no_internals
from outcomes import INTERNAL_FAILURE, Snapshot

SETUP = """
import jax, jax.numpy as jnp
x = jnp.ones(3)
def passes_through(tree):
    return tree
@jax.jit
def f(v):
    return jnp.sin(v) * 2
"""


@pytest.fixture
def defined(run):
    run(SETUP).assert_ok()


# ------------------------------------------------------------------------------------------------
# The blame line: "a bug in jaxmagic" only for a failure in jaxmagic's own frame


@pytest.mark.parametrize("magic", ["%jaxpr", "%jitcompare -q -n 1 -r 1 --budget 0.1"])
def test_jaxs_error_about_the_input_is_shown_as_jaxs(run, defined, magic):
    shown = run(f"{magic} passes_through({{1: x, 'a': x}})")
    assert shown.usage_error is not None, shown.error
    assert INTERNAL_FAILURE not in shown.usage_error
    assert shown.usage_error.startswith("JAX raised ValueError"), shown.usage_error
    assert "dictionary keys" in shown.usage_error
    assert_no_internals(shown)


def test_a_failure_in_jaxmagics_own_frame_is_still_called_a_bug(ip):
    from jaxmagic.magics.failures import unexpected

    try:
        {}["missing"]  # raised right here: a frame outside jaxmagic, not a library's
    except KeyError as exc:
        assert str(unexpected(exc)).startswith("your code raised KeyError")
    import jaxmagic.units as units  # any jaxmagic module: an error raised in its own frame

    code = compile("raise RuntimeError('inside')", units.__file__, "exec")
    try:
        exec(code, {})
    except RuntimeError as exc:
        assert INTERNAL_FAILURE in str(unexpected(exc))


def test_a_shape_given_as_an_argument_hints_at_static(run, defined):
    shown = run("%jaxpr jnp.ones(3)")
    assert shown.error is not None
    assert "`-s shape`" in shown.shown_traceback, shown.shown_traceback
    run("%jaxpr -s shape jnp.ones(3)").assert_ok()
