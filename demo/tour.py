# %% [markdown]
# # A tour of JAX's just-in-time compiler, made visible
#
# This notebook follows a classic tutorial chapter on `jax.jit` — the `@jit` decorator, static
# versus dynamic arguments, trace versus compile, the common traps, eager / jit / pmap, honest
# benchmarking and the compile cache — and at each step uses a jaxmagic magic to *show* the point
# instead of asserting it.
#
# Load the extension once:

# %%
%load_ext jaxmagic
import jax
import jax.numpy as jnp

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
# ## 4. Control flow that stays in the graph
#
# `jax.lax.cond` and `jax.lax.scan` keep branches and loop bodies *inside* the jaxpr as nested
# jaxprs, instead of unrolling them at trace time. Click a nested block to open it.

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
# ## 5. What does `grad` do to my function?
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
# Every magic can hand back its report with `-o`, for use in code:

# %%
report = %jaxpr -o -t grad loss(w)
report.n_eqns, dict(report.primitive_counts), report.out_types
