"""Recompilations of library structures (Equinox, Flax) named in the user's terms, with JAX's own
explanation (``jax_explain_cache_misses``) as the truth of what differed."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from jaxmagic.recompiles.watch import watch_recompiles

eqx = pytest.importorskip("equinox")


class Layer(eqx.Module):
    weight: jax.Array
    activation: str = eqx.field(static=True)


def test_an_equinox_static_field_change_is_shown_where_it_differs():
    @eqx.filter_jit
    def apply(layer, x):
        return layer.weight * x

    with watch_recompiles(explain=True) as log:
        apply(Layer(jnp.ones(3), "relu"), jnp.ones(3))
        apply(Layer(jnp.ones(3), "tanh"), jnp.ones(3))
        apply(Layer(jnp.ones(3), "tanh"), jnp.ones(3))  # equal static fields: no compilation
    assert log.counts == {"apply": 2}
    truth = log.events[1].raw
    assert "'relu'" in truth and "'tanh'" in truth  # JAX: the static metadata differs there
    (cause,) = log.events[1].causes
    assert (cause.kind, cause.argument) == ("pytree_structure", "layer")  # the user's own parameter
    assert "'relu'" in cause.before and "'tanh'" in cause.after
    assert "same arguments" not in cause.message and len(cause.before) < 90


def test_filter_jit_names_the_users_arguments_and_tells_a_redefinition():
    def define():
        @eqx.filter_jit
        def run(model, x, scale=1.0):
            return model["w"].sum() * x * scale

        return run

    run = define()
    with watch_recompiles(explain=True) as log:
        run({"w": jnp.ones(3)}, jnp.ones(3))
        run({"w": jnp.ones(4)}, jnp.ones(3))
        define()({"w": jnp.ones(3)}, jnp.ones(3))
    assert [e.function for e in log.events] == ["run"] * 3
    first, shape, again = log.events
    assert first.signature == "(model: {'w': f32[3]}, x: f32[3])" and first.kinds == ["first_call"], first.causes[
        0
    ].message
    assert [(c.kind, c.argument) for c in shape.causes] == [("shape", "model['w']")]
    assert "dynamic_nodonate" not in log.to_text()
    assert again.kinds == ["redefined_function"] and "eqx" not in again.causes[0].message
    assert again.defined_at.file == __file__


def test_an_nnx_module_switched_to_eval_says_which_attribute_changed():
    nnx = pytest.importorskip("flax.nnx")

    class Net(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(3, 3, rngs=rngs)
            self.dropout = nnx.Dropout(0.5, rngs=rngs)

        def __call__(self, x):
            return self.dropout(self.linear(x))

    @nnx.jit
    def forward(model, x):
        return model(x)

    model = Net(nnx.Rngs(0))
    with watch_recompiles(explain=True) as log:
        forward(model, jnp.ones(3))
        model.eval()
        forward(model, jnp.ones(3))
    assert log.counts == {"forward": 2}
    truth = log.events[1].raw
    assert truth is not None and "deterministic" in truth  # JAX: the graph's metadata differs there
    (cause,) = log.events[1].causes
    assert cause.kind == "pytree_structure"
    assert (
        "'deterministic', Static(value=False)" in cause.before and "'deterministic', Static(value=True)" in cause.after
    )
