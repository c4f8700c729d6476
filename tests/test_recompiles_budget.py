"""``expect_compiles``: a compile budget for one function, as a context manager and a decorator,
checked against JAX's own count of its compilations (``jax_log_compiles``)."""

from __future__ import annotations

import logging

import jax
import jax.numpy as jnp
import pytest

import jaxmagic
from jaxmagic.recompiles import RecompileLimitExceeded


class JaxCompileLog(logging.Handler):
    """What JAX itself says it compiled, with ``jax_log_compiles`` on: "Compiling <name> ..."."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())

    def compiled(self, name: str) -> int:
        return sum(
            1 for m in self.messages if m.startswith(f"Compiling {name} ") or m.startswith(f"Compiling jit({name})")
        )


@pytest.fixture
def jax_says():
    handler = JaxCompileLog()
    logger = logging.getLogger("jax")
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.DEBUG)
    jax.config.update("jax_log_compiles", True)
    try:
        yield handler
    finally:
        jax.config.update("jax_log_compiles", False)
        logger.setLevel(level)
        logger.removeHandler(handler)


def test_within_budget_passes_and_counts_what_jax_compiled(jax_says):
    @jax.jit
    def within(x):
        return x * 2

    with jaxmagic.expect_compiles(within, max=2) as log:
        for n in (3, 3, 4, 4):
            within(jnp.ones(n))
    assert jax_says.compiled("within") == 2
    assert log.counts == {"within": 2}


def test_only_the_named_function_counts_not_others_nor_eager_primitives(jax_says):
    @jax.jit
    def budgeted(x):
        return x + 1

    @jax.jit
    def other(x):
        return x - 1

    with jaxmagic.expect_compiles(budgeted, max=1) as log:
        budgeted(jnp.ones(2))
        for n in (5, 6, 7):
            other(jnp.ones(n))
            jnp.sin(jnp.arange(n) * 3.0)  # eager: JAX compiles each primitive on its own
    assert jax_says.compiled("other") == 3  # they did compile, yet the budget of `budgeted` holds
    assert log.counts == {"budgeted": 1}


def test_over_budget_fails_with_every_differing_argument_and_the_fix(jax_says):
    @jax.jit
    def pair(x, scale):
        return x * scale

    with pytest.raises(AssertionError) as failure, jaxmagic.expect_compiles(pair, max=1):
        pair(jnp.ones(3), 2.0)
        pair(jnp.ones(4, dtype=jnp.int32), jnp.float32(2.0))
    assert jax_says.compiled("pair") == 2
    error = failure.value
    assert isinstance(error, jaxmagic.CompileBudgetExceeded) and isinstance(error, RecompileLimitExceeded)
    assert (error.function, error.count, error.limit) == ("pair", 2, 1)
    message = str(error)
    assert message.startswith("`pair` compiled 2 times in the block; expected at most 1 time.")
    assert "`x`" in message and "f32[3]" in message and "i32[4]" in message  # before → after of x
    assert "`scale`" in message  # the second argument that changed, too
    assert "→ " in message and "Keep the shape of `x` fixed" in message
    assert __file__.rsplit("/", 1)[-1] in message  # where it was called


def test_decorator_and_names(jax_says):
    @jax.jit
    def named(x):
        return x.sum()

    @jaxmagic.expect_compiles("named", max=1)
    def train(sizes):
        return [float(named(jnp.ones(n))) for n in sizes]

    assert train([2, 2]) == [2.0, 2.0]
    with pytest.raises(jaxmagic.CompileBudgetExceeded, match="`named` compiled 2 times"):
        train([8, 9])
    assert jax_says.compiled("named") == 3


def test_the_blocks_own_error_is_not_hidden():
    @jax.jit
    def failing(x):
        return x

    with pytest.raises(ZeroDivisionError), jaxmagic.expect_compiles(failing, max=0):
        failing(jnp.ones(2))
        _ = 1 / 0


@pytest.mark.parametrize("bad", [-1, 1.5, "2", True])
def test_bad_budget_says_what_is_expected(bad):
    with pytest.raises(ValueError, match=r"non-negative whole number .*expect_compiles\(step, max=1\)"):
        jaxmagic.expect_compiles("step", max=bad)


def test_not_a_function_says_what_is_expected():
    with pytest.raises(TypeError, match="expected a function or its name"):
        jaxmagic.expect_compiles(3, max=1)
