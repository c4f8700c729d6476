"""Code users write that the other corpora do not hold (JAX's custom derivatives, checkpoint
policies, scans whose body draws random numbers; written here in our own words), checked against
what JAX itself says: every equation is shown under the line JAX records for it."""

from __future__ import annotations

import collections
import re

import pytest
from jax._src import source_info_util

SETUP = """
from functools import partial
from jax import lax

@jax.custom_jvp
def log1pexp(x):
    return jnp.log(1. + jnp.exp(x))

@log1pexp.defjvp
def log1pexp_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    ans = log1pexp(x)
    return ans, (1 - 1/(1 + jnp.exp(x))) * x_dot

def layer(w, x):
    return jnp.tanh(w @ x)

@partial(jax.checkpoint, policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable)
def block(w, x):
    return layer(w, layer(w, x))

def deep(w, x):
    return jnp.sum(block(w, block(w, x)))

def noisy_walk(key, x0, steps=5):
    def step(carry, i):
        x, key = carry
        key, sub = jax.random.split(key)
        x = x + 0.1 * jax.random.normal(sub, x.shape)
        return (x, key), x.mean()
    (x, _), means = lax.scan(step, (x0, key), jnp.arange(steps))
    return x, means

def cumulative_max(xs):
    def step(best, x):
        best = jnp.maximum(best, x)
        return best, best
    return lax.scan(step, xs[0], xs)

w4 = jnp.eye(4) * 0.5
x4 = jnp.arange(4.0)
walk_key = jax.random.key(0)
"""

CALLS = [
    "-t grad log1pexp(3.0)",
    "-t grad deep(w4, x4)",
    "noisy_walk(walk_key, x4)",
    "cumulative_max(x4)",
]

_CELL_LINE = re.compile(r"^In \[\d+\] line (\d+)$")


def _jax_lines(closed) -> collections.Counter:
    """Equations per line of a notebook cell, as JAX's own ``user_frame`` places them."""
    counts: collections.Counter = collections.Counter()
    pending = [closed.jaxpr]
    while pending:
        for eqn in pending.pop().eqns:
            frame = source_info_util.user_frame(eqn.source_info.traceback)
            if frame is not None and frame.file_name.startswith("<ipython-input-"):
                counts[frame.start_line] += 1
            for value in eqn.params.values():
                for inner in value if isinstance(value, (tuple, list)) else (value,):
                    inner = getattr(inner, "jaxpr", inner)  # a ClosedJaxpr's Jaxpr
                    if hasattr(inner, "eqns"):
                        pending.append(inner)
    return counts


@pytest.fixture(scope="module")
def fresh_defined(ip):
    result = ip.run_cell(SETUP)
    assert result.success, result.error_in_exec
    yield


@pytest.mark.parametrize("call", CALLS)
def test_every_line_jax_records_is_shown_with_its_equations(run, fresh_defined, call):
    report = run(f"%jaxpr -o {call}").assert_ok().result
    shown: collections.Counter = collections.Counter()
    for label, count in report.line_counts.items():
        match = _CELL_LINE.match(label)
        if match:
            shown[int(match[1])] += count
    truth = _jax_lines(report.jaxpr)
    assert truth, "JAX places equations on lines of the cell"
    # JAX's line for each equation is the one shown; jaxmagic adds to a line only the equations of
    # JAX's own helpers that line called (those JAX places on no line of the user's)
    missing = {line: (count, shown[line]) for line, count in truth.items() if shown[line] < count}
    assert missing == {}, f"line: (JAX's equations, shown) {missing}"
