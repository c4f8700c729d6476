"""``%jaxpr --values``: what each equation computed on the call's own arguments, and which one first
made a NaN or an inf. Truth from JAX itself: the function's own result, and the primitive that
``jax_debug_nans`` / ``jax_debug_infs`` stop at."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmagic.tracing.call import Call
from jaxmagic.tracing.stages import trace

CORPUS = """
def mlp(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return jax.nn.log_softmax(h @ params["w2"])

def branchy(x, y):
    return jax.lax.cond(y > 0, lambda a: jnp.sin(a) * y, lambda a: a - 1, x)

def looped(x):
    def step(c, r):
        return c * 0.5 + r, c.sum()
    c, ys = jax.lax.scan(step, jnp.zeros(x.shape[1]), x)
    n = jax.lax.while_loop(lambda v: v[0] < 5, lambda v: (v[0] + 1, v[1] * 1.1), (0, c))
    return ys, n[1]

inner = jax.jit(lambda a: jnp.cumsum(a) ** 2)

def nested(x):
    return jax.nn.relu(inner(x) - 3.0) + jax.checkpoint(jnp.cos)(x)

def loss(w, x):
    return jnp.mean((jnp.tanh(x @ w) - 0.5) ** 2)

params = {"w1": jnp.linspace(-1, 1, 48).reshape(6, 8), "b1": jnp.ones(8), "w2": jnp.ones((8, 3))}
x6 = jnp.linspace(-2, 2, 24).reshape(4, 6)
"""

CALLS = [
    ("mlp(params, x6)", "mlp", ("params", "x6"), ()),
    ("branchy(x6, 2.0)", "branchy", ("x6", 2.0), ()),
    ("branchy(x6, -1.0)", "branchy", ("x6", -1.0), ()),
    ("looped(x6)", "looped", ("x6",), ()),
    ("nested(x6[0])", "nested", ("x6[0]",), ()),
    ("-t grad loss(params['w1'], x6)", "loss", ("params['w1']", "x6"), ("grad",)),
    ("-t value_and_grad loss(params['w1'], x6)", "loss", ("params['w1']", "x6"), ("value_and_grad",)),
]


@pytest.fixture
def corpus(run):
    run(CORPUS).assert_ok()


def _arguments(ip, names):
    return [eval(n, ip.user_ns) if isinstance(n, str) else n for n in names]


@pytest.mark.parametrize("line,fn,args,transforms", CALLS, ids=[c[0] for c in CALLS])
def test_the_last_values_are_the_function_s_own_result(ip, run, corpus, line, fn, args, transforms):
    shown = run(f"%jaxpr --values -o {line}").assert_ok()
    report = shown.result
    function = ip.user_ns[fn]
    for t in reversed(transforms):
        function = getattr(jax, t)(function)
    expected = jax.tree_util.tree_leaves(function(*_arguments(ip, args)))
    got = report.value_run.outputs
    assert len(got) == len(expected)
    for mine, theirs in zip(got, expected, strict=True):
        np.testing.assert_allclose(np.asarray(mine), np.asarray(theirs), rtol=1e-5, atol=1e-6)
    # the listing shows, beside the equation that makes each output, that output's value
    outputs = report.jaxpr.jaxpr.outvars
    top = {v.path[0]: v for v in report.values if len(v.path) == 1}
    for var, value in zip(outputs, got, strict=True):
        maker = next((i for i, e in enumerate(report.jaxpr.jaxpr.eqns) if var in e.outvars), None)
        if maker is None:
            continue  # an input or a constant handed straight back
        summary = top[maker].outputs[report.jaxpr.jaxpr.eqns[maker].outvars.index(var)]
        if summary.value is not None:
            np.testing.assert_allclose(summary.value, np.asarray(value), rtol=1e-6)
        else:
            assert summary.minimum == pytest.approx(float(np.min(value)), rel=1e-6)
            assert summary.maximum == pytest.approx(float(np.max(value)), rel=1e-6)
    assert report.first_nonfinite is None
    assert "every value is finite" in report.to_text() and "⇒" in report.to_text() and "jm-value" in report.to_html()


def test_a_cond_shows_the_branch_it_took(run, corpus):
    taken = run("%jaxpr --values -o branchy(x6, 2.0)").assert_ok().result
    other = run("%jaxpr --values -o branchy(x6, -1.0)").assert_ok().result
    assert {p for v in taken.values for p in v.path if isinstance(p, str)} == {"branches[1]"}
    assert {p for v in other.values for p in v.path if isinstance(p, str)} == {"branches[0]"}


NAN_CASES = """
def logs(x):
    y = x * 2
    z = jnp.log(y)
    return jnp.sum(z)

def roots(x):
    y = jnp.sqrt(x - 1.0)
    return y * 2

def ratio(x):
    return (x - x) / (x - x)

def inf_then_nan(x):
    big = 1.0 / (x - x)
    return big - big

def norm_grad(x):
    return jnp.sqrt(jnp.sum(x ** 2))

xs = jnp.array([1.0, -1.0, 3.0, 0.5])
zeros = jnp.zeros(3)
"""

NAN_CALLS = [
    ("logs(xs)", "logs", ("xs",), (), "log", 4),
    ("roots(xs)", "roots", ("xs",), (), "sqrt", 8),
    ("ratio(xs)", "ratio", ("xs",), (), "div", 14),
    ("inf_then_nan(xs)", "inf_then_nan", ("xs",), (), "sub", 18),
    ("-t grad norm_grad(zeros)", "norm_grad", ("zeros",), ("grad",), None, 22),
]


def _debug_nans_primitive(function, args, flag) -> str:
    """The primitive JAX's own jax_debug_nans (or _infs) stops at, from its FloatingPointError; run
    eagerly, so that JAX checks every primitive's output (under jit, it checks the program's
    outputs and only then runs it again op by op)."""
    with flag(True):
        try:
            jax.block_until_ready(function(*args))
        except FloatingPointError as exc:
            found = re.search(r"encountered in (\w+)", str(exc))
            return found.group(1) if found else str(exc)
    return ""


@pytest.mark.parametrize("line,fn,args,transforms,primitive,line_number", NAN_CALLS, ids=[c[0] for c in NAN_CALLS])
def test_the_first_nan_is_the_one_jax_debug_nans_reports(ip, run, line, fn, args, transforms, primitive, line_number):
    run(NAN_CASES).assert_ok()
    nans_before, infs_before = jax.config.jax_debug_nans, jax.config.jax_debug_infs
    shown = run(f"%jaxpr --values -o {line}").assert_ok()
    report = shown.result
    function = ip.user_ns[fn]
    for t in reversed(transforms):
        function = getattr(jax, t)(function)
    arguments = _arguments(ip, args)
    assert report.value_run.first_nan is not None
    assert report.value_run.first_nan.primitive == _debug_nans_primitive(function, arguments, jax.debug_nans)
    if primitive is not None:
        assert report.value_run.first_nan.primitive == primitive
    first = report.first_nonfinite
    kind = "NaN" if first.made_nan else "inf"
    if kind == "inf":
        assert first.primitive == _debug_nans_primitive(function, arguments, jax.debug_infs)
    assert first.source is not None and first.source.text
    text = report.to_text()
    assert f"the first {kind} comes from" in text.splitlines()[1]  # under the summary
    assert first.source.text in text.splitlines()[1] and "◀ first NaN/inf" in text
    assert "jm-nonfinite" in report.to_html()
    assert (jax.config.jax_debug_nans, jax.config.jax_debug_infs) == (nans_before, infs_before)


def test_the_log_of_a_negative_value_is_explained_by_its_operand_s_range(run):
    run(NAN_CASES).assert_ok()
    shown = run("%jaxpr --values logs(xs)").assert_ok()
    assert "log of a value ≤ 0 (its input runs from -2 to 6)" in shown.text
    assert "z = jnp.log(y)" in shown.text.strip().splitlines()[1]


def test_large_values_are_summarised_and_the_listing_stays_bounded(run):
    run(
        "def long(x):\n    for _ in range(300):\n        x = jnp.sin(x) + 0.1\n    return x\nbig = jnp.ones((500, 500))"
    ).assert_ok()
    shown = run("%jaxpr --values --max-eqns 50 long(big)").assert_ok()
    assert len(shown.text) < 20_000 and len(shown.html) < 200_000
    assert "float32[500,500] min" in shown.text
    report = run("%jaxpr --values -o --max-eqns 50 long(big)").assert_ok().result
    assert len(report.values) == 600  # the report keeps them all
    assert all(s.value is None for v in report.values for s in v.outputs)


def test_small_values_are_shown_whole(run):
    run("def tiny(x):\n    return x * 2 + 1").assert_ok()
    shown = run("%jaxpr --values tiny(jnp.arange(3.0))").assert_ok()
    assert "⇒ [1 3 5]" in shown.text


def test_static_arguments_and_keyword_arguments_line_up(run):
    run("def scaled(x, n, *, shift):\n    return x * n + shift").assert_ok()
    report = run("%jaxpr --values -o -s n scaled(jnp.arange(3.0), 4, shift=jnp.float32(1))").assert_ok().result
    np.testing.assert_allclose(np.asarray(report.value_run.outputs[0]), [1.0, 5.0, 9.0])


def test_an_nnx_module_s_state_lines_up_and_stays_as_it_was(run):
    pytest.importorskip("flax")
    run(
        "from flax import nnx\nlayer = nnx.Linear(3, 2, rngs=nnx.Rngs(0))\n"
        "@nnx.jit\ndef apply(m, v):\n    return m(v).sum()\nbefore = [np.asarray(v) for v in jax.tree_util.tree_leaves(nnx.state(layer))]"
    ).assert_ok()
    report = run("%jaxpr --values -o apply(layer, jnp.ones((4, 3)))").assert_ok().result
    expected = run("apply(layer, jnp.ones((4, 3)))").assert_ok().result
    np.testing.assert_allclose(np.asarray(report.value_run.outputs[-1]), np.asarray(expected), rtol=1e-6)
    after = run("[np.asarray(v) for v in jax.tree_util.tree_leaves(nnx.state(layer))]").assert_ok().result
    for old, new in zip(run("before").assert_ok().result, after, strict=True):
        np.testing.assert_array_equal(old, new)


def test_the_engine_runs_without_a_shell():
    def f(x):
        return jnp.exp(x) / jnp.sum(jnp.exp(x))

    x = jnp.array([1000.0, 0.0])
    report = trace(Call(f, (x,), {}), show_values=True).prepare()
    assert report.first_nonfinite.primitive == "exp"
    assert report.first_nonfinite.outputs[0].infs == 1
    assert report.value_run.first_nan.primitive == "div"


def test_an_error_while_evaluating_is_the_user_s_own_without_our_frames(run):
    from tests.conftest import assert_no_internals

    run(
        "def check(v):\n    if v > 2:\n        raise ValueError('too big')\n"
        "def called_back(x):\n    y = x * 3\n    jax.debug.callback(check, y.sum())\n    return y"
    ).assert_ok()
    shown = run("%jaxpr --values called_back(jnp.ones(2))")
    assert shown.error is not None and "ValueError: too big" in str(shown.error)
    assert "raise ValueError('too big')" in shown.text
    assert_no_internals(shown)


def test_an_equation_with_many_outputs_shows_a_few(run):
    run("def many_outputs(x):\n    return tuple(x * i for i in range(10))").assert_ok()
    report = run("%jaxpr --values -o many_outputs(jnp.ones(2))").assert_ok().result
    split = run(
        "%jaxpr --values -o jax.lax.scan(lambda c, r: (c, tuple(r * i for i in range(9))), 0.0, jnp.ones((3, 2)))"
    )
    split.assert_ok()
    assert "… 5 more" in split.result.to_text()  # the loop returns 9 stacked values
    assert len(report.value_run.outputs) == 10


LIBRARY_CALLERS = """
import jax.numpy as jnp

def first(x):
    return jnp.linalg.norm(x)

def second(x):
    return jnp.linalg.norm(x) + 1
"""


def test_a_non_finite_value_inside_a_library_program_is_placed_on_this_calls_line(tmp_path, monkeypatch):
    """``jnp.linalg.norm`` is a jitted program JAX keeps from its first trace (``first``'s): the
    overflow inside it, reached from ``second``, is placed on ``second``'s line, as the listing
    shows the equation."""
    import importlib

    from jaxmagic.tracing.values import evaluate

    (tmp_path / "norm_callers.py").write_text(LIBRARY_CALLERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("norm_callers")
    jax.make_jaxpr(module.first)(jnp.ones(3))
    closed = jax.make_jaxpr(module.second)(jnp.ones(3))
    found = evaluate(closed, [jnp.full(3, 1e30, jnp.float32)]).first_nonfinite
    assert found is not None and found.primitive == "mul"  # x * x overflows inside the norm
    assert found.source is not None and found.source.label == "norm_callers.py:8"
