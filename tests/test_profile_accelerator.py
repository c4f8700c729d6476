"""``%jaxpr --profile`` and ``python -m jaxmagic profile`` on the chip itself (skipped without one):
the four models recorded in ``tests/fixtures/tpu`` profiled live. Truth from outside jaxmagic: the
programs' own spans on the device (``XLA Modules``), the chip's peaks as its trace records them,
and the kernels' sum.

On the TPU machine, from the repository's root:

    JAX_PLATFORMS=tpu,cpu python3 -m pytest -q -p no:xdist -p no:cacheprovider tests/test_profile_accelerator.py
"""

from __future__ import annotations

import glob
import importlib.util
import json
import os

import jax
import jax.numpy as jnp
import pytest

from jaxmagic.__main__ import main as command_line
from jaxmagic.compiled import hlo_kernels, profiling, trace_profile

pytestmark = pytest.mark.accelerator

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("tpu_models", os.path.join(HERE, "fixtures", "tpu", "models.py"))
assert _spec is not None and _spec.loader is not None
models = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(models)


@pytest.mark.parametrize("name", sorted(models.MODELS))
def test_each_model_s_device_time_lies_on_its_lines(name):
    fn, make_args = models.MODELS[name]
    args = make_args(jax.random.key(0))
    found = profiling.profile(jax.jit(fn), args, {}, calls=3)
    assert not found.nothing_compiled, found.nothing_compiled
    assert found.attributed_share >= 0.95, found.line_times
    assert sum(found.line_times.values()) == pytest.approx(found.device_seconds, rel=1e-9)
    assert found.program_seconds is not None, "the trace lists each run of the program (XLA Modules)"
    assert 0.8 * found.program_seconds <= found.device_seconds <= found.program_seconds * 1.001
    assert all(os.path.basename(file) == "models.py" for file, _ in found.places.values())
    assert found.peaks is not None and found.peaks.source == "trace"
    use = found.total_usage()
    assert use.flops_fraction is not None and 0 < use.flops_fraction <= 1.05, use


def test_the_command_reads_a_trace_recorded_here(tmp_path, capsys):
    fn, make_args = models.MODELS["mlp"]
    args = make_args(jax.random.key(0))
    jitted = jax.jit(fn)
    jax.block_until_ready(jitted(*args))
    with jax.profiler.trace(str(tmp_path)):
        for _ in range(3):
            jax.block_until_ready(jitted(*args))
    assert glob.glob(os.path.join(tmp_path, "**", "*.xplane.pb"), recursive=True)
    assert command_line(["profile", str(tmp_path), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    found = trace_profile.read_trace(str(tmp_path))
    assert found.profile.attributed_share >= 0.95
    assert sum(line["device_s"] for line in printed["lines"]) == pytest.approx(printed["total_device_s"], rel=0.05)
    assert {line["file"] for line in printed["lines"]} == {"models.py"}


def test_a_pallas_kernel_is_named_in_the_hlo_view():
    from jax.experimental import pallas as pl

    def add_kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] + y_ref[...]

    def add(x, y):
        return pl.pallas_call(add_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x, y)

    x = jnp.ones((8, 128))
    hlo = jax.jit(add).lower(x, x).compile().as_text()
    (call,) = [g for g in hlo_kernels.kernel_groups(hlo) if g.opcode == "custom-call"]
    assert call.custom_call is not None and call.custom_call.name == "add_kernel", call.custom_call
