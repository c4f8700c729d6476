"""A listing folds a block of equations that repeats, as a Python loop over layers makes it: the
first copy shown, the others folded under one row with their count (``In [2] line 3 ×50, 6
equations each``); the equations folded are those JAX prints, in its order."""

import jax
import jax.numpy as jnp

from jaxmagic.render.jaxpr import types_text
from jaxmagic.tracing.listing import listing

MLP50 = """def mlp50(layers, x):
    for layer in layers:
        x = jax.nn.relu(x @ layer["w"] + layer["b"])
    return x.sum()

layers = [{"w": jnp.ones((32, 32)) * 0.01, "b": jnp.zeros(32)} for _ in range(50)]
"""

LAYER_FUNCTION = """def layer(x, p):
    h = x @ p["w"]
    return jnp.tanh(h + p["b"])

def stack(layers, x):
    x = x * 2.0
    for p in layers:
        x = layer(x, p)
    return x.sum()
"""


def test_fifty_identical_layers_fold_to_one_row(run):
    run(MLP50).assert_ok()
    shown = run("%jaxpr -o mlp50(layers, jnp.ones((8, 32)))").assert_ok()
    records = list(listing(shown.result.jaxpr, cell_namer=shown.result.cell_namer))
    repeats = [r for r in records if r.kind == "repeat"]
    assert len(repeats) == 1
    repeat = repeats[0]
    assert repeat.times == 50 and repeat.n_eqns * 50 + 1 == shown.result.n_eqns
    assert repeat.hidden == repeat.n_eqns * 49
    # the folded copies are still listed, in JAX's order, inside the fold
    kinds = [r.kind for r in records]
    inside = records[kinds.index("repeat") + 1 : kinds.index("repeat_end")]
    assert sum(r.kind == "eqn" for r in inside) == repeat.hidden
    # every equation is listed once, folded or not
    assert sum(r.kind == "eqn" for r in records) == shown.result.n_eqns
    cell = repeat.source.label
    html = shown.html
    assert f"{cell} ×50, {repeat.n_eqns} equations each</b>" in html
    assert "49 more copies of the block above" in html
    assert html.index("jm-repeat") < html.index("return x.sum()")
    assert f"⋯ {cell} ×50, {repeat.n_eqns} equations each: 49 more copies left out" in shown.text
    # the signature counts the layers' types instead of writing each
    assert "(f32[32], f32[32,32]) ×50, f32[8,32]" in html


def test_a_layer_function_over_several_lines_folds_under_its_name(run):
    run(LAYER_FUNCTION).assert_ok()
    shown = run("%jaxpr -o stack([{'w': jnp.ones((4, 4)), 'b': jnp.ones(4)}] * 5, jnp.ones((2, 4)))").assert_ok()
    records = list(listing(shown.result.jaxpr, cell_namer=shown.result.cell_namer))
    (repeat,) = [r for r in records if r.kind == "repeat"]
    assert repeat.title == "layer" and repeat.times == 5
    assert "layer ×5, " in shown.html
    # the first equation (x * 2.0) is no copy of anything, and stays in view
    first_eqn = next(r for r in records if r.kind == "eqn")
    assert first_eqn.primitive == "mul" and records.index(first_eqn) < records.index(repeat)


def test_blocks_that_differ_are_not_folded():
    def varied(x):
        for i in range(6):
            x = jnp.tanh(x) if i % 2 else jnp.sin(x * float(i))
        return x

    records = list(listing(jax.make_jaxpr(varied)(jnp.ones(3))))
    assert not any(r.kind == "repeat" for r in records)


def test_two_copies_are_not_folded():
    def twice(x):
        for _ in range(2):
            x = jnp.tanh(x * 2.0)
        return x

    assert not any(r.kind == "repeat" for r in listing(jax.make_jaxpr(twice)(jnp.ones(3))))


def test_the_limit_closes_a_fold_it_cuts():
    def deep(x):
        for _ in range(30):
            x = jnp.tanh(x * 2.0)
        return x

    kinds = [r.kind for r in listing(jax.make_jaxpr(deep)(jnp.ones(3)), limit=10)]
    assert kinds.count("repeat") == kinds.count("repeat_end") == 1
    assert kinds.index("repeat_end") < kinds.index("more")


def test_types_text_counts_runs():
    assert types_text(["f32[3]", "f32[3]", "i32[]"]) == "f32[3] ×2, i32[]"
    assert types_text([]) == ""
