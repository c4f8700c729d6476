"""``--memory`` on an accelerator (a TPU or GPU, whose XLA reports the program's own peak): on the
four recorded models of ``tests/fixtures/tpu/models.py`` and the checkpoint policies of the MLP's
gradient, the peak agrees with ``memory_analysis().peak_memory_in_bytes`` within 5%, each buffer is
counted once, the residuals stay within the peak, each policy's figure is its own compile's, and
the words say what the peak is made of. Skipped on a machine with only the CPU.

    JAX_PLATFORMS=tpu,cpu python -m pytest -p no:xdist -m accelerator tests/test_memory_accelerator.py
"""

from __future__ import annotations

import os
import sys

import jax
import pytest

from jaxmagic.tracing.call import Call
from jaxmagic.tracing.stages import trace
from tests import memory_properties as props

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "fixtures", "tpu"))
import models  # noqa: E402

pytestmark = pytest.mark.accelerator


@pytest.mark.parametrize("name", list(models.MODELS))
def test_the_peak_is_xla_s_on_the_recorded_models(name):
    fn, make_args = models.MODELS[name]
    report = trace(Call(fn, make_args(jax.random.key(0)), {}), show_memory=True)
    props.check_peak_is_xla_s(report)
    props.check_each_buffer_once(report)
    assert report.peak.xla_peak_bytes == report.compiled.memory_analysis().peak_memory_in_bytes
    text = report.to_text()
    assert "the peak is XLA's own (memory_analysis)" in text and "within 5% of it" in text, text[-3000:]
    assert "held for the whole call" in text and "reserves" not in text  # what a TPU's peak is made of
    assert report.peak.attributed_share >= 0.95, [(b.name, b.label) for b in report.live_at_peak[:10]]


def test_each_checkpoint_policy_is_its_own_compile_and_the_residuals_stay_within_the_peak():
    params, x = models.mlp_args(jax.random.key(1))
    report = trace(Call(models.mlp_loss, (params, x), {}), transforms=("grad",), show_memory=True)
    props.check_peak_is_xla_s(report)
    props.check_residuals_within_peak(report)
    assert report.residuals
    figures = {}
    for cost in report.checkpoint_policies:
        namespace = {"jax": jax, "mlp_loss": models.mlp_loss}
        exec(cost.code, namespace)  # the line the table tells the user to write
        compiled = jax.jit(jax.grad(namespace["mlp_loss"])).trace(params, x).lower().compile()
        xla = compiled.memory_analysis().peak_memory_in_bytes
        assert abs(cost.peak_bytes - xla) <= props.TOLERANCE * xla, (cost.policy, cost.peak_bytes, xla)
        figures[cost.policy] = (cost.peak_bytes, xla)
    # what XLA says saving less buys, the table says too
    (ours_less, xla_less), (ours_all, xla_all) = figures["nothing_saveable"], figures["everything_saveable"]
    assert (ours_less < ours_all) == (xla_less < xla_all), figures
