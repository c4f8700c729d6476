"""``%jaxpr --memory -t grad``: what the backward pass keeps, by source line, and what each of JAX's
checkpoint policies trades. Truth from JAX: ``print_saved_residuals`` and the gradient compiled
under ``jax.checkpoint`` with each policy."""

import contextlib
import io
import re

import jax
import jax.ad_checkpoint
import jax.numpy as jnp
import pytest

from jaxmagic.compiled import remat

SETUP = """x_data = jnp.linspace(-1, 1, 64).reshape(16, 4)

def f(w):
    h = jnp.tanh(x_data @ w)
    return jnp.sum(jnp.exp(h) ** 2)

def two(w, b):
    h = jnp.sin(w * b)
    return jnp.sum(h * w)
"""


@pytest.fixture
def defined(run):
    run(SETUP).assert_ok()


def _jax_residuals(function, *args) -> list[tuple[str, int | None]]:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        jax.ad_checkpoint.print_saved_residuals(function, *args)
    found = []
    for line in printed.getvalue().splitlines():
        shape = line.split()[0]
        where = re.search(r":(\d+):\d+ \(", line)
        found.append((shape, int(where.group(1)) if where else None))
    return sorted(found, key=str)


def test_the_residuals_are_those_jax_saves(ip, run, defined):
    report = run("%jaxpr --memory -o -t grad f(jnp.ones((4, 4)))").assert_ok().result
    mine = sorted(((r.shape, r.source.line if r.source else None) for r in report.residuals), key=str)
    assert mine == _jax_residuals(ip.user_ns["f"], jnp.ones((4, 4)))
    assert any(r.label == remat.CAPTURED for r in report.residuals)  # x_data, a global
    text = report.to_text()
    assert "the backward pass keeps" in text and "jnp.exp(h) ** 2" in text


def test_an_argument_kept_for_the_backward_pass_is_named(ip, run, defined):
    report = run("%jaxpr --memory -o -t grad two(jnp.ones(3), jnp.full(3, 2.0))").assert_ok().result
    expected = _jax_residuals(lambda w: ip.user_ns["two"](w, jnp.full(3, 2.0)), jnp.ones(3))
    mine = sorted(((r.shape, r.source.line if r.source else None) for r in report.residuals), key=str)
    assert mine == expected
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        jax.ad_checkpoint.print_saved_residuals(lambda w: ip.user_ns["two"](w, 2.0), jnp.ones(3))
    assert "from the argument w" in printed.getvalue()
    assert "argument w" in {r.label for r in report.residuals}


def test_each_policy_is_the_gradient_compiled_with_it_and_its_line_runs(ip, run, defined):
    report = run("%jaxpr --memory -o -t grad f(jnp.ones((4, 4)))").assert_ok().result
    assert [c.policy for c in report.checkpoint_policies] == list(remat.POLICIES)
    f = ip.user_ns["f"]
    for cost in report.checkpoint_policies:
        namespace = {"jax": jax, "f": f}
        exec(cost.code, namespace)  # the line the table tells the user to write
        checkpointed = namespace["f"]
        compiled = jax.jit(jax.grad(checkpointed)).trace(jnp.ones((4, 4))).lower().compile()
        analysis = compiled.cost_analysis()
        analysis = analysis[0] if isinstance(analysis, (list, tuple)) else analysis
        assert cost.flops == pytest.approx(analysis["flops"])
        assert cost.peak_bytes > 0
        assert jnp.allclose(jax.grad(checkpointed)(jnp.ones((4, 4))), jax.grad(f)(jnp.ones((4, 4))))
    text = report.to_text()
    assert "(as written)" in text and "dots_saveable" in text and "jm-policies" in report.to_html()


def test_no_residuals_without_a_gradient(run, defined):
    report = run("%jaxpr --memory -o f(jnp.ones((4, 4)))").assert_ok().result
    assert report.residuals is None and report.checkpoint_policies is None
    assert "checkpoint policies" not in report.to_text()
