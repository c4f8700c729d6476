"""``RecompileEvent.program_diff``: how the compiled program changed, checked against the jaxprs
JAX itself traces for the same calls."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from jaxmagic.recompiles import watch
from jaxmagic.recompiles.watch import watch_recompiles


def equations(fn, *args, **kwargs) -> int:
    return len(jax.make_jaxpr(fn, **kwargs)(*args).jaxpr.eqns)


def test_a_static_loop_count_says_which_line_unrolled_and_by_how_much():
    def body(x, n):
        for _ in range(n):
            x = jnp.sin(x)
        return x * 2

    repeat = jax.jit(body, static_argnums=(1,))
    watch.forget()
    with watch_recompiles() as log:
        repeat(jnp.ones(3), 2)
        repeat(jnp.ones(3), 5)
    first, second = log.events
    assert first.program_diff is None  # nothing to compare with
    truth_before = equations(body, jnp.ones(3), 2, static_argnums=(1,))
    truth_after = equations(body, jnp.ones(3), 5, static_argnums=(1,))
    line = body.__code__.co_firstlineno + 2  # x = jnp.sin(x)
    assert second.program_diff == (
        f"program {truth_before} → {truth_after} equations: test_recompiles_program_diff.py:{line}, "
        "in a Python loop unrolled into the program, 2 → 5 equations (+3)"
    )
    (change,) = second.program_difference.lines
    assert (change.line, change.added, change.in_loop) == (line, 3, True)
    assert "program 3 → 6 equations" in log.to_text() and "program: program" not in log.to_text()
    assert 'class="jm-muted jm-program-diff"' in log.to_html()


def test_a_shape_change_is_the_same_program_and_a_captured_constant_is_named():
    @jax.jit
    def grow(x):
        return jnp.cos(x) + 1

    def make(table):
        return jax.jit(lambda x: x + table)

    watch.forget()
    with watch_recompiles() as log:
        grow(jnp.ones(3))
        grow(jnp.ones(4))
        make(jnp.arange(3.0))(jnp.ones(3))
        make(jnp.arange(3.0) * 7)(jnp.ones(3))
    assert log.events[1].program_diff == f"the same program ({equations(grow.__wrapped__, jnp.ones(4))} equations)"
    assert log.events[3].program_diff.endswith("1 captured constant changed value")


def test_a_branch_taken_the_other_way_removes_and_adds_lines():
    @functools.partial(jax.jit, static_argnames=("training",))
    def layer(x, training):
        if training:
            x = x * 0.5
            x = jnp.tanh(x)
        return x + 1

    watch.forget()
    with watch_recompiles() as log:
        layer(jnp.ones(2), training=True)
        layer(jnp.ones(2), training=False)
    difference = log.events[1].program_difference
    assert sorted(c.added for c in difference.lines) == [-1, -1]
    assert not any(c.in_loop for c in difference.lines)


def test_a_library_function_jitted_as_it_is_has_its_equations_counted_and_compared():
    """Jitting a library's function directly leaves no line of the user's in its program: its
    equations still make the program's size, and a change among them is not "the same program"."""
    tanh = jax.jit(jnp.tanh)
    var = jax.jit(jnp.var, static_argnames="ddof")
    watch.forget()
    with watch_recompiles() as log:
        tanh(jnp.ones(3))
        tanh(jnp.ones(4))
        var(jnp.ones(5), ddof=0)
        var(jnp.ones(5), ddof=1)
    assert log.events[1].program_diff == f"the same program ({equations(jnp.tanh, jnp.ones(4))} equation)"
    assert not log.events[3].program_diff.startswith("the same program"), log.events[3].program_diff
    assert "library code" in log.events[3].program_diff
