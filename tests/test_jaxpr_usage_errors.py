"""What %jaxpr says to input it cannot use: a UsageError that says what was expected, with an example;
nothing of jaxmagic's internals; the namespace and JAX's configuration untouched."""

import jax
import pytest
from outcomes import assert_usage_error

SETUP = (
    "x = jnp.ones(3)\n"
    "def f(x, n):\n"
    "    return jnp.sum(jnp.sin(x) * n)\n"
    "def vector(x):\n"
    "    return jnp.sin(x)\n"
    "class Model:\n"
    "    pass\n"
    "def gen(x):\n"
    "    yield x\n"
    "async def coro(x):\n"
    "    return x\n"
    "number = 3\n"
)

CASES = [
    # (cell, words the message must contain)
    ("%jaxpr", ["needs a call expression", "Example: %jaxpr f(x, 3)"]),
    ("%jaxpr   ", ["needs a call expression"]),
    ("%%jaxpr\n", ["cell body is empty"]),  # IPython's own, clear message
    ("%%jaxpr\n# only a comment\n", ["cell is empty"]),
    ("%%jaxpr\ny = f(x, 2)", ["last statement must be a call expression", "y = f(x, 2)"]),
    ("%%jaxpr\ndef g(a):\n    return a\n", ["last statement must be a call expression"]),
    ("%%jaxpr\ndef g(a)\n    return a\ng(x)", ["not valid Python", "line 2"]),
    ("%jaxpr f(x", ["not valid Python", "f(x"]),
    ("%jaxpr x + 1", ["works on a call expression", "not `x + 1`"]),
    ("%jaxpr undefined_function(x)", ["name 'undefined_function' is not defined"]),
    ("%jaxpr f(undefined_arg, 2)", ["name 'undefined_arg' is not defined"]),
    ("%jaxpr number(x)", ["`number` is a int, not a function"]),
    ("%jaxpr Model()", ["`Model` is a class"]),
    ("%jaxpr gen(x)", ["generator function"]),
    ("%jaxpr coro(x)", ["async function"]),
    ("%jaxpr -s q f(x, 2)", ["no parameter named `q`", "its parameters are: x, n"]),
    ("%jaxpr -s 7 f(x, 2)", ["no positional argument 7"]),
    ("%jaxpr -s 1,n f(x, 2)", ["names parameter `n` twice"]),
    ("%jaxpr -s 'a b' f(x, 2)", ["takes parameter names or positions"]),
    ("%jaxpr -t grad vector(x)", ["does not apply", "output is a scalar"]),
    ("%jaxpr -t grad f(jnp.arange(3), 2)", ["does not apply", "float"]),
    ("%jaxpr -t vmap f(x, 2)", ["does not apply", "vmap"]),
    ("%jaxpr -t grad jnp.zeros(3)", ["does not apply"]),
    ("%jaxpr -t hessian f(x, 2)", ["invalid choice: 'hessian'"]),
    ("%jaxpr --stage llvm f(x, 2)", ["invalid choice: 'llvm'"]),
    ("%jaxpr --bogus f(x, 2)", ["unrecognized arguments: --bogus"]),
    ("%jaxpr -s", ["expected one argument"]),
    ("%jaxpr --max-eqns 0 f(x, 2)", ["--max-eqns must be a positive"]),
    ("%jaxpr --max-eqns many f(x, 2)", ["invalid int value"]),
    ("%jaxpr f(x, n=1, n=2)", ["keyword argument", "twice"]),
    ("%jaxpr f(x, 'unclosed)", ["not valid Python"]),
]


@pytest.mark.parametrize("cell, expected", CASES, ids=[c for c, _ in CASES])
def test_bad_input_is_a_clear_usage_error(run, ip, cell, expected):
    run(SETUP).assert_ok()
    assert_usage_error(run, ip, cell, expected)


def test_a_failing_cell_body_keeps_what_it_defined_before_the_error_like_a_normal_cell(run):
    shown = run("%%jaxpr\nkept = 1\nraise ValueError('boom')\nf(x, 2)")
    assert isinstance(shown.error.original, ValueError)
    assert "boom" in shown.shown_traceback
    assert run("kept").result == 1


def test_jax_config_is_restored_when_the_users_function_changes_it_and_fails(run):
    run(
        "def sneaky(x):\n"
        "    jax.config.update('jax_enable_x64', True)\n"
        "    raise RuntimeError('changed the config, then failed')\n"
        "x = jnp.ones(2)"
    ).assert_ok()
    before = jax.config.jax_enable_x64
    shown = run("%jaxpr sneaky(x)")
    assert isinstance(shown.error.original, RuntimeError)
    assert jax.config.jax_enable_x64 == before


def test_a_transform_of_a_plain_function_called_with_nnx_objects_says_what_it_is_and_its_fix_runs(run, ip):
    pytest.importorskip("flax.nnx")
    run(
        "from flax import nnx\n"
        "model = nnx.Linear(3, 2, rngs=nnx.Rngs(0))\n"
        "batch = jnp.ones((4, 3))\n"
        "def apply(model, x):\n"
        "    return model(x)\n"
    ).assert_ok()
    shown = run("%jaxpr -t vmap apply(model, batch)")
    message = str(shown.error)
    assert "called with Flax NNX objects" in message and "jitted with nnx.jit" not in message
    # the example it gives, on the user's own names, traces
    example = message.split("Example: ", 1)[1].split("   #", 1)[0].replace("(model, x)", "(model, batch)")
    fixed = run(example)
    fixed.assert_ok()
    assert "f32[4,2]" in fixed.text


@pytest.mark.parametrize(
    "call, axes",
    [
        ("shift(points, offset)", "(0, None)"),
        ("blend(points, weights, offset)", "(0, 0, None)"),
        ("clip(points, offset)", None),
    ],
)
def test_vmap_over_arguments_of_different_leading_sizes_offers_the_in_axes_that_trace_and_they_run(run, call, axes):
    """jax#705: vmap maps every positional argument; where their sizes differ, the example is the
    user's own call with in_axes mapping those that share a size, checked by tracing it."""
    run(
        "def shift(points, offset):\n"
        "    return points + offset\n"
        "def blend(points, weights, offset):\n"
        "    return points * weights[:, None].sum() + offset\n"
        "def clip(points, offset):\n"
        "    return points + offset[:2]\n"
        "points = jnp.ones((8, 3))\n"
        "weights = jnp.ones((8, 3))\n"
        "offset = jnp.arange(3.0)\n"
    ).assert_ok()
    shown = run(f"%jaxpr -t vmap {call}")
    message = str(shown.error)
    assert "leading sizes differ (`points`: 8, " in message and "in_axes" in message, message
    example = message.split("Example: ", 1)[1].split("   #", 1)[0].strip()
    if axes is None:  # no mapping of the arguments traces: no call of theirs is offered
        assert example.startswith("%jaxpr -t vmap f(xs, ys)"), example
        return
    name = call.split("(")[0]
    assert example == f"%jaxpr jax.vmap({name}, in_axes={axes})({call.split('(', 1)[1]}", example
    fixed = run(example)
    fixed.assert_ok()
    assert "f32[8,3]" in fixed.text
