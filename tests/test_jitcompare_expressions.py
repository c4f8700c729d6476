"""%jitcompare takes any expression, as %timeit does: ``%jitcompare f(x) + 1`` times the expression
as written (eager) and ``jax.jit`` of it as a function of its free names that hold arrays (jit);
the other free names (functions, modules, Python numbers) stay closed over, constants of the
compiled program. What was jitted is said, and the values of both modes are the expression's own.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmagic.tracing.expression import as_function, free_names, is_argument


@pytest.mark.parametrize(
    "text, names",
    [
        ("f(x) + 1", ["f", "x"]),
        ("jnp.sum(x ** 2) * scale", ["jnp", "x", "scale"]),
        ("sum(g(v) for v in xs)", ["sum", "g", "xs"]),
        ("(lambda y: y * k)(z)", ["k", "z"]),
        ("[a for a in range(n)][0] + w", ["range", "n", "w"]),
        ("model(params, x=batch)['out']", ["model", "params", "batch"]),
    ],
)
def test_free_names_are_what_the_expression_reads_from_outside_in_order(text, names):
    assert free_names(text) == names


def test_arrays_and_what_holds_them_are_arguments_the_rest_is_closed_over():
    assert is_argument(jnp.ones(3)) and is_argument(np.ones(3)) and is_argument({"w": [jnp.ones(2), 1.0]})
    assert is_argument(jax.random.key(0))
    for other in (3, 2.5, "name", jnp.sin, jax.jit(jnp.cos), np, int, None, (1, 2)):
        assert not is_argument(other), other


def test_the_function_computes_the_expression_with_a_python_number_kept_static():
    def f(v):
        return v * 2

    found = as_function("jnp.ones(n) * f(x)[:n] + 1", {"jnp": jnp, "f": f, "x": jnp.arange(5.0), "n": 3}, None)
    assert found.expression.arguments == ("x",) and found.expression.closed_over == ("jnp", "n", "f")
    # n is a shape: traced, jax.jit would fail; closed over, it is a constant of the program
    assert jax.jit(found.function)(*found.args).tolist() == [1.0, 3.0, 5.0]


def test_an_expression_is_timed_eager_as_written_and_jitted_as_said(run):
    run("def f(v):\n    return jnp.sin(v) * 2\nx = jnp.linspace(0.0, 1.0, 100)\nn = 3").assert_ok()
    before = set(run("list(globals())").result)
    result = run("%jitcompare -o -q -n 3 -r 2 --budget 3 f(x) + n").assert_ok().result
    assert result.name == "f(x) + n" and list(result.modes) == ["eager", "jit"]
    assert result.setups["jit"].startswith("jax.jit(lambda x: f(x) + n): x traced; f, n closed over")
    assert result.setups["eager"].startswith("f(x) + n, as written")
    assert not any("differ" in w for w in result.warnings)  # both modes computed the expression
    added = set(run("list(globals())").result) - before
    assert all(name.startswith("_") for name in added), added  # only IPython's own _, _i, _3 ...


def test_the_cell_form_times_an_expression_as_its_last_statement(run):
    shown = run("%%jitcompare -o -q -n 3 -r 2 --budget 3\nw = jnp.ones((8, 8))\n(w @ w).sum() + 1").assert_ok()
    assert shown.result.name == "(w @ w).sum() + 1"
    assert "lambda w: (w @ w).sum() + 1" in shown.result.setups["jit"]
    assert run("w.shape").result == (8, 8)  # the cell's own definitions stay


def test_a_model_in_an_expression_is_an_argument_with_its_library_semantics(run):
    pytest.importorskip("flax.nnx")
    run(
        "from flax import nnx\n"
        "layer = nnx.Linear(4, 2, rngs=nnx.Rngs(0))\n"
        "batch = jnp.ones((3, 4))\n"
        "params = {'w': jnp.ones((4, 2))}"
    ).assert_ok()
    result = run("%jitcompare -o -q -n 3 -r 2 --budget 3 layer(batch).sum() + (batch @ params['w']).sum()")
    result = result.assert_ok().result
    assert "lambda layer, batch, params:" in result.setups["jit"] and result.setups["jit"].startswith("nnx.jit(")
    assert not any("differ" in w for w in result.warnings)


def test_several_calls_on_the_line_are_still_side_by_side(run):
    run("def f(v):\n    return v + 1\ndef g(v):\n    return v * 2\nx = jnp.ones(4)").assert_ok()
    both = run("%jitcompare -o -q -n 2 -r 2 --budget 2 f(x), g(x) + 1").assert_ok().result
    assert not isinstance(both, list) and both.name == "(f(x), g(x) + 1)"  # one expression: a tuple
    pair = run("%jitcompare -o -q -n 2 -r 2 --budget 2 f(x), g(x)").assert_ok().result
    assert [c.name for c in pair] == ["f(x)", "g(x)"]
