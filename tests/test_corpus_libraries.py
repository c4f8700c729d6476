"""Code as Flax, Equinox and Optax document it (their tutorials' shapes, in our own words): each
example traced with %jaxpr, and the traced program checked against the user's own call — the
truth is what JAX computes, not what jaxmagic printed before."""

import jax
import numpy as np
import pytest
from jax.extend.core import jaxpr_as_fun

from jaxmagic.tracing.jitting import is_traceable_leaf
from jaxmagic.tracing.names import EQUINOX_MARKER

SETUP = """
import functools as ft
import optax
import equinox as eqx
from flax import nnx
import flax.linen as fnn
from flax.training import train_state

class NeuralNetwork(eqx.Module):  # Equinox's "all of Equinox" shape: layers in a tuple, a bias array
    layers: tuple
    extra_bias: jax.Array

    def __init__(self, key):
        k1, k2, k3 = jax.random.split(key, 3)
        self.layers = (eqx.nn.Linear(2, 8, key=k1), eqx.nn.Linear(8, 8, key=k2), eqx.nn.Linear(8, 2, key=k3))
        self.extra_bias = jnp.ones(2)

    def __call__(self, x):
        for layer in self.layers[:-1]:
            x = jax.nn.relu(layer(x))
        return self.layers[-1](x) + self.extra_bias

class WithActivation(eqx.Module):  # an activation function stored among the layers
    layers: tuple

    def __init__(self, key):
        k1, k2 = jax.random.split(key)
        self.layers = (eqx.nn.Linear(2, 8, key=k1), jax.nn.relu, eqx.nn.Linear(8, 2, key=k2))

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

@jax.jit
@jax.grad
def grads_of(model, x, y):
    return jnp.mean((y - jax.vmap(model)(x)) ** 2)

@eqx.filter_jit
@eqx.filter_grad
def filtered_grads(model, x, y):
    return jnp.mean((y - jax.vmap(model)(x)) ** 2)

@ft.partial(jax.jit, static_argnums=1)
@jax.grad
def partitioned_grads(params, static, x, y):
    model = eqx.combine(params, static)
    return jnp.mean((y - jax.vmap(model)(x)) ** 2)

@eqx.filter_jit
def eqx_train_step(model, opt_state, x, y):  # Equinox's train loop: the step returns the model
    loss, grads = eqx.filter_value_and_grad(lambda m: jnp.mean((y - jax.vmap(m)(x)) ** 2))(model)
    updates, opt_state = eqx_optim.update(grads, opt_state, eqx.filter(model, eqx.is_array))
    return eqx.apply_updates(model, updates), opt_state, loss

xk, yk, mk = jax.random.split(jax.random.PRNGKey(0), 3)
xs, ys = jax.random.normal(xk, (16, 2)), jax.random.normal(yk, (16, 2))
eqx_model, eqx_model2 = NeuralNetwork(mk), WithActivation(mk)
params, static = eqx.partition(eqx_model2, eqx.is_array)
eqx_optim = optax.adam(1e-3)
eqx_opt_state = eqx_optim.init(eqx.filter(eqx_model2, eqx.is_array))

class CNN(fnn.Module):  # Flax Linen
    @fnn.compact
    def __call__(self, x):
        x = fnn.relu(fnn.Conv(features=4, kernel_size=(3, 3))(x))
        return fnn.Dense(10)(x.reshape((x.shape[0], -1)))

cnn = CNN()
images = jnp.ones((2, 8, 8, 1))
variables = cnn.init(jax.random.PRNGKey(0), images)
state = train_state.TrainState.create(apply_fn=cnn.apply, params=variables["params"], tx=optax.adam(1e-3))
labels = jnp.array([1, 2])

@jax.jit
def linen_step(state, batch, labels):
    def loss_fn(params):
        logits = state.apply_fn({"params": params}, batch)
        return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()
    return state.apply_gradients(grads=jax.grad(loss_fn)(state.params))

adam = optax.adam(1e-2)
weights = {"w": jnp.arange(3.0)}
opt_state = adam.init(weights)

def optax_step(weights, opt_state):
    grads = jax.grad(lambda q: jnp.sum(q["w"] ** 2))(weights)
    updates, opt_state = adam.update(grads, opt_state, weights)
    return optax.apply_updates(weights, updates), opt_state

class NnxMLP(nnx.Module):  # Flax NNX basics: BatchNorm and Dropout carry state
    def __init__(self, rngs):
        self.linear1 = nnx.Linear(2, 16, rngs=rngs)
        self.dropout = nnx.Dropout(rate=0.1)
        self.bn = nnx.BatchNorm(16, rngs=rngs)
        self.linear2 = nnx.Linear(16, 10, rngs=rngs)

    def __call__(self, x, rngs):
        x = nnx.gelu(self.dropout(self.bn(self.linear1(x)), rngs=rngs))
        return self.linear2(x)

nnx_model = NnxMLP(nnx.Rngs(0))
optimizer = nnx.Optimizer(nnx_model, optax.adam(1e-3), wrt=nnx.Param)
nnx_rngs = nnx.Rngs(1)
nx, ny = jnp.ones((5, 2)), jnp.ones((5, 10))

@nnx.jit
def nnx_step(model, optimizer, x, y, rngs):
    def loss_fn(model, rngs):
        return jnp.mean((model(x, rngs) - y) ** 2)
    loss, grads = nnx.value_and_grad(loss_fn)(model, rngs)
    optimizer.update(model, grads)
    return loss
"""

# call -> the arguments whose array leaves are the traced program's inputs (None: checked otherwise)
EXAMPLES = {
    "grads_of(eqx_model, xs, ys)": ("eqx_model", "xs", "ys"),
    "filtered_grads(eqx_model2, xs, ys)": ("eqx_model2", "xs", "ys"),
    "partitioned_grads(params, static, xs, ys)": ("params", "xs", "ys"),
    "eqx_model2(xs[0])": ("eqx_model2", "xs[0]"),
    "eqx_train_step(eqx_model2, eqx_opt_state, xs, ys)": ("eqx_model2", "eqx_opt_state", "xs", "ys"),
    "cnn.apply(variables, images)": ("variables", "images"),
    "linen_step(state, images, labels)": ("state", "images", "labels"),
    "optax_step(weights, opt_state)": ("weights", "opt_state"),
}


@pytest.fixture(scope="module")
def libraries_defined(ip):
    result = ip.run_cell(SETUP)
    assert result.success, result.error_in_exec
    yield


@pytest.mark.parametrize("call", list(EXAMPLES))
def test_the_traced_program_computes_what_the_call_computes(ip, run, libraries_defined, call):
    report = run(f"%jaxpr -o --max-eqns 5 {call}").assert_ok().result
    ns = dict(ip.user_ns)
    inputs = [eval(name, ns) for name in EXAMPLES[call]]  # noqa: S307
    leaves = [leaf for leaf in jax.tree_util.tree_leaves(inputs) if is_traceable_leaf(leaf)]
    assert len(leaves) == len(report.jaxpr.in_avals), "every array the call reads is an input"
    computed = jaxpr_as_fun(report.jaxpr)(*leaves)
    if report.output_names[0] == EQUINOX_MARKER:  # eqx.filter_jit's program returns its marker first
        assert int(computed[0]) == 0
        computed = computed[1:]
    expected = jax.tree_util.tree_leaves(eval(call, ns))  # noqa: S307
    expected = [e for e in expected if isinstance(e, jax.Array)]
    assert len(computed) == len(expected)
    for got, want in zip(computed, expected, strict=True):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)


def test_nnx_training_step_traces_without_touching_the_model(ip, run, libraries_defined):
    from flax import nnx

    before = jax.tree_util.tree_map(np.asarray, nnx.state(ip.user_ns["nnx_model"]))
    step_before = int(ip.user_ns["optimizer"].step[...])
    report = run("%jaxpr -o --max-eqns 5 nnx_step(nnx_model, optimizer, nx, ny, nnx_rngs)").assert_ok().result
    assert report.primitive_counts["dot_general"] >= 4  # forward and backward of two layers
    after = jax.tree_util.tree_map(np.asarray, nnx.state(ip.user_ns["nnx_model"]))
    jax.tree_util.tree_map(np.testing.assert_array_equal, before, after)
    assert int(ip.user_ns["optimizer"].step[...]) == step_before


def test_jitcompare_of_an_nnx_training_step_leaves_the_model_and_optimizer_as_they_were(ip, run, libraries_defined):
    from flax import nnx

    before = jax.tree_util.tree_map(np.asarray, nnx.state(ip.user_ns["nnx_model"]))
    step_before = int(ip.user_ns["optimizer"].step[...])
    shown = run("%jitcompare -o --budget 2 nnx_step(nnx_model, optimizer, nx, ny, nnx_rngs)").assert_ok()
    after = jax.tree_util.tree_map(np.asarray, nnx.state(ip.user_ns["nnx_model"]))
    jax.tree_util.tree_map(np.testing.assert_array_equal, before, after)
    assert int(ip.user_ns["optimizer"].step[...]) == step_before
    assert "copies of `model` and `optimizer`" in shown.text or "copies of `model`, `optimizer`" in shown.text
    assert "arrays of their own" in shown.text and shown.result.modes["jit"].median > 0


def test_jitcompare_of_a_donating_nnx_step_leaves_the_model_usable(ip, run, libraries_defined):
    run(
        "import functools\n"
        "@functools.partial(jax.jit, donate_argnums=0)\n"
        "def donating_step(layer, x):\n"
        "    return layer(x).sum()\n"
        "kernel_before = np.asarray(nnx_model.linear1.kernel[...])"
    ).assert_ok()
    run("%jitcompare -o --budget 1 donating_step(nnx_model.linear1, nx)").assert_ok()
    # the user's layer still holds its arrays: the timing donated the copies' (nnx.clone alone shares them)
    after = run("np.asarray(nnx_model.linear1.kernel[...])").assert_ok().result
    np.testing.assert_array_equal(after, ip.user_ns["kernel_before"])
