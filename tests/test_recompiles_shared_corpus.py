"""The recompile causes over the shared corpus of code users write (``tests/corpus``: JAX's
documentation and issue tracker, the libraries' documented examples): every case that compiles
again (tag ``recompile``) is run under a watch, its cell first, then its call, and held to the
rules ``test_recompiles_causes_corpus`` holds its own corpus to: a kind JAX's own explanation
agrees with, as many compilations as JAX logs, a path the user wrote, every cause saying what
differs, and nothing shown that names a library's insides."""

from __future__ import annotations

import pytest
from recompile_cases import RecompileCase
from test_recompiles_causes_corpus import internals_problems, verdict, what_differs_problems

from tests.corpus import CASES

RECOMPILING = [case for case in CASES if "recompile" in case.tags and not case.raises]


def as_recompile_case(case) -> RecompileCase:
    """The cell runs before anything watches (what it compiles is "before"), the call under the watch."""
    return RecompileCase(case.library, case.id, f"{case.call}\n", before=case.setup)


@pytest.mark.parametrize("case", RECOMPILING, ids=[case.id for case in RECOMPILING])
def test_each_cause_agrees_with_jax_and_says_what_differs_in_the_users_terms(case, tmp_path):
    if not case.available:
        pytest.skip(f"needs {', '.join(case.needs)}")
    recompile_case = as_recompile_case(case)
    problems, log, namespace = verdict(recompile_case, tmp_path)
    problems += [f"{e.function}: {p}" for e in log.events for p in what_differs_problems(e)]
    problems += internals_problems(log, namespace)
    assert not problems, "\n".join(problems) + "\n\n" + log.to_text()


def test_the_shared_corpus_holds_recompiling_code_of_several_libraries():
    assert len(RECOMPILING) >= 15
    assert {case.library for case in RECOMPILING} >= {"jax", "optax", "numpyro", "blackjax", "equinox"}


def test_an_svi_built_anew_for_each_rate_says_what_its_run_compiled_again_in_numpyro_s_terms(tmp_path):
    """``fresh = SVI(..., numpyro.optim.Adam(lr), ...)`` then ``fresh.run``: the cause names the
    call and the value that changed, never "one of jax's functions" (NumPyro built it, not JAX)."""
    case = next(c for c in RECOMPILING if c.id == "numpyro/svi/svi-rebuilt-per-setting")
    if not case.available:
        pytest.skip(f"needs {', '.join(case.needs)}")
    _, log, _ = verdict(as_recompile_case(case), tmp_path)
    text = log.to_text()
    assert "`fresh.run` compiled again what it runs inside, built anew: lr=0.05 → lr=0.01" in text, text
    assert "jax's functions" not in text
