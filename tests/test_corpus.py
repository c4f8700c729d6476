"""The shared corpus of code users write (``tests/corpus/``) holds what it promises: enough cases
from each source and library, unique ids, known tags, and every case does what it says as plain
Python — its setup runs, its call runs (or raises the exception it names), eagerly and under an
outer ``jax.jit`` where that is meaningful, with the same values both ways."""

from __future__ import annotations

import collections
import contextlib
import io
import math

import jax
import numpy as np
import pytest

from tests.corpus import CASES, TAGS, Case, namespace_of, running, traps
from tests.corpus.calls import jitted, parse_call

# At least this many cases per library (``Case.library``); the three Diffrax-family libraries and
# the three of chex / jaxtyping / Orbax are counted together, as their modules are.
LIBRARY_MINIMUMS = {
    ("jax",): 150,
    ("flax-nnx",): 10,
    ("flax-linen",): 8,
    ("equinox",): 10,
    ("optax",): 10,
    ("diffrax", "optimistix", "lineax"): 8,
    ("chex", "jaxtyping", "orbax"): 8,
    ("numpyro",): 10,
    ("blackjax",): 8,
}
SOURCE_MINIMUMS = {"docs/": 60, "jax-ml/jax#": 30}  # JAX's documentation, JAX's issue tracker


def test_at_least_two_hundred_cases():
    assert len(CASES) >= 200


def test_ids_are_unique_and_stable_in_form():
    counts = collections.Counter(case.id for case in CASES)
    assert [name for name, n in counts.items() if n > 1] == []
    for case in CASES:
        assert case.id == case.id.strip() and " " not in case.id and case.id.count("/") >= 1, case.id


@pytest.mark.parametrize("libraries", list(LIBRARY_MINIMUMS), ids="+".join)
def test_each_library_has_its_minimum(libraries):
    found = [case for case in CASES if case.library in libraries]
    assert len(found) >= LIBRARY_MINIMUMS[libraries]


@pytest.mark.parametrize("source", list(SOURCE_MINIMUMS))
def test_each_source_has_its_minimum(source):
    found = [case for case in CASES if case.library == "jax" and case.origin.startswith(source)]
    assert len(found) >= SOURCE_MINIMUMS[source]


def test_both_code_that_runs_and_traps():
    assert len(traps()) >= 40
    assert len(running()) >= 150


def test_every_tag_is_one_the_corpus_explains():
    used = {tag for case in CASES for tag in case.tags}
    assert used - set(TAGS) == set()


def test_every_library_case_names_the_modules_it_needs():
    for case in CASES:
        if case.library != "jax":
            assert case.needs, case.id
        for module in case.needs:
            assert f"import {module}" in case.setup or f"from {module}" in case.setup, (case.id, module)


# ---------------------------------------------------------------- every case, as plain Python


def _quiet(thunk):
    with contextlib.redirect_stdout(io.StringIO()):
        return jax.block_until_ready(thunk())


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_the_call_runs_or_raises_what_it_names(case):
    ns = namespace_of(case)
    if case.raises:
        with pytest.raises(Exception) as raised:
            _quiet(lambda: eval(case.call, ns))
        assert type(raised.value).__name__ == case.raises, repr(raised.value)[:500]
    else:
        _quiet(lambda: eval(case.call, ns))


def _leaves_close(eager, under_jit, case: Case) -> None:
    eager_leaves, jit_leaves = jax.tree_util.tree_leaves(eager), jax.tree_util.tree_leaves(under_jit)
    assert len(eager_leaves) == len(jit_leaves)
    if "precision" in case.tags:  # XLA may simplify what runs op by op (log(exp(x)) is x)
        return
    for a, b in zip(eager_leaves, jit_leaves, strict=True):
        if jax.dtypes.issubdtype(getattr(a, "dtype", None), jax.dtypes.prng_key):
            a, b = jax.random.key_data(a), jax.random.key_data(b)
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape
        if a.dtype.kind in "fc":
            np.testing.assert_allclose(a, b, rtol=2e-4, atol=1e-5, equal_nan=True)
        else:
            np.testing.assert_array_equal(a, b)


# Where an outer jit means something: not on code that cannot be jitted whole, nor on a callee
# that is jitted already (its plain call compiled it).
JITTABLE = [case for case in running() if not case.tags & {"no-jit", "side-effect", "jitted"}]


@pytest.mark.parametrize("case", JITTABLE, ids=lambda case: case.id)
def test_the_call_gives_the_same_values_under_an_outer_jit(case):
    ns = namespace_of(case)
    eager = _quiet(parse_call(case.call, ns))  # arguments made anew for each: a call may donate them
    under_jit = _quiet(jitted(parse_call(case.call, ns), static_scalars="static" in case.tags))
    _leaves_close(eager, under_jit, case)


def test_a_case_that_is_said_to_run_fails_here_when_it_raises():
    """The check above can fail: a call that raises is not taken for one that runs."""
    bad = Case("probe/raises", "jax", "docs/faq.rst", "import jax.numpy as jnp\n", "jnp.ones(2)[5:1:0]")
    with pytest.raises(ValueError):
        _quiet(lambda: eval(bad.call, namespace_of(bad)))


def test_values_that_differ_under_jit_are_caught():
    case = Case("probe/values", "jax", "docs/faq.rst", "", "f(x)")
    with pytest.raises(AssertionError):
        _leaves_close(np.float32(1.0), np.float32(1.5), case)
    assert math.isnan(float(np.float32("nan")))
    _leaves_close(np.float32("nan"), np.float32("nan"), case)  # NaN where eager gives NaN is the same
