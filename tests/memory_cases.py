"""Code users write whose memory is easy to get wrong, for ``--memory``'s properties: loops that
carry and stack values, gradients through them, training steps with donated arguments, arrays
read from an earlier cell, the checkpoint policies of an MLP's gradient. Written here in our own
words after JAX's documentation (``lax.scan``, ``jax.checkpoint``, buffer donation).

``SETUP`` is run as notebook cells (each ``# -- cell`` apart, so that a constant comes from an
earlier cell than the function that reads it); ``CALLS`` maps each ``%jaxpr`` call (its options
included) to the tags it carries.
"""

from __future__ import annotations

SETUP = [
    """
from functools import partial
from jax import lax

def rnn_states(w, xs):                                   # a 100-step scan stacking its hidden states
    def step(h, x):
        h = jnp.tanh(h @ w + x)
        return h, h
    return lax.scan(step, jnp.zeros((xs.shape[1], w.shape[0])), xs)

def rnn_loss(w, xs):                                     # and its gradient, through the loop
    return rnn_states(w, xs)[1].sum()

def power_iteration(m, v):                               # a fori_loop carrying one vector
    def body(i, v):
        v = m @ v
        return v / jnp.linalg.norm(v)
    return lax.fori_loop(0, 50, body, v)

def layers_loss(params, x):                                      # an MLP's loss, for its gradient
    for w, b in params[:-1]:
        x = jnp.maximum(x @ w + b, 0.0)
    w, b = params[-1]
    return jnp.mean((x @ w + b) ** 2)

@partial(jax.jit, donate_argnums=(0,))
def sgd_step(params, x):                                 # a training step updating its parameters in place
    grads = jax.grad(layers_loss)(params, x)
    return jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)

def conv_features(filters, frames):                       # a convolution and its pooling
    y = lax.conv_general_dilated(frames, filters, (1, 1), "SAME")
    return lax.reduce_window(jax.nn.relu(y), -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

mem_keys = jax.random.split(jax.random.PRNGKey(0), 8)
rnn_weights = jax.random.normal(mem_keys[0], (256, 256)) / 16.0
rnn_inputs = jax.random.normal(mem_keys[1], (100, 64, 256))
square_m = jax.random.normal(mem_keys[2], (512, 512))
start_v = jnp.ones(512)
layer_params = [(jax.random.normal(k, (256, 256)) / 16.0, jnp.zeros(256)) for k in mem_keys[3:6]]
layer_x = jax.random.normal(mem_keys[6], (128, 256))
filters = jax.random.normal(mem_keys[7], (16, 3, 3, 3))
frames = jnp.ones((8, 3, 64, 64))
""",
    # -- cell: an array made here, read by a function defined in the next cell
    """
table = jnp.linspace(0.0, 1.0, 512 * 512).reshape(512, 512)
""",
    """
def lookup(x):
    h = jnp.tanh(x @ table)
    return jnp.sum(jnp.exp(h) @ table.T)
""",
]

CALLS = {
    "rnn_states(rnn_weights, rnn_inputs)": {"loop"},
    "-t grad rnn_loss(rnn_weights, rnn_inputs)": {"loop", "grad"},
    "power_iteration(square_m, start_v)": {"loop"},
    "-t grad layers_loss(layer_params, layer_x)": {"grad", "policies"},
    "sgd_step(layer_params, layer_x)": {"donated", "grad"},
    "conv_features(filters, frames)": set(),
    "-t grad conv_features_loss(filters, frames)": {"grad"},
    "lookup(layer_x[:, :1].repeat(512, axis=1))": {"captured"},
    "-t grad lookup(jnp.ones((64, 512)))": {"captured", "grad"},
}

# defined after the cells above: a scalar loss of the convolution, for its gradient
LOSSES = """
def conv_features_loss(filters, frames):
    return conv_features(filters, frames).mean()
"""
