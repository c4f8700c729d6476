"""``max-traces``: a ``chex.assert_max_traces`` failure explained in JAX's terms, from JAX's own
tracing cache: which argument changed (agreeing with ``jax_explain_cache_misses``), or that the
jitted function is a new object."""

from __future__ import annotations

import logging

import jax
import jax.numpy as jnp
import pytest

from jaxmagic import doctor

chex = pytest.importorskip("chex")


@pytest.fixture(autouse=True)
def fresh_counter():
    chex.clear_trace_counter()
    yield
    chex.clear_trace_counter()


class Explanations(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.texts = []

    def emit(self, record):
        if record.getMessage().startswith("TRACING CACHE MISS"):
            self.texts.append(record.getMessage())


def failure(call):
    with pytest.raises(AssertionError) as info:
        call()
    return info.value


def test_a_new_shape_is_named_with_its_argument_as_jax_explains_it():
    @jax.jit
    @chex.assert_max_traces(n=1)
    def normalise(batch):
        return batch / batch.sum()

    normalise(jnp.ones(3))
    handler, logger = Explanations(), logging.getLogger("jax")
    logger.addHandler(handler)
    jax.config.update("jax_explain_cache_misses", True)
    try:
        exc = failure(lambda: normalise(jnp.ones(4)))
    finally:
        jax.config.update("jax_explain_cache_misses", False)
        logger.removeHandler(handler)
    found = doctor.diagnose(exc)
    assert found.pitfall == "max-traces"
    assert found.variable == "batch"
    assert "`batch` changed: f32[3] → f32[4]" in found.explanation
    assert "chex.assert_max_traces(n=1)" in found.explanation
    assert "pad it" in found.fix_note
    # JAX's own explanation of that trace names the same argument and the same two types (JAX 0.8
    # explains a trace once it has finished, so never this one)
    if jax.__version_info__ >= (0, 9):
        (truth,) = [t for t in handler.texts if "normalise" in t]
        assert "* at batch, now f32[4] and before f32[3]" in truth


def test_a_new_static_value_is_named():
    @jax.jit
    @chex.assert_max_traces(n=1)
    def power(x, n):
        return x**n

    power = jax.jit(power.__wrapped__, static_argnames="n")
    power(jnp.ones(2), n=2)
    found = doctor.diagnose(failure(lambda: power(jnp.ones(2), n=3)))
    assert found.pitfall == "max-traces"
    assert (found.variable, "2 → 3" in found.explanation) == ("n", True), found.explanation


def test_a_function_jitted_again_is_said_to_be_a_new_object():
    def run(x):
        @jax.jit
        @chex.assert_max_traces(n=1)
        def inner(v):
            return v * 2

        return inner(x)

    def loop():
        for _ in range(2):
            run(jnp.ones(2))

    found = doctor.diagnose(failure(loop))
    assert found.pitfall == "max-traces"
    assert "is a new object" in found.explanation and "once" in found.fix_note


def test_in_a_cell_the_card_follows_chexs_error(run):
    run(
        "import chex\n"
        "@jax.jit\n"
        "@chex.assert_max_traces(n=1)\n"
        "def normalise(batch):\n"
        "    return batch / batch.sum()\n"
        "normalise(jnp.ones(3))\n"
    ).assert_ok()
    shown = run("normalise(jnp.ones(4))")
    assert isinstance(shown.error, AssertionError)
    assert "`batch` changed: f32[3] → f32[4]" in shown.text, shown.text
