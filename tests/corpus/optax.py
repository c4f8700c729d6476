"""Optax in the shapes its documentation teaches (optax.readthedocs.io: "Getting started",
"Learning-rate schedules", "inject_hyperparams", "Gradient accumulation", "L-BFGS"), in our own
words."""

from tests.corpus import Cell

START = Cell(
    "optax",
    "optax docs: getting_started.ipynb",
    "optax/getting-started",
    """
import jax
import jax.numpy as jnp
import optax

key = jax.random.PRNGKey(0)
xs = jax.random.normal(key, (64, 8))
target_w = jnp.arange(8.0)
ys = xs @ target_w

def loss(params, x, y):
    return jnp.mean((x @ params["w"] + params["b"] - y) ** 2)

params = {"w": jnp.zeros(8), "b": jnp.float32(0.0)}
optimizer = optax.adam(learning_rate=1e-2)
opt_state = optimizer.init(params)

@jax.jit
def step(params, opt_state, x, y):
    value, grads = jax.value_and_grad(loss)(params, x, y)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, value

def fit(params, opt_state, steps=20):
    for _ in range(steps):
        params, opt_state, value = step(params, opt_state, xs, ys)
    return value

grads = jax.grad(loss)(params, xs, ys)
""",
    needs=("optax",),
    tags={"training-step"},
)

SWEEP = Cell(
    "optax",
    "optax docs: api/optimizer_schedules.rst (inject_hyperparams)",
    "optax/sweep",
    """
import jax
import jax.numpy as jnp
import optax

xs = jax.random.normal(jax.random.PRNGKey(0), (32, 4))
ys = xs.sum(axis=1)

def loss(w, x, y):
    return jnp.mean((x @ w - y) ** 2)

def make_step(lr):
    optimizer = optax.sgd(lr)

    @jax.jit
    def step(w, opt_state):
        grads = jax.grad(loss)(w, xs, ys)
        updates, opt_state = optimizer.update(grads, opt_state, w)
        return optax.apply_updates(w, updates), opt_state

    return optimizer, step

def sweep_learning_rates(lrs=(0.1, 0.03, 0.01)):
    finals = []
    for lr in lrs:
        optimizer, step = make_step(lr)
        w = jnp.zeros(4)
        opt_state = optimizer.init(w)
        for _ in range(3):
            w, opt_state = step(w, opt_state)
        finals.append(loss(w, xs, ys))
    return finals

injected = optax.inject_hyperparams(optax.sgd)(learning_rate=0.1)

@jax.jit
def injected_step(w, opt_state):
    grads = jax.grad(loss)(w, xs, ys)
    updates, opt_state = injected.update(grads, opt_state, w)
    return optax.apply_updates(w, updates), opt_state

def sweep_injected(lrs=(0.1, 0.03, 0.01)):
    finals = []
    for lr in lrs:
        w = jnp.zeros(4)
        opt_state = injected.init(w)
        opt_state.hyperparams["learning_rate"] = jnp.asarray(lr)
        for _ in range(3):
            w, opt_state = injected_step(w, opt_state)
        finals.append(loss(w, xs, ys))
    return finals

w4 = jnp.zeros(4)
""",
    needs=("optax",),
    tags={"sweep"},
)

CHAINS = Cell(
    "optax",
    "optax docs: api/combining_optimizers.rst, api/optimizer_schedules.rst, api/losses.rst",
    "optax/chains",
    """
import jax
import jax.numpy as jnp
import optax

schedule = optax.warmup_cosine_decay_schedule(
    init_value=0.0, peak_value=1e-3, warmup_steps=10, decay_steps=100, end_value=1e-5)
tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(learning_rate=schedule, weight_decay=1e-4))
params = {"dense": {"kernel": jnp.ones((4, 3)), "bias": jnp.zeros(3)}}
grads = jax.tree.map(lambda p: 0.1 * jnp.ones_like(p), params)
state = tx.init(params)

def chained_update(grads, state, params):
    updates, state = tx.update(grads, state, params)
    return optax.apply_updates(params, updates), state

decay_mask = jax.tree.map(lambda p: p.ndim > 1, params)
masked = optax.masked(optax.add_decayed_weights(1e-2), decay_mask)
masked_state = masked.init(params)

accumulated = optax.MultiSteps(optax.sgd(0.1), every_k_schedule=4)
accumulated_state = accumulated.init(params)

logits = jax.random.normal(jax.random.PRNGKey(0), (16, 10))
labels = jnp.arange(16) % 10

def classification_loss(logits, labels):
    return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

def smoothed_loss(logits, labels):
    one_hot = optax.smooth_labels(jax.nn.one_hot(labels, 10), 0.1)
    return optax.softmax_cross_entropy(logits, one_hot).mean()
""",
    needs=("optax",),
)

LBFGS = Cell(
    "optax",
    "optax docs: _collections/examples/lbfgs.ipynb",
    "optax/lbfgs",
    """
import jax
import jax.numpy as jnp
import optax

def rosenbrock(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

solver = optax.lbfgs()

value_and_grad = optax.value_and_grad_from_state(rosenbrock)

@jax.jit
def lbfgs_step(params, state):
    value, grad = value_and_grad(params, state=state)
    updates, state = solver.update(grad, state, params, value=value, grad=grad, value_fn=rosenbrock)
    return optax.apply_updates(params, updates), state

def run_lbfgs(params, steps=10):
    state = solver.init(params)
    for _ in range(steps):
        params, state = lbfgs_step(params, state)
    return params

start = jnp.zeros(4)
start_state = solver.init(start)
""",
    needs=("optax",),
    tags={"solver", "grad"},
)


CASES = [
    START.case("adam-step", "step(params, opt_state, xs, ys)", tags={"jitted", "grad"}),
    START.case("update-eager", "optimizer.update(grads, opt_state, params)", tags={"method", "pytree"}),
    START.case("fit-loop", "fit(params, opt_state)", tags={"no-jit", "jitted"}),
    SWEEP.case("learning-rate-sweep", "sweep_learning_rates()", tags={"recompile", "factory", "closure", "no-jit"}),
    SWEEP.case("inject-hyperparams-sweep", "sweep_injected()", tags={"no-jit"}),
    SWEEP.case("inject-hyperparams-init", "injected.init(w4)", tags={"method"}),
    CHAINS.case("clip-adamw-schedule", "chained_update(grads, state, params)", tags={"pytree"}),
    CHAINS.case("schedule-value", "schedule(50)"),
    CHAINS.case("masked-weight-decay", "masked.update(grads, masked_state, params)", tags={"method", "pytree"}),
    CHAINS.case("multi-steps", "accumulated.update(grads, accumulated_state, params)", tags={"method", "pytree"}),
    CHAINS.case("softmax-cross-entropy", "classification_loss(logits, labels)"),
    CHAINS.case("smoothed-labels", "smoothed_loss(logits, labels)"),
    LBFGS.case("lbfgs-step", "lbfgs_step(start, start_state)", tags={"jitted", "loop"}),
    LBFGS.case("lbfgs-rosenbrock", "run_lbfgs(start)", tags={"no-jit", "recompile"}),
]
