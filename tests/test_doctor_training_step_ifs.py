"""A Python ``if`` on a traced loss inside a jitted training step, typed into a notebook: the
gradients scaled or clipped when the loss or their norm is large (a dict of arrays, an Optax state,
a Flax NNX model's gradients), a step skipped with an early ``return`` when the loss is NaN, the
best loss kept with the parameters that gave it. The doctor rewrites the ``if`` as ``jax.lax.cond``
over what it changes (any pytree), shows it only once it is checked by value, and the fix it prints,
run here jitted, gives what the user's code gives with jit switched off, on arguments that take
each branch."""

from __future__ import annotations

import ast

import jax
import numpy as np
import pytest
from doctor_cases import assert_same_values

from jaxmagic import doctor
from jaxmagic.doctor import cond_rewrites, rewrites

SETUP = """
import optax
from flax import nnx

def loss_fn(params, x, y):
    return jnp.mean((x @ params["w"] + params["b"] - y) ** 2)

x = jnp.arange(12.0).reshape(4, 3) / 10
params = {"w": jnp.array([[1.0], [2.0], [0.5]]), "b": jnp.array([0.1])}
y_far = jnp.array([[1.0], [5.0], [-2.0], [3.0]])   # a loss of about 8
y_near = x @ params["w"] + params["b"] + 0.1         # a loss of 0.01
bad = {"w": params["w"].at[0, 0].set(jnp.nan), "b": params["b"]}  # a NaN loss
opt = optax.adam(1e-2)
"""

SCALED = """
@jax.jit
def train_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    if loss > 1.0:
        grads = jax.tree.map(lambda g: g * 0.5, grads)
    params = jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)
    return params, loss
"""

SKIPPED = """
@jax.jit
def train_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    if jnp.isnan(loss):
        return params, loss
    params = jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)
    return params, loss
"""

CLIPPED = """
@jax.jit
def train_step(params, x, y, max_norm):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    grad_norm = optax.tree.norm(grads)
    if grad_norm > max_norm:
        grads = jax.tree_util.tree_map(lambda g: g * max_norm / grad_norm, grads)
    params = jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)
    return params, loss
"""

WITH_OPTAX = """
@jax.jit
def train_step(params, opt_state, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    if loss > 1.0:
        grads = jax.tree.map(lambda g: g * 0.5, grads)
    updates, opt_state = opt.update(grads, opt_state)
    params = optax.apply_updates(params, updates)
    return params, opt_state, loss
"""

KEPT_BEST = """
@jax.jit
def train_step(params, x, y, best, best_params):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    if loss < best:
        best = loss
        best_params = params
    params = jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)
    return params, best, best_params
"""

HALVED_OR_DOUBLED = """
@jax.jit
def train_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    if loss > 1.0: grads = jax.tree.map(lambda g: g * 0.5, grads)
    else: grads = jax.tree.map(lambda g: g * 2.0, grads)
    return grads
"""

# (definition, the call with {y} and {p} for the arguments that take one branch or the other,
#  what the fix holds, arguments taking the other branch)
CASES = {
    "scaled": (SCALED, "train_step({p}, x, {y})", "grads = jax.lax.cond(loss > 1.0, lambda grads: "),
    "skipped": (SKIPPED, "train_step({p}, x, {y})", "return jax.lax.cond(jnp.isnan(loss), true_fun, false_fun, params)"),
    "clipped": (CLIPPED, "train_step({p}, x, {y}, 1.0)", "grads = jax.lax.cond(grad_norm > max_norm, true_fun, false_fun, grads)"),
    "optax": (WITH_OPTAX, "train_step({p}, opt.init({p}), x, {y})", "grads = jax.lax.cond(loss > 1.0, lambda grads: "),
    "kept best": (KEPT_BEST, "train_step({p}, x, {y}, jnp.float32(1.0), {p})",
                  "best, best_params = jax.lax.cond(loss < best, true_fun, false_fun, best, best_params)"),
    "one line each": (HALVED_OR_DOUBLED, "train_step({p}, x, {y})", "grads = jax.lax.cond(loss > 1.0, true_fun, false_fun, grads)"),
}  # fmt: skip
# The arguments of each call: the first fails in the notebook; between them, both branches run.
ARGUMENTS = {"skipped": [("params", "y_far"), ("bad", "y_far")]}
BOTH_WAYS = [("params", "y_far"), ("params", "y_near")]


def assert_same_tree(fixed, expected) -> None:
    """The same pytree structure, each leaf the same values (``assert_same_values``'s tolerance)."""
    fixed_leaves, fixed_tree = jax.tree.flatten(fixed)
    expected_leaves, expected_tree = jax.tree.flatten(expected)
    assert fixed_tree == expected_tree
    for got, want in zip(fixed_leaves, expected_leaves, strict=True):
        assert_same_values(got, want)


def spelled(ip, code: str) -> str:
    """``code`` with ``jax.lax`` spelled as the notebook's own names spell it (a ``lax`` imported
    in an earlier cell is what the card writes, as the user would)."""
    return code.replace("jax.lax.", f"{rewrites.jax_names(ip.user_ns).lax}.")


@pytest.fixture
def notebook(ip, run):
    run(SETUP).assert_ok()
    return run


def _eager(run, ip, call: str):
    """What ``call`` gives with jit switched off (the user's code as it means to run)."""
    run(f"with jax.disable_jit():\n    __expected__ = {call}").assert_ok()
    return ip.user_ns["__expected__"]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_an_if_on_a_traced_loss_becomes_lax_cond_checked_by_value_and_the_fix_runs(ip, notebook, case):
    definition, call, expected_fix = CASES[case]
    calls = [call.format(p=p, y=y) for p, y in ARGUMENTS.get(case, BOTH_WAYS)]
    notebook(definition).assert_ok()
    failed = notebook(calls[0])
    assert isinstance(failed.error, jax.errors.TracerBoolConversionError)
    card = " ".join(failed.text.split())
    assert (
        spelled(ip, "jax.lax.cond(") in card
        and "Checked on your arguments: jitted, the fix gives the same values" in card
    )
    found = doctor.diagnose(failed.error)
    assert found is not None and found.pitfall == "python-control-flow"
    assert found.checked and found.check is not None and found.check.outcome == "same"
    assert spelled(ip, expected_fix) in found.fix, found.fix
    expected = [_eager(notebook, ip, c) for c in calls]
    notebook(found.fix).assert_ok()  # the printed fix, run in the notebook
    for each, want in zip(calls, expected, strict=True):
        notebook(f"__fixed__ = {each}").assert_ok()
        assert_same_tree(ip.user_ns["__fixed__"], want)


NNX_STEP = """
class Model(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(3, 1, rngs=rngs)
    def __call__(self, x):
        return self.linear(x)

def fresh():
    model = Model(nnx.Rngs(0))
    return model, nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)

@nnx.jit
def train_step(model, optimizer, x, y):
    def loss_fn(model):
        return jnp.mean((model(x) - y) ** 2)
    loss, grads = nnx.value_and_grad(loss_fn)(model)
    if loss > 1.0:
        grads = jax.tree.map(lambda g: g * 0.5, grads)
    optimizer.update(model, grads)
    return loss

y_close = fresh()[0](x) + 0.1   # a loss of 0.01 for a fresh model
"""


def test_an_if_on_the_loss_in_an_nnx_jit_step_becomes_lax_cond_over_the_nnx_gradients(ip, notebook):
    notebook(NNX_STEP).assert_ok()
    failed = notebook("model, optimizer = fresh()\ntrain_step(model, optimizer, x, y_far)")
    assert isinstance(failed.error, jax.errors.TracerBoolConversionError)
    found = doctor.diagnose(failed.error)
    assert found is not None and found.checked and found.check.outcome == "same"
    assert (
        spelled(ip, "grads = jax.lax.cond(loss > 1.0, lambda grads: jax.tree.map(lambda g: g * 0.5, grads)")
        in found.fix
    )
    assert found.fix.startswith("@nnx.jit\ndef train_step(")
    steps = {y: f"model, optimizer = fresh()\n__loss__ = train_step(model, optimizer, x, {y})" for y in ("y_far", "y_close")}  # fmt: skip
    read = "__after__ = (__loss__, nnx.state(model, nnx.Param), nnx.state(optimizer))"
    expected = {}
    for y, step in steps.items():
        notebook(f"with jax.disable_jit():\n{_indented(step)}\n{read}").assert_ok()
        expected[y] = ip.user_ns["__after__"]
    notebook(found.fix).assert_ok()
    for y, step in steps.items():
        notebook(f"{step}\n{read}").assert_ok()
        assert_same_tree(jax.tree.leaves(ip.user_ns["__after__"]), jax.tree.leaves(expected[y]))


def _indented(text: str) -> str:
    return "\n".join(f"    {line}" for line in text.splitlines())


def test_where_the_check_cannot_run_the_card_says_so_and_the_fix_is_not_called_checked(ip, notebook):
    notebook(SCALED).assert_ok()
    failed = notebook("train_step(params, x, y_far)")
    found = doctor.diagnose(failed.error, check_seconds=0)
    assert spelled(ip, "grads = jax.lax.cond(loss > 1.0") in found.fix and not found.checked
    assert found.check_note.startswith("Not checked on your arguments: ")


def test_a_condition_of_several_values_picks_per_leaf_with_where(ip, notebook):
    """Under ``vmap`` the loss is one value per example: ``lax.cond`` needs one, so each array of the
    pytree is picked with ``jnp.where``; the fix gives, per example, what the unbatched code gives."""
    notebook("""
    def clip_one(g, limit):
        norm = jnp.linalg.norm(g["w"])
        if norm > limit:
            g = jax.tree.map(lambda v: v * limit / norm, g)
        return g

    clip_all = jax.jit(jax.vmap(clip_one, in_axes=(0, None)))
    grads = {"w": jnp.array([[0.1, 0.2, 0.2], [3.0, 4.0, 0.0]]), "b": jnp.array([1.0, 2.0])}
    """).assert_ok()
    failed = notebook("clip_all(grads, 2.0)")
    found = doctor.diagnose(failed.error)
    assert "g = jax.tree.map(lambda new, old: jnp.where(norm > limit, new, old), " in found.fix
    assert found.checked  # it runs; without jit, vmap still traces the if, so there is nothing to compare
    expected = [ip.user_ns["clip_one"](jax.tree.map(lambda a, i=i: a[i], ip.user_ns["grads"]), 2.0) for i in range(2)]
    notebook(found.fix).assert_ok()
    notebook("__fixed__ = jax.jit(jax.vmap(clip_one, in_axes=(0, None)))(grads, 2.0)").assert_ok()
    for i, want in enumerate(expected):
        assert_same_tree(jax.tree.map(lambda a, i=i: a[i], ip.user_ns["__fixed__"]), want)
    np.testing.assert_allclose(ip.user_ns["__fixed__"]["w"][1], [1.2, 1.6, 0.0], rtol=1e-6)


def _if_of(source: str) -> tuple[ast.FunctionDef, ast.If, list[str]]:
    lines = source.strip("\n").splitlines()
    function = ast.parse("\n".join(lines)).body[0]
    assert isinstance(function, ast.FunctionDef)
    return function, next(s for s in ast.walk(function) if isinstance(s, ast.If)), lines


@pytest.mark.parametrize(
    "source",
    [
        "def f(g, loss):\n    for i in range(3):\n        if loss > i:\n            break\n    return g",
        "def f(g, loss):\n    if loss > 1:\n        if loss > 2:\n            g = g * 2\n    return g",
        "def f(g, loss):\n    if loss > 1:\n        fresh = g * 2\n    return g",
    ],
    ids=["leaves the loop", "an inner if", "assigns only a name of its own"],
)
def test_an_if_whose_branch_leaves_early_or_carries_nothing_is_not_rewritten(source):
    function, node, lines = _if_of(source)
    assert cond_rewrites.assigned_rewrite(node, function, lines, "loss > 1", lax="lax", jnp="jnp", scalar=True) is None


def test_an_early_return_whose_rest_holds_another_condition_is_not_rewritten():
    function, node, lines = _if_of(
        "def f(p, loss):\n    if loss > 9:\n        return p\n    if loss > 1:\n        p = p / 2\n    return p"
    )
    assert cond_rewrites.returned_rewrite(node, function, lines, "loss > 9", lax="lax") is None
