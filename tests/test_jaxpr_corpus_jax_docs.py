"""Code in the shapes JAX's own documentation teaches (jit compilation, control flow, pytrees, named
scopes, automatic differentiation; written here in our own words), traced with %jaxpr. For each:
the traced program computes what the user's call computes, the listing names every variable as
JAX's printer does, and the equations per source line add up to JAX's own equations."""

import jax
import numpy as np
import pytest
from jax.extend.core import jaxpr_as_fun

from tests.test_jaxpr_printer_parity import _jax_names, _our_names
from tests.test_jaxpr_walker import _printed_primitives

SETUP = """
from functools import partial
from jax import lax

def selu(x, alpha=1.67, lmbda=1.05):                      # jit compilation: the first example
    return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

@partial(jax.jit, static_argnames=["n"])                  # a Python loop over a static count
def power_sum(x, n):
    total = x
    for _ in range(n):
        total = total * x + 1.0
    return total

def piecewise(x):                                          # control flow: cond and switch
    positive = lax.cond(x.sum() > 0, lambda v: v * 2.0, lambda v: -v, x)
    return lax.switch(1, [jnp.sin, jnp.cos, jnp.tanh], positive)

def cumulative(xs):                                        # scan with a carry and per-step outputs
    def step(carry, x):
        carry = carry + x
        return carry, carry * 2.0
    return lax.scan(step, jnp.zeros(xs.shape[1:]), xs)

def count_up(x):                                           # while_loop and fori_loop
    steps, value = lax.while_loop(lambda c: c[1].sum() < 100.0, lambda c: (c[0] + 1, c[1] * 2.0), (0, x))
    return steps, lax.fori_loop(0, 4, lambda i, v: v + i, value)

def mlp_loss(params, batch):                              # pytrees: a list of dicts of weights
    x, y = batch["x"], batch["y"]
    for layer in params[:-1]:
        x = jnp.tanh(x @ layer["w"] + layer["b"])
    out = x @ params[-1]["w"] + params[-1]["b"]
    return jnp.mean((out - y) ** 2)

def scoped(x):                                             # named scopes
    with jax.named_scope("encoder"):
        h = jnp.tanh(x * 3.0)
    with jax.named_scope("decoder"):
        return jnp.sum(h ** 2)

def hessian_of(x):                                         # autodiff: a Hessian as jacfwd of jacrev
    return jax.jacfwd(jax.jacrev(lambda v: jnp.sum(jnp.sin(v) * v)))(x)

keys = jax.random.split(jax.random.PRNGKey(0), 4)
mlp_params = [{"w": jax.random.normal(keys[0], (3, 5)), "b": jnp.zeros(5)},
              {"w": jax.random.normal(keys[1], (5, 2)), "b": jnp.zeros(2)}]
mlp_batch = {"x": jax.random.normal(keys[2], (8, 3)), "y": jax.random.normal(keys[3], (8, 2))}
xs = jnp.arange(12.0).reshape(4, 3)
v3 = jnp.array([0.5, -1.0, 2.0])
"""

# call -> the arguments whose array leaves the traced program takes, in order
EXAMPLES = {
    "selu(v3)": ("v3",),
    "power_sum(v3, 3)": ("v3",),
    "piecewise(v3)": ("v3",),
    "cumulative(xs)": ("xs",),
    "count_up(v3)": ("v3",),
    "mlp_loss(mlp_params, mlp_batch)": ("mlp_params", "mlp_batch"),
    "scoped(v3)": ("v3",),
    "hessian_of(v3)": ("v3",),
}


@pytest.fixture(scope="module")
def docs_defined(ip):
    result = ip.run_cell(SETUP)
    assert result.success, result.error_in_exec
    yield


@pytest.mark.parametrize("call", list(EXAMPLES))
def test_traced_program_names_and_line_counts_match_jax(ip, run, docs_defined, call):
    report = run(f"%jaxpr -o --max-eqns 5 {call}").assert_ok().result
    ns = dict(ip.user_ns)
    leaves = jax.tree_util.tree_leaves([eval(name, ns) for name in EXAMPLES[call]])  # noqa: S307
    computed = jaxpr_as_fun(report.jaxpr)(*leaves)
    expected = jax.tree_util.tree_leaves(eval(call, ns))  # noqa: S307
    assert len(computed) == len(expected)
    for got, want in zip(computed, expected, strict=True):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)
    assert _our_names(report.jaxpr) == _jax_names(report.jaxpr)
    assert sum(report.line_counts.values()) == len(_printed_primitives(report.jaxpr))
    assert any("In [" in label for label in report.line_counts), "equations are placed on the user's lines"


def test_an_unrolled_python_loop_makes_equations_per_step(ip, run, docs_defined):
    three = run("%jaxpr -o power_sum(v3, 3)").assert_ok().result
    six = run("%jaxpr -o power_sum(v3, 6)").assert_ok().result
    loop_line = next(label for label in six.line_counts if "In [" in label and six.line_counts[label] >= 6)
    assert six.line_counts[loop_line] == 2 * three.line_counts[loop_line]
