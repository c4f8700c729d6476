"""Flax NNX in the shapes its documentation teaches (flax.readthedocs.io: "Flax basics",
"MNIST tutorial", "NNX transforms", "Randomness", "Why NNX"), in our own words."""

from tests.corpus import Cell

BASICS = Cell(
    "flax-nnx",
    "flax docs: nnx_basics.md",
    "flax-nnx/basics",
    """
import jax
import jax.numpy as jnp
import optax
from flax import nnx

class MLP(nnx.Module):
    def __init__(self, din, dmid, dout, *, rngs: nnx.Rngs):
        self.linear1 = nnx.Linear(din, dmid, rngs=rngs)
        self.dropout = nnx.Dropout(rate=0.1, rngs=rngs)
        self.bn = nnx.BatchNorm(dmid, rngs=rngs)
        self.linear2 = nnx.Linear(dmid, dout, rngs=rngs)

    def __call__(self, x):
        x = nnx.gelu(self.dropout(self.bn(self.linear1(x))))
        return self.linear2(x)

model = MLP(2, 16, 5, rngs=nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
x = jax.random.normal(jax.random.key(1), (8, 2))
y = jax.random.normal(jax.random.key(2), (8, 5))

@nnx.jit
def train_step(model, optimizer, x, y):
    def loss_fn(model):
        return jnp.mean((model(x) - y) ** 2)

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss

def predict(model, x):
    return model(x)

eval_model = MLP(2, 16, 5, rngs=nnx.Rngs(3))
eval_model.eval()
""",
    needs=("flax", "optax"),
)

FUNCTIONAL = Cell(
    "flax-nnx",
    "flax docs: nnx_basics.md (the functional API)",
    "flax-nnx/functional",
    """
import jax
import jax.numpy as jnp
from flax import nnx

class Count(nnx.Variable):
    pass

class Linear(nnx.Module):
    def __init__(self, din, dout, *, rngs: nnx.Rngs):
        key = rngs.params()
        self.w = nnx.Param(jax.random.uniform(key, (din, dout)))
        self.b = nnx.Param(jnp.zeros((dout,)))
        self.count = Count(jnp.array(0))

    def __call__(self, x):
        self.count.value += 1
        return x @ self.w + self.b

layer = Linear(3, 4, rngs=nnx.Rngs(0))
graphdef, state = nnx.split(layer)

@jax.jit
def pure_forward(graphdef, state, x):
    model = nnx.merge(graphdef, state)
    y = model(x)
    _, state = nnx.split(model)
    return y, state

x3 = jnp.ones((2, 3))
""",
    needs=("flax",),
)

MNIST = Cell(
    "flax-nnx",
    "flax docs: mnist_tutorial.md",
    "flax-nnx/mnist",
    """
from functools import partial
import jax
import jax.numpy as jnp
import optax
from flax import nnx

class CNN(nnx.Module):
    def __init__(self, *, rngs: nnx.Rngs):
        self.conv1 = nnx.Conv(1, 8, kernel_size=(3, 3), rngs=rngs)
        self.conv2 = nnx.Conv(8, 16, kernel_size=(3, 3), rngs=rngs)
        self.avg_pool = partial(nnx.avg_pool, window_shape=(2, 2), strides=(2, 2))
        self.linear1 = nnx.Linear(7 * 7 * 16, 64, rngs=rngs)
        self.linear2 = nnx.Linear(64, 10, rngs=rngs)

    def __call__(self, x):
        x = self.avg_pool(nnx.relu(self.conv1(x)))
        x = self.avg_pool(nnx.relu(self.conv2(x)))
        x = x.reshape(x.shape[0], -1)
        return self.linear2(nnx.relu(self.linear1(x)))

cnn = CNN(rngs=nnx.Rngs(0))
cnn_optimizer = nnx.Optimizer(cnn, optax.adamw(0.005, 0.9), wrt=nnx.Param)
metrics = nnx.MultiMetric(accuracy=nnx.metrics.Accuracy(), loss=nnx.metrics.Average("loss"))
images = jax.random.normal(jax.random.key(0), (16, 28, 28, 1))
labels = jnp.arange(16) % 10
batch = {"image": images, "label": labels}

def loss_fn(model, batch):
    logits = model(batch["image"])
    loss = optax.softmax_cross_entropy_with_integer_labels(logits=logits, labels=batch["label"]).mean()
    return loss, logits

@nnx.jit
def cnn_train_step(model, optimizer, metrics, batch):
    grad_fn = nnx.value_and_grad(loss_fn, has_aux=True)
    (loss, logits), grads = grad_fn(model, batch)
    metrics.update(loss=loss, logits=logits, labels=batch["label"])
    optimizer.update(model, grads)

@nnx.jit
def cnn_eval_step(model, metrics, batch):
    loss, logits = loss_fn(model, batch)
    metrics.update(loss=loss, logits=logits, labels=batch["label"])
""",
    needs=("flax", "optax"),
    tags={"training-step", "grad"},
)

TRAPS = Cell(
    "flax-nnx",
    "flax docs: nnx_basics.md, transforms.md",
    "flax-nnx/traps",
    """
import jax
import jax.numpy as jnp
import optax
from flax import nnx

model = nnx.Linear(4, 1, rngs=nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
xb = jnp.ones((8, 4))
yb = jnp.zeros((8, 1))

@nnx.jit
def step_printing_loss(model, optimizer, x, y):
    def loss_fn(model):
        return jnp.mean((model(x) - y) ** 2)

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    print(f"loss {float(loss):.3f}")
    optimizer.update(model, grads)
    return loss

@jax.jit
def predict_captured(x):
    return model(x)

class Scaled(nnx.Module):
    def __init__(self, *, rngs):
        self.linear = nnx.Linear(4, 4, rngs=rngs)
        self.factor = 2.0

    def __call__(self, x):
        return self.linear(x) * self.factor

scaled = Scaled(rngs=nnx.Rngs(1))

@nnx.jit
def run_scaled(m, x):
    return m(x)

def change_factor_between_calls(x):
    first = run_scaled(scaled, x)
    scaled.factor = 3.0
    second = run_scaled(scaled, x)
    scaled.factor = 2.0
    return first, second
""",
    needs=("flax", "optax"),
)

RNGS = Cell(
    "flax-nnx",
    "flax docs: randomness.md, transforms.md",
    "flax-nnx/rngs",
    """
import jax
import jax.numpy as jnp
from flax import nnx

class NoisyDropout(nnx.Module):
    def __init__(self, *, rngs: nnx.Rngs):
        self.linear = nnx.Linear(8, 8, rngs=rngs)
        self.dropout = nnx.Dropout(0.5, rngs=rngs)

    def __call__(self, x):
        return self.dropout(self.linear(x))

noisy = NoisyDropout(rngs=nnx.Rngs(params=0, dropout=1))
x8 = jnp.ones((4, 8))

@nnx.vmap(in_axes=0, out_axes=0)
def create_ensemble(key):
    return nnx.Linear(3, 2, rngs=nnx.Rngs(key))

ensemble_keys = jax.random.split(jax.random.key(0), 4)

@nnx.jit
def noisy_forward(model, x):
    return model(x)
""",
    needs=("flax",),
    tags={"random"},
)


CASES = [
    BASICS.case("train-step", "train_step(model, optimizer, x, y)", tags={"training-step", "grad", "jitted"}),
    BASICS.case("forward", "model(x)", tags={"method", "no-jit"}),
    BASICS.case("predict-eval-mode", "predict(eval_model, x)", tags={"no-jit"}),
    FUNCTIONAL.case("split-merge-jit", "pure_forward(graphdef, state, x3)", tags={"jitted", "pytree"}),
    FUNCTIONAL.case("stateful-call", "layer(x3)", tags={"method", "side-effect", "no-jit"}),
    MNIST.case("cnn-forward", "cnn(images)", tags={"method", "no-jit"}),
    MNIST.case("cnn-train-step", "cnn_train_step(cnn, cnn_optimizer, metrics, batch)", tags={"jitted"}),
    MNIST.case("cnn-eval-step", "cnn_eval_step(cnn, metrics, batch)", tags={"jitted"}),
    TRAPS.case(
        "float-loss-in-fstring",
        "step_printing_loss(model, optimizer, xb, yb)",
        "ConcretizationTypeError",
        tags={"training-step", "grad"},
    ),
    TRAPS.case("module-captured-by-closure", "predict_captured(xb)", tags={"closure", "captured-constant", "jitted"}),
    TRAPS.case(
        "attribute-changed-between-calls",
        "change_factor_between_calls(xb)",
        tags={"recompile", "static", "no-jit", "side-effect"},
    ),
    RNGS.case("dropout-rngs", "noisy_forward(noisy, x8)", tags={"jitted", "side-effect"}),
    RNGS.case("vmap-ensemble", "create_ensemble(ensemble_keys)", tags={"vmap", "no-jit"}),
]
