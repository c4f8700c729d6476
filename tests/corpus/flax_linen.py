"""Flax Linen in the shapes its documentation teaches (flax.readthedocs.io: "Linen basics",
"Getting started", "Batch norm", "Dropout", "Lifted transforms: scan"), in our own words."""

from tests.corpus import Cell

BASICS = Cell(
    "flax-linen",
    "flax docs: linen_intro.md",
    "flax-linen/basics",
    """
import jax
import jax.numpy as jnp
import flax.linen as nn

class MLP(nn.Module):
    features: tuple = (16, 8, 2)

    @nn.compact
    def __call__(self, x):
        for width in self.features[:-1]:
            x = nn.relu(nn.Dense(width)(x))
        return nn.Dense(self.features[-1])(x)

mlp = MLP()
x = jax.random.normal(jax.random.key(0), (4, 3))
variables = mlp.init(jax.random.key(1), x)

def apply_mlp(variables, x):
    return mlp.apply(variables, x)

init_key = jax.random.key(2)
""",
    needs=("flax",),
)

TRAIN = Cell(
    "flax-linen",
    "flax docs: getting_started.md (TrainState)",
    "flax-linen/train",
    """
import jax
import jax.numpy as jnp
import optax
import flax.linen as nn
from flax.training import train_state

class CNN(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Conv(features=8, kernel_size=(3, 3))(x))
        x = nn.avg_pool(x, window_shape=(2, 2), strides=(2, 2))
        x = x.reshape((x.shape[0], -1))
        return nn.Dense(10)(nn.relu(nn.Dense(32)(x)))

cnn = CNN()
images = jax.random.normal(jax.random.key(0), (8, 28, 28, 1))
labels = jnp.arange(8) % 10
params = cnn.init(jax.random.key(1), images)["params"]
state = train_state.TrainState.create(apply_fn=cnn.apply, params=params, tx=optax.sgd(0.01, 0.9))

@jax.jit
def train_step(state, images, labels):
    def loss_fn(params):
        logits = state.apply_fn({"params": params}, images)
        return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

    grads = jax.grad(loss_fn)(state.params)
    return state.apply_gradients(grads=grads)
""",
    needs=("flax", "optax"),
    tags={"training-step", "grad"},
)

BATCHNORM = Cell(
    "flax-linen",
    "flax docs: guides/training_techniques/batch_norm.rst, dropout.rst",
    "flax-linen/batchnorm",
    """
import jax
import jax.numpy as jnp
import flax.linen as nn

class Normed(nn.Module):
    @nn.compact
    def __call__(self, x, train: bool):
        x = nn.Dense(8)(x)
        x = nn.BatchNorm(use_running_average=not train)(x)
        x = nn.Dropout(rate=0.2, deterministic=not train)(x)
        return nn.Dense(1)(x)

normed = Normed()
xs = jax.random.normal(jax.random.key(0), (16, 4))
normed_vars = normed.init({"params": jax.random.key(1), "dropout": jax.random.key(2)}, xs, train=False)

def training_forward(variables, x, key):
    return normed.apply(variables, x, train=True, rngs={"dropout": key}, mutable=["batch_stats"])

def eval_forward(variables, x):
    return normed.apply(variables, x, train=False)

dropout_key = jax.random.key(3)
apply_jit = jax.jit(normed.apply)
""",
    needs=("flax",),
)

SCAN = Cell(
    "flax-linen",
    "flax docs: guides/transforms/lifted.rst (nn.scan)",
    "flax-linen/scan",
    """
import jax
import jax.numpy as jnp
import flax.linen as nn

class Cell(nn.Module):
    @nn.compact
    def __call__(self, carry, x):
        carry = nn.tanh(nn.Dense(16)(carry) + nn.Dense(16)(x))
        return carry, carry

class RNN(nn.Module):
    @nn.compact
    def __call__(self, xs):
        scan = nn.scan(Cell, variable_broadcast="params", split_rngs={"params": False}, in_axes=0, out_axes=0)
        carry = jnp.zeros((xs.shape[1], 16))
        return scan()(carry, xs)

class Remat(nn.Module):
    @nn.compact
    def __call__(self, x):
        for _ in range(3):
            x = nn.remat(nn.Dense)(32)(x)
            x = nn.relu(x)
        return x.sum()

rnn = RNN()
sequence = jax.random.normal(jax.random.key(0), (20, 4, 8))
rnn_vars = rnn.init(jax.random.key(1), sequence)
remat = Remat()
x32 = jnp.ones((4, 32))
remat_vars = remat.init(jax.random.key(2), x32)

def remat_grad(variables, x):
    return jax.grad(lambda v: remat.apply(v, x))(variables)
""",
    needs=("flax",),
)


CASES = [
    BASICS.case("apply", "mlp.apply(variables, x)", tags={"method", "pytree"}),
    BASICS.case("apply-function", "apply_mlp(variables, x)", tags={"pytree"}),
    BASICS.case("init", "mlp.init(init_key, x)", tags={"method", "random"}),
    TRAIN.case("train-step", "train_step(state, images, labels)", tags={"jitted"}),
    TRAIN.case("forward", "cnn.apply({'params': params}, images)", tags={"method"}),
    BATCHNORM.case("train-mutable-batch-stats", "training_forward(normed_vars, xs, dropout_key)", tags={"random"}),
    BATCHNORM.case("eval", "eval_forward(normed_vars, xs)"),
    BATCHNORM.case(
        "python-bool-flag-under-jit",
        "apply_jit(normed_vars, xs, False)",
        "TracerBoolConversionError",
        tags={"static", "cond"},
    ),
    SCAN.case("nn-scan-rnn", "rnn.apply(rnn_vars, sequence)", tags={"scan", "method"}),
    SCAN.case("remat-grad", "remat_grad(remat_vars, x32)", tags={"checkpoint", "grad", "memory"}),
]
