"""Code in the shapes JAX's own documentation teaches (jax-ml/jax ``docs/``), in our own words:
one cell per page, several calls into it."""

from tests.corpus import Cell

# ---------------------------------------------------------------- docs/automatic-differentiation.md
AUTODIFF = Cell(
    "jax",
    "docs/automatic-differentiation.md",
    "jax-docs/autodiff",
    """
import jax
import jax.numpy as jnp

def sum_logistic(x):
    return jnp.sum(1.0 / (1.0 + jnp.exp(-x)))

x = jnp.arange(10.)
grad_sum_logistic = jax.grad(sum_logistic)
third_derivative_of_tanh = jax.grad(jax.grad(jax.grad(jnp.tanh)))

def central_differences(f, x, eps=1e-3):
    return jnp.array([(f(x + eps * v) - f(x - eps * v)) / (2 * eps) for v in jnp.eye(len(x))])

def predict(W, b, inputs):
    return jax.nn.sigmoid(jnp.dot(inputs, W) + b)

inputs = jnp.array([[0.52, 1.12, 0.77], [0.88, -1.08, 0.15], [0.52, 0.06, -1.30], [0.74, -2.49, 1.39]])
targets = jnp.array([True, True, False, True])

def logistic_loss(W, b):
    preds = predict(W, b, inputs)
    label_probs = preds * targets + (1 - preds) * (1 - targets)
    return -jnp.sum(jnp.log(label_probs))

W = jnp.array([0.3, -0.2, 0.9])
b = 0.1
loss_grads = jax.grad(logistic_loss, argnums=(0, 1))

def loss_with_aux(W, b):
    preds = predict(W, b, inputs)
    return jnp.sum((preds - targets) ** 2), preds

value_grad_aux = jax.value_and_grad(loss_with_aux, has_aux=True)
""",
)

# ---------------------------------------------------------------- docs/jit-compilation.md
JIT = Cell(
    "jax",
    "docs/jit-compilation.md",
    "jax-docs/jit",
    """
from functools import partial
import jax
import jax.numpy as jnp

def selu(x, alpha=1.67, lambda_=1.05):
    return lambda_ * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

selu_jit = jax.jit(selu)
big = jnp.arange(1_000_000, dtype=jnp.float32) / 1_000_000 - 0.5

def log2(x):
    ln_x = jnp.log(x)
    ln_2 = jnp.log(2.0)
    return ln_x / ln_2

def log2_with_print(x):
    print("printed x:", x)
    return jnp.log(x) / jnp.log(2.0)

@jax.jit
def double_if_negative(x):
    if x > 0:
        return x
    return 2 * x

def add_loop_count(x, n):
    i = 0
    while i < n:
        i += 1
    return x + i

add_loop_count_jit = jax.jit(add_loop_count)
add_loop_count_static = jax.jit(add_loop_count, static_argnames=["n"])

def plus_one(i):
    return i + 1

def count_with_new_partials(x, n):
    i = 0
    while i < n:
        i = jax.jit(partial(plus_one))(i)
    return x + i

def count_with_new_lambdas(x, n):
    i = 0
    while i < n:
        i = jax.jit(lambda v: plus_one(v))(i)
    return x + i

def make_step(lr):
    @jax.jit
    def step(w, g):
        return w - lr * g
    return step

def steps_for_each_rate(w, g, rates=(0.1, 0.01, 0.001)):
    return [make_step(lr)(w, g) for lr in rates]

w3 = jnp.ones(3)
g3 = jnp.full(3, 0.5)

def count_with_one_function(x, n):
    i = 0
    while i < n:
        i = jax.jit(plus_one)(i)
    return x + i
""",
)

# ---------------------------------------------------------------- docs/control-flow.md
CONTROL = Cell(
    "jax",
    "docs/control-flow.md",
    "jax-docs/control-flow",
    """
import jax
import jax.numpy as jnp
from jax import lax

def piecewise(x):
    if x < 3:
        return 3.0 * x ** 2
    return -4 * x

grad_piecewise = jax.grad(piecewise)
piecewise_jit = jax.jit(piecewise)

def below(v):
    return v < 10

def step_up(v):
    return v + 1

def add_index(i, v):
    return v + i

def running_total(carry, x):
    carry = carry + x
    return carry, carry

def plus_one(x):
    return x + 1.0

def minus_one(x):
    return x - 1.0

def branch(p, x):
    return lax.cond(p, plus_one, minus_one, x)

def pick_function(i, x):
    return lax.switch(i, [jnp.sin, jnp.cos, jnp.tanh], x)

def doubled_until_ten(x):
    return lax.while_loop(lambda v: v < 10.0, lambda v: v * 2.0, x)

grad_of_while = jax.grad(doubled_until_ten)

def sum_of_squares_fori(x):
    return lax.fori_loop(0, 5, lambda i, acc: acc + x ** 2, 0.0)

grad_of_fori = jax.grad(sum_of_squares_fori)
steps = jnp.arange(1.0, 101.0)
""",
)

SCAN_RNN = Cell(
    "jax",
    "docs/control-flow.md",
    "jax-docs/control-flow",
    """
import jax
import jax.numpy as jnp
from jax import lax

def rnn(params, xs):
    w_h, w_x, b = params

    def step(h, x):
        h = jnp.tanh(h @ w_h + x @ w_x + b)
        return h, h.sum()

    h0 = jnp.zeros((xs.shape[1], w_h.shape[0]), xs.dtype)
    return lax.scan(step, h0, xs)

k1, k2, k3 = jax.random.split(jax.random.key(0), 3)
rnn_params = (jax.random.normal(k1, (512, 512)) / 512 ** 0.5, jax.random.normal(k2, (256, 512)) / 16.0, jnp.zeros(512))
xs_100 = jax.random.normal(k3, (100, 64, 256))
""",
    tags={"scan", "memory"},
)

CAPTURED = Cell(
    "jax",
    "docs/jit-compilation.md",
    "jax-docs/jit",
    """
import jax
import jax.numpy as jnp

w = jax.random.normal(jax.random.key(4), (1024, 1024)) / 32.0

def predict(x):
    return jnp.tanh(x @ w).sum(axis=1)

batch = jnp.ones((64, 1024))
""",
    tags={"closure", "captured-constant", "memory"},
)

# ---------------------------------------------------------------- jax/_src/errors.py (docs/errors.rst)
ERRORS = Cell(
    "jax",
    "docs/errors.rst",
    "jax-docs/errors",
    """
from functools import partial
import numpy as np
import jax
import jax.numpy as jnp

@jax.jit
def smallest_along(x, axis):
    return x.min(axis)

@partial(jax.jit, static_argnums=1)
def smallest_along_static(x, axis):
    return x.min(axis)

@jax.jit
def negative_positions(x):
    return jnp.where(x < 0)

@jax.jit
def sum_above_one(x):
    indices = jnp.where(x > 1)
    return x[indices].sum()

@jax.jit
def sum_above_one_masked(x):
    return jnp.where(x > 1, x, 0).sum()

@jax.jit
def positive_values(x):
    return x[x > 0]

@jax.jit
def sum_of_positive(x):
    return x[x > 0].sum()

@jax.jit
def sum_of_positive_where(x):
    return jnp.where(x > 0, x, 0).sum()

@jax.jit
def clip_below_zero(x):
    return x.at[x < 0].set(0)

@jax.jit
def clip_below_zero_where(x):
    return jnp.where(x < 0, 0, x)

@jax.jit
def numpy_sine(x):
    return np.sin(x)

@jax.jit
def jnp_sine(x):
    return jnp.sin(x)

table = np.arange(10)

@jax.jit
def look_up(i):
    return table[i]

@jax.jit
def look_up_converted(i):
    return jnp.asarray(table)[i]

@jax.jit
def halves(x, axis):
    return np.split(x, 2, axis)

@partial(jax.jit, static_argnums=1)
def halves_static(x, axis):
    return np.split(x, 2, axis)

items = [1, 2, 3]

@jax.jit
def item_at(i):
    return items[i]

@jax.jit
def item_at_array(i):
    return jnp.array(items)[i]

@jax.jit
def smaller_sum(x, y):
    return x if x.sum() < y.sum() else y

@jax.jit
def smaller_sum_where(x, y):
    return jnp.where(x.sum() < y.sum(), x, y)

@jax.jit
def scaled(x, normalize=True):
    if normalize:
        return x / x.sum()
    return x

@partial(jax.jit, static_argnames=["normalize"])
def scaled_static(x, normalize=True):
    if normalize:
        return x / x.sum()
    return x

@jax.jit
def at_most_zero(x):
    return min(x, 0)

@jax.jit
def at_most_zero_minimum(x):
    return jnp.minimum(x, 0)

kept = []

@jax.jit
def keeps_intermediate(x):
    y = x + 1
    kept.append(y)
    return y

def keep_then_use(x):
    keeps_intermediate(x)
    return kept[-1] + 1

values = jnp.array([5, 0, 2, 3])
""",
)

ERRORS_KEYS = Cell(
    "jax",
    "docs/errors.rst",
    "jax-docs/errors",
    """
import jax

def uniform_twice(seed):
    with jax.debug_key_reuse(True):
        key = jax.random.key(seed)
        first = jax.random.uniform(key)
        second = jax.random.uniform(key)
        return first + second

def uniform_split(seed):
    with jax.debug_key_reuse(True):
        key1, key2 = jax.random.split(jax.random.key(seed))
        return jax.random.uniform(key1) + jax.random.uniform(key2)
""",
    tags={"random", "key-reuse"},
)

# ---------------------------------------------------------------- docs/notebooks/thinking_in_jax.md
THINKING = Cell(
    "jax",
    "docs/notebooks/thinking_in_jax.md",
    "jax-docs/thinking",
    """
import numpy as np
import jax
import jax.numpy as jnp

def norm(X):
    X = X - X.mean(0)
    return X / X.std(0)

norm_compiled = jax.jit(norm)
X = jax.random.uniform(jax.random.key(1701), (10000, 10))

def get_negatives(x):
    return x[x < 0]

get_negatives_jit = jax.jit(get_negatives)
samples = jax.random.normal(jax.random.key(0), (10,))

@jax.jit
def flatten_by_traced_size(x):
    return x.reshape(jnp.array(x.shape).prod())

@jax.jit
def flatten_by_static_size(x):
    return x.reshape((np.prod(x.shape),))

grid = jnp.ones((2, 3))

def python_print_under_jit(x, y):
    print("Running: x =", x, "y =", y)
    return jnp.dot(x + 1, y + 1)

traced_print = jax.jit(python_print_under_jit)
xv = jnp.ones((3, 4))
yv = jnp.ones(4)
""",
)

# ---------------------------------------------------------------- docs/notebooks/Common_Gotchas_in_JAX.md
GOTCHAS = Cell(
    "jax",
    "docs/notebooks/Common_Gotchas_in_JAX.md",
    "jax-docs/gotchas",
    """
from functools import partial
import numpy as np
import jax
import jax.numpy as jnp

offset = 5.0

def uses_global(x):
    return x + offset

uses_global_jit = jax.jit(uses_global)

def in_place_assignment(x):
    x[1, :] = 1.0
    return x

def functional_update(x):
    return x.at[1, :].set(1.0)

board = jnp.zeros((3, 3), dtype=jnp.float32)

def out_of_bounds_read(x):
    return x[11]

counts = jnp.arange(10)

def sum_of_list(values):
    return jnp.sum(values)

def nan_aware_sum(x):
    mask = ~jnp.isnan(x)
    return x[mask].sum()

nan_aware_sum_jit = jax.jit(nan_aware_sum)

@jax.jit
def nan_aware_sum_where(x):
    return jnp.where(jnp.isnan(x), 0, x).sum()

with_nans = jnp.array([1.0, jnp.nan, 2.0, jnp.nan, 3.0])

class Scaler:
    def __init__(self, x, mul):
        self.x = x
        self.mul = mul

    @jax.jit
    def calc(self, y):
        if self.mul:
            return self.x * y
        return y

class StaticScaler:
    def __init__(self, x, mul):
        self.x = x
        self.mul = mul

    @partial(jax.jit, static_argnums=0)
    def calc(self, y):
        if self.mul:
            return self.x * y
        return y

class HelperScaler:
    def __init__(self, x, mul):
        self.x = x
        self.mul = mul

    def calc(self, y):
        return _scaled(self.mul, self.x, y)

@partial(jax.jit, static_argnums=0)
def _scaled(mul, x, y):
    if mul:
        return x * y
    return y

@jax.tree_util.register_pytree_node_class
class TreeScaler:
    def __init__(self, x, mul):
        self.x = x
        self.mul = mul

    @jax.jit
    def calc(self, y):
        if self.mul:
            return self.x * y
        return y

    def tree_flatten(self):
        return (self.x,), (self.mul,)

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children, *aux)

scaler = Scaler(2, True)
static_scaler = StaticScaler(2, True)

def flip_then_call(y):
    before = static_scaler.calc(y)
    static_scaler.mul = False
    after = static_scaler.calc(y)
    static_scaler.mul = True
    return before, after
helper_scaler = HelperScaler(2, True)
tree_scaler = TreeScaler(jnp.float32(2), True)
""",
)

# ---------------------------------------------------------------- docs/random-numbers.md
RANDOM = Cell(
    "jax",
    "docs/random-numbers.md",
    "jax-docs/random",
    """
import jax
import jax.numpy as jnp

key = jax.random.key(42)

def split_and_draw(key):
    key, subkey = jax.random.split(key)
    return key, jax.random.normal(subkey, (3,))

def three_draws(key):
    keys = jax.random.split(key, 3)
    return jnp.stack([jax.random.normal(k) for k in keys])

def many_draws(key):
    return jax.random.normal(key, (1000,))

def bernoulli_mask(key, p=0.5):
    return jax.random.bernoulli(key, p, (8, 8))
""",
    tags={"random"},
)

RANDOM_GLOBAL = Cell(
    "jax",
    "docs/random-numbers.md",
    "jax-docs/random",
    """
import jax

global_key = jax.random.key(0)

@jax.jit
def noise_from_global_key():
    global global_key
    global_key, sub = jax.random.split(global_key)
    return jax.random.normal(sub, ())
""",
    tags={"random", "side-effect", "leak", "no-jit"},
)

# ---------------------------------------------------------------- docs/stateful-computations.md
STATE = Cell(
    "jax",
    "docs/stateful-computations.md",
    "jax-docs/state",
    """
import jax
import jax.numpy as jnp

class Counter:
    def __init__(self):
        self.n = 0

    def count(self):
        self.n += 1
        return self.n

counter = Counter()
count_jit = jax.jit(counter.count)

def count_functional(n):
    return n + 1, n + 1

def linear_loss(params, x, y):
    pred = params["w"] * x + params["b"]
    return jnp.mean((pred - y) ** 2)

def fit_step(params, x, y, lr=0.005):
    grads = jax.grad(linear_loss)(params, x, y)
    return jax.tree.map(lambda p, g: p - lr * g, params, grads)

kx, kn = jax.random.split(jax.random.key(42))
xs = jax.random.normal(kx, (100,))
ys = 3 * xs - 1 + 0.5 * jax.random.normal(kn, (100,))
line = {"w": jnp.float32(1.0), "b": jnp.float32(0.0)}
""",
)

# ---------------------------------------------------------------- docs/pytrees.md
PYTREES = Cell(
    "jax",
    "docs/pytrees.md",
    "jax-docs/pytrees",
    """
import numpy as np
import jax
import jax.numpy as jnp

def init_mlp_params(layer_widths, seed=0):
    rng = np.random.default_rng(seed)
    params = []
    for n_in, n_out in zip(layer_widths[:-1], layer_widths[1:]):
        params.append({"weights": rng.normal(size=(n_in, n_out)).astype(np.float32) * np.sqrt(2 / n_in),
                       "biases": np.ones(n_out, dtype=np.float32)})
    return params

params = init_mlp_params([1, 128, 128, 1])

def forward(params, x):
    *hidden, last = params
    for layer in hidden:
        x = jax.nn.relu(x @ layer["weights"] + layer["biases"])
    return x @ last["weights"] + last["biases"]

def loss_fn(params, x, y):
    return jnp.mean((forward(params, x) - y) ** 2)

LEARNING_RATE = 0.0001

@jax.jit
def update(params, x, y):
    grads = jax.grad(loss_fn)(params, x, y)
    return jax.tree.map(lambda p, g: p - LEARNING_RATE * g, params, grads)

xs = np.random.default_rng(1).normal(size=(128, 1)).astype(np.float32)
ys = xs ** 2

def shapes_of(tree):
    return jax.tree.map(lambda leaf: leaf.shape, tree)

class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y

jax.tree_util.register_pytree_node(Point, lambda p: ((p.x, p.y), None), lambda _, xy: Point(*xy))

def distance_from_origin(p):
    return jnp.sqrt(p.x ** 2 + p.y ** 2)

point = Point(jnp.array([3.0, 0.5]), jnp.array([4.0, 1.5]))
""",
    tags={"pytree"},
)

# ---------------------------------------------------------------- docs/automatic-vectorization.md
VMAP = Cell(
    "jax",
    "docs/automatic-vectorization.md",
    "jax-docs/vmap",
    """
import jax
import jax.numpy as jnp

x = jnp.arange(5.)
w = jnp.array([2., 3., 4.])

def convolve(x, w):
    output = []
    for i in range(1, len(x) - 1):
        output.append(jnp.dot(x[i - 1:i + 2], w))
    return jnp.array(output)

xs = jnp.stack([x, x])
ws = jnp.stack([w, w])

def manually_batched(xs, ws):
    return jnp.stack([convolve(a, b) for a, b in zip(xs, ws)])

batch_convolve = jax.vmap(convolve)
batch_convolve_shared_w = jax.vmap(convolve, in_axes=[0, None])
""",
    tags={"vmap"},
)

# ---------------------------------------------------------------- docs/gradient-checkpointing.md
REMAT = Cell(
    "jax",
    "docs/gradient-checkpointing.md",
    "jax-docs/remat",
    """
from functools import partial
import jax
import jax.numpy as jnp

def layer(W, x):
    return jnp.sin(jnp.dot(W, x))

def three_layers(W1, W2, W3, x):
    return layer(W3, layer(W2, layer(W1, x))).sum()

def three_layers_remat(W1, W2, W3, x):
    layer_remat = jax.checkpoint(layer)
    return layer_remat(W3, layer_remat(W2, layer_remat(W1, x))).sum()

W1, W2, W3 = jnp.ones((5, 4)), jnp.ones((6, 5)), jnp.ones((7, 6))
x4 = jnp.ones(4)
grad_three = jax.grad(three_layers, argnums=(0, 1, 2))
grad_three_remat = jax.grad(three_layers_remat, argnums=(0, 1, 2))

def mlp_loss(params, x, policy=None):
    def block(p, h):
        return jnp.tanh(h @ p[0] + p[1])
    block = jax.checkpoint(block, policy=policy) if policy is not None else block
    for p in params:
        x = block(p, x)
    return jnp.mean(x ** 2)

keys = jax.random.split(jax.random.key(0), 4)
mlp_params = [(jax.random.normal(k, (256, 256)) / 16.0, jnp.zeros(256)) for k in keys]
batch = jax.random.normal(jax.random.key(1), (512, 256))
grad_plain = jax.grad(mlp_loss)
grad_nothing_saveable = jax.grad(partial(mlp_loss, policy=jax.checkpoint_policies.nothing_saveable))
grad_everything_saveable = jax.grad(partial(mlp_loss, policy=jax.checkpoint_policies.everything_saveable))
grad_dots_saveable = jax.grad(partial(mlp_loss, policy=jax.checkpoint_policies.dots_saveable))
grad_dots_no_batch = jax.grad(
    partial(mlp_loss, policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable))
""",
    tags={"grad", "memory", "checkpoint"},
)

# ---------------------------------------------------------------- docs/notebooks/autodiff_cookbook.md
COOKBOOK = Cell(
    "jax",
    "docs/notebooks/autodiff_cookbook.md",
    "jax-docs/cookbook",
    """
import jax
import jax.numpy as jnp

def tanh_sum(x):
    return jnp.sum(jnp.tanh(x) * x)

def hessian(f):
    return jax.jacfwd(jax.jacrev(f))

tanh_hessian = hessian(tanh_sum)

def hvp(f, x, v):
    return jax.jvp(jax.grad(f), (x,), (v,))[1]

v3 = jnp.array([0.5, -1.0, 2.0])
ones3 = jnp.ones(3)

def per_example_loss(w, x, y):
    return (jnp.dot(x, w) - y) ** 2

per_example_grads = jax.vmap(jax.grad(per_example_loss), in_axes=(None, 0, 0))
w3 = jnp.array([0.1, 0.2, 0.3])
xb = jnp.arange(24.0).reshape(8, 3) / 24
yb = jnp.arange(8.0)
""",
    tags={"grad"},
)

# ---------------------------------------------------------------- docs/notebooks/Custom_derivative_rules_for_Python_code.md
CUSTOM = Cell(
    "jax",
    "docs/notebooks/Custom_derivative_rules_for_Python_code.md",
    "jax-docs/custom-derivatives",
    """
import jax
import jax.numpy as jnp

def log1pexp(x):
    return jnp.log(1.0 + jnp.exp(x))

grad_log1pexp = jax.grad(log1pexp)

@jax.custom_jvp
def log1pexp_stable(x):
    return jnp.log(1.0 + jnp.exp(x))

@log1pexp_stable.defjvp
def _log1pexp_stable_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return log1pexp_stable(x), (1 - 1 / (1 + jnp.exp(x))) * x_dot

grad_log1pexp_stable = jax.grad(log1pexp_stable)

def over_one_plus_sqrt(x):
    return x / (1 + jnp.sqrt(x))

grad_over_one_plus_sqrt = jax.grad(over_one_plus_sqrt)

@jax.custom_vjp
def clip_gradient(x, lo, hi):
    return x

def _clip_fwd(x, lo, hi):
    return x, (lo, hi)

def _clip_bwd(res, g):
    lo, hi = res
    return (jnp.clip(g, lo, hi), None, None)

clip_gradient.defvjp(_clip_fwd, _clip_bwd)
grad_of_clipped = jax.grad(lambda x: clip_gradient(jnp.sin(x) * 10, -0.75, 0.75))
""",
    tags={"grad"},
)

# ---------------------------------------------------------------- docs/faq.rst
FAQ = Cell(
    "jax",
    "docs/faq.rst",
    "jax-docs/faq",
    """
import jax
import jax.numpy as jnp

def log_where(x):
    return jnp.where(x > 0.0, jnp.log(x), 0.0)

def log_double_where(x):
    return jnp.where(x > 0.0, jnp.log(jnp.where(x > 0.0, x, 1.0)), 0.0)

grad_log_where = jax.grad(log_where)
grad_log_double_where = jax.grad(log_double_where)

def step(x):
    return jnp.where(x > 0, 1.0, 0.0)

grad_step = jax.vmap(jax.grad(step))
grid = jnp.linspace(-1.0, 1.0, 5)

def log_of_exp(x):
    return jnp.log(jnp.exp(x))

def log_of_sqrt(x):
    return jnp.log(jnp.sqrt(x))

def impure(x):
    print("Inside:", y)
    return x + y

y = 0
""",
)

# ---------------------------------------------------------------- docs/async_dispatch.rst, docs/benchmarking.md
DISPATCH = Cell(
    "jax",
    "docs/async_dispatch.rst",
    "jax-docs/dispatch",
    """
import numpy as np
import jax
import jax.numpy as jnp

m = jax.random.normal(jax.random.key(0), (1000, 1000))
m_np = np.asarray(m)

def square_matmul(a):
    return jnp.dot(a, a)

def matmul_tanh(a, b):
    c = a @ b
    d = c + 1.0
    return jnp.tanh(d).sum()

a600 = jax.random.normal(jax.random.key(1), (600, 600)) / 25
b600 = jax.random.normal(jax.random.key(2), (600, 600)) / 25
""",
)

# ---------------------------------------------------------------- docs/debugging/print_breakpoint.md, checkify_guide.md
DEBUGGING = Cell(
    "jax",
    "docs/debugging/print_breakpoint.md",
    "jax-docs/debugging",
    """
import jax
import jax.numpy as jnp
from jax.experimental import checkify

@jax.jit
def show_intermediate(x):
    y = jnp.sin(x)
    jax.debug.print("y = {y}", y=y)
    return y * 2

def index_then_sine(x, i):
    checkify.check(i >= 0, "index needs to be non-negative, got {i}", i=i)
    return jnp.sin(x[i])

checked_index = checkify.checkify(index_then_sine)
checked_index_jit = jax.jit(checked_index)
nan_checked = checkify.checkify(lambda x: jnp.log(x), errors=checkify.float_checks)
five = jnp.arange(5.0)
""",
    tags={"callback"},
)

# ---------------------------------------------------------------- docs/external-callbacks.md
CALLBACKS = Cell(
    "jax",
    "docs/external-callbacks.md",
    "jax-docs/callbacks",
    """
import numpy as np
import jax
import jax.numpy as jnp

def host_sine(x):
    return np.sin(x).astype(x.dtype)

def sine_via_host(x):
    result_shape = jax.ShapeDtypeStruct(x.shape, x.dtype)
    return jax.pure_callback(host_sine, result_shape, x, vmap_method="sequential")

angles = jnp.linspace(0.0, 1.0, 100)
""",
    tags={"callback"},
)

# ---------------------------------------------------------------- docs/aot.md, docs/buffer_donation.md, docs/type_promotion.rst
AOT = Cell(
    "jax",
    "docs/aot.md",
    "jax-docs/aot",
    """
from functools import partial
import jax
import jax.numpy as jnp

def affine(x, y):
    return 2 * x + y

@partial(jax.jit, donate_argnums=0)
def add_into(buffer, delta):
    return buffer + delta

def scale(x, factor):
    return x * factor

scale_jit = jax.jit(scale)
grid = jnp.linspace(0, 1, 100)
x3 = jnp.ones(3)
""",
)

# ---------------------------------------------------------------- docs/_tutorials / Neural_Network_and_Data_Loading.md
MLP = Cell(
    "jax",
    "docs/notebooks/Neural_Network_and_Data_Loading.md",
    "jax-docs/mlp",
    """
import jax
import jax.numpy as jnp
from jax.scipy.special import logsumexp

def random_layer_params(m, n, key, scale=1e-2):
    w_key, b_key = jax.random.split(key)
    return scale * jax.random.normal(w_key, (n, m)), scale * jax.random.normal(b_key, (n,))

def init_network_params(sizes, key):
    keys = jax.random.split(key, len(sizes))
    return [random_layer_params(m, n, k) for m, n, k in zip(sizes[:-1], sizes[1:], keys)]

layer_sizes = [784, 256, 10]
net_params = init_network_params(layer_sizes, jax.random.key(0))

def predict(params, image):
    activations = image
    for w, b in params[:-1]:
        activations = jax.nn.relu(jnp.dot(w, activations) + b)
    final_w, final_b = params[-1]
    logits = jnp.dot(final_w, activations) + final_b
    return logits - logsumexp(logits)

batched_predict = jax.vmap(predict, in_axes=(None, 0))

def one_hot(x, k=10):
    return jnp.array(x[:, None] == jnp.arange(k), jnp.float32)

def loss(params, images, targets):
    return -jnp.mean(batched_predict(params, images) * targets)

@jax.jit
def sgd_update(params, x, y, step_size=0.01):
    grads = jax.grad(loss)(params, x, y)
    return [(w - step_size * dw, b - step_size * db) for (w, b), (dw, db) in zip(params, grads)]

images = jax.random.normal(jax.random.key(1), (32, 784))
labels = one_hot(jnp.arange(32) % 10)
""",
)


CASES = [
    AUTODIFF.case("sum-logistic", "sum_logistic(x)"),
    AUTODIFF.case("grad-sum-logistic", "grad_sum_logistic(x)", tags={"grad"}),
    AUTODIFF.case("third-derivative-tanh", "third_derivative_of_tanh(2.0)", tags={"grad"}),
    AUTODIFF.case("central-differences", "central_differences(sum_logistic, x)", tags={"closure"}),
    AUTODIFF.case("logistic-loss", "logistic_loss(W, b)"),
    AUTODIFF.case("grad-argnums", "loss_grads(W, b)", tags={"grad"}),
    AUTODIFF.case("value-and-grad-aux", "value_grad_aux(W, b)", tags={"grad"}),
    JIT.case("selu", "selu(big)"),
    JIT.case("selu-jit", "selu_jit(big)", tags={"jitted"}),
    JIT.case("log2", "log2(3.0)"),
    JIT.case("log2-with-print", "log2_with_print(3.0)", tags={"side-effect"}),
    JIT.case("python-if-on-traced", "double_if_negative(10.0)", "TracerBoolConversionError", tags={"cond"}),
    JIT.case("while-on-traced-n", "add_loop_count_jit(10.0, 20)", "TracerBoolConversionError", tags={"loop"}),
    JIT.case("static-loop-count", "add_loop_count_static(10.0, 20)", tags={"static", "jitted"}),
    JIT.case("inner-jit-new-partials", "count_with_new_partials(10, 5)", tags={"recompile", "static", "no-jit"}),
    JIT.case("inner-jit-new-lambdas", "count_with_new_lambdas(10, 5)", tags={"recompile", "static", "no-jit"}),
    JIT.case(
        "factory-closure-per-rate",
        "steps_for_each_rate(w3, g3)",
        tags={"recompile", "factory", "closure", "sweep", "no-jit"},
    ),
    JIT.case("inner-jit-one-function", "count_with_one_function(10, 5)", tags={"static", "no-jit"}),
    CONTROL.case("grad-python-branch", "grad_piecewise(2.0)", tags={"grad", "no-jit"}),
    CONTROL.case("jit-python-branch", "piecewise_jit(2.0)", "TracerBoolConversionError", tags={"cond"}),
    CONTROL.case("eager-while-loop", "lax.while_loop(below, step_up, 0)", tags={"eager-control-flow", "loop"}),
    CONTROL.case("eager-fori-loop", "lax.fori_loop(0, 10, add_index, 0.0)", tags={"eager-control-flow", "loop"}),
    CONTROL.case("eager-scan-cumulative", "lax.scan(running_total, 0.0, steps)", tags={"eager-control-flow", "scan"}),
    CONTROL.case("eager-cond", "lax.cond(True, plus_one, minus_one, 2.0)", tags={"eager-control-flow", "cond"}),
    CONTROL.case("cond-in-function", "branch(True, 2.0)", tags={"cond", "eager-control-flow"}),
    CONTROL.case("switch", "pick_function(1, 0.5)", tags={"cond", "eager-control-flow"}),
    SCAN_RNN.case("rnn-scan-100-steps", "rnn(rnn_params, xs_100)", tags={"eager-control-flow"}),
    CAPTURED.case("constant-captured-from-cell", "predict(batch)"),
    CONTROL.case("grad-of-while-loop", "grad_of_while(1.0)", "ValueError", tags={"grad", "loop"}),
    CONTROL.case("grad-of-fori-loop", "grad_of_fori(3.0)", tags={"grad", "loop"}),
    ERRORS.case("axis-traced", "smallest_along(jnp.arange(4), 0)", "ConcretizationTypeError", tags={"static"}),
    ERRORS.case("axis-static", "smallest_along_static(jnp.arange(4), 0)", tags={"static", "jitted"}),
    ERRORS.case(
        "where-one-argument", "negative_positions(jnp.arange(4))", "ConcretizationTypeError", tags={"dynamic-shape"}
    ),
    ERRORS.case(
        "sum-where-indices", "sum_above_one(values)", "ConcretizationTypeError", tags={"dynamic-shape", "index"}
    ),
    ERRORS.case("sum-where-three-arguments", "sum_above_one_masked(values)", tags={"jitted"}),
    ERRORS.case(
        "boolean-mask-values",
        "positive_values(jnp.arange(-5, 5))",
        "NonConcreteBooleanIndexError",
        tags={"dynamic-shape", "index"},
    ),
    ERRORS.case(
        "boolean-mask-sum",
        "sum_of_positive(jnp.arange(-5, 5))",
        "NonConcreteBooleanIndexError",
        tags={"dynamic-shape", "index"},
    ),
    ERRORS.case("boolean-mask-sum-where", "sum_of_positive_where(jnp.arange(-5, 5))", tags={"jitted"}),
    ERRORS.case(
        "boolean-mask-set", "clip_below_zero(jnp.arange(-2, 2))", "NonConcreteBooleanIndexError", tags={"index"}
    ),
    ERRORS.case("boolean-mask-set-where", "clip_below_zero_where(jnp.arange(-2, 2))", tags={"jitted"}),
    ERRORS.case("numpy-sine", "numpy_sine(np.arange(4))", "TracerArrayConversionError", tags={"numpy"}),
    ERRORS.case("jnp-sine", "jnp_sine(jnp.arange(4))", tags={"jitted"}),
    ERRORS.case("index-numpy-array", "look_up(0)", "TracerArrayConversionError", tags={"numpy", "index"}),
    ERRORS.case("index-converted-array", "look_up_converted(0)", tags={"jitted", "captured-constant"}),
    ERRORS.case(
        "numpy-split-traced-axis",
        "halves(np.arange(4), 0)",
        "TracerIntegerConversionError",
        tags={"numpy", "static"},
    ),
    ERRORS.case("numpy-split-static-axis", "halves_static(np.arange(10), 0)", tags={"numpy", "static", "jitted"}),
    ERRORS.case("index-list", "item_at(0)", "TracerIntegerConversionError", tags={"index"}),
    ERRORS.case("index-list-as-array", "item_at_array(0)", tags={"jitted", "index"}),
    ERRORS.case(
        "python-conditional-expression",
        "smaller_sum(jnp.ones(4), jnp.zeros(4))",
        "TracerBoolConversionError",
        tags={"cond"},
    ),
    ERRORS.case("conditional-where", "smaller_sum_where(jnp.ones(4), jnp.zeros(4))", tags={"jitted", "cond"}),
    ERRORS.case("traced-flag", "scaled(jnp.arange(5), True)", "TracerBoolConversionError", tags={"cond", "static"}),
    ERRORS.case("static-flag", "scaled_static(jnp.arange(5), True)", tags={"static", "jitted"}),
    ERRORS.case("builtin-min", "at_most_zero(2)", "TracerBoolConversionError"),
    ERRORS.case("jnp-minimum", "at_most_zero_minimum(2)", tags={"jitted"}),
    ERRORS.case("leaked-tracer", "keep_then_use(1)", "UnexpectedTracerError", tags={"leak", "side-effect"}),
    ERRORS_KEYS.case("key-reuse", "uniform_twice(0)", "KeyReuseError", tags={"no-jit"}),
    ERRORS_KEYS.case("key-split", "uniform_split(0)", tags={"no-jit"}),
    THINKING.case("norm", "norm(X)"),
    THINKING.case("norm-jit", "norm_compiled(X)", tags={"jitted"}),
    THINKING.case("get-negatives-eager", "get_negatives(samples)", tags={"dynamic-shape", "index", "no-jit"}),
    THINKING.case(
        "get-negatives-jit", "get_negatives_jit(samples)", "NonConcreteBooleanIndexError", tags={"dynamic-shape"}
    ),
    THINKING.case("reshape-traced-size", "flatten_by_traced_size(grid)", "TypeError", tags={"static"}),
    THINKING.case("reshape-static-size", "flatten_by_static_size(grid)", tags={"jitted"}),
    THINKING.case("print-under-jit", "traced_print(xv, yv)", tags={"side-effect", "jitted"}),
    GOTCHAS.case("stale-global", "uses_global_jit(jnp.ones(3))", tags={"closure", "captured-constant"}),
    GOTCHAS.case("in-place-assignment", "in_place_assignment(board)", "TypeError"),
    GOTCHAS.case("at-set", "functional_update(board)"),
    GOTCHAS.case("out-of-bounds-clamps", "out_of_bounds_read(counts)", tags={"index"}),
    GOTCHAS.case("sum-of-list", "sum_of_list([1, 2, 3])", "TypeError", tags={"pytree"}),
    GOTCHAS.case("nan-aware-sum-eager", "nan_aware_sum(with_nans)", tags={"dynamic-shape", "no-jit"}),
    GOTCHAS.case("nan-aware-sum-jit", "nan_aware_sum_jit(with_nans)", "NonConcreteBooleanIndexError"),
    GOTCHAS.case("nan-aware-sum-where", "nan_aware_sum_where(with_nans)", tags={"jitted"}),
    GOTCHAS.case("jit-on-method", "scaler.calc(3)", "TypeError", tags={"method"}),
    GOTCHAS.case("jit-on-method-static-self", "static_scaler.calc(3)", tags={"method", "jitted"}),
    GOTCHAS.case("static-self-mutated", "flip_then_call(3)", tags={"method", "side-effect", "static", "no-jit"}),
    GOTCHAS.case("jit-on-method-helper", "helper_scaler.calc(3)", tags={"method"}),
    GOTCHAS.case("jit-on-method-pytree", "tree_scaler.calc(3.0)", tags={"method", "jitted", "pytree"}),
    RANDOM.case("split-and-normal", "split_and_draw(key)"),
    RANDOM.case("three-keys", "three_draws(key)"),
    RANDOM.case("many-draws", "many_draws(key)"),
    RANDOM.case("bernoulli", "bernoulli_mask(key)"),
    RANDOM_GLOBAL.case("global-key-in-jit", "noise_from_global_key()"),
    STATE.case("counter-eager", "counter.count()", tags={"method", "side-effect", "no-jit"}),
    STATE.case("counter-jit", "count_jit()", tags={"method", "side-effect", "no-jit"}),
    STATE.case("counter-functional", "count_functional(0)"),
    STATE.case("linear-fit-step", "fit_step(line, xs, ys)", tags={"grad", "training-step", "pytree"}),
    PYTREES.case("mlp-update", "update(params, xs, ys)", tags={"grad", "training-step", "jitted"}),
    PYTREES.case("tree-map-shapes", "shapes_of(params)", tags={"no-jit"}),
    PYTREES.case("custom-node", "distance_from_origin(point)"),
    VMAP.case("convolve", "convolve(x, w)"),
    VMAP.case("manual-batch", "manually_batched(xs, ws)"),
    VMAP.case("vmap-convolve", "batch_convolve(xs, ws)"),
    VMAP.case("vmap-in-axes", "batch_convolve_shared_w(xs, w)"),
    REMAT.case("grad-three-layers", "grad_three(W1, W2, W3, x4)"),
    REMAT.case("grad-three-layers-remat", "grad_three_remat(W1, W2, W3, x4)"),
    REMAT.case("mlp-grad-plain", "grad_plain(mlp_params, batch)"),
    REMAT.case("mlp-grad-nothing-saveable", "grad_nothing_saveable(mlp_params, batch)"),
    REMAT.case("mlp-grad-everything-saveable", "grad_everything_saveable(mlp_params, batch)"),
    REMAT.case("mlp-grad-dots-saveable", "grad_dots_saveable(mlp_params, batch)"),
    REMAT.case("mlp-grad-dots-no-batch-dims", "grad_dots_no_batch(mlp_params, batch)"),
    COOKBOOK.case("hessian", "tanh_hessian(v3)"),
    COOKBOOK.case("hvp", "hvp(tanh_sum, v3, ones3)", tags={"closure"}),
    COOKBOOK.case("per-example-grads", "per_example_grads(w3, xb, yb)", tags={"vmap"}),
    CUSTOM.case("log1pexp-grad-overflow", "grad_log1pexp(100.0)", tags={"nan"}),
    CUSTOM.case("log1pexp-custom-jvp", "grad_log1pexp_stable(100.0)"),
    CUSTOM.case("sqrt-at-zero-in-quotient", "grad_over_one_plus_sqrt(0.0)", tags={"nan"}),
    CUSTOM.case("custom-vjp-clip", "grad_of_clipped(2.0)"),
    FAQ.case("double-where-trap", "grad_log_where(0.0)", tags={"grad", "nan", "cond"}),
    FAQ.case("double-where-fix", "grad_log_double_where(0.0)", tags={"grad", "cond"}),
    FAQ.case("gradient-of-step", "grad_step(grid)", tags={"grad", "vmap"}),
    FAQ.case("numerics-log-exp", "log_of_exp(100.0)", tags={"precision"}),
    FAQ.case("numerics-log-sqrt", "log_of_sqrt(jnp.pi)", tags={"precision"}),
    FAQ.case("impure-global", "impure(1)", tags={"side-effect", "closure"}),
    DISPATCH.case("matmul-1000", "square_matmul(m)"),
    DISPATCH.case("matmul-numpy-input", "square_matmul(m_np)", tags={"numpy"}),
    DISPATCH.case("matmul-tanh-600", "matmul_tanh(a600, b600)", tags={"fusion"}),
    DEBUGGING.case("debug-print", "show_intermediate(jnp.arange(3.0))", tags={"jitted", "side-effect"}),
    DEBUGGING.case("checkify-negative-index", "checked_index(five, jnp.int32(-1))", tags={"checkify", "no-jit"}),
    DEBUGGING.case("checkify-jit", "checked_index_jit(five, 2)", tags={"checkify", "jitted"}),
    DEBUGGING.case("checkify-nan", "nan_checked(-1.0)", tags={"checkify", "nan", "no-jit"}),
    CALLBACKS.case("pure-callback", "sine_via_host(angles)"),
    AOT.case("affine", "affine(7, 13)"),
    AOT.case("donate", "add_into(jnp.zeros(1000), 1.0)", tags={"jitted"}),
    AOT.case("weak-type-float", "scale_jit(x3, 0.1)", tags={"precision", "jitted"}),
    AOT.case("linspace-input", "scale(grid, 2.0)"),
    MLP.case("mlp-predict", "batched_predict(net_params, images)", tags={"vmap"}),
    MLP.case("mlp-loss", "loss(net_params, images, labels)"),
    MLP.case("mlp-sgd-update", "sgd_update(net_params, images, labels)", tags={"grad", "training-step", "jitted"}),
]
