"""Code users write that the other corpora do not hold (JAX's custom derivatives, checkpoint
policies, scans whose body draws random numbers; written here in our own words), checked against
what JAX itself says: every equation is shown under the line JAX records for it."""

from __future__ import annotations

import collections
import logging
import re

import jax
import numpy as np
import pytest
from jax._src import source_info_util

from tests.conftest import assert_no_internals

SETUP = """
from functools import partial
from jax import lax

@jax.custom_jvp
def log1pexp(x):
    return jnp.log(1. + jnp.exp(x))

@log1pexp.defjvp
def log1pexp_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    ans = log1pexp(x)
    return ans, (1 - 1/(1 + jnp.exp(x))) * x_dot

def layer(w, x):
    return jnp.tanh(w @ x)

@partial(jax.checkpoint, policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable)
def block(w, x):
    return layer(w, layer(w, x))

def deep(w, x):
    return jnp.sum(block(w, block(w, x)))

def noisy_walk(key, x0, steps=5):
    def step(carry, i):
        x, key = carry
        key, sub = jax.random.split(key)
        x = x + 0.1 * jax.random.normal(sub, x.shape)
        return (x, key), x.mean()
    (x, _), means = lax.scan(step, (x0, key), jnp.arange(steps))
    return x, means

def cumulative_max(xs):
    def step(best, x):
        best = jnp.maximum(best, x)
        return best, best
    return lax.scan(step, xs[0], xs)

w4 = jnp.eye(4) * 0.5
x4 = jnp.arange(4.0)
walk_key = jax.random.key(0)
"""

CALLS = [
    "-t grad log1pexp(3.0)",
    "-t grad deep(w4, x4)",
    "noisy_walk(walk_key, x4)",
    "cumulative_max(x4)",
]

_CELL_LINE = re.compile(r"^In \[\d+\] line (\d+)$")


def _jax_lines(closed) -> collections.Counter:
    """Equations per line of a notebook cell, as JAX's own ``user_frame`` places them."""
    counts: collections.Counter = collections.Counter()
    pending = [closed.jaxpr]
    while pending:
        for eqn in pending.pop().eqns:
            frame = source_info_util.user_frame(eqn.source_info.traceback)
            if frame is not None and frame.file_name.startswith("<ipython-input-"):
                counts[frame.start_line] += 1
            for value in eqn.params.values():
                for inner in value if isinstance(value, (tuple, list)) else (value,):
                    inner = getattr(inner, "jaxpr", inner)  # a ClosedJaxpr's Jaxpr
                    if hasattr(inner, "eqns"):
                        pending.append(inner)
    return counts


@pytest.fixture(scope="module")
def fresh_defined(ip):
    result = ip.run_cell(SETUP)
    assert result.success, result.error_in_exec
    yield


@pytest.mark.parametrize("call", CALLS)
def test_every_line_jax_records_is_shown_with_its_equations(run, fresh_defined, call):
    report = run(f"%jaxpr -o {call}").assert_ok().result
    shown: collections.Counter = collections.Counter()
    for label, count in report.line_counts.items():
        match = _CELL_LINE.match(label)
        if match:
            shown[int(match[1])] += count
    truth = _jax_lines(report.jaxpr)
    assert truth, "JAX places equations on lines of the cell"
    # JAX's line for each equation is the one shown; jaxmagic adds to a line only the equations of
    # JAX's own helpers that line called (those JAX places on no line of the user's)
    missing = {line: (count, shown[line]) for line, count in truth.items() if shown[line] < count}
    assert missing == {}, f"line: (JAX's equations, shown) {missing}"


# ---------------------------------------------------------------- %%recompiles
# Each: what the cell needs, a cell that compiles a function twice, and the two calls as
# ``(function, arguments)`` for JAX to trace.
RECOMPILE_CELLS = {
    "static field of a registered dataclass": (
        """
@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Config:
    scale: jax.Array
    mode: str = dataclasses.field(metadata=dict(static=True))

def apply(cfg, x):
    return x * cfg.scale if cfg.mode == "mul" else x + cfg.scale
""",
        "jitted = jax.jit(apply)\njitted(Config(jnp.float32(2), 'mul'), jnp.ones(3))\njitted(Config(jnp.float32(2), 'add'), jnp.ones(3))",
        (
            ("apply", "(Config(jnp.float32(2), 'mul'), jnp.ones(3))"),
            ("apply", "(Config(jnp.float32(2), 'add'), jnp.ones(3))"),
        ),
    ),
    "partial binding another value": (
        "def scaled(x, a):\n    return x * a\n",
        "for a in (1.0, 2.0):\n    h = jax.jit(functools.partial(scaled, a=a))\n    h(jnp.ones(2))",
        (
            ("functools.partial(scaled, a=1.0)", "(jnp.ones(2),)"),
            ("functools.partial(scaled, a=2.0)", "(jnp.ones(2),)"),
        ),
    ),
    "batch length": (
        "def total(x):\n    return x.sum()\n",
        "jitted = jax.jit(total)\nfor n in (3, 5):\n    jitted(jnp.arange(n, dtype=jnp.float32))",
        (("total", "(jnp.arange(3.0),)"), ("total", "(jnp.arange(5.0),)")),
    ),
}

_TYPES = re.compile(r":[a-z]+[0-9]*\[[0-9,]*\]")


def _jax_program(ip, call: tuple[str, str]) -> str:
    """The program JAX traces for ``(function, arguments)``, as JAX prints it, types left out."""
    function, arguments = call
    return _TYPES.sub("", str(ip.ev(f"jax.make_jaxpr({function}){arguments}")))


@pytest.mark.parametrize("case", list(RECOMPILE_CELLS))
def test_the_same_program_is_said_only_of_the_same_program(ip, run, case):
    setup, cell, (first, second) = RECOMPILE_CELLS[case]
    run("import dataclasses, functools\n" + setup).assert_ok()
    shown = run("%%recompiles -o\n" + cell).assert_ok()
    (recompiled,) = [event for event in shown.result.events if event.is_recompile]
    same_for_jax = _jax_program(ip, first) == _jax_program(ip, second)
    said_same = (recompiled.program_diff or "").startswith("the same program")
    assert said_same == same_for_jax, (recompiled.program_diff, same_for_jax)


def test_a_partial_rebuilt_with_other_values_is_told_to_pass_them_not_to_build_it_once(run):
    run("import functools\ndef scaled_by(x, a):\n    return x * a\n").assert_ok()
    other = run(
        "%%recompiles -o\nfor a in (1.0, 2.0):\n    h = jax.jit(functools.partial(scaled_by, a=a))\n    h(jnp.ones(2))"
    ).assert_ok()
    (cause,) = [c for event in other.result.events if event.is_recompile for c in event.causes]
    # JAX compiled a program per value of `a`: a partial built once can hold only one of them
    assert "outside the loop" not in str(cause.advice)
    assert "`a`" in str(cause.advice) and "`scaled_by`" in str(cause.message)
    same = run(
        "%%recompiles -o\nfor a in (3.0, 3.0):\n    h = jax.jit(functools.partial(scaled_by, a=a))\n    h(jnp.ones(2))"
    ).assert_ok()
    (cause,) = same.result.events[-1].causes  # the second call: the same value bound again
    assert "outside the loop" in str(cause.advice)
    # the function is named as the user wrote it, inside the partial they built
    assert "functools.partial(scaled_by, ...)" in str(cause.advice) and "partial(partial(" not in same.text


# ---------------------------------------------------------------- the hint of an unrolled loop
LOOP_SETUP = """
import equinox as eqx
import optax

mlp = eqx.nn.MLP(3, 2, 16, 2, key=jax.random.key(1))
tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-2))
opt_state = tx.init(eqx.filter(mlp, eqx.is_array))

@eqx.filter_jit
def eqx_step(model, opt_state, x, y):
    loss, grads = eqx.filter_value_and_grad(lambda m: jnp.mean((jax.vmap(m)(x) - y) ** 2))(model)
    updates, opt_state = tx.update(grads, opt_state, eqx.filter(model, eqx.is_array))
    return eqx.apply_updates(model, updates), opt_state, loss

def smooth(x):
    for _ in range(80):
        x = jnp.tanh(x * 0.9 + 0.1)
    return x

ex, ey = jnp.ones((8, 3)), jnp.zeros((8, 2))
"""


def _lines_in_loops(source: str) -> set[int]:
    """The lines of ``source`` inside a Python loop or a comprehension, as Python's parser says."""
    import ast

    inside = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.For, ast.While)):
            inside |= set(range(node.body[0].lineno, node.end_lineno + 1))
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            inside |= set(range(node.lineno, node.end_lineno + 1))
    return inside


@pytest.mark.parametrize("call", ["eqx_step(mlp, opt_state, ex, ey)", "smooth(ex)"])
def test_a_python_loop_is_named_only_on_a_line_in_a_loop_of_the_user_s(ip, run, call):
    assert ip.run_cell(LOOP_SETUP).success
    shown = run(f"%jaxpr -o {call}").assert_ok()
    most = next(iter(shown.result.line_counts))
    line = int(_CELL_LINE.match(most)[1])
    in_loop = line in _lines_in_loops(LOOP_SETUP.lstrip("\n"))  # IPython drops leading blank lines
    assert sum(shown.result.line_counts.values()) >= 200 and shown.result.line_counts[most] * 2 >= sum(
        shown.result.line_counts.values()
    ), "one line made most of a large program"
    assert ("a Python loop there" in shown.text) == in_loop, (most, in_loop)


# ---------------------------------------------------------------- a transform that does not apply
@pytest.mark.parametrize(
    "transform,call,jax_call",
    [
        ("vmap", "branchy(v3, True)", "jax.vmap(branchy)(v3, True)"),
        ("grad", "pair(2.0)", "jax.grad(pair)(2.0)"),
        ("grad", "count(3)", "jax.grad(count)(3)"),
    ],
)
def test_a_transform_that_does_not_apply_is_said_with_an_example_of_that_transform(ip, run, transform, call, jax_call):
    run(
        "def branchy(x, flag):\n    return jax.lax.cond(flag, jnp.log, jnp.square, x)\n"
        "def pair(x):\n    return x, x * 2\n"
        "def count(n):\n    return n * 2.0\n"
        "v3 = jnp.array([1.0, 2.0, 0.0])"
    ).assert_ok()
    assert run(jax_call).error is not None, "JAX refuses this call"
    shown = run(f"%jaxpr -t {transform} {call}")
    assert shown.usage_error is not None and "Traceback" not in shown.text
    example = shown.usage_error.split("Example:", 1)[1]
    assert f"-t {transform}" in example


# ---------------------------------------------------------------- JAX's own logs, switched on by the user
class _JaxRecords(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record):
        if record.levelno >= logging.WARNING:  # what JAX shows the user with these options on
            self.messages.append(record.getMessage())


@pytest.mark.parametrize(
    "magic",
    ["%jaxpr f_logged(x)", "%jaxpr --stage hlo g_logged(x, n=3)", "%jitcompare --budget 0.3 f_logged(x)"],
)
def test_with_jax_s_compile_logs_on_the_magics_log_nothing_of_their_own_work(run, magic):
    run(
        "from functools import partial\n"
        "@jax.jit\ndef f_logged(x):\n    return jnp.sin(x) * 2\n"
        "@partial(jax.jit, static_argnames=('n',))\ndef g_logged(x, n):\n    return x ** n\n"
        "x = jnp.ones(3)"
    ).assert_ok()
    records, logger = _JaxRecords(), logging.getLogger("jax")
    logger.addHandler(records)
    jax.config.update("jax_explain_cache_misses", True)
    jax.config.update("jax_log_compiles", True)
    try:
        shown = run(magic).assert_ok()
        during_magic = list(records.messages)
        settings = (jax.config.jax_explain_cache_misses, jax.config.jax_log_compiles)
        run("f_logged(x)").assert_ok()  # the user's own call: JAX logs it
    finally:
        jax.config.update("jax_explain_cache_misses", False)
        jax.config.update("jax_log_compiles", False)
        logger.removeHandler(records)
    assert settings == (True, True), "the user's settings stay as they were"
    assert_no_internals(shown)
    assert during_magic == [], "the magic's traces and compilations are jaxmagic's, not the user's"
    assert any("f_logged" in message for message in records.messages), "JAX logs the user's own compilation"


# ---------------------------------------------------------------- --values on JAX's own functions
def test_a_nan_made_inside_jax_s_own_function_is_not_said_to_come_from_the_user_s_code(ip, run):
    run("singular = jnp.zeros((2, 2))").assert_ok()
    shown = run("%jaxpr -o --values jnp.linalg.inv(singular)").assert_ok()
    # asked after the magic: JAX 0.8 keeps the frames of the first caller of jnp's jitted helpers
    assert np.isnan(np.asarray(ip.ev("jnp.linalg.inv(singular)"))).any(), "JAX's inverse of 0 holds NaN"
    first = shown.result.first_nonfinite
    assert first is not None and first.source is None, "no line of the user's made it"
    headline = next(line for line in shown.text.splitlines() if "the first NaN" in line)
    assert "your code" not in headline and f"`{first.primitive}`" in headline


# ---------------------------------------------------------------- a method jitted with a static self
def test_a_static_self_is_named_as_the_user_wrote_it_not_by_its_address(run):
    run(
        "from functools import partial\n"
        "class Scaler:\n"
        "    def __init__(self, s):\n"
        "        self.s = s\n"
        "    @partial(jax.jit, static_argnums=0)\n"
        "    def __call__(self, x):\n"
        "        return x * self.s\n"
        "sc = Scaler(3.0)"
    ).assert_ok()
    shown = run("%jaxpr -o sc(jnp.ones(2))").assert_ok()
    title = shown.text.split("\n")[0] + next(line for line in shown.text.splitlines() if "(static)" in line)
    assert re.search(r"0x[0-9a-fA-F]{4,}", title) is None, title
    assert "self = sc (static)" in title
