"""``--memory``'s figures against XLA's own account, over the corpora of code users write: JAX's
documentation shapes, Equinox / Flax Linen / Optax training code, memory's own cases (long scans,
gradients through loops, donated training steps, arrays read from an earlier cell, an MLP's
checkpoint policies), and the shared corpus's cases whose memory matters (tags ``memory``,
``grad``, ``checkpoint``, ``captured-constant``, ``scan``). The properties are ``tests/memory_properties.py``'s."""

import contextlib
import io
import sys
import types

import jax
import jax.numpy as jnp
import pytest

from jaxmagic.compiled import peak_memory
from jaxmagic.compiled.memory import platform, xla_peak
from jaxmagic.tracing.call import resolve_call
from jaxmagic.tracing.stages import trace
from tests import memory_cases
from tests import memory_properties as props
from tests import test_corpus_libraries as libraries
from tests import test_jaxpr_corpus_jax_docs as docs
from tests.corpus import Case, running
from tests.corpus.calls import parse_call

CASES = (
    [("docs", call) for call in docs.EXAMPLES]
    + [("libraries", call) for call in libraries.EXAMPLES]
    + [("memory", call) for call in memory_cases.CALLS]
)


@pytest.fixture(scope="module")
def corpora(ip):
    for setup in (docs.SETUP, libraries.SETUP, *memory_cases.SETUP, memory_cases.LOSSES):
        result = ip.run_cell(setup, store_history=True)
        assert result.success, result.error_in_exec
    yield


@pytest.mark.parametrize("corpus,call", CASES, ids=[f"{c}:{call}" for c, call in CASES])
def test_the_peak_is_xla_s_each_buffer_once_and_residuals_within_it(run, corpora, corpus, call):
    report = run(f"%jaxpr -o --memory --max-eqns 5 {call}").assert_ok().result
    props.check_peak_is_xla_s(report)
    props.check_each_buffer_once(report)
    props.check_residuals_within_peak(report)


def test_the_hundred_step_scan_is_counted_once(run, corpora):
    """Its carried state and stacked outputs are one buffer each, written in place at every step:
    never above what XLA reserves (it showed half as much again, both values of each buffer)."""
    report = run("%jaxpr -o --memory rnn_states(rnn_weights, rnn_inputs)").assert_ok().result
    stats = report.compiled.memory_analysis()
    if props.reports_program_peak():
        assert report.peak_bytes == stats.peak_memory_in_bytes
    else:
        assert report.peak_bytes <= props.reserved(stats) + 64
    stacked = [b for b in report.live_at_peak if b.shape == "f32[100,64,256]"]
    assert len(stacked) == 2, [(b.name, b.shape) for b in report.live_at_peak]  # the inputs, the stacked states


def test_an_array_from_an_earlier_cell_is_named_as_the_function_reads_it(run, corpora):
    report = run("%jaxpr -o --memory -t grad lookup(jnp.ones((64, 512)))").assert_ok().result
    labels = {b.label for b in report.live_at_peak} | {r.label for r in report.residuals}
    assert "captured constant `table`" in labels, labels
    assert not any("%jaxpr" in (b.source.text if b.source else "") for b in report.live_at_peak)
    assert "captured constant `table`" in report.to_text()


def test_each_checkpoint_policy_is_the_gradient_compiled_with_it(ip, run, corpora):
    report = run("%jaxpr -o --memory -t grad layers_loss(layer_params, layer_x)").assert_ok().result
    args = (ip.user_ns["layer_params"], ip.user_ns["layer_x"])
    for cost in report.checkpoint_policies:
        namespace = {"jax": jax, "layers_loss": ip.user_ns["layers_loss"]}
        exec(cost.code, namespace)  # the line the table tells the user to write
        lowered = jax.jit(jax.grad(namespace["layers_loss"])).trace(*args).lower()
        compiled, dumped = peak_memory.compile_with_buffers(lowered)
        by_hand = peak_memory.peak_memory(
            compiled.as_text(), dumped, {}, xla_peak=xla_peak(compiled), platform=platform(compiled)
        )
        assert cost.peak_bytes == by_hand.peak_bytes, cost
        stats = compiled.memory_analysis()
        if props.reports_program_peak():
            assert abs(cost.peak_bytes - stats.peak_memory_in_bytes) <= props.TOLERANCE * stats.peak_memory_in_bytes
        else:
            assert cost.peak_bytes - by_hand.bytes_of("constant") <= props.reserved(stats)
        assert jnp.allclose(
            jax.tree.leaves(jax.grad(namespace["layers_loss"])(*args))[0],
            jax.tree.leaves(jax.grad(ip.user_ns["layers_loss"])(*args))[0],
        )


# -- the shared corpus of code users write (tests/corpus/): every running case whose memory matters
SHARED = [
    case
    for case in running()
    if case.tags & {"memory", "grad", "checkpoint", "captured-constant", "scan"} and not case.tags & {"no-jit"}
]
_namespaces: dict[str, dict] = {}


def _namespace(case: Case) -> dict:
    """The namespace the case's cell leaves (run once per cell, as a module of its own)."""
    if not case.available:
        pytest.skip(f"needs {', '.join(case.needs)}")
    if case.setup not in _namespaces:
        module = types.ModuleType(f"memory_corpus_cell_{len(_namespaces)}")
        sys.modules[module.__name__] = module
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(case.setup, f"<corpus cell {case.id}>", "exec"), module.__dict__)
        _namespaces[case.setup] = module.__dict__
    return _namespaces[case.setup]


def _static(call: str, namespace: dict, case: Case) -> str | None:
    """The ``-s`` a user writes for the case's Python numbers where the case says one is static."""
    if "static" not in case.tags:
        return None
    parsed = parse_call(call, namespace)
    chosen = [
        str(i) for i, a in enumerate(parsed.args) if isinstance(a, (bool, int, float)) and not hasattr(a, "shape")
    ]
    chosen += [n for n, a in parsed.kwargs.items() if isinstance(a, (bool, int, float))]
    return ",".join(chosen) or None


@pytest.mark.parametrize("case", SHARED, ids=lambda case: case.id)
def test_the_peak_is_xla_s_each_buffer_once_and_residuals_within_it_on_the_shared_corpus(case):
    namespace = _namespace(case)
    call = resolve_call(case.call, namespace, static=_static(case.call, namespace, case))
    report = trace(call, show_memory=True)
    props.check_peak_is_xla_s(report)
    props.check_each_buffer_once(report)
    props.check_residuals_within_peak(report)
