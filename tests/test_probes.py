"""Property-based probes of what users really pass (hypothesis), on top of ``test_fuzz.py``'s random
lines: pytrees of odd leaves (None, strings, huge integers, NaN, numpy scalars, empty containers,
dicts with keys of mixed types, namedtuples), hostile strings as static values and dict keys, and
odd option values in every magic's line and cell form.

Each probe checks the same properties: the outcome is clean (a result, a ``UsageError`` saying
what was expected, or the user's own error) with no jaxmagic frame shown; the user's namespace,
the very objects it held, and JAX's configuration are as they were; no option value is ever run
as code; and no output is above 1 MB of HTML. The example counts are small so that the file runs
in well under a minute.
"""

from __future__ import annotations

import collections
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from outcomes import Snapshot, assert_clean, defined_in_session

MAX_HTML = 1_000_000
PROBES = settings(
    deadline=None,
    database=None,
    derandomize=True,  # the same examples on every run: a failure here is reproducible
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)

SETUP = """
import collections
import jax, jax.numpy as jnp
Pair = collections.namedtuple("Pair", "left right")
def passes(tree):
    return tree
def scaled(x, label):
    return x * len(label)
scaled_jit = jax.jit(scaled, static_argnames="label")
def plain(x):
    return x * 2
probe_ran = []
def probe_mark():
    probe_ran.append(1)
    return 1
probe_x = jnp.ones(3)
"""
SETUP_NAMES = {"collections", "jax", "jnp", "Pair", "passes", "scaled", "scaled_jit", "plain"}
SETUP_NAMES |= {"probe_ran", "probe_mark", "probe_x"}
Pair = collections.namedtuple("Pair", "left right")


@pytest.fixture(scope="module")
def namespace(ip):
    with defined_in_session(ip, SETUP, SETUP_NAMES):
        yield


# -- what users pass ----------------------------------------------------------------------------------

HOSTILE_TEXT = st.one_of(
    st.text(alphabet=st.sampled_from(list("<>&\"'`;\\/ \n\t\x00\u202e\u200b\ufeffé😀{}[]()=%$#")), max_size=40),
    st.sampled_from(["</script><script>alert(1)</script>", "<img src=x onerror=alert(1)>", "-->", "x" * 100_000]),
)


def _leaf():
    import jax.numpy as jnp

    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.complex_numbers(max_magnitude=1e6),
        HOSTILE_TEXT,
        st.binary(max_size=8),
        st.sampled_from([np.float32(1.5), np.int8(-3), np.bool_(True), np.float16(math.inf)]),
        st.sampled_from(
            [
                jnp.ones(3),
                jnp.zeros((0, 2)),
                jnp.arange(4, dtype=jnp.int32),
                jnp.ones((2, 1), jnp.bfloat16),
                jnp.ones((), jnp.complex64),
                np.ones((2, 2), np.float64),
            ]
        ),
    )


def pytrees():
    keys = st.one_of(st.integers(-3, 3), HOSTILE_TEXT.filter(bool), st.sampled_from([None, (1, 2)]))
    return st.recursive(
        _leaf(),
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.lists(inner, max_size=3).map(tuple),
            st.dictionaries(keys, inner, max_size=3),
            st.tuples(inner, inner).map(lambda pair: Pair(*pair)),
        ),
        max_leaves=8,
    )


def fingerprint(tree) -> object:
    """What ``tree`` holds, to tell whether a magic changed it: each node's identity and type, each
    array's shape, dtype and bytes, each other leaf's repr."""
    if isinstance(tree, dict):
        return ("dict", id(tree), tuple((repr(k), fingerprint(v)) for k, v in tree.items()))
    if isinstance(tree, (list, tuple)):
        return (type(tree).__name__, id(tree), tuple(fingerprint(item) for item in tree))
    if hasattr(tree, "shape") and hasattr(tree, "dtype"):
        return ("array", id(tree), tuple(tree.shape), str(tree.dtype), np.asarray(tree).tobytes())
    return (type(tree).__name__, repr(tree))


def probe(ip, run, source: str, *, defines=frozenset(), held: dict | None = None):
    """Run ``source`` as a cell and check every property; ``held`` maps names placed in the
    user's namespace for the probe to the objects they hold."""
    held = held or {}
    ip.user_ns.update(held)
    prints = {name: fingerprint(value) for name, value in held.items()}
    before = Snapshot(ip)
    ran_before = len(ip.user_ns["probe_ran"])
    try:
        result = run(source)
        assert_clean(result)
        assert len(result.html.encode()) <= MAX_HTML, f"{len(result.html)} bytes of HTML"
        assert len(result.text.encode()) <= MAX_HTML, f"{len(result.text)} bytes of text"
        assert len(ip.user_ns["probe_ran"]) == ran_before, "an option value was run as code"
        before.assert_kept(defined=before.new_names() & set(defines), ignore_config=("jax_explain_cache_misses",))
        for name, value in held.items():
            assert ip.user_ns[name] is value, f"{name} was rebound"
            assert fingerprint(value) == prints[name], f"{name} was changed"
    finally:
        before.forget_new_names()
        for name in held:
            ip.user_ns.pop(name, None)
    return result


TREE_MAGICS = [
    "%jaxpr passes(probe_tree)",
    "%jaxpr --stage hlo passes(probe_tree)",
    "%jitcompare -q -n 1 -r 1 --budget 0.02 passes(probe_tree)",
    "%%recompiles\njax.jit(passes)(probe_tree)",
]


@settings(PROBES, max_examples=30)
@given(tree=pytrees(), magic=st.sampled_from(TREE_MAGICS))
def test_pytrees_of_odd_leaves(ip, run, namespace, tree, magic):
    probe(ip, run, magic, held={"probe_tree": tree})


@settings(PROBES, max_examples=20)
@given(
    text=HOSTILE_TEXT,
    magic=st.sampled_from(
        [
            "%jaxpr -s label scaled(probe_x, probe_text)",
            "%jaxpr passes({probe_text: probe_x})",
            "%%recompiles\nscaled_jit(probe_x, label=probe_text); scaled_jit(probe_x, label=probe_text + '!')",
            "%jitcompare -q -n 1 -r 1 --budget 0.02 -s label scaled(probe_x, probe_text)",
        ]
    ),
)
def test_hostile_strings_as_static_values_and_keys(ip, run, namespace, text, magic):
    result = probe(ip, run, magic, held={"probe_text": text})
    assert "<script>alert" not in result.html


# Option values users mistype; the last ones call probe_mark(), which records that it ran, if they
# are ever evaluated (none is a call expression, which the cell form's line may hold on purpose).
ODD_VALUES = ["-1", "-0.5", "0", "1e400", "nan", "-inf", "''", "two", "--", "len", "-max", "=", "1,2"]
ODD_VALUES += ["99999999999999999999999", "-probe_mark()", "[probe_mark()]", "probe_mark()+1", "(probe_mark(),)"]
OPTIONS = {
    "%jaxpr": ["--max-eqns", "-s", "--stage", "-t", "--profile"],
    "%jitcompare": ["-n", "-r", "--budget", "--rtol", "--atol", "--modes", "-s"],
    "%recompiles": ["--max"],
}


@st.composite
def option_lines(draw) -> str:
    magic = draw(st.sampled_from(sorted(OPTIONS)))
    option = draw(st.sampled_from(OPTIONS[magic]))
    value = draw(st.sampled_from(ODD_VALUES))
    written = draw(st.sampled_from([f"{option} {value}", f"{option}={value}" if option.startswith("--") else option]))
    cell = draw(st.booleans())
    if magic == "%recompiles":
        return f"%{magic} {written}\nplain(probe_x)" if cell else f"{magic} on {written}"
    if cell:
        return f"%{magic} {written}\nplain(probe_x)"
    return f"{magic} {written} plain(probe_x)"


@settings(PROBES, max_examples=60)
@given(line=option_lines())
def test_odd_option_values_are_refused_never_run(ip, run, namespace, line):
    try:
        probe(ip, run, line)
    finally:
        run("%recompiles off")
