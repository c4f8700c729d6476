"""The optimized HLO's lines are lines of this call. JAX keeps a library's jitted program
(``jnp.linalg.norm``, ``jax.nn.relu``) from its first trace, and XLA's metadata keeps its frames: on
JAX 0.8 the first caller's line, a line this call never ran. The kernels, the profile's line times
and the peak memory's lines place such instructions on the line that called the library here, as
the listing and the line counts do; where that call cannot be told apart (the same library function
called from two lines) they show no line rather than a wrong one."""

import importlib
import sys

import jax
import jax.numpy as jnp
import pytest

from jaxmagic.compiled import hlo_sources, kernel_shares, profiling
from jaxmagic.render.hlo import groups
from jaxmagic.render.jaxpr import JaxprView
from jaxmagic.tracing.call import Call
from jaxmagic.tracing.listing import equations_by_line
from jaxmagic.tracing.stages import trace

LIBRARY_CALLERS = """import jax, jax.numpy as jnp

def first(x):
    return jnp.linalg.norm(jax.nn.relu(x), axis=1)

def second(x):
    return jnp.linalg.norm(jax.nn.relu(x), axis=1), x * 2

def twice(x, y):
    a = jnp.linalg.norm(x, axis=1)
    b = jnp.linalg.norm(y, axis=1)
    return a * b
"""
FIRST, SECOND = "hlo_library_callers.py:4", "hlo_library_callers.py:7"
TWICE = {"hlo_library_callers.py:10", "hlo_library_callers.py:11", "hlo_library_callers.py:12"}


@pytest.fixture
def callers(tmp_path, monkeypatch):
    """The module, with ``first`` traced: the library's programs now carry ``first``'s frames."""
    (tmp_path / "hlo_library_callers.py").write_text(LIBRARY_CALLERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("hlo_library_callers")
    jax.make_jaxpr(module.first)(jnp.ones((7, 5)))
    yield module
    sys.modules.pop("hlo_library_callers", None)


def _labels(found) -> set[str]:
    return {label for group in found for label in group.lines}


def test_kernels_of_a_library_traced_for_another_caller_are_on_this_calls_line(callers):
    report = trace(Call(callers.second, (jnp.ones((7, 5)),), {}))
    assert set(equations_by_line(report.jaxpr)) == {SECOND}
    assert _labels(groups(report)) == {SECOND}
    text = JaxprView(report, stage="hlo").to_text()
    assert SECOND in text and FIRST not in text
    lines = hlo_sources.kernel_lines(report.hlo, jaxpr=report.jaxpr)
    assert {line.label for found in lines.values() for line in found} == {SECOND}


def test_peak_memory_and_profile_name_this_calls_line(callers):
    report = trace(Call(callers.second, (jnp.ones((7, 5)),), {}))
    assert {share.label for share in report.peak.by_line if share.source is not None} == {SECOND}
    kernels = [name for name, i in hlo_sources.parse(report.hlo).items() if i.opcode == "fusion"]
    profile = profiling.summarise(dict.fromkeys(kernels, 1.0), report.hlo, calls=1, jaxpr=report.jaxpr)
    assert set(profile.line_times) == {SECOND}
    assert {label for kernel in profile.kernels for label in kernel.lines} == {SECOND}


def test_a_library_called_from_two_lines_shows_no_wrong_line(callers):
    """Both calls of ``norm`` share one scope name in the HLO: where the frames do not tell which
    call an instruction came from (JAX 0.8 keeps the first caller's line only), it has no line."""
    report = trace(Call(callers.twice, (jnp.ones((7, 5)), jnp.ones((7, 5))), {}))
    shown = _labels(groups(report))
    assert shown and shown <= TWICE


def test_the_rule_reads_innermost_frames_the_way_jax_0_8_writes_them(callers):
    """An HLO module written as JAX 0.8 writes it (each instruction's innermost frame, no stack
    table), whatever JAX runs here: the norm's instructions carry ``first``'s line."""
    closed = jax.make_jaxpr(callers.second)(jnp.ones((7, 5)))
    file = callers.__file__
    module = "\n".join(
        [
            "HloModule jit_second",
            "",
            "%fused (p: f32[7,5]) -> f32[7] {",
            '  %p = f32[7,5]{1,0} parameter(0), metadata={op_name="x"}',
            f'  %mul.1 = f32[7,5]{{1,0}} multiply(%p, %p), metadata={{op_name="jit(second)/jit(norm)/mul" source_file="{file}" source_line=4}}',
            f'  ROOT %sqrt.1 = f32[7]{{0}} sqrt(%mul.1), metadata={{op_name="jit(second)/jit(norm)/sqrt" source_file="{file}" source_line=4}}',
            "}",
            "",
            "ENTRY %main (x: f32[7,5]) -> f32[7] {",
            '  %x = f32[7,5]{1,0} parameter(0), metadata={op_name="x"}',
            f'  ROOT %fusion = f32[7]{{0}} fusion(%x), kind=kLoop, calls=%fused, metadata={{op_name="jit(second)/jit(norm)/sqrt" source_file="{file}" source_line=4}}',
            "}",
        ]
    )
    assert [line.label for line in hlo_sources.kernel_lines(module)["fusion"]] == [FIRST]
    assert [line.label for line in hlo_sources.kernel_lines(module, jaxpr=closed)["fusion"]] == [SECOND]
    assert kernel_shares.line_shares(hlo_sources.parse(module, closed), "fusion").fractions == {SECOND: 1.0}


def test_a_fingerprint_counts_the_library_s_work_on_this_calls_line(callers, tmp_path):
    from jaxmagic.recompiles.program_facts import program_facts

    report = trace(Call(callers.second, (jnp.ones((7, 5)),), {}))
    facts = program_facts(report.hlo, {}, None, report.jaxpr, root=str(tmp_path))
    assert set(facts.lines) == {"hlo_library_callers.py:7"}


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the CPU's XLA splits this reduction in two passes")
def test_a_pass_xla_split_off_a_reduction_is_on_the_reduction_s_line():
    """Inside a scan, the CPU's XLA computes ``h.sum()`` as a reduce-window then a reduce, the first
    with no source of its own: it applies the reduction's adder, so it is on the reduction's line,
    not "(no source line)" (10-15% of an RNN's device time was)."""

    def rnn(w, xs):
        def step(h, x):
            h = jnp.tanh(h @ w + x)
            return h, h.sum()

        return jax.lax.scan(step, jnp.zeros(64), xs)[1]

    args = (jnp.ones((64, 64)) * 0.01, jnp.ones((20, 64)))
    compiled = jax.jit(rnn).lower(*args).compile().as_text()
    instructions = hlo_sources.parse(compiled, jax.make_jaxpr(rnn)(*args))
    windows = [i for i in instructions.values() if i.opcode == "reduce-window"]
    assert windows, "no split reduction in this XLA's program"
    reduction_line = rnn.__code__.co_firstlineno + 3
    for window in windows:
        assert window.frames and window.frames[0][1] == reduction_line, (window.name, window.frames)
