"""Code in the shapes users reported on JAX's issue tracker (jax-ml/jax), in our own words: each
case names the issue its shape comes from."""

import sys

from tests.corpus import Cell


def issue(number: int, name: str, setup: str, call: str, raises: str = "", tags=()):
    """One case from issue ``number`` of jax-ml/jax."""
    cell = Cell("jax", f"jax-ml/jax#{number}", f"jax-issue/{number}", setup)
    return cell.case(name, call, raises, tags=tags)


NUMERICS = """
import jax
import jax.numpy as jnp
from jax import lax
"""

CASES = [
    # ------------------------------------------------------------ NaN and inf in gradients
    issue(
        21723,
        "squared-norm-grad-at-zero",
        NUMERICS + "grad_squared_norm = jax.grad(lambda x: jnp.linalg.norm(x) ** 2)\n",
        "grad_squared_norm(0.0)",
        tags={"grad", "nan"},
    ),
    issue(
        4177,
        "norm-of-zero-vector",
        NUMERICS
        + """
def squared_2_norm(x):
    return jnp.linalg.norm(x) ** 2

def sum_of_squares(x):
    return jnp.sum(x ** 2)

grad_norm = jax.grad(squared_2_norm)
grad_sum = jax.grad(sum_of_squares)
zero_vector = jnp.zeros(2)
""",
        "grad_norm(zero_vector)",
        tags={"grad", "nan"},
    ),
    issue(
        4177,
        "sum-of-squares-of-zero-vector",
        NUMERICS
        + """
def sum_of_squares(x):
    return jnp.sum(x ** 2)

grad_sum = jax.grad(sum_of_squares)
zero_vector = jnp.zeros(2)
""",
        "grad_sum(zero_vector)",
        tags={"grad"},
    ),
    issue(
        11716,
        "std-of-constant-row",
        NUMERICS
        + """
def row_spread(m):
    return jnp.std(m, axis=1).sum()

grad_row_spread = jax.grad(row_spread)
rows = jnp.array([[1.0, 1.0, 1.0], [0.5, 1.5, 2.5]])
""",
        "grad_row_spread(rows)",
        tags={"grad", "nan"},
    ),
    issue(
        8893,
        "sqrt-grad-at-zero",
        NUMERICS
        + """
def root_sum(x):
    return jnp.sqrt(x).sum()

grad_root_sum = jax.grad(root_sum)
at_zero = jnp.array([0.0, 1.0, 4.0])
""",
        "grad_root_sum(at_zero)",
        tags={"grad", "nan"},
    ),
    issue(
        347,
        "where-after-sqrt",
        NUMERICS
        + """
def lengths_or_one(x):
    r = jnp.sqrt(jnp.sum(x ** 2, axis=1))
    return jnp.where(r > 0.5, r, jnp.ones_like(r)).sum()

def lengths_or_one_safe(x):
    s = jnp.sum(x ** 2, axis=1)
    return jnp.sqrt(jnp.where(s > 0.25, s, jnp.ones_like(s))).sum()

grad_lengths = jax.grad(lengths_or_one)
grad_lengths_safe = jax.grad(lengths_or_one_safe)
points = jnp.array([[1.0, 2.0], [3.0, 4.0], [0.0, 0.0]])
""",
        "grad_lengths(points)",
        tags={"grad", "nan", "cond"},
    ),
    issue(
        5798,
        "where-sqrt-branch-at-zero",
        NUMERICS
        + """
def linear_then_root(x):
    return jnp.where(x < 1.0, x, jnp.sqrt(x))

def linear_then_root_double_where(x):
    small = x < 1.0
    safe = jnp.where(small, 1.0, x)
    return jnp.where(small, x, jnp.sqrt(safe))

d_linear_then_root = jax.grad(linear_then_root)
d_linear_then_root_safe = jax.grad(linear_then_root_double_where)
""",
        "d_linear_then_root(0.0)",
        tags={"grad", "nan", "cond"},
    ),
    issue(
        5798,
        "double-where-fix",
        NUMERICS
        + """
def linear_then_root_double_where(x):
    small = x < 1.0
    safe = jnp.where(small, 1.0, x)
    return jnp.where(small, x, jnp.sqrt(safe))

d_linear_then_root_safe = jax.grad(linear_then_root_double_where)
""",
        "d_linear_then_root_safe(0.0)",
        tags={"grad", "cond"},
    ),
    issue(
        1052,
        "arctan2-in-unselected-branch",
        NUMERICS
        + """
def masked_angle(a):
    angle = jnp.arctan2(a, a)
    chosen = jnp.array([0.0, 1.0, 0.0])
    return jnp.sum(jnp.where(chosen > 0.5, 0.0, angle))

grad_masked_angle = jax.grad(masked_angle)
aa = jnp.array([3.0, 0.0, -5.0])
""",
        "grad_masked_angle(aa)",
        tags={"grad", "nan", "cond"},
    ),
    issue(
        2630,
        "select-with-inf-branch",
        NUMERICS
        + """
def zero_or_scaled_inf(x):
    return jnp.where(x > 0, 0.0, x * jnp.inf)

grad_zero_or_inf = jax.grad(zero_or_scaled_inf)
""",
        "grad_zero_or_inf(1.0)",
        tags={"grad", "nan", "cond"},
    ),
    issue(
        20601,
        "lax-select-nan-branch",
        NUMERICS
        + """
def pick_constant(beta, x):
    return lax.select(False, beta * x, 1.0)

value_and_grad_pick = jax.value_and_grad(pick_constant)
""",
        "value_and_grad_pick(jnp.float32(2.3), jnp.nan)",
        tags={"grad", "nan", "cond"},
    ),
    # ------------------------------------------------------------ unhashable static arguments
    issue(
        6853,
        "static-dict",
        NUMERICS
        + """
from functools import partial
import numpy as np

@partial(jax.jit, static_argnums=1)
def head_plus(x, d):
    return x[:d["num"]] + d["val"]

settings = {"num": 5, "val": np.arange(5)}
""",
        "head_plus(jnp.arange(10), settings)",
        "ValueError",
        tags={"unhashable-static", "static"},
    ),
    issue(
        2813,
        "static-list",
        NUMERICS
        + """
from functools import partial

@partial(jax.jit, static_argnums=1)
def add_first(x, y):
    return x + y[0]
""",
        "add_first(1, [2, 3])",
        "ValueError",
        tags={"unhashable-static", "static"},
    ),
    issue(
        3701,
        "static-dataclass",
        NUMERICS
        + """
import dataclasses
from functools import partial

@dataclasses.dataclass
class Config:
    some_value: int
    scale: float = 2.0

@partial(jax.jit, static_argnums=1)
def do_stuff(data, config):
    return data[: config.some_value] * config.scale

config = Config(3)
data = jnp.arange(8.0)
""",
        "do_stuff(data, config)",
        "ValueError",
        tags={"unhashable-static", "static"},
    ),
    issue(
        3701,
        "static-frozen-dataclass",
        NUMERICS
        + """
import dataclasses
from functools import partial

@dataclasses.dataclass(frozen=True)
class FrozenConfig:
    some_value: int
    scale: float = 2.0

@partial(jax.jit, static_argnums=1)
def do_stuff_frozen(data, config):
    return data[: config.some_value] * config.scale

frozen_config = FrozenConfig(3)
data = jnp.arange(8.0)
""",
        "do_stuff_frozen(data, frozen_config)",
        tags={"static", "jitted"},
    ),
    issue(
        2813,
        "static-slice",
        NUMERICS
        + """
from functools import partial

@partial(jax.jit, static_argnums=1)
def window(x, s):
    return x[s].sum()

values = jnp.arange(10.0)
""",
        "window(values, slice(2, 5))",
        "ValueError" if sys.version_info < (3, 12) else "",  # slices are hashable from Python 3.12 on
        tags={"unhashable-static", "static"},
    ),
    issue(
        4661,
        "static-array",
        NUMERICS
        + """
from functools import partial

@partial(jax.jit, static_argnums=1)
def shifted(x, offsets):
    return x + offsets

offsets = jnp.array([1.0, 2.0, 3.0])
""",
        "shifted(jnp.ones(3), offsets)",
        "ValueError",
        tags={"unhashable-static", "static"},
    ),
    # ------------------------------------------------------------ shapes from values
    issue(
        5186,
        "arange-of-traced-n",
        NUMERICS + "count_up_to = jax.jit(lambda n: jnp.arange(0, n, 1))\n",
        "count_up_to(5)",
        "ConcretizationTypeError",
        tags={"dynamic-shape", "static"},
    ),
    issue(
        19433,
        "arange-from-element",
        NUMERICS
        + """
@jax.jit
def around_first(x):
    return jnp.arange(x[0] - 1, x[0] + 1)

@jax.jit
def around_first_fixed_length(x):
    return jnp.arange(-1, 1) + x[0]

starts = jnp.zeros(1, dtype=jnp.int32)
""",
        "around_first(starts)",
        "ConcretizationTypeError",
        tags={"dynamic-shape"},
    ),
    issue(
        19433,
        "arange-fixed-length",
        NUMERICS
        + """
@jax.jit
def around_first_fixed_length(x):
    return jnp.arange(-1, 1) + x[0]

starts = jnp.zeros(1, dtype=jnp.int32)
""",
        "around_first_fixed_length(starts)",
        tags={"jitted"},
    ),
    issue(
        4449,
        "shape-from-jnp-arithmetic",
        NUMERICS
        + """
@jax.jit
def one_longer(arr):
    count = jnp.add(arr.size, 1)
    return jnp.ones((count,))

three = jnp.ones((3,))
""",
        "one_longer(three)",
        "TypeError",
        tags={"dynamic-shape"},
    ),
    issue(
        7222,
        "slice-at-traced-start",
        NUMERICS
        + """
@jax.jit
def three_from(x, i):
    return x[i:i + 3]

@jax.jit
def three_from_dynamic_slice(x, i):
    return lax.dynamic_slice(x, (i,), (3,))

ten = jnp.arange(10.0)
""",
        "three_from(ten, 2)",
        "IndexError",
        tags={"index"},
    ),
    issue(
        7222,
        "dynamic-slice",
        NUMERICS
        + """
@jax.jit
def three_from_dynamic_slice(x, i):
    return lax.dynamic_slice(x, (i,), (3,))

ten = jnp.arange(10.0)
""",
        "three_from_dynamic_slice(ten, 2)",
        tags={"index", "jitted"},
    ),
    issue(
        553,
        "numpy-arange-indexed-by-tracer",
        NUMERICS
        + """
import numpy as np

@jax.jit
def positions(x):
    return np.arange(x.shape[0])[x]

idx = jnp.array([0, 1, 2], dtype=jnp.int32)
""",
        "positions(idx)",
        "TracerArrayConversionError",
        tags={"numpy", "index"},
    ),
    # ------------------------------------------------------------ leaks
    issue(
        13022,
        "tracer-leaked-from-vmap",
        NUMERICS
        + """
class Holder:
    def __init__(self):
        self.stash = {}

holder = Holder()

def sketch(x):
    holder.stash["last"] = [lambda: x]
    return x

def leak_from_vmap(xs):
    jax.vmap(sketch)(xs)
    return holder.stash["last"][0]() + 1
""",
        "leak_from_vmap(jnp.arange(3))",
        "UnexpectedTracerError",
        tags={"leak", "vmap", "side-effect"},
    ),
    issue(
        4312,
        "global-key-split-in-jit",
        NUMERICS
        + """
seed_key = jax.random.PRNGKey(0)

def init():
    global seed_key
    seed_key, subkey = jax.random.split(seed_key)
    return jax.random.normal(subkey, ())

init_jit = jax.jit(init)

def two_inits():
    return init_jit(), init_jit()
""",
        "two_inits()",
        tags={"random", "leak", "side-effect", "no-jit"},
    ),
    # ------------------------------------------------------------ recompilation
    issue(
        2814,
        "new-shape-each-call",
        NUMERICS
        + """
@jax.jit
def square(x):
    return x * x

def square_three_shapes():
    return [square(jnp.ones(n)) for n in (2, 3, 4)]
""",
        "square_three_shapes()",
        tags={"recompile", "no-jit"},
    ),
    issue(
        15761,
        "python-loop-over-indices",
        NUMERICS
        + """
@jax.jit
def gather_by_loop(vec, indices):
    out = jnp.zeros(len(indices))
    for pos, j in enumerate(indices):
        out = out.at[pos].set(vec[j])
    return out

def gather_three_lengths(vec):
    return [gather_by_loop(vec, jnp.arange(n)) for n in (5, 8, 10, 10)]

vec20 = jnp.ones(20)
""",
        "gather_three_lengths(vec20)",
        tags={"recompile", "no-jit", "compile-time"},
    ),
    issue(
        15412,
        "product-for-many-sizes",
        NUMERICS
        + """
@jax.jit
def weighted_product(L, C):
    A = L @ L.T + jnp.eye(L.shape[0])
    return jnp.tanh(A @ C).sum()

def solve_each(sizes):
    key = jax.random.PRNGKey(170)
    return [weighted_product(jax.random.uniform(key, (n, n)), jnp.ones(n)) for n in sizes]
""",
        "solve_each((20, 21, 22))",
        tags={"recompile", "no-jit"},
    ),
    issue(
        1832,
        "jit-inside-timing-loop",
        NUMERICS
        + """
def prefix_sums_total(x):
    def body(acc, xi):
        return acc + xi, acc + xi
    _, f = lax.scan(body, 0.0, x)
    return jnp.sum(f)

def rejit_each_time(x, times=3):
    return [jax.jit(lambda v: prefix_sums_total(v))(x) for _ in range(times)]

series = jnp.linspace(0.0, 1.0, 1000)
""",
        "rejit_each_time(series)",
        tags={"recompile", "scan", "no-jit"},
    ),
    issue(
        1832,
        "prefix-sums-scan",
        NUMERICS
        + """
def prefix_sums_total(x):
    def body(acc, xi):
        return acc + xi, acc + xi
    _, f = lax.scan(body, 0.0, x)
    return jnp.sum(f)

series = jnp.linspace(0.0, 1.0, 1000)
""",
        "prefix_sums_total(series)",
        tags={"scan", "eager-control-flow"},
    ),
    issue(
        3701,
        "unhashable-config-rebuilt",
        NUMERICS
        + """
from functools import partial

class Options:
    def __init__(self, k):
        self.k = k

@partial(jax.jit, static_argnums=1)
def top_k_sum(x, options):
    return jnp.sort(x)[-options.k:].sum()

def evaluate(x):
    return [top_k_sum(x, Options(3)) for _ in range(3)]

scores = jnp.arange(10.0)
""",
        "evaluate(scores)",
        tags={"recompile", "static", "no-jit"},
    ),
    issue(
        6871,
        "make-jaxpr-of-static-jit",
        NUMERICS
        + """
def add(x, y):
    return x + y

add_static_y = jax.jit(add, static_argnames={"y"})
""",
        "add_static_y(1, y=2)",
        tags={"static", "jitted"},
    ),
    # ------------------------------------------------------------ compile time, loops
    issue(
        2777,
        "unrolled-python-loop",
        NUMERICS
        + """
@jax.jit
def many_small_steps(x):
    for i in range(200):
        x = jnp.sin(x) + 0.01 * i
    return x

@jax.jit
def many_small_steps_fori(x):
    return lax.fori_loop(0, 200, lambda i, v: jnp.sin(v) + 0.01 * i, x)

x8 = jnp.ones(8)
""",
        "many_small_steps(x8)",
        tags={"compile-time", "jitted"},
    ),
    issue(
        2777,
        "fori-loop-instead",
        NUMERICS
        + """
@jax.jit
def many_small_steps_fori(x):
    return lax.fori_loop(0, 200, lambda i, v: jnp.sin(v) + 0.01 * i, x)

x8 = jnp.ones(8)
""",
        "many_small_steps_fori(x8)",
        tags={"loop", "jitted"},
    ),
    issue(
        852,
        "eager-fori-loop",
        NUMERICS
        + """
def halve(i, v):
    return v * 0.5
""",
        "lax.fori_loop(0, 50, halve, jnp.ones(4))",
        tags={"eager-control-flow", "loop"},
    ),
    issue(
        1131,
        "eager-scan-long",
        NUMERICS
        + """
def carry_only(c, _):
    return c + 1, None

zero = jnp.int32(0)
""",
        "lax.scan(carry_only, zero, None, length=1000)",
        tags={"eager-control-flow", "scan", "static"},
    ),
    issue(
        1239,
        "welford-adaptation",
        NUMERICS
        + """
def welford_update(sample, state):
    mean, m2, n = state
    n = n + 1
    delta_pre = sample - mean
    mean = mean + delta_pre / n
    m2 = m2 + delta_pre * (sample - mean)
    return mean, m2, n

def welford_final(state):
    mean, m2, n = state
    cov = m2 / (n - 1)
    return cov, jnp.sqrt(jnp.reciprocal(cov))

@jax.jit
def adapt(samples):
    state = (jnp.zeros(3), jnp.zeros(3), 0)
    state = lax.fori_loop(0, samples.shape[0], lambda i, s: welford_update(samples[i], s), state)
    return welford_final(state)

draws = jax.random.normal(jax.random.PRNGKey(0), (200, 3))
""",
        "adapt(draws)",
        tags={"loop", "jitted", "mcmc"},
    ),
    # ------------------------------------------------------------ memory
    issue(
        3186,
        "grad-of-scan-memory",
        NUMERICS
        + """
def scanned_mean(x, ys):
    z = jnp.ones((500, 500))

    def body(carry, y):
        return carry + x * (y + z), None

    summed, _ = lax.scan(body, jnp.zeros_like(z), ys)
    return summed.mean()

grad_scanned_mean = jax.grad(scanned_mean)
ys5 = jnp.ones(5)
""",
        "grad_scanned_mean(1.0, ys5)",
        tags={"grad", "scan", "memory", "eager-control-flow"},
    ),
    issue(
        26618,
        "scan-rolled-vs-unrolled",
        NUMERICS
        + """
def inner_updates(w, xs, unroll=1):
    def step(w, x):
        g = jax.grad(lambda w: jnp.sum(jnp.tanh(x @ w) ** 2))(w)
        return w - 0.01 * g, None
    w, _ = lax.scan(step, w, xs, unroll=unroll)
    return w

w64 = jnp.eye(64) * 0.1
xs_steps = jax.random.normal(jax.random.PRNGKey(0), (4, 32, 64))
""",
        "inner_updates(w64, xs_steps)",
        tags={"grad", "scan", "memory", "eager-control-flow"},
    ),
    issue(
        3348,
        "rnn-scan-gradient",
        NUMERICS
        + """
def rnn_loss(params, xs):
    w_h, w_x = params

    def step(h, x):
        h = jnp.tanh(h @ w_h + x @ w_x)
        return h, h

    h0 = jnp.zeros((xs.shape[1], w_h.shape[0]))
    _, hs = lax.scan(step, h0, xs)
    return jnp.mean(hs ** 2)

grad_rnn = jax.jit(jax.grad(rnn_loss))
k1, k2, k3 = jax.random.split(jax.random.PRNGKey(0), 3)
rnn_params = (jax.random.normal(k1, (128, 128)) / 12, jax.random.normal(k2, (32, 128)) / 6)
sequence = jax.random.normal(k3, (100, 16, 32))
""",
        "grad_rnn(rnn_params, sequence)",
        tags={"grad", "scan", "memory", "jitted"},
    ),
    issue(
        15906,
        "scan-dynamic-update",
        NUMERICS
        + """
def write_scaled_rows(xs):
    steps = xs.shape[0]

    def body(state, _):
        i, ys = state
        ys = lax.dynamic_update_index_in_dim(ys, xs[i] * (i + 1.0) ** 0.5, i, axis=0)
        return (i + 1, ys), None

    (_, ys), _ = lax.scan(body, (0, jnp.zeros_like(xs)), None, length=steps)
    return jnp.sum(ys)

grad_write_rows = jax.grad(write_scaled_rows)
rows100 = jax.random.uniform(jax.random.PRNGKey(42), (100, 10, 5))
""",
        "grad_write_rows(rows100)",
        tags={"grad", "scan", "memory", "eager-control-flow"},
    ),
    # ------------------------------------------------------------ other traps
    issue(
        705,
        "vmap-inconsistent-sizes",
        NUMERICS
        + """
def total(a, b):
    return jnp.sum(a) + jnp.sum(b)

mapped_total = jax.vmap(total, in_axes=(0, 1))
X = jnp.ones((10, 4))
U = jnp.ones((10, 2))
""",
        "mapped_total(X, U)",
        "ValueError",
        tags={"vmap"},
    ),
    issue(
        6213,
        "grad-of-tuple-output",
        NUMERICS
        + """
def squared_error_with_aux(x, y):
    return jnp.sum((x - y) ** 2), x - y

x4 = jnp.arange(4.0)
y4 = x4 + 0.1
grad_with_aux_forgotten = jax.grad(squared_error_with_aux)
""",
        "grad_with_aux_forgotten(x4, y4)",
        "TypeError",
        tags={"grad"},
    ),
    issue(
        2663,
        "grad-of-integer-input",
        NUMERICS + "grad_tanh = jax.grad(jnp.tanh)\n",
        "grad_tanh(2)",
        "TypeError",
        tags={"grad", "precision"},
    ),
    issue(
        16611,
        "loop-styles-compared",
        NUMERICS
        + """
def observe(key, steps=10):
    def step(carry, k):
        return carry + jax.random.normal(k, (16,)), carry.sum()
    keys = jax.random.split(key, steps)
    return lax.scan(step, jnp.zeros(16), keys)

observe_many = jax.jit(jax.vmap(observe))
seeds = jax.random.split(jax.random.PRNGKey(0), 8)
""",
        "observe_many(seeds)",
        tags={"scan", "random", "vmap", "jitted"},
    ),
    issue(
        1223,
        "sampling-loop-python",
        NUMERICS
        + """
def sample_pixels(key, n=12):
    img = jnp.zeros(n)
    for i in range(n):
        key, sub = jax.random.split(key)
        img = img.at[i].set(jax.random.bernoulli(sub, jax.nn.sigmoid(img.sum() - i / 2)))
    return img

pixel_key = jax.random.PRNGKey(3)
""",
        "sample_pixels(pixel_key)",
        tags={"random", "compile-time"},
    ),
]
