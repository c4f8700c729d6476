"""Equinox in the shapes its documentation teaches (docs.kidger.site/equinox: "All of Equinox",
"Train RNN", "CNN on MNIST", "Filtering", "FAQ"), in our own words."""

from tests.corpus import Cell

ALL_OF = Cell(
    "equinox",
    "equinox docs: all-of-equinox.md",
    "equinox/all-of-equinox",
    """
import jax
import jax.numpy as jnp
import equinox as eqx

class Linear(eqx.Module):
    weight: jax.Array
    bias: jax.Array

    def __init__(self, in_size, out_size, key):
        wkey, bkey = jax.random.split(key)
        self.weight = jax.random.normal(wkey, (out_size, in_size))
        self.bias = jax.random.normal(bkey, (out_size,))

    def __call__(self, x):
        return self.weight @ x + self.bias

@jax.jit
@jax.grad
def loss_fn(model, x, y):
    pred_y = jax.vmap(model)(x)
    return jax.numpy.mean((y - pred_y) ** 2)

batch_size, in_size, out_size = 32, 2, 3
model = Linear(in_size, out_size, key=jax.random.PRNGKey(0))
x = jnp.zeros((batch_size, in_size))
y = jnp.zeros((batch_size, out_size))

mlp = eqx.nn.MLP(in_size=2, out_size=3, width_size=16, depth=2, key=jax.random.PRNGKey(1))

@eqx.filter_jit
@eqx.filter_grad
def filtered_loss(model, x, y):
    return jnp.mean((y - jax.vmap(model)(x)) ** 2)

def jit_plain(model, x):
    return jax.jit(lambda m, v: jax.vmap(m)(v))(model, x)
""",
    needs=("equinox",),
)

TRAIN = Cell(
    "equinox",
    "equinox docs: examples/train_rnn.ipynb, examples/mnist.ipynb",
    "equinox/train",
    """
import jax
import jax.numpy as jnp
import equinox as eqx
import optax

class RNN(eqx.Module):
    hidden_size: int = eqx.field(static=True)
    cell: eqx.nn.GRUCell
    linear: eqx.nn.Linear
    bias: jax.Array

    def __init__(self, in_size, out_size, hidden_size, *, key):
        ckey, lkey = jax.random.split(key)
        self.hidden_size = hidden_size
        self.cell = eqx.nn.GRUCell(in_size, hidden_size, key=ckey)
        self.linear = eqx.nn.Linear(hidden_size, out_size, use_bias=False, key=lkey)
        self.bias = jnp.zeros(out_size)

    def __call__(self, xs):
        def step(carry, x):
            return self.cell(x, carry), None

        out, _ = jax.lax.scan(step, jnp.zeros((self.hidden_size,)), xs)
        return jax.nn.sigmoid(self.linear(out) + self.bias)

rnn = RNN(in_size=2, out_size=1, hidden_size=16, key=jax.random.PRNGKey(0))
optim = optax.adam(3e-3)
opt_state = optim.init(eqx.filter(rnn, eqx.is_inexact_array))
xs = jax.random.normal(jax.random.PRNGKey(1), (32, 16, 2))
ys = (xs[:, -1, 0] > 0).astype(jnp.float32)

@eqx.filter_value_and_grad
def compute_loss(model, x, y):
    pred_y = jax.vmap(model)(x)[:, 0]
    return -jnp.mean(y * jnp.log(pred_y) + (1 - y) * jnp.log(1 - pred_y))

@eqx.filter_jit
def make_step(model, x, y, opt_state):
    loss, grads = compute_loss(model, x, y)
    updates, opt_state = optim.update(grads, opt_state, eqx.filter(model, eqx.is_inexact_array))
    model = eqx.apply_updates(model, updates)
    return loss, model, opt_state
""",
    needs=("equinox", "optax"),
    tags={"training-step", "grad", "scan"},
)

LAYERS = Cell(
    "equinox",
    "equinox docs: api/nn/*.md, examples/mnist.ipynb",
    "equinox/layers",
    """
import jax
import jax.numpy as jnp
import equinox as eqx

class CNN(eqx.Module):
    layers: list

    def __init__(self, key):
        k1, k2, k3 = jax.random.split(key, 3)
        self.layers = [
            eqx.nn.Conv2d(1, 3, kernel_size=4, key=k1),
            eqx.nn.MaxPool2d(kernel_size=2),
            jax.nn.relu,
            jnp.ravel,
            eqx.nn.Linear(1728, 64, key=k2),
            jax.nn.sigmoid,
            eqx.nn.Linear(64, 10, key=k3),
            jax.nn.log_softmax,
        ]

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

cnn = CNN(jax.random.PRNGKey(0))
digits = jax.random.normal(jax.random.PRNGKey(1), (8, 1, 28, 28))
batched_cnn = eqx.filter_vmap(cnn)
dropout = eqx.nn.Dropout(p=0.5)
ones = jnp.ones(16)
drop_key = jax.random.PRNGKey(2)
""",
    needs=("equinox",),
)

STATIC = Cell(
    "equinox",
    "equinox docs: faq.md (recompiling), api/filtering/transformations.md",
    "equinox/static",
    """
import jax
import jax.numpy as jnp
import equinox as eqx

@eqx.filter_jit
def scaled_step(w, x, lr):
    return w - lr * jnp.tanh(x @ w)

w = jnp.eye(4)
x = jnp.ones((4, 4))

def sweep_python_floats(w, x):
    return [scaled_step(w, x, lr) for lr in (0.1, 0.01, 0.001)]

def sweep_arrays(w, x):
    return [scaled_step(w, x, jnp.float32(lr)) for lr in (0.1, 0.01, 0.001)]

def outer(x):
    @eqx.filter_jit
    def inner(y):
        return jnp.sin(y) * 2
    return inner(x)

def call_outer_twice(x):
    return outer(x), outer(x + 1)
""",
    needs=("equinox",),
)


CASES = [
    ALL_OF.case("jit-grad-module", "loss_fn(model, x, y)", tags={"grad", "jitted", "pytree"}),
    ALL_OF.case("module-call", "model(x[0])", tags={"method"}),
    ALL_OF.case("mlp-call", "mlp(x[0])", tags={"method"}),
    ALL_OF.case("filter-jit-grad", "filtered_loss(mlp, x, y)", tags={"grad", "jitted"}),
    ALL_OF.case("jax-jit-on-mlp-with-activation", "jit_plain(mlp, x)", "TypeError", tags={"pytree"}),
    TRAIN.case("rnn-make-step", "make_step(rnn, xs, ys, opt_state)", tags={"jitted"}),
    TRAIN.case("rnn-forward", "rnn(xs[0])", tags={"method"}),
    LAYERS.case("cnn-call", "cnn(digits[0])", tags={"method"}),
    LAYERS.case("cnn-filter-vmap", "batched_cnn(digits)", tags={"vmap"}),
    LAYERS.case("dropout", "dropout(ones, key=drop_key)", tags={"random", "method"}),
    STATIC.case("python-float-static", "sweep_python_floats(w, x)", tags={"recompile", "sweep", "no-jit", "static"}),
    STATIC.case("array-hyperparameter", "sweep_arrays(w, x)", tags={"sweep", "no-jit"}),
    STATIC.case("inner-filter-jit", "call_outer_twice(x)", tags={"recompile", "closure", "factory"}),
]
