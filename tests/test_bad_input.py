"""Malformed and unusual invocations of every magic, table-driven: each gives a clean result, a
``UsageError`` that says what was expected, or the user's own error (with the doctor's note where it
knows the trap); never an internal traceback. Afterwards the namespace holds exactly what the cell
defined, and JAX's configuration is what it was."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Callable

import pytest
from conftest import assert_no_internals
from outcomes import LIMIT, OK, USAGE, USER, Snapshot, assert_clean, defined_in_session

QUICK = "-n 1 -r 1 --budget 0.1"  # %jitcompare: one call per mode, so the corpus stays fast
PLAIN = "plain cell"  # an ordinary cell: the user's own error, with the doctor's card under it

SETUP = """
import functools
import jax, jax.numpy as jnp, numpy as np
x = jnp.ones(3)
def f(x, n):
    return jnp.sum(jnp.sin(x) * n)
def gen(x):
    yield x
async def coro(x):
    return x
class Model:
    pass
number = 3
def raises(x):
    raise ValueError("raised by the user's own code")
def returns_none(x):
    return None
def returns_str(x):
    return "a string"
def returns_tree(x):
    return {"a": [x, (x * 2, {"b": x})], "c": None}
def returns_object(x):
    return object()
def kwonly(x, *, scale):
    return x * scale
def varargs(*args, **kwargs):
    return sum(args) + sum(kwargs.values())
def posonly(x, n, /):
    return x * n
jitted_static = jax.jit(lambda x, n: x * n, static_argnums=(1,))
@jax.jit
def jitted(x):
    return x * 2
def branchy(x):
    if x.sum() > 0:
        return x
    return -x
"""
SETUP_NAMES = {
    "functools",
    "jax",
    "jnp",
    "np",
    "x",
    "f",
    "gen",
    "coro",
    "Model",
    "number",
    "raises",
    "returns_none",
    "returns_str",
    "returns_tree",
    "returns_object",
    "kwonly",
    "varargs",
    "posonly",
    "jitted_static",
    "jitted",
    "branchy",
}

X64_ON = ('jax.config.update("jax_enable_x64", True)', 'jax.config.update("jax_enable_x64", False)')
JIT_OFF = ('jax.config.update("jax_disable_jit", True)', 'jax.config.update("jax_disable_jit", False)')


@dataclass(frozen=True)
class Case:
    """One invocation: what the cell is, what must come of it, and what it shows."""

    cell: str
    expect: str  # OK, USAGE, USER or LIMIT
    says: tuple[str, ...] = ()  # in the UsageError's message, or in what the cell showed
    defines: frozenset = frozenset()
    around: tuple[str, str] | None = None  # a setting made before the cell and undone after it
    check: Callable | None = field(default=None, compare=False)  # more about the result

    def __str__(self) -> str:
        return self.cell.replace("\n", "⏎")[:70]


def _html_has(*fragments):
    return lambda result: all(f in result.html for f in fragments)


def _report(**expected):
    return lambda result: all(getattr(result.result, k) == v for k, v in expected.items())


CASES = [
    # -- empty lines and cells, only comments ----------------------------------------------------
    Case("%jaxpr", USAGE, ("needs a call expression", "Example: %jaxpr f(x, 3)")),
    Case("%jaxpr   # only a comment", USAGE, ("needs a call expression",)),
    Case("%%jaxpr\n# only a comment\n", USAGE, ("cell is empty",)),
    Case("%%jaxpr\n   \n\n", USAGE, ("cell is empty",)),  # blank lines only
    Case("%%jaxpr", USAGE, ("cell body is empty",)),  # IPython's own words
    Case("%jitcompare", USAGE, ("needs a call expression", "Example: %jitcompare f(x, 3)")),
    Case("%%jitcompare\n# only a comment", USAGE, ("cell is empty",)),
    Case("%%recompiles\n", USAGE, ("cell body is empty",)),
    Case("%%recompiles\n# only a comment", OK, ("no compilations",)),
    Case("%jaxmagic", OK, ("%jaxmagic doctor",)),
    # -- syntax errors ---------------------------------------------------------------------------
    Case("%jaxpr f(x,", USAGE, ("not valid Python",)),
    Case("%%jaxpr\ndef g(a)\n    return a\ng(x)", USAGE, ("not valid Python", "line 2")),
    Case(f"%jitcompare {QUICK} f(x, 'unclosed)", USAGE, ("not valid Python",)),
    Case("%%recompiles\nfor n in (1, 2)\n    jitted(x)", USAGE, ("not valid Python", "line 2")),
    Case("%jaxpr x + 1", USAGE, ("works on a call expression", "not `x + 1`")),
    Case("%%jaxpr\ny = f(x, 2)", USAGE, ("last statement must be a call expression",)),
    # -- unknown options, options without values ---------------------------------------------------
    Case("%jaxpr --bogus f(x, 2)", USAGE, ("unrecognized arguments: --bogus",)),
    Case("%jaxpr -t", USAGE, ("expected one argument",)),
    Case("%jaxpr --stage llvm f(x, 2)", USAGE, ("invalid choice: 'llvm'",)),
    Case(f"%jitcompare --turbo {QUICK} f(x, 2)", USAGE, ("unrecognized arguments: --turbo",)),
    Case("%jitcompare -n f(x, 2)", USAGE, ("argument -n: expected one argument",)),
    Case("%jitcompare --budget", USAGE, ("expected one argument",)),
    Case("%jitcompare -r 0 f(x, 2)", USAGE, ("-r must be a positive number",)),
    Case("%jitcompare --modes eager,turbo f(x, 2)", USAGE, ("unknown mode `turbo`",)),
    Case("%recompiles --bogus", USAGE, ("unrecognized arguments: --bogus", "Accepted:")),
    Case("%recompiles on --max", USAGE, ("expected one argument",)),
    Case("%recompiles on --max -1", USAGE, ("non-negative whole number",)),
    Case("%recompiles sometimes", USAGE, ("unknown sub-command `sometimes`",)),
    Case("%recompiles off now", USAGE, ("takes no further arguments",)),
    Case("%recompiles on 1bad", USAGE, ("not a function name",)),
    Case("%recompiles on 'unclosed", USAGE, ("No closing quotation",)),
    Case('%%recompiles "unclosed\njitted(x)', USAGE, ("No closing quotation",)),
    Case("%jaxpr -s 'n f(x, 2)", USAGE, ("No closing quotation",)),
    Case("%jaxmagic doctor sometimes", USAGE, ("takes one of: on, off, status, last",)),
    Case("%jaxmagic nope", USAGE, ("has no command `nope`",)),
    # -- calls to undefined names, non-callables, generators, async functions, classes ------------
    Case("%jaxpr undefined_function(x)", USAGE, ("name 'undefined_function' is not defined",)),
    Case("%jaxpr f(undefined_argument, 2)", USAGE, ("name 'undefined_argument' is not defined",)),
    Case(f"%jitcompare {QUICK} undefined_function(x)", USAGE, ("is not defined",)),
    Case("%%recompiles undefined_function\njitted(x)", USAGE, ("no function `undefined_function`",)),
    Case("%jaxpr number(x)", USAGE, ("`number` is a int, not a function",)),
    Case("%jaxpr x()", USAGE, ("not a function",)),
    Case("%jaxpr gen(x)", USAGE, ("generator function",)),
    Case(f"%jitcompare {QUICK} gen(x)", USAGE, ("generator function",)),
    Case("%jaxpr coro(x)", USAGE, ("async function",)),
    Case(f"%jitcompare {QUICK} coro(x)", USAGE, ("async function",)),
    Case("%jaxpr Model()", USAGE, ("is a class",)),
    Case(f"%jitcompare {QUICK} Model()", USAGE, ("is a class",)),
    # -- builtins ----------------------------------------------------------------------------------
    Case("%jaxpr len(x)", OK, ("0 equations",)),
    Case(f"%jitcompare -o {QUICK} len(x)", OK, check=_report(name="len(x)")),
    Case("%%recompiles\nlen(x)", OK, ("no compilations",), check=lambda r: r.result == 3),
    # -- functions that raise -----------------------------------------------------------------------
    Case("%jaxpr raises(x)", USER, ("raised by the user's own code", "raised while tracing raises")),
    Case(f"%jitcompare {QUICK} raises(x)", USER, ("raised by the user's own code", "in eager mode")),
    Case("%%recompiles\nraises(x)", USER, ("raised by the user's own code",)),
    Case(
        "%%jitcompare -n 1 -r 2 --budget 5\nstate = [0]\ndef flaky(a):\n    state[0] += 1\n    if state[0] >= 3:\n"
        "        raise ValueError('a later call failed')\n    return a * 2\nflaky(x)",
        USER,
        ("a later call failed", "its first calls had run without error"),
        defines=frozenset({"state", "flaky"}),
    ),
    Case("%%jaxpr\nkept = 1\nraises(x)", USER, ("raised by the user's own code",), defines=frozenset({"kept"})),
    Case(
        "%%recompiles\nkept = jitted(x)\nraise RuntimeError('after the call')",
        USER,
        ("after the call",),
        defines=frozenset({"kept"}),
    ),
    Case(
        "%jaxpr branchy(x)",
        USER,
        ("add --tb for the full traceback",),
        check=_html_has('data-pitfall="python-control-flow"'),
    ),
    Case(
        "jax.jit(branchy)(x)",
        PLAIN,
        ("TracerBoolConversionError",),
        check=_html_has('data-pitfall="python-control-flow"'),
    ),
    # -- what functions return: None, strings, nested pytrees, non-JAX objects -----------------------
    Case("%jaxpr -o returns_none(x)", OK, check=_report(out_types=[])),
    Case(f"%jitcompare {QUICK} returns_none(x)", OK),
    Case("%jaxpr returns_str(x)", USER, ("not a valid JAX type",)),
    Case(
        f"%jitcompare {QUICK} returns_str(x)", USER, ("not a valid JAX type", "in jit mode", "without error in eager")
    ),
    Case("%jaxpr -o returns_tree(x)", OK, check=_report(out_types=["f32[3]"] * 3)),
    Case(f"%jitcompare {QUICK} returns_tree(x)", OK),
    Case("%jaxpr returns_object(x)", USER, ("not a valid JAX type",)),
    Case("%jaxpr -t grad returns_tree(x)", USAGE, ("does not apply", "scalar")),
    # -- zero-size and huge-rank arrays -------------------------------------------------------------
    Case("%jaxpr -o jnp.sum(jnp.zeros((0, 3)))", OK, check=_report(in_types=["f32[0,3]"])),
    Case(f"%jitcompare {QUICK} jnp.sum(jnp.zeros((0, 3)))", OK),
    Case("%%recompiles\njitted(jnp.zeros((0, 3)))\njitted(jnp.zeros((0, 4)));", OK, ("shape of `x` changed",)),
    Case("%jaxpr -o jnp.sum(jnp.ones((1,) * 32))", OK, check=_report(in_types=["f32[" + ",".join(["1"] * 32) + "]"])),
    Case(f"%jitcompare {QUICK} jnp.sum(jnp.ones((1,) * 32))", OK),
    # -- dtypes: float64 without and with x64, complex, integer, bfloat16 ---------------------------
    Case("%jaxpr -o jnp.sin(np.ones(3))", OK, check=_report(in_types=["f32[3]"])),
    Case("%jaxpr -o jnp.sin(np.ones(3))", OK, around=X64_ON, check=_report(in_types=["f64[3]"])),
    Case(f"%jitcompare {QUICK} jnp.sin(np.ones(3))", OK, around=X64_ON),
    Case(
        "%%recompiles\nplus = jax.jit(lambda a: a + 1)\nplus(np.ones(3))\nplus(np.ones(3, dtype=np.float32));",
        OK,
        ("dtype of `a` changed", "f64 → f32"),
        defines=frozenset({"plus"}),
        around=X64_ON,
    ),
    Case("%jaxpr -o jnp.abs(x.astype(jnp.complex64))", OK, check=_report(in_types=["c64[3]"])),
    Case(f"%jitcompare {QUICK} jnp.sin(x.astype(jnp.complex64))", OK),
    Case("%jaxpr -o jnp.cumsum(jnp.arange(5))", OK, check=_report(in_types=["i32[5]"])),
    Case("%jaxpr -t grad f(jnp.arange(3), 2)", USAGE, ("does not apply", "float")),
    Case("%jaxpr -o jnp.sin(x.astype(jnp.bfloat16))", OK, check=_report(in_types=["bf16[3]"])),
    Case(f"%jitcompare {QUICK} jnp.sin(x.astype(jnp.bfloat16))", OK),
    # -- keyword-only, *args / **kwargs, positional-only -------------------------------------------
    Case("%jaxpr kwonly(x, scale=2.0)", OK),
    Case("%jaxpr -s scale kwonly(x, scale=2.0)", OK),
    Case(f"%jitcompare {QUICK} -s scale kwonly(x, scale=2.0)", OK),
    Case("%jaxpr kwonly(x, 2.0)", USER, ("takes 1 positional argument",)),
    Case("%jaxpr varargs(x, x, k=x)", OK),
    Case("%jaxpr -s 1,k varargs(x, 2, k=3)", OK),
    Case("%jaxpr -s args varargs(x, 2)", USAGE, ("`*args` collects several arguments",)),
    Case("%jaxpr -s kwargs varargs(x, k=2)", USAGE, ("`**kwargs` collects several arguments",)),
    Case("%jaxpr -s n posonly(x, 2)", OK),
    Case("%jaxpr -s x jnp.sin(x)", USAGE, ("`x` is static", "cannot be hashed")),
    # -- static arguments given twice, or unhashable -------------------------------------------------
    Case("%jaxpr -s n,n f(x, 2)", USAGE, ("names `n` twice",)),
    Case("%jaxpr -s n -s n f(x, 2)", USAGE, ("names `n` twice",)),
    Case("%jaxpr -o -s 1 -s k varargs(x, 2, k=3)", OK, check=_report(in_types=["f32[3]"])),  # -s given twice: both
    Case("%jaxpr -s 1,n f(x, 2)", USAGE, ("names parameter `n` twice",)),
    Case(f"%jitcompare {QUICK} -s 1,1 f(x, 2)", USAGE, ("names argument 1 twice",)),
    Case("%jaxpr f(x, n=1, n=2)", USAGE, ("keyword argument", "twice")),
    Case("%jaxpr -s 1 jitted_static(x, 2)", OK),  # static by jax.jit and by -s: the same parameter, once
    Case("%jaxpr -s n f(x, [1, 2])", USAGE, ("`n` is static", "is a list, which cannot be hashed")),
    Case(f"%jitcompare {QUICK} -s n f(x, {{'a': 1}})", USAGE, ("is a dict, which cannot be hashed",)),
    Case("%jaxpr jitted_static(x, jnp.ones(2))", USAGE, ("`n` is static", "is an array")),
    # -- strings where jax.jit traces arrays ---------------------------------------------------------
    Case("%jaxpr f(x, 'a string')", USAGE, ("`n` is the string 'a string'", "-s n")),
    Case(f"%jitcompare {QUICK} f(x, n='abc')", USAGE, ("`n` is the string 'abc'",)),
    Case("%jaxpr f(x, {'label': 'abc'})", USAGE, ("`n` holds the string 'abc'",)),
    Case("%jaxpr -s n f(x, 'abc')", USER, ("Only integer scalar arrays",)),  # static now: f itself fails
    # -- jax.disable_jit() active globally ---------------------------------------------------------
    Case("%jaxpr f(x, 2)", OK, ("sin",), around=JIT_OFF),
    Case(
        f"%jitcompare -o {QUICK} f(x, 2)",
        OK,
        around=JIT_OFF,
        check=lambda r: r.result.compile.compile_s > 0 and any("jax_disable_jit is on" in n for n in r.result.notes),
    ),
    Case("%%recompiles\njitted(x)", OK, ("no compilations",), around=JIT_OFF),
]


@pytest.fixture(scope="module")
def namespace(ip):
    with defined_in_session(ip, SETUP, SETUP_NAMES):
        yield


def test_the_corpus_is_large_and_covers_every_magic():
    assert len(CASES) >= 40
    magics = {case.cell.split()[0] for case in CASES if case.cell.startswith("%")}
    assert magics == {"%jaxpr", "%%jaxpr", "%jitcompare", "%%jitcompare", "%recompiles", "%%recompiles", "%jaxmagic"}
    assert {case.expect for case in CASES} == {OK, USAGE, USER, PLAIN}


@pytest.mark.parametrize("case", CASES, ids=str)
def test_bad_or_unusual_input_has_a_clean_outcome(ip, run, namespace, case):
    if case.around:
        run(case.around[0]).assert_ok()
    try:
        before = Snapshot(ip)
        result = run(case.cell)
        if case.expect == PLAIN:
            assert result.error is not None and case.says[0] in type(result.error).__name__
            assert_no_internals(result)
            kind, says = case.expect, case.says[1:]
        else:
            kind = assert_clean(result)
            says = case.says
        assert kind == case.expect, f"expected {case.expect}, got {kind}: {result.error!r}\n{result.stdout}"
        shown = result.usage_error if kind == USAGE else result.shown_traceback + result.text
        for words in says:
            assert words in shown, f"{words!r} not in:\n{shown}"
        if case.check is not None:
            assert case.check(result), f"check failed for {case.cell!r}: {result.result!r}"
        before.assert_kept(defined=case.defines)
    finally:
        if case.around:
            run(case.around[1]).assert_ok()


def test_usage_errors_reach_the_user_as_one_message_without_a_traceback(run, namespace):
    result = run("%jaxpr -s q f(x, 2)")
    assert result.usage_error is not None
    assert "Traceback" not in result.shown_traceback
    assert "no parameter named `q`" in result.usage_error


def test_limit_outcome_is_the_recompile_limit_with_its_causes(run, namespace):
    result = run("%%recompiles --max 0\njax.jit(lambda a: a * 2)(x)")
    assert assert_clean(result) == LIMIT
    assert "the limit is 0 times (--max 0)" in str(result.error)


# ------------------------------------------------------------------------------------------------
# Several devices: sharded and pmap modes meet the same input, in a process with eight CPU devices

DEVICE_CASES = [
    ("%jitcompare --modes all -n 1 -r 1 --budget 0.5 jnp.sum(jnp.zeros((0, 3)))", OK),
    ("%jitcompare --modes all -n 1 -r 1 --budget 0.5 f(jnp.ones(8).astype(jnp.bfloat16), 2)", OK),
    ("%jitcompare --modes all -n 1 -r 1 --budget 0.5 f(jnp.ones((8,) + (1,) * 30), 2)", OK),
    ("%jitcompare --modes all -n 1 -r 1 --budget 0.5 returns_tree(jnp.ones(8))", OK),
    ("%jitcompare --modes all -n 1 -r 1 --budget 0.5 kwonly(jnp.ones(8), scale=jnp.ones(8))", OK),
    ("%jitcompare --modes all -n 1 -r 1 --budget 0.5 jnp.cumsum(jnp.arange(8))", OK),
    ("%jitcompare --modes all -n 1 -r 1 --budget 0.5 f(2.0, 3)", USAGE),
    ("%jitcompare --modes pmap -n 1 -r 1 --budget 0.5 jnp.sin(jnp.ones(7))", USAGE),
    ("%jitcompare --modes sharded --split n -n 1 -r 1 --budget 0.5 f(jnp.ones(8), 2)", USAGE),
    ("%jitcompare --modes all -n 1 -r 1 --budget 0.5 raises(jnp.ones(8))", USER),
]

DEVICE_SCRIPT = r"""
import json, os, sys
sys.path.insert(0, os.environ["JAXMAGIC_TESTS"])
import jax
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from conftest import CellResult, strip_ansi
from outcomes import Snapshot, assert_clean

shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "jaxmagic")
shell.run_cell(os.environ["JAXMAGIC_SETUP"])
found = []
for cell in json.loads(os.environ["JAXMAGIC_CELLS"]):
    before = Snapshot(shell)
    with capture_output() as captured:
        outcome = shell.run_cell(cell, store_history=True)
    result = CellResult(error=outcome.error_in_exec or outcome.error_before_exec, stdout=strip_ansi(captured.stdout),
                        stderr=strip_ansi(captured.stderr), outputs=[o.data for o in captured.outputs])
    try:
        kind = assert_clean(result)
        before.assert_kept()
    except AssertionError as exc:
        kind = f"unclean: {exc}"
    found.append(kind)
print(json.dumps({"devices": jax.device_count(), "found": found}))
"""


@pytest.mark.slow
def test_bad_or_unusual_input_with_eight_devices():
    env = dict(
        os.environ,
        JAX_PLATFORMS="cpu",
        XLA_FLAGS="--xla_force_host_platform_device_count=8",
        JAXMAGIC_TESTS=str(pathlib.Path(__file__).parent),
        JAXMAGIC_SETUP=SETUP,
        JAXMAGIC_CELLS=json.dumps([cell for cell, _ in DEVICE_CASES]),
    )
    out = subprocess.run([sys.executable, "-c", DEVICE_SCRIPT], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["devices"] == 8
    assert dict(zip((c for c, _ in DEVICE_CASES), result["found"], strict=True)) == dict(DEVICE_CASES)
