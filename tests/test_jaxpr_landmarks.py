"""Nested blocks say what they are to their equation: a cond's branch runs when the predicate is
true or false, a loop body carries some values and takes others one slice per step, a while has
a condition. The truth: running each branch's jaxpr gives what the user's own branch function gives."""

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.extend.core import jaxpr_as_fun

from jaxmagic.tracing.listing import listing


def _opened(closed):
    return [r for r in listing(closed, with_source=False) if r.kind == "open" and r.landmark is not None]


def test_a_cond_branch_is_marked_true_or_false_as_it_runs():
    closed = jax.make_jaxpr(lambda p, x: lax.cond(p, jnp.sin, jnp.cos, x))(True, 0.5)
    branches = {r.landmark.index: r for r in _opened(closed) if r.landmark.kind == "branch"}
    cond = closed.jaxpr.eqns[-1]
    when_true = cond.params["branches"][branches[1].landmark.index]
    np.testing.assert_allclose(jaxpr_as_fun(when_true)(0.5)[0], jnp.sin(0.5))  # index 1 is the true branch
    np.testing.assert_allclose(jaxpr_as_fun(cond.params["branches"][0])(0.5)[0], jnp.cos(0.5))
    assert {b.landmark.cases for b in branches.values()} == {2}


def test_a_scan_body_counts_carried_values_and_per_step_slices():
    def f(c, xs, ys):
        return lax.scan(lambda carry, x: (carry + x[0] * x[1], carry), c, (xs, ys))

    closed = jax.make_jaxpr(f)(0.0, jnp.ones(4), jnp.ones(4))
    (body,) = _opened(closed)
    assert (body.landmark.kind, body.landmark.carried, body.landmark.per_step) == ("loop_body", 1, 2)


def test_a_while_has_a_body_and_a_condition_and_the_text_view_says_so(ip, run):
    closed = jax.make_jaxpr(lambda x: lax.while_loop(lambda c: c[1] < 10.0, lambda c: (c[0] + 1, c[1] * 2), (0, x)))(
        1.0
    )
    kinds = [r.landmark.kind for r in _opened(closed)]
    assert kinds == ["loop_body", "loop_condition"]
    run("def pick(p, x):\n    return jax.lax.cond(p, jnp.sin, jnp.cos, x)")
    shown = run("%jaxpr --plain pick(True, 0.5)").assert_ok().stdout
    # lax.cond(p, true_fun, false_fun): each branch says when it runs and which function it is
    assert "(runs when true: sin)" in shown and "(runs when false: cos)" in shown


def test_a_switch_names_each_case_by_its_function(run):
    run(
        "def double(v):\n    return v * 2\n"
        "def pick(i, x):\n    return jax.lax.switch(i, [double, jnp.sin, lambda v: v - 1], x)"
    ).assert_ok()
    shown = run("%jaxpr --plain pick(1, 0.5)").assert_ok().stdout
    assert "(case 0: double)" in shown and "(case 1: sin)" in shown
    assert "(case 2)" in shown  # a lambda has no name worth showing


def _encoded(x):
    with jax.named_scope("encoder"):
        h = jnp.sin(x)
    return jnp.sum(h * h)


def test_under_grad_each_equation_is_forward_or_backward_with_its_named_scope(run):
    closed = jax.make_jaxpr(jax.grad(_encoded))(jnp.ones(3))
    records = [r for r in listing(closed, with_source=False) if r.kind == "eqn"]
    printed = closed.pretty_print(use_color=False, name_stack=True)
    # JAX's own annotation of each equation: a trailing "# [its name stack]"
    stacks = [line.rsplit("# [", 1)[1].rstrip("]") for line in printed.splitlines() if " = " in line]
    assert len(stacks) == len(records)
    for record, stack in zip(records, stacks, strict=True):
        assert record.derivative == ("backward" if stack.startswith("transpose(") else "forward")
        assert (record.scope == "encoder") == ("encoder" in stack)
    assert {r.derivative for r in records} == {"forward", "backward"}
    run("def encoded(x):\n    with jax.named_scope('encoder'):\n        h = jnp.sin(x)\n    return jnp.sum(h * h)")
    shown = run("%jaxpr --plain -t grad encoded(jnp.ones(3))").assert_ok().stdout
    assert "[forward · encoder]" in shown and "[backward · encoder]" in shown and "[backward]" in shown
