"""XLA's memory analysis is read in one place: %jaxpr's report and %jitcompare's comparison give the
same bytes under the same keys, and the bytes are XLA's own."""

import jax
import jax.numpy as jnp

from jaxmagic.compiled import memory
from jaxmagic.timing import compare
from jaxmagic.tracing.call import Call
from jaxmagic.tracing.stages import trace

KEYS = {"arguments", "outputs", "aliased", "temporaries", "code"}


def _matmul(v):
    return jnp.sin(v) @ v


def test_compiled_memory_reads_xla_memory_analysis():
    compiled = jax.jit(_matmul).trace(jnp.ones((64, 64))).lower().compile()
    found = memory.compiled_memory(compiled)
    stats = compiled.memory_analysis()
    assert found["arguments"] == stats.argument_size_in_bytes
    assert found["outputs"] == stats.output_size_in_bytes
    if jax.default_backend() == "cpu":  # a TPU pads each array to its tiles
        assert stats.argument_size_in_bytes == stats.output_size_in_bytes == 64 * 64 * 4
    assert found["temporaries"] == stats.temp_size_in_bytes
    assert set(found) == KEYS


def test_jaxpr_report_and_jitcompare_use_the_same_keys_and_bytes():
    x = jnp.ones((64, 64))
    report = trace(Call(_matmul, (x,), {}))
    comparison = compare(Call(_matmul, (x,), {}), modes=("jit",), repeat=1, loops=1)
    assert set(report.memory) == KEYS
    assert report.memory == comparison.memory["jit"]
