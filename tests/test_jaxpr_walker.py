"""One walk over nested jaxprs: ``listing.all_equations`` visits the equations in the order JAX's
own printer shows them, nested bodies included, and every count built on it agrees with JAX."""

import collections
import re

import jax
import jax.numpy as jnp
from jax import lax

from jaxmagic.timing import footprint
from jaxmagic.tracing.listing import all_equations, count_eqns, listing, primitive_counts

# an equation starts a line, or follows ``let`` where JAX prints a short jaxpr on one line
_EQUATION = re.compile(r"(?:^|\blet )\s*(?:\S+:\S+ )+= ([A-Za-z_][A-Za-z_0-9]*)", re.MULTILINE)


def _printed_primitives(closed) -> list[str]:
    """The primitive of each equation, in order, as JAX's own pretty-printer writes them."""
    text = closed.pretty_print(use_color=False)
    return [m.group(1) for m in _EQUATION.finditer(text)]


def _nested(x):
    inner = jax.jit(lambda v: jnp.tanh(v) + 1.0)

    def step(carry, xs):
        carry = carry * xs + inner(carry)
        return carry, jnp.sin(carry)

    final, ys = lax.scan(step, x[0], x)
    picked = lax.cond(final.sum() > 0, lambda v: jnp.cos(v), lambda v: -v, ys)
    _, counted = lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2.0), (0, picked))
    return jnp.sum(counted)


def test_every_equation_in_the_order_jax_prints_them():
    closed = jax.make_jaxpr(_nested)(jnp.ones((4, 3)))
    walked = [eqn.primitive.name for eqn in all_equations(closed)]
    assert walked == _printed_primitives(closed)
    assert {"scan", "cond", "while", "tanh", "cos"} <= set(walked)


def test_counts_and_listing_follow_the_same_walk():
    closed = jax.make_jaxpr(jax.vmap(_nested))(jnp.ones((2, 4, 3)))
    printed = _printed_primitives(closed)
    assert count_eqns(closed) == len(printed)
    assert primitive_counts(closed) == collections.Counter(printed)
    assert [r.primitive for r in listing(closed, with_source=False) if r.kind == "eqn"] == printed


def test_not_going_into_a_body_skips_only_that_body():
    closed = jax.make_jaxpr(_nested)(jnp.ones((4, 3)))
    top_level = [eqn.primitive.name for eqn in closed.jaxpr.eqns]
    assert [eqn.primitive.name for eqn in all_equations(closed, into=lambda e: False)] == top_level
    # the eager footprint goes into inner jit calls only: a scan's body is counted by its outputs
    inner = jax.jit(lambda v: jnp.sin(v) * 2)
    assert footprint.intermediate_bytes(jax.make_jaxpr(lambda v: inner(v) + 1)(jnp.ones(100))) == 2 * 400


LIBRARY_CALLERS = """
import jax, jax.numpy as jnp

def first(x):
    return jnp.linalg.norm(jax.nn.relu(x))

def second(x):
    return jnp.linalg.norm(jax.nn.relu(x)) * 2
"""


def test_a_library_program_traced_for_another_caller_is_listed_under_this_calls_line(tmp_path, monkeypatch):
    """JAX keeps a library's jitted program (``jnp.linalg.norm``, ``jax.nn.relu``) from its first
    trace: on 0.8 with the first caller's frames, on 0.10 with none of the user's. The listing of ``second`` shows its nested equations under
    ``second``'s line, never ``first``'s, and agrees line by line with ``line_counts``."""
    import importlib

    from jaxmagic.tracing.listing import equations_by_line

    (tmp_path / "library_callers.py").write_text(LIBRARY_CALLERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("library_callers")
    jax.make_jaxpr(module.first)(jnp.ones(3))
    closed = jax.make_jaxpr(module.second)(jnp.ones(3))
    shown = collections.Counter(
        record.source.label if record.source is not None else "(no source line)"
        for record in listing(closed)
        if record.kind == "eqn"
    )
    assert shown == collections.Counter({"library_callers.py:8": count_eqns(closed)})
    assert shown == collections.Counter(equations_by_line(closed))
