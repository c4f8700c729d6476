"""Random option strings and random call expressions for every magic (hypothesis): whatever is
typed, the outcome is a result, a ``UsageError`` or the user's own error; never an internal
traceback, and the namespace and JAX's configuration stay as they were.

The examples are small on purpose (three-element arrays, one timed call per mode), so that well
over a thousand of them run in the normal test run.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from outcomes import Snapshot, assert_clean, defined_in_session

SETUP = """
import functools
import jax, jax.numpy as jnp
x = jnp.ones(3)
ints = jnp.arange(3)
empty = jnp.zeros((0, 2))
def f(x, n=2):
    return jnp.sum(jnp.sin(x) * n)
def kwonly(x, *, scale=1.0):
    return x * scale
def varargs(*args, **kwargs):
    return sum(args) + sum(kwargs.values())
def raises(x):
    raise ValueError("the user's own error")
def branchy(x):
    if x.sum() > 0:
        return x
    return -x
def returns_str(x):
    return "text"
def gen(x):
    yield x
tick = [0]
def sometimes(x):
    tick[0] += 1
    if tick[0] % 3 == 0:
        raise ValueError("every third call fails")
    return x * 2
number = 3
jitted = jax.jit(lambda x, n=1: x * n, static_argnames="n")
class Scale:
    def __call__(self, x):
        return x * 3
scale = Scale()
"""
SETUP_NAMES = {
    "functools",
    "jax",
    "jnp",
    "x",
    "ints",
    "empty",
    "f",
    "kwonly",
    "varargs",
    "raises",
    "branchy",
    "returns_str",
    "gen",
    "tick",
    "sometimes",
    "number",
    "jitted",
    "Scale",
    "scale",
}

EXAMPLES = {"jaxpr": 400, "jitcompare": 220, "recompiles": 200, "cells": 150, "jaxmagic": 60}
FUZZ = settings(
    deadline=None,
    database=None,
    derandomize=True,  # the same examples on every run: a failure here is reproducible
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)

# -- call expressions ------------------------------------------------------------------------------
# Each pool has what should work and what should not; most draws take from the first, so that many
# examples get as far as tracing, timing and rendering, and some probe every refusal.

CALLEES = (
    [
        "f",
        "kwonly",
        "varargs",
        "jitted",
        "scale",
        "jnp.sin",
        "jnp.sum",
        "(lambda a: a * 2)",
        "functools.partial(f, n=3)",
        "jax.jit(f)",
        "scale.__call__",
        "raises",
        "branchy",
        "sometimes",
    ],
    ["returns_str", "gen", "number", "len", "print", "undefined_name", "x", "Scale", "(lambda *a: a)"],
)
ARGUMENTS = (
    [
        "x",
        "ints",
        "empty",
        "2",
        "2.5",
        "-1",
        "True",
        "jnp.float32(1)",
        "(x, x)",
        "{'a': x}",
        "x.astype(jnp.bfloat16)",
        "x.astype(jnp.complex64)",
        "jnp.ones((1,) * 8)",
    ],
    ["None", "'text'", "[x, 1]", "undefined_argument", "*[x]", "**{'n': 2}", "raises(x)", "f", "()"],
)
KEYWORDS = ["n", "scale", "k", "x", "bogus"]
JUNK = st.text(alphabet="fx(),=*' \"[]{}:#-+.0123456789lambd", max_size=24)


def pick(draw, pools: tuple[list, list], bad_one_in: int = 4):
    good, bad = pools
    # hypothesis favours small integers: the good pool is the small end
    return draw(st.sampled_from(bad if draw(st.integers(1, bad_one_in)) == bad_one_in else good))


@st.composite
def call_expressions(draw) -> str:
    if draw(st.integers(0, 14)) == 0:  # now and then, text that is mostly not Python
        return draw(JUNK)
    callee = pick(draw, CALLEES)
    positional = [pick(draw, ARGUMENTS, 6) for _ in range(draw(st.integers(0, 2)))]
    keywords = [f"{draw(st.sampled_from(KEYWORDS))}={pick(draw, ARGUMENTS, 6)}" for _ in range(draw(st.integers(0, 1)))]
    return f"{callee}({', '.join(positional + keywords)})"


STATIC = (
    ["n", "1", "scale", "k", "n,k"],
    ["x", "0", "args", "n,n", "1,n", "0,1", "a b", "-1", "99", "", "n,", ",", "é"],
)


def options(draw, table: tuple[list, list]) -> str:
    """Some of the magic's options (and some that are not), each with a value when it takes one:
    ``(flag, values)``, values a list of the two pools, ``None`` for a flag, ``()`` to leave it out."""
    words = []
    for _ in range(draw(st.integers(0, 3))):
        flag, values = pick(draw, table)
        words.append(flag)
        if values:
            value = pick(draw, values)
            words.append(f"'{value}'" if (" " in value or not value) else value)
    return " ".join(words)


JAXPR_OPTIONS = (
    [
        ("-s", STATIC),
        ("--static", STATIC),
        ("-t", (["grad", "vmap", "value_and_grad", "jacfwd", "jacrev"], ["hessian", ""])),
        ("--stage", (["jaxpr", "stablehlo", "hlo"], ["llvm"])),
        ("--cost", None),
        ("--no-source", None),
        ("--max-eqns", (["1", "3", "400"], ["0", "-3", "many", "99999999999999999999"])),
        ("--plain", None),
        ("--tb", None),
        ("-o", None),
    ],
    [("--bogus", None), ("-", None), ("--", None), ("-s", ()), ("-t", ()), ("--max-eqns", ()), ("'unclosed", None)],
)
JITCOMPARE_OPTIONS = (
    [
        (
            "--modes",
            (["eager", "jit", "eager,jit", "jit,eager", "all"], ["sharded", "pmap", "turbo", "", ",", "eager,,jit"]),
        ),
        ("-n", (["1", "2"], ["0", "-1", "x", "1.5", ""])),
        ("-r", (["1", "2"], ["0", "-5", "r"])),
        ("--budget", (["0.02", "0.05", "inf"], ["0", "-1", "nan", "soon"])),
        ("-s", STATIC),
        ("--rtol", (["0", "1e-3"], ["-1", "nan", "x"])),
        ("--atol", (["0", "1e9", "inf"], ["-inf"])),
        ("--plain", None),
        ("--tb", None),
        ("-q", None),
        ("-o", None),
    ],
    [("--bogus", None), ("-n", ()), ("--budget", ()), ("--split", (["x"], ["n", "bogus", ""])), ('"unclosed', None)],
)
# Every %jitcompare example starts from one timed call per mode in a tiny budget; the drawn options
# may override these (argparse keeps the last), with values that stay just as small.
JITCOMPARE_QUICK = "-n 1 -r 1 --budget 0.02"


@st.composite
def jaxpr_lines(draw) -> str:
    return f"%jaxpr {options(draw, JAXPR_OPTIONS)} {draw(call_expressions())}"


@st.composite
def jitcompare_lines(draw) -> str:
    return f"%jitcompare {JITCOMPARE_QUICK} {options(draw, JITCOMPARE_OPTIONS)} {draw(call_expressions())}"


RECOMPILES_COMMANDS = (["on", "off", "clear", "show", ""], ["sometimes", "1bad", "-1", "'two words'"])
RECOMPILES_WORDS = (
    ["f", "jitted", "Scale.__call__", "--all", "--max 0", "--max 2", "--plain", "-o", "--tb"],
    ["step", "1bad", "a.b", "--max", "-1", "--max -1", "--bogus", "-", "on", "'two words'", "'unclosed"],
)


@st.composite
def recompiles_lines(draw) -> str:
    words = [pick(draw, RECOMPILES_COMMANDS)] + [pick(draw, RECOMPILES_WORDS) for _ in range(draw(st.integers(0, 3)))]
    return "%recompiles " + " ".join(words)


BODY = (
    [
        "jitted(x)",
        "jitted(x, n=2)",
        "jitted(jnp.ones(4))",
        "y = 1",
        "f(x, 2)",
        "jitted(x);",
        "len(x)",
        "for i in range(2): jitted(jnp.ones(i + 1))",
        "def h(a):\n    return a",
        "h(x)",
        "# a comment",
        "print('<b>printed</b>')",
    ],
    ["raises(x)", "undefined_name", "f(x", "", "jax.jit(branchy)(x)", "    indented(x)"],
)
CELL_DEFINES = {"y", "i", "h"}


@st.composite
def cells(draw) -> str:
    magic = draw(st.sampled_from(["%%recompiles", "%%jaxpr", "%%jitcompare"]))
    if magic == "%%recompiles":
        head = " ".join(pick(draw, RECOMPILES_WORDS) for _ in range(draw(st.integers(0, 3))))
    elif magic == "%%jaxpr":
        head = options(draw, JAXPR_OPTIONS)
    else:
        head = f"{JITCOMPARE_QUICK} {options(draw, JITCOMPARE_OPTIONS)}"
    body = [pick(draw, BODY, 5) for _ in range(draw(st.integers(0, 4)))]
    if magic != "%%recompiles" and draw(st.booleans()):
        body.append(draw(call_expressions()))
    return f"{magic} {head}\n" + "\n".join(body)


@st.composite
def jaxmagic_lines(draw) -> str:
    words = [pick(draw, (["doctor"], ["help", "-h", "nope", "--x", "", "'unclosed"]))]
    words += [
        pick(draw, (["on", "off", "status", "last"], ["doctor", "nope", "--x"])) for _ in range(draw(st.integers(0, 2)))
    ]
    return "%jaxmagic " + " ".join(words)


# -- the runs ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def namespace(ip):
    with defined_in_session(ip, SETUP, SETUP_NAMES):
        yield


EXPLAIN = ("jax_explain_cache_misses",)  # on while a %recompiles watch runs, by design


def check_clean(ip, run, source: str, *, defines: set[str] = frozenset(), after: str | None = None) -> None:
    before = Snapshot(ip)
    try:
        result = run(source)
        assert_clean(result)
        if after is not None:
            run(after)
        before.assert_kept(defined=before.new_names() & set(defines), ignore_config=() if after else EXPLAIN)
    finally:
        before.forget_new_names()


@settings(FUZZ, max_examples=EXAMPLES["jaxpr"])
@given(line=jaxpr_lines())
def test_random_jaxpr_lines(ip, run, namespace, line):
    check_clean(ip, run, line)


@settings(FUZZ, max_examples=EXAMPLES["jitcompare"])
@given(line=jitcompare_lines())
def test_random_jitcompare_lines(ip, run, namespace, line):
    check_clean(ip, run, line)


@settings(FUZZ, max_examples=EXAMPLES["recompiles"])
@given(lines=st.lists(recompiles_lines(), min_size=1, max_size=3))
def test_random_recompiles_lines(ip, run, namespace, lines):
    # a session watch a line turns on is turned off again, so later examples start alike
    check_clean(ip, run, "\n".join(lines), after="%recompiles off")


@settings(FUZZ, max_examples=EXAMPLES["cells"])
@given(cell=cells())
def test_random_cells(ip, run, namespace, cell):
    check_clean(ip, run, cell, defines=CELL_DEFINES)


@settings(FUZZ, max_examples=EXAMPLES["jaxmagic"])
@given(line=jaxmagic_lines())
def test_random_jaxmagic_lines(ip, run, namespace, line):
    try:
        check_clean(ip, run, line)
    finally:
        run("%jaxmagic doctor on")  # the doctor is on by default; leave it so


def test_enough_examples_in_the_normal_run():
    assert sum(EXAMPLES.values()) >= 1000
