"""The listing names variables as JAX's own printer does (``ClosedJaxpr.pretty_print``): the same
letters in the same places, ``_`` for a dropped output, an inner ``jit``'s variables named after
the outer ones they stand for. The truth is JAX's text, read back here."""

import re

import jax
import jax.numpy as jnp
import pytest
from jax import lax

from jaxmagic.tracing.listing import listing

# the left-hand side of an equation: at a line start, or after ``let`` on a one-line jaxpr
_BINDERS = re.compile(r"(?:^|\blet )\s*((?:\S+:\S+ )+)= [A-Za-z_]", re.MULTILINE)
_RESULTS = re.compile(r"\bin \(([^()]*)\)")


def _jax_names(closed) -> tuple[list[str], list[str]]:
    text = closed.pretty_print(use_color=False)
    return [m.group(1).strip() for m in _BINDERS.finditer(text)], [
        m.group(1).rstrip(",") for m in _RESULTS.finditer(text)
    ]


def _our_names(closed) -> tuple[list[str], list[str]]:
    records = list(listing(closed, with_source=False))
    binders = [r.text.split(" = ", 1)[0] for r in records if r.kind == "eqn"]
    results = [_RESULTS.search(r.text).group(1).rstrip(",") for r in records if r.kind == "close"]
    return binders, results


def _inner_jits(x):
    square = jax.jit(lambda v: v * v)
    both = jax.jit(lambda v, w: (jnp.sin(v), w + 1.0))
    a, b = both(square(x), x)
    return jnp.cos(a) + b


def _scan_and_cond(x):
    def step(carry, xs):
        carry = carry + jnp.tanh(xs)
        return carry, carry * 2.0

    total, ys = lax.scan(step, jnp.zeros(x.shape[1]), x)
    return lax.cond(total.sum() > 0, lambda v: v.sum(), lambda v: -v.sum(), ys)


def _dropped_output(x):
    _, counted = lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2.0), (0, x))
    return counted


def _grad_of_nested(x):
    inner = jax.jit(lambda v: jnp.sum(jnp.exp(v) * v))
    return jax.grad(lambda v: inner(v) + jnp.sum(v**2))(x)


def _jax_prints_unused_outputs_as_underscore() -> bool:
    """Whether the installed JAX's printer writes ``_`` for an output nothing uses (newer JAX does)."""
    return _jax_names(jax.make_jaxpr(_dropped_output)(jnp.ones(3)))[0][0].startswith("_")


@pytest.mark.parametrize(
    "function", [_inner_jits, _scan_and_cond, _dropped_output, _grad_of_nested], ids=lambda f: f.__name__.strip("_")
)
def test_listing_names_variables_as_jax_prints_them(function):
    closed = jax.make_jaxpr(function)(jnp.ones((4, 3)))
    ours = _our_names(closed)
    if any(b.startswith("_:") for b in ours[0]) and not _jax_prints_unused_outputs_as_underscore():
        pytest.skip("this JAX's printer names unused outputs; the listing writes `_` as newer JAX does")
    assert ours == _jax_names(closed)


def test_a_dropped_output_is_an_underscore_as_jax_prints_it():
    closed = jax.make_jaxpr(_dropped_output)(jnp.ones(3))
    binders, _ = _our_names(closed)
    assert any(b.startswith("_:i32[]") for b in binders)
