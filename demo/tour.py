# %% [markdown]
# # A tour of JAX's just-in-time compiler, made visible
#
# This notebook follows a classic tutorial chapter on `jax.jit` — the `@jit` decorator, static
# versus dynamic arguments, trace versus compile, the common traps, eager / jit / pmap, honest
# benchmarking and the compile cache — and at each step uses a jaxmagic magic to *show* the point
# instead of asserting it.
#
# Load the extension once. The first two lines give this CPU-only kernel eight simulated devices,
# so that the `pmap` and sharded comparisons below have something to split over; they must run
# before JAX starts.

# %%
import os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"

%load_ext jaxmagic
import jax
import jax.numpy as jnp
from jax import jit
jax.devices()

# %% [markdown]
# ## 1. What `@jit` does: your function becomes a jaxpr
#
# `jax.jit` runs your Python function once with *tracers* in place of arrays and records every
# operation into a **jaxpr**, JAX's intermediate representation. `%jaxpr` shows it, each equation
# next to the line of your code that produced it. (The tutorial's policy network used
# `jnp.softmax`, which does not exist; `jax.nn.softmax` is the real one.)

# %%
@jax.jit
def policy_forward(obs, weights):
    hidden = jnp.dot(obs, weights['w1']) + weights['b1']
    hidden = jnp.tanh(hidden)
    logits = jnp.dot(hidden, weights['w2']) + weights['b2']
    return jax.nn.softmax(logits)

obs = jnp.array([0.1, 0.2, 0.3])
weights = {
    'w1': jnp.ones((3, 64)),
    'b1': jnp.zeros(64),
    'w2': jnp.ones((64, 4)),
    'b2': jnp.zeros(4),
}

# %%
%jaxpr policy_forward(obs, weights)

# %% [markdown]
# The first line sums it up: how many equations, which primitives, and the types in and out. The
# dict of weights became four separate inputs after `obs` — a jaxpr only knows flat arrays — and
# `jax.nn.softmax` dissolved into the primitives it is made of (`reduce_max`, `exp`, `div`, ...),
# each still pointing at the line that called it.

# %% [markdown]
# ## 2. Static versus dynamic arguments
#
# By default every argument is *dynamic*: traced as an abstract array, its value unknown at trace
# time. A loop count must be known while tracing, so it has to be **static** — then its value is
# baked into the jaxpr, and each new value means a new trace and compile.

# %%
@jax.jit(static_argnums=(1,))
def good_example(x, n):
    result = 0.0
    for i in range(n):  # n is static: the loop runs at trace time
        result += x[i]
    return result

x = jnp.array([1.0, 2.0, 3.0, 4.0])

# %%
%jaxpr good_example(x, 4)

# %% [markdown]
# The Python loop is gone: it ran while tracing and left four `add`s behind. `n` is not an input of
# the jaxpr at all. Marking an argument static from the magic works too, by name or position:

# %%
def scale(x, factor):
    return x * factor

# %%
%jaxpr scale(x, 3.0)

# %%
%jaxpr -s factor scale(x, 3.0)

# %% [markdown]
# Dynamic, `factor` is an input (`b:f32[]`); static, it is the constant `3.0` inside the
# multiplication.
#
# Static is not free: every new value of a static argument is a new trace and a new compile.
# `%%recompiles` runs a cell and lists each compilation in it, with its cause:

# %%
@jit(static_argnums=(1,))
def process_lidar(points, num_points):
    return points[:num_points]

points = jnp.ones((128, 3))

# %%
%%recompiles
process_lidar(points, 64)
process_lidar(points, 64)   # same static value: served from the cache
process_lidar(points, 100);  # a new value: compiled again (the ; hides the cell's value)

# %% [markdown]
# ## 3. Trace, then compile
#
# Tracing gives the jaxpr. Lowering turns it into **StableHLO**, the portable input of the XLA
# compiler; compiling gives XLA's optimized **HLO**, where operations are *fused*.

# %%
def my_func(x, y):
    return jnp.dot(x, y) + jnp.sum(x)

a = jnp.ones((3, 3))
b = jnp.ones((3, 3))

# %%
%jaxpr my_func(a, b)

# %%
%jaxpr --stage stablehlo my_func(a, b)

# %%
%jaxpr --stage hlo --cost my_func(a, b)

# %% [markdown]
# With `--cost`, XLA's own estimate: floating point operations, bytes moved, and the memory the
# compiled program needs for its arguments, outputs and temporaries.

# %% [markdown]
# ## 4. The traps, and the doctor
#
# Once loaded, jaxmagic watches every cell. When one falls into a classic JIT trap, the doctor
# explains it under the usual traceback, in plain words, naming your variable and line, with the
# fix written out as your own code changed. (The cells below fail on purpose.)
#
# **Python control flow on a traced value.** Under `jit`, `use_relu` is a tracer with no value, so
# Python's `if` cannot decide:

# %% tags=raises-exception
@jit
def bad_activation(x, use_relu):
    if use_relu:
        return jnp.maximum(0, x)
    else:
        return jnp.tanh(x)

bad_activation(x, True)

# %% [markdown]
# **A loop count that depends on a traced value.** XLA compiles for fixed shapes and fixed loop
# counts; `range(n)` needs a plain Python int, and a traced `n` has no value yet (the tutorial's
# own "wrong way"):

# %% tags=raises-exception
@jit
def bad_example(x, n):
    result = 0.0
    for i in range(n):
        result += x[i]
    return result

bad_example(x, 4)

# %% [markdown]
# **An array as a static argument.** Static values key the compile cache, so they must be hashable:

# %% tags=raises-exception
from functools import partial

@partial(jax.jit, static_argnums=(1,))
def resize_image(image, target_size):
    return jax.image.resize(image, target_size, method='bilinear')

resize_image(jnp.ones((256, 256)), jnp.array([128, 128]))

# %% [markdown]
# Some traps raise nothing. `print` inside a jitted function runs once, while tracing, and prints a
# tracer; NumPy on a tracer may quietly work and bake the result in as a constant. `%jaxpr` traces
# the function and warns about both:

# %%
def compute_loss(params, batch):
    return jnp.mean((batch @ params) ** 2)

@jit
def train_step(params, batch):
    loss = compute_loss(params, batch)
    print(f"Loss: {loss}")
    return loss

params = jnp.ones(3)
batch = jnp.ones((4, 3))

# %%
%jaxpr train_step(params, batch)

# %% [markdown]
# ## 5. Control flow that stays in the graph
#
# The fix for the first trap: `jax.lax.cond` and `jax.lax.scan` keep branches and loop bodies
# *inside* the jaxpr as nested jaxprs, instead of unrolling them at trace time. Click a nested
# block to open it.

# %%
@jax.jit
def good_activation(x, use_relu):
    return jax.lax.cond(use_relu,
                        lambda x: jnp.maximum(0, x),
                        lambda x: jnp.tanh(x),
                        x)

# %%
%jaxpr good_activation(x, True)

# %%
%%jaxpr
def process_sequence(data, model_params):
    def body_fn(carry, x):
        new_carry = jnp.dot(carry, model_params) + x
        return new_carry, new_carry
    final_carry, outputs = jax.lax.scan(body_fn, jnp.zeros(model_params.shape[0]), data)
    return outputs

data = jnp.ones((10, 4))
params = jnp.eye(4) * 0.5
process_sequence(data, params)

# %% [markdown]
# The cell form (`%%jaxpr`) runs the cell like any other — `process_sequence`, `data` and `params`
# now exist — but instead of running the last call it shows its jaxpr.

# %% [markdown]
# ## 6. What does `grad` do to my function?
#
# Transforms compose: `-t grad` shows the jaxpr of the gradient, `-t vmap -t grad` the batched
# gradient, `vmap(grad(loss))`.

# %%
def loss(w):
    return jnp.sum(jnp.tanh(w) ** 2)

w = jnp.ones(3)
ws = jnp.ones((8, 3))

# %%
%jaxpr -t grad loss(w)

# %%
%jaxpr -t vmap -t grad loss(ws)

# %% [markdown]
# ## 7. Eager, jit and pmap, timed honestly
#
# Timing jit by hand has traps of its own: forgetting the warm-up (and counting compile time as
# run time), forgetting that JAX dispatches asynchronously (and timing only the dispatch), and
# using jit on a function that runs once. `%jitcompare` does it right: every call waits for its
# result, the first call is timed apart and split into trace, lower, compile and run, and it says
# after how many calls jit has paid for its compile.

# %%
def gaussian_blur(image, kernel):
    return jnp.convolve(image.flatten(), kernel.flatten(), mode='same').reshape(image.shape)

image = jnp.ones((256, 256))
kernel = jnp.ones((5, 5)) / 25

# %%
%jitcompare --budget 3 gaussian_blur(image, kernel)

# %% [markdown]
# With several devices, `sharded` runs the jitted function with the leading axis of the batch
# split over a mesh of all of them, and `pmap` maps it across them (here, eight simulated CPU
# devices sharing this machine's cores: the point is the comparison, not the speed).

# %%
def forward_pass(params, batch):
    hidden = jnp.tanh(batch @ params['w1'])
    return hidden @ params['w2']

mlp = {'w1': jnp.ones((64, 128)) / 64, 'w2': jnp.ones((128, 8)) / 128}
images = jnp.ones((512, 64))

# %%
%jitcompare --modes eager,jit,sharded,pmap --split batch --budget 4 forward_pass(mlp, images)

# %% [markdown]
# Where does a sharded step spend its communication? Put the batch on one axis of a device mesh and
# the hidden layer on the other: `%jaxpr --collectives` lists each collective XLA inserted, with
# the line that caused it, the mesh axes and the bytes it moves per device.

# %%
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

mesh = Mesh(np.array(jax.devices()).reshape(4, 2), ('batch', 'model'))
sharded_images = jax.device_put(images, NamedSharding(mesh, P('batch', None)))
sharded_mlp = {'w1': jax.device_put(mlp['w1'], NamedSharding(mesh, P(None, 'model'))),
               'w2': jax.device_put(mlp['w2'], NamedSharding(mesh, P('model', None)))}

# %%
%jaxpr --collectives forward_pass(sharded_mlp, sharded_images)

# %% [markdown]
# ## 8. Warm-up and break-even
#
# "A function called once is slower with jit": its first call pays for tracing and compiling.
# Compare the first-call table with the medians: below the break-even count, leaving the function
# eager is faster, however much faster each jitted call is.

# %%
def add_one(v):
    return v + 1

%jitcompare --budget 2 add_one(jnp.float32(1.0))

# %% [markdown]
# ## 9. The compile cache and its keys
#
# A jitted function compiles again whenever a key of its cache changes: an argument's shape or
# dtype, a Python scalar where an array was (a *weak type*), a static value, the structure of a
# pytree, the device. `%recompiles on` watches the whole session from here on, in a live panel
# that fills as later cells run.

# %%
@jit
def step(batch, w):
    return jnp.tanh(batch @ w).mean()

w = jnp.ones((3, 4))

%recompiles on

# %%
for n in (8, 9, 10, 11):
    step(jnp.ones((n, 3)), w)  # the batch size changes: one compilation each

# %%
step(jnp.ones((8, 3), dtype=jnp.float16), w)  # a new dtype
step(jnp.ones((8, 3)), w * 1.0)                 # nothing new: served from the cache

# %% [markdown]
# Each row names the argument and what changed, with the fix. To keep shapes few, pad to a few
# bucket sizes:

# %%
def bucket(n, sizes=(16, 64, 256)):
    return next(size for size in sizes if size >= n)

for n in (12, 13, 14, 15):
    padded = jnp.zeros((bucket(n), 3)).at[:n].set(1.0)
    step(padded, w)  # one new shape (16) instead of four

# %% [markdown]
# The panel above has filled while these cells ran. `%recompiles show` prints the same log as a
# table (which also survives exporting the notebook to HTML):

# %%
%recompiles show step

# %%
%recompiles off

# %% [markdown]
# ## 10. `vmap` and `jit` together
#
# `jax.vmap` turns a function of one example into a function of a batch, with no Python loop;
# `jit` on top compiles the batched function once.

# %%
def predict(obs):
    return jax.nn.softmax(jnp.tanh(obs @ weights['w1']) @ weights['w2'])

observations = jnp.ones((32, 3))
predict_batch = jit(jax.vmap(predict))

# %%
%jaxpr predict_batch(observations)

# %%
%jitcompare --budget 2 predict_batch(observations)

# %% [markdown]
# ## 11. Donation
#
# `donate_argnums` lets XLA write the result into an argument's memory: a training step can update
# its parameters in place. `%jitcompare` shows it in the memory table (`aliased (donated)`), and
# copies donated arguments for every timed call, so your own array survives the timing.

# %%
@partial(jax.jit, donate_argnums=(0,))
def sgd_update(weights, grads):
    return weights - 0.01 * grads

big_weights = jnp.ones((256, 256))
grads = jnp.ones((256, 256))

# %%
%jitcompare --budget 2 sgd_update(big_weights, grads)

# %% [markdown]
# After a donating call, the old array is gone. Reading it is the last trap:

# %% tags=raises-exception
new_weights = sgd_update(big_weights, grads)
big_weights.sum()

# %% [markdown]
# ## 12. Where did the NaN come from?
#
# A loss that turns into `nan` says nothing about where. `%jaxpr --values` runs the traced program
# on your own arguments one equation at a time and shows what each computed, beside it; the answer
# line names the first equation that made a NaN, with your line and what its input held. It is
# the equation `jax_debug_nans` would stop at, found without raising and without editing the code;
# with `-t grad`, the backward pass is evaluated too.

# %%
def log_loss(w, x):
    z = x @ w
    return -jnp.mean(jnp.log(z))

w_small = jnp.array([0.5, -1.0, 0.25])
x_small = jnp.array([[1.0, 0.2, 0.4], [0.1, 0.9, 2.0]])

# %%
%jaxpr --values log_loss(w_small, x_small)

# %% [markdown]
# ## 13. Why is memory high?
#
# XLA's `memory_analysis()` gives totals only. `%jaxpr --memory` reads the compiled program's
# buffer assignment: the peak, and the buffers live at the peak grouped by the line of your code
# that made them, largest first. In this attention block the `(tokens, tokens)` matrix of the
# softmax dominates the backward pass.

# %%
def attention(q, k, v):
    scores = jnp.einsum("td,sd->ts", q, k)
    weights = jax.nn.softmax(scores, axis=-1)
    return jnp.sum(weights @ v)

q = k = v = jnp.ones((1024, 64))

# %%
%jaxpr --memory -t grad attention(q, k, v)

# %% [markdown]
# ## 14. Reports for code
#
# Every magic can hand back its report with `-o`, for use in code:

# %%
report = %jaxpr -o -t grad loss(w)
report.n_eqns, dict(report.primitive_counts), report.out_types
