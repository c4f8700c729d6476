"""``%jaxpr --memory -t grad``: what the backward pass keeps, by source line, and what each of JAX's
checkpoint policies trades. Truth from JAX and XLA: ``print_saved_residuals`` (which values JAX
saves), the compiled gradient's ``memory_analysis``, and the gradient compiled under
``jax.checkpoint`` with each policy."""

import contextlib
import io
import re

import jax
import jax.ad_checkpoint
import jax.numpy as jnp
import pytest

from jaxmagic.compiled import peak_memory, remat
from tests import memory_properties as props

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


def _compiled_and_dump(lowered) -> tuple[str, str]:
    compiled, dumped = peak_memory.compile_with_buffers(lowered)
    return compiled.as_text(), dumped


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


def test_the_residuals_are_what_the_compiled_gradient_keeps_and_never_exceed_its_peak(ip, run, defined):
    report = run("%jaxpr --memory -o -t grad f(jnp.ones((4, 4)))").assert_ok().result
    kept = report.residuals
    assert kept, report.to_text()
    # every buffer kept is a value JAX saves for the backward pass (by its line), or the array read from outside
    jax_lines = {line for _, line in _jax_residuals(ip.user_ns["f"], jnp.ones((4, 4))) if line is not None}
    assert {r.source.line for r in kept if r.source is not None} <= jax_lines
    assert "captured constant `x_data`" in {r.label for r in kept}  # x_data, a global read by the backward pass
    # all in use at once in the compiled gradient: never more than its peak, nor than what XLA holds for it
    stats = report.compiled.memory_analysis()
    reserved = stats.argument_size_in_bytes + stats.output_size_in_bytes + stats.temp_size_in_bytes
    assert sum(r.bytes for r in kept) <= report.peak_bytes
    assert sum(r.bytes for r in kept if not r.label.startswith("captured")) <= reserved
    assert all(r.bytes == 16 * 4 * 4 for r in kept if r.shape == "f32[16,4]")  # XLA's buffers, the arrays' own size
    text = report.to_text()
    assert "the backward pass keeps" in text and "x_data" in text


def test_a_long_scan_s_residuals_are_what_its_backward_pass_reads(run):
    run(
        "def unrolled(w, xs):\n    def step(h, x):\n        h = jnp.tanh(h @ w + x)\n        return h, h\n"
        "    return jax.lax.scan(step, jnp.zeros((64, 256)), xs)[1].sum()\n"
        "rw = jnp.ones((256, 256)) * 0.01\nrxs = jnp.ones((100, 64, 256))"
    ).assert_ok()
    report = run("%jaxpr --memory -o -t grad unrolled(rw, rxs)").assert_ok().result
    assert sum(r.bytes for r in report.residuals) <= report.peak_bytes
    # the hundred steps' hidden states, kept for the backward pass in one stacked buffer
    assert any(r.bytes >= 100 * 64 * 256 * 4 for r in report.residuals), report.residuals


def test_an_argument_kept_for_the_backward_pass_is_named(ip, run, defined):
    report = run("%jaxpr --memory -o -t grad two(jnp.ones(3), jnp.full(3, 2.0))").assert_ok().result
    expected = _jax_residuals(lambda w: ip.user_ns["two"](w, jnp.full(3, 2.0)), jnp.ones(3))
    # XLA recomputes sin's derivative inside the backward pass's kernel from the arguments it keeps
    assert {r.source.line for r in report.residuals if r.source} <= {line for _, line in expected}
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
        # the figure is that program's peak, within what XLA holds for it (its reservation, and its constants)
        lowered = jax.jit(jax.grad(checkpointed)).trace(jnp.ones((4, 4))).lower()
        by_hand = peak_memory.peak_memory(*_compiled_and_dump(lowered), report.memory)
        assert cost.peak_bytes == by_hand.peak_bytes
        assert cost.peak_bytes > by_hand.bytes_of("constant")
        props.check_within_xla(cost.peak_bytes, by_hand.bytes_of("constant"), compiled.memory_analysis())
        assert jnp.allclose(jax.grad(checkpointed)(jnp.ones((4, 4))), jax.grad(f)(jnp.ones((4, 4))))
    text = report.to_text()
    assert "(as written)" in text and "dots_saveable" in text and "jm-policies" in report.to_html()


def test_no_residuals_without_a_gradient(run, defined):
    report = run("%jaxpr --memory -o f(jnp.ones((4, 4)))").assert_ok().result
    assert report.residuals is None and report.checkpoint_policies is None
    assert "checkpoint policies" not in report.to_text()
