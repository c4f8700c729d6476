"""Recompilations of library structures (Equinox, Flax) named in the user's terms, with JAX's own
explanation (``jax_explain_cache_misses``) as the truth of what differed."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from jaxmagic.recompiles.watch import internal_errors, watch_recompiles

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
    # JAX: the static half Equinox hands it differs there (a Static value; JAX 0.8: a static argument)
    assert "'relu'" in truth and ("Static(val=" in truth or "different value of static args" in truth)
    (cause,) = log.events[1].causes
    # the user's own parameter, down to the field: layer.activation
    assert (cause.kind, cause.argument, cause.before, cause.after) == (
        "static_value",
        "layer.activation",
        "'relu'",
        "'tanh'",
    )
    assert "same arguments" not in cause.message and "part of the program" in cause.advice


def test_an_equinox_shape_evaluation_inside_filter_jit_leaves_its_traced_arguments_alone():
    # eqx.filter_eval_shape (as diffrax uses it) traces again inside the jitted function: under
    # JAX 0.8 that nested trace reaches the watch with the outer trace's tracers as its arguments
    @eqx.filter_jit
    def forward(layer, x):
        shape = eqx.filter_eval_shape(layer.weight.__mul__, x).shape
        return layer.weight * x + jnp.zeros(shape)

    before = internal_errors()
    with watch_recompiles() as log:
        forward(Layer(jnp.ones(3), "relu"), jnp.ones(3))
        forward(Layer(jnp.ones(3), "tanh"), jnp.ones(3))
    assert internal_errors() == before  # no listener of jaxmagic's failed on a traced value
    assert log.counts == {"forward": 2}
    assert [(c.kind, c.argument) for c in log.events[1].causes] == [("static_value", "layer.activation")]


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
    assert (cause.kind, cause.argument, cause.before, cause.after) == (
        "pytree_structure",
        "model.dropout.deterministic",
        "False",
        "True",
    )
    assert log.events[0].signature.startswith("(model: Net(")  # the user's module, not NNX's split of it


def _net(nnx):
    class Net(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(3, 3, rngs=rngs)

        def __call__(self, x):
            return self.linear(x)

    return Net(nnx.Rngs(0))


def test_an_attribute_added_to_an_nnx_module_is_one_cause_not_invented_shape_changes():
    nnx = pytest.importorskip("flax.nnx")

    @nnx.jit
    def forward(model, x):
        return model(x)

    model = _net(nnx)
    with watch_recompiles(explain=True) as log:
        forward(model, jnp.ones(3))
        model.extra = nnx.Param(jnp.ones(2))
        forward(model, jnp.ones(3))
        model.head = nnx.Linear(3, 2, rngs=nnx.Rngs(1))
        forward(model, jnp.ones(3))
    assert log.counts == {"forward": 3}
    assert log.events[1].raw is not None  # JAX: the input structure differs
    assert [(c.kind, c.argument, c.after) for c in log.events[1].causes] == [
        ("pytree_structure", "model.extra", "Param f32[2]")
    ]
    # a new layer is one cause (not one per weight), and no weight is said to change shape
    assert [(c.kind, c.argument, c.after) for c in log.events[2].causes] == [
        ("pytree_structure", "model.head", "Linear")
    ]
    assert "added" in log.events[2].causes[0].message and "all its attributes" in log.events[2].causes[0].advice


def test_a_weight_that_changes_shape_is_named_by_its_attribute_path():
    nnx = pytest.importorskip("flax.nnx")

    @nnx.jit
    def forward(model, x):
        return model(x)

    model = _net(nnx)
    with watch_recompiles(explain=True) as log:
        forward(model, jnp.ones(3))
        model.linear = nnx.Linear(3, 5, rngs=nnx.Rngs(0))
        forward(model, jnp.ones(3))
    causes = {(c.kind, c.argument, c.before, c.after) for c in log.events[1].causes}
    assert causes == {
        ("shape", "model.linear.bias", "f32[3]", "f32[5]"),
        ("shape", "model.linear.kernel", "f32[3,3]", "f32[3,5]"),
        ("pytree_structure", "model.linear.out_features", "3", "5"),  # static to NNX: part of the program
    }
    truth = log.events[1].raw  # JAX names the first difference only: the layer's static metadata
    assert truth is not None and "out_features" in truth
    assert model.linear.kernel.shape == (3, 5) and model.linear.bias.shape == (5,)


def test_a_train_state_rebuilt_with_another_optimizer_names_its_tx():
    optax = pytest.importorskip("optax")
    train_state = pytest.importorskip("flax.training.train_state")

    @jax.jit
    def step(state, x):
        return state.apply_gradients(grads=jax.tree.map(lambda p: p * x.sum(), state.params))

    params = {"w": jnp.ones(3)}
    with watch_recompiles(explain=True) as log:
        step(train_state.TrainState.create(apply_fn=None, params=params, tx=optax.sgd(0.1)), jnp.ones(2))
        step(train_state.TrainState.create(apply_fn=None, params=params, tx=optax.sgd(0.1)), jnp.ones(2))
    assert log.counts == {"step": 2}  # a new optax.sgd(0.1) is a new static value to JAX
    assert log.events[1].raw is not None
    (cause,) = [c for c in log.events[1].causes if c.argument == "state.tx"]
    assert "built again" in cause.message and "once" in cause.advice


def test_an_nnx_optimizer_built_again_says_its_transformation_is_new():
    nnx = pytest.importorskip("flax.nnx")
    optax = pytest.importorskip("optax")
    model = _net(nnx)

    @nnx.jit
    def train_step(model, optimizer, x):
        grads = nnx.grad(lambda m: (m(x) ** 2).mean())(model)
        optimizer.update(model, grads)

    with watch_recompiles(explain=True) as log:
        optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
        train_step(model, optimizer, jnp.ones((4, 3)))
        train_step(model, optimizer, jnp.ones((4, 3)))  # the same optimizer: no compilation
        optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
        train_step(model, optimizer, jnp.ones((4, 3)))
    assert log.counts == {"train_step": 2}
    truth = log.events[1].raw  # JAX: the graph's static metadata (the transformation) differs
    assert truth is not None and "init_fn" in truth
    (cause,) = log.events[1].causes
    assert (cause.kind, cause.argument) == ("pytree_structure", "optimizer.tx")
    assert "built again" in cause.message and cause.after.startswith("a new GradientTransformation")
    assert "once" in cause.advice
    assert "opt_state[0].mu['kernel']" not in cause.message  # the moments' values are not causes


def test_an_nnx_jit_function_compiled_before_the_watch_is_compared_with_that_compilation():
    nnx = pytest.importorskip("flax.nnx")
    from jaxmagic.recompiles import watch

    model = nnx.Linear(3, 2, rngs=nnx.Rngs(0))

    @nnx.jit
    def apply(model, x):
        return model(x)

    apply(model, jnp.ones((4, 3)))  # compiled while nothing watched
    watch.forget()
    with watch_recompiles() as log:
        apply(model, jnp.ones((5, 3)))
    (cause,) = log.events[0].causes
    assert (cause.kind, cause.argument, cause.before, cause.after) == ("shape", "x", "f32[4,3]", "f32[5,3]")
    assert "while nothing watched" in cause.message


def test_filter_jit_names_a_changed_non_array_with_its_two_values():
    @eqx.filter_jit
    def power(x, n, activation):
        return activation(x) ** n

    with watch_recompiles(explain=True) as log:
        power(jnp.ones(3), 3, jax.nn.relu)
        power(jnp.ones(3), 4, jax.nn.relu)
        power(jnp.ones(3), 4, jax.nn.tanh)
    assert log.counts == {"power": 3}
    for event in log.events[1:]:  # JAX: the static half Equinox hands it differs
        assert "Static(val=" in event.raw or "different value of static args" in event.raw  # JAX 0.10 / 0.8
    (count,), (function,) = log.events[1].causes, log.events[2].causes
    assert count.message == "`n`: 3 → 4 (static under eqx.filter_jit: a non-array is part of the compiled code's key)"
    assert (count.kind, count.argument, count.before, count.after) == ("static_value", "n", "3", "4")
    assert (function.kind, function.argument, function.before, function.after) == (
        "static_value",
        "activation",
        "relu",
        "tanh",
    )
    assert "as an array" not in function.message


def test_diffrax_tolerances_and_end_times_are_named_by_the_path_the_user_wrote():
    diffrax = pytest.importorskip("diffrax")

    def vector_field(t, y, args):
        return -y

    term, solver, y0 = diffrax.ODETerm(vector_field), diffrax.Tsit5(), jnp.ones(2)
    with watch_recompiles() as log:
        for t1, rtol in ((1.0, 1e-3), (2.0, 1e-3), (2.0, 1e-5)):
            controller = diffrax.PIDController(rtol=rtol, atol=1e-6)
            diffrax.diffeqsolve(term, solver, t0=0.0, t1=t1, dt0=0.1, y0=y0, stepsize_controller=controller)
    assert log.counts == {"diffeqsolve": 3}
    assert [(c.kind, c.argument, c.before, c.after) for e in log.events[1:] for c in e.causes] == [
        ("static_value", "t1", "1.0", "2.0"),
        ("static_value", "stepsize_controller.rtol", "0.001", "1e-05"),
    ]


def test_an_optax_transformation_built_each_step_is_said_to_be_built_again():
    optax = pytest.importorskip("optax")

    def step(params, opt_state, tx):
        grads = jax.tree.map(jnp.ones_like, params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    params = {"w": jnp.ones(3)}
    for wrapper in (lambda f: jax.jit(f, static_argnames="tx"), eqx.filter_jit):
        jitted = wrapper(step)
        with watch_recompiles(explain=True) as log:
            for _ in range(4):
                tx = optax.adam(1e-3)
                params, _ = jitted(params, tx.init(params), tx=tx)
        assert "Static(val=GradientTransformation" in log.events[1].raw or "init_fn" in log.events[1].raw
        (cause,) = log.events[1].causes
        assert (cause.kind, cause.argument) == ("static_value", "tx")
        assert "built again" in cause.message and "0x" not in cause.message + cause.before + cause.after
        assert "as an array" not in cause.advice and "once" in cause.advice
        assert log.headlines == [
            "`step` compiled 4 times: `tx` is a new object, built again before each call — build it once, "
            "outside the loop"
        ]
