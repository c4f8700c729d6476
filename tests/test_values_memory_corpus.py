"""``--values`` and ``--memory`` over the corpora of realistic code (JAX's documentation shapes;
Equinox, Flax Linen and Optax training code): the values evaluated one equation at a time end in
what the user's call returns, no value is called non-finite that is not, and every byte at the
peak has a line of the user's or an argument's name."""

import jax
import numpy as np
import pytest

from jaxmagic.tracing.names import EQUINOX_MARKER
from tests import test_corpus_libraries as libraries
from tests import test_jaxpr_corpus_jax_docs as docs

CASES = [("docs", call) for call in docs.EXAMPLES] + [("libraries", call) for call in libraries.EXAMPLES]


@pytest.fixture(scope="module")
def corpora(ip):
    for setup in (docs.SETUP, libraries.SETUP):
        result = ip.run_cell(setup)
        assert result.success, result.error_in_exec
    yield


@pytest.mark.parametrize("corpus,call", CASES, ids=[f"{c}:{call}" for c, call in CASES])
def test_values_end_in_the_call_s_result_and_the_peak_is_attributed(ip, run, corpora, corpus, call):
    shown = run(f"%jaxpr -o --values --memory --max-eqns 5 {call}").assert_ok()
    report = shown.result
    expected = [e for e in jax.tree_util.tree_leaves(eval(call, dict(ip.user_ns))) if isinstance(e, jax.Array)]  # noqa: S307
    got = report.value_run.outputs
    if report.output_names[0] == EQUINOX_MARKER:  # eqx.filter_jit's program returns its marker first
        assert int(got[0]) == 0
        got = got[1:]
    assert len(got) == len(expected)
    for mine, theirs in zip(got, expected, strict=True):
        np.testing.assert_allclose(np.asarray(mine), np.asarray(theirs), rtol=1e-5, atol=1e-5)
    finite = all(np.isfinite(np.asarray(e)).all() for e in expected if np.issubdtype(np.asarray(e).dtype, np.inexact))
    assert (report.first_nonfinite is None) == finite
    assert report.peak.live_bytes == sum(b.bytes for b in report.live_at_peak)
    # every array at the peak has a line or an argument's name (a tuple's own buffer is XLA's table
    # of pointers to its elements, a few bytes, said as such)
    unnamed = [(b.name, b.label) for b in report.live_at_peak if not b.attributed and not b.is_tuple_table]
    assert unnamed == []
    assert len(shown.text) < 40_000
