"""A ``.trace``, ``.lower`` or ``jax.eval_shape`` inside a function being traced hands the watch
the outer trace's tracers as its arguments (JAX 0.8 reports such nested traces): the watch reads
them by their abstract type alone, never asking them for what only a concrete array has."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from jaxmagic.recompiles.leaves import describe_leaf
from jaxmagic.recompiles.watch import internal_errors, watch_recompiles


def test_a_traced_leaf_is_described_by_its_type_without_a_placement():
    seen = []

    @jax.jit
    def double(x):
        seen.append(describe_leaf(x))
        return x * 2

    double(jax.device_put(jnp.ones((2, 3)), jax.devices()[0]))  # committed outside: traced inside
    (leaf,) = seen
    assert (leaf.type_text, leaf.placement, leaf.sharded) == ("f32[2,3]", None, False)


def shape_evaluated(x):
    jax.eval_shape(lambda y: y * 2, x)
    return x + 1


def traced_again(x):
    jax.jit(lambda y: y * 3).trace(x)
    return x + 2


def lowered_again(x):
    jax.jit(lambda y: y * 4).lower(x)
    return x + 3


@pytest.mark.parametrize("function", [shape_evaluated, traced_again, lowered_again], ids=lambda f: f.__name__)
def test_a_trace_nested_in_a_jitted_function_leaves_the_watch_without_internal_errors(function):
    before = internal_errors()
    with watch_recompiles() as log:
        jax.jit(function)(jnp.ones(2))
        jax.jit(function)(jnp.ones(3))
    assert internal_errors() == before
    assert log.counts == {function.__name__: 2}
    assert [(c.kind, c.argument) for c in log.events[1].causes] == [("shape", "x")]
