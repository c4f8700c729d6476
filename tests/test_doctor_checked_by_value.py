"""A fix is checked by its values: the user's call run without jit on their own arguments (and on
generated ones where theirs hold zeros or one value repeated) against the fix run jitted. The card
says the same values, or exactly what differs, or why it could not check; the fix chosen is one
whose values are the same where there is one. Each case below is one JAX's own pages or its issue
tracker show, and the values are JAX's: the test computes them itself with jit switched off."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from doctor_cases import apply, assert_same_values, diagnosed, intended, run

from jaxmagic.doctor.fix_check import UserCall, check, degenerate, generated


def same_as_eager(found, ns, definition, call):
    """The fix, applied, computes what the user's code computes with jit switched off."""
    expected = intended(definition, call, {**ns})
    apply(found.fix, ns)
    assert run(f"__result__ = {call}", ns) is None
    assert_same_values(ns["__result__"], expected)


def test_a_where_index_then_a_sum_is_fixed_with_a_mask_not_with_padded_indices():
    """JAX's errors page: ``x[jnp.where(x > 1)].sum()``; padding the indices with 0 adds ``x[0]``
    once per pad (15 for ``[5, 0, 2, 3]``, where the code means 10)."""
    definition = "@jax.jit\ndef f(x):\n    return x[jnp.where(x > 1)].sum()\n"
    found, ns, _ = diagnosed(definition, "f(jnp.array([5.0, 0.0, 2.0, 3.0]))")
    assert found.pitfall == "traced-shape" and found.check.outcome == "same"
    assert "jnp.where(x > 1, x, 0).sum()" in found.fix
    (padded,) = [label for label, code in found.alternatives if "size=" in code]
    assert "it gives 15.0 where your code gives 10.0" in padded
    same_as_eager(found, ns, definition, "f(jnp.array([5.0, 0.0, 2.0, 3.0]))")


@pytest.mark.parametrize("name, test", [("f", "x > 0"), ("get_negatives", "x < 0")])
def test_a_boolean_mask_fix_says_exactly_what_differs_and_claims_nothing_it_did_not_check(name, test):
    found, _, _ = diagnosed(
        f"@jax.jit\ndef {name}(x):\n    return x[{test}]\n", f"{name}(jnp.array([5.0, -1.0, 2.0, -3.0]))"
    )
    assert found.pitfall == "traced-shape" and found.check.outcome == "differs"
    assert "stay right" not in found.fix_note and "it has shape (4,) where your code's has (2,)" in found.check_note
    kept = "[5.0, 2.0]" if test == "x > 0" else "[-1.0, -3.0]"
    assert f"your code: `{kept}`" in found.check_note


def test_a_fixed_length_slice_at_a_traced_start_says_only_the_start_is_traced():
    definition = "@jax.jit\ndef f(x, i):\n    return x[i:i + 3]\n"
    found, ns, _ = diagnosed(definition, "f(jnp.arange(10.0), 2)")
    assert "length (3) is fixed" in found.explanation and "depends on" not in found.explanation
    assert "dynamic_slice_in_dim(x, i, 3)" in found.fix and found.check.outcome == "same"
    same_as_eager(found, ns, definition, "f(jnp.arange(10.0), 2)")


def test_a_jitted_lambda_whose_size_is_traced_gets_its_parameter_static_in_that_jit():
    """JAX issue 5186: ``jax.jit(lambda n: jnp.arange(0, n, 1))``; the lambda has no name to jit
    again, so the fix is the same line with the size made static there."""
    definition = "count_up_to = jax.jit(lambda n: jnp.arange(0, n, 1))\n"
    found, ns, _ = diagnosed(definition, "count_up_to(5)")
    assert found.pitfall == "traced-shape" and found.check.outcome == "same"
    assert found.fix == 'count_up_to = jax.jit(lambda n: jnp.arange(0, n, 1), static_argnames=("n",))'
    same_as_eager(found, ns, definition, "count_up_to(5)")


def test_a_size_traced_only_because_jnp_computed_it_is_computed_with_numpy():
    """JAX issue 4449: ``count = jnp.add(arr.size, 1)`` makes a plain size traced."""
    definition = "@jax.jit\ndef one_longer(arr):\n    count = jnp.add(arr.size, 1)\n    return jnp.ones((count,))\n"
    found, ns, _ = diagnosed(definition, "one_longer(jnp.ones((3,)))")
    assert found.pitfall == "traced-shape" and found.check.outcome == "same"
    assert "count = np.add(arr.size, 1)" in found.fix and "`count` is traced only because" in found.fix_note
    same_as_eager(found, ns, definition, "one_longer(jnp.ones((3,)))")


@pytest.mark.parametrize("body, replacement", [("min(x, 0.0)", "jnp.minimum"), ("max(x)", "jnp.max")])
def test_pythons_min_and_max_on_a_traced_value_become_jnp_and_never_make_the_array_static(body, replacement):
    definition = f"@jax.jit\ndef f(x):\n    return {body}\n"
    call = "f(2.0)" if "," in body else "f(jnp.array([1.0, 3.0, 2.0]))"
    found, ns, _ = diagnosed(definition, call)
    assert found.pitfall == "python-control-flow" and replacement in found.fix
    assert "static_argnames" not in found.fix and found.check.outcome == "same"
    same_as_eager(found, ns, definition, call)


def test_the_jit_on_a_method_fix_makes_static_only_what_decides_an_if_and_runs_on_an_array_attribute():
    """JAX's "Using jit with methods": Strategy 1, the jitted helper, with ``mul`` static and ``x``
    traced, which then also runs when ``x`` is an array."""
    definition = """
    class CustomClass:
      def __init__(self, x, mul):
        self.x = x
        self.mul = mul

      @jax.jit
      def calc(self, y):
        if self.mul:
          return self.x * y
        return y
    """
    found, ns, _ = diagnosed(definition, "c = CustomClass(2, True)\nc.calc(3)")
    assert found.pitfall == "non-array-argument" and found.check.outcome == "same"
    assert 'static_argnames=("mul",)' in found.fix
    apply(found.fix, ns)
    assert run("out = CustomClass(jnp.array([2.0, 4.0]), True).calc(3)", ns) is None
    np.testing.assert_allclose(ns["out"], [6.0, 12.0])


@pytest.mark.parametrize(
    "returns, keeps",
    [
        ("", "y = f(...)"),
        ("    return x * 2\n", "result, y = f(...)"),
        ("    return x, 2 * x\n", "result_1, result_2, y"),
    ],
)
def test_the_tracer_leak_fix_tells_the_caller_as_many_names_as_the_function_returns(returns, keeps):
    definition = f"y = None\n@jax.jit\ndef f(x):\n    global y\n    y = x + 1\n{returns}"
    found, ns, _ = diagnosed(definition, "f(jnp.ones(2))\ny + 1")
    assert found.pitfall == "tracer-leak" and f"# the caller keeps it:  {keeps}" in found.fix
    apply(found.fix, ns)
    exec(f"{keeps.split(' = ')[0]} = f(jnp.ones(2))", ns)
    np.testing.assert_allclose(ns["y"], [2.0, 2.0])


@pytest.mark.parametrize(
    "returns, keeps", [("    return y\n", "y"), ("    return x, y\n", "result_1, y")], ids=["alone", "in a tuple"]
)
def test_a_leaked_value_the_function_returns_too_is_not_handed_back_twice(returns, keeps):
    """JAX's docs' example: the function stores ``y`` and returns it. The fix drops the store and
    tells the caller to keep what it returns; it does not return ``y`` a second time."""
    definition = f"kept = []\n@jax.jit\ndef f(x):\n    y = x + 1\n    kept.append(y)\n{returns}"
    found, ns, _ = diagnosed(definition, "f(jnp.ones(2))\nkept[-1] + 1")
    assert found.pitfall == "tracer-leak" and "as well as returning it" in found.explanation
    assert "instead of returning it" not in found.explanation
    code, comment = found.fix.split("\n\n# ")
    assert "kept.append" not in code and code.rstrip().endswith(returns.strip())
    assert comment == f"the caller keeps what it returns:  {keeps} = f(...)"
    apply(found.fix, ns)
    stored = len(ns["kept"])
    exec(f"{keeps} = f(jnp.ones(2))", ns)
    np.testing.assert_allclose(ns["y"], [2.0, 2.0])
    assert len(ns["kept"]) == stored  # the fixed function keeps nothing


UNHASHABLE = [
    ("a dataclass", "from dataclasses import dataclass\n@dataclass\nclass Config:\n    scale: float\n    n: int\n",
     "config", "x[: config.n] * config.scale", "Config(2.0, 3)", "@dataclass(frozen=True)"),
    ("a slice", "", "s", "x[s] * 2", "slice(1, 3)", "s = slice(*s)"),
    ("a dict read by key", "", "config", "x * config['scale']", "{'scale': 2.0}", "config = dict(config)"),
    ("a list the function appends to", "", "layers", "x * len(layers + [1])", "[2, 3]", "(2, 3)"),
    ("a list changed in place", "", "layers", "layers.append(1) or x * len(layers)", "[2, 3]", "layers = list(layers)"),
]  # fmt: skip


@pytest.mark.parametrize("name, before, parameter, body, argument, written", UNHASHABLE, ids=[u[0] for u in UNHASHABLE])
def test_an_unhashable_static_argument_gets_a_fix_that_keeps_every_use_of_it_valid(
    name, before, parameter, body, argument, written
):
    definition = f"{before}from functools import partial\n@partial(jax.jit, static_argnames=('{parameter}',))\ndef f(x, {parameter}):\n    return {body}\n"
    call = f"out = f(jnp.arange(5.0), {argument})"
    found, ns, _ = diagnosed(definition, call)
    assert found.pitfall == "unhashable-static" and written in found.fix
    assert found.check.outcome == "same", found.check_note
    expected = intended(definition, call.split(" = ")[1], {**ns})
    apply(found.fix, ns)
    if "out =" not in found.fix:
        assert run(call, ns) is None
    np.testing.assert_allclose(ns["out"], expected)


def test_a_static_dict_holding_an_array_beside_its_settings_is_split_into_static_settings_and_traced_arrays():
    """JAX issue 6853: a dict of a size and an array, passed static; no tuple of it is hashable."""
    definition = (
        "from functools import partial\n@partial(jax.jit, static_argnums=1)\ndef head_plus(x, d):\n"
        '    return x[:d["num"]] + d["val"]\n\nsettings = {"num": 5, "val": np.arange(5)}\n'
    )
    call = "out = head_plus(jnp.arange(10), settings)"
    found, ns, _ = diagnosed(definition, call)
    assert found.pitfall == "unhashable-static" and found.check.outcome == "same", found.check_note
    assert "def head_plus(x, d, d_arrays):\n    d = {**dict(d), **d_arrays}" in found.fix
    assert 'head_plus(jnp.arange(10), (("num", 5),), d_arrays={"val": settings["val"]})' in found.fix
    expected = intended(definition, call.split(" = ")[1], {**ns})
    apply(found.fix, ns)
    np.testing.assert_array_equal(ns["out"], expected)


def test_arguments_that_could_hide_a_difference_are_compared_again_on_generated_ones():
    assert degenerate((jnp.arange(3.0),), {}) == "zeros" and degenerate((jnp.ones(3),), {}) == "repeated"
    assert degenerate((jnp.array([2.0, 3.0]), jnp.arange(3)), {}) == ""  # integers (indices, sizes) kept
    (x, i), _ = generated((jnp.zeros(4), jnp.arange(3)), {})
    assert len(set(np.asarray(x).tolist())) == 4 and 0.0 not in np.asarray(x) and i.tolist() == [0, 1, 2]

    def total(x):
        return x[jnp.where(x > 1)].sum()

    padded = "@jax.jit\ndef total(x):\n    return x[jnp.where(x > 1, size=x.size)].sum()"
    on_arange = check(
        padded, UserCall({"jax": jax, "jnp": jnp, "total": total}, callee_name="total", args=(jnp.arange(4.0),))
    )
    assert on_arange.outcome == "differs" and on_arange.generated == "zeros"  # x[0] == 0 hid the padding


def test_a_check_past_its_time_limit_says_so_instead_of_waiting():
    from jaxmagic.doctor.checked_fixes import checked_diagnosis
    from jaxmagic.doctor.diagnosis import Diagnosis

    def slow(x):
        import time

        time.sleep(0.5)
        return x

    call = UserCall({"jax": jax, "slow": slow}, callee_name="slow", args=(jnp.ones(2),))
    fix = "@jax.jit\ndef slow(x):\n    return x"
    found = checked_diagnosis(Diagnosis("traced-shape", explanation="", fix=fix), call, seconds=0.05)
    assert not found.checked and found.check.reason == "time"
    assert "checking took longer than the doctor waits (0.05 s)" in found.check_note


@pytest.mark.parametrize(
    "definition, call",
    [
        (
            "def loss_and_acc(w, x, y):\n    logits = x @ w\n    return jnp.mean((logits - y) ** 2), jnp.mean(logits > 0)\n",
            "g = jax.grad(loss_and_acc)(jnp.ones(3), jnp.eye(3), jnp.array([1.0, -1.0, 1.0]))",
        ),
        (
            "def scale(x, w):\n    return x * w\nxs, w = jnp.ones((8, 3)), jnp.arange(3.0)\n",
            "ys = jax.vmap(scale)(xs, w)",
        ),
    ],
    ids=["grad-of-a-tuple", "vmap-of-an-unmapped-weight"],
)
def test_a_fix_that_edits_the_failing_call_is_never_said_to_give_your_code_s_values(definition, call):
    """The user's call fails without jit too (``jax.grad`` of a tuple, ``vmap`` over a weight of
    another size): there are no values of theirs to compare with. The fix's own call run without
    jit is not the user's code."""
    found, ns, _ = diagnosed(definition, call)
    assert found is not None and found.fix
    assert found.check.outcome == "runs", (found.pitfall, found.check)
    assert "same values" not in str(found.check_note) and "fails without jit too" in str(found.check_note)
    apply(found.fix, ns)


def test_an_unhashable_static_argument_s_card_names_the_option_as_the_user_wrote_it():
    """``static_argnames=("hidden",)`` written: JAX's options list the argument by its place too,
    which the user never wrote."""
    definition = (
        "from functools import partial\n@partial(jax.jit, static_argnames=('hidden',))\n"
        "def init(key, hidden):\n    keys = jax.random.split(key, len(hidden))\n"
        "    return [jax.random.normal(k, (h,)) for k, h in zip(keys, hidden)]\n"
    )
    found, _, _ = diagnosed(definition, "layers = init(jax.random.key(0), hidden=[4, 3])")
    assert found.pitfall == "unhashable-static"
    assert 'static_argnames=("hidden",)' in str(found.explanation) and "static_argnums" not in str(found.explanation)


def test_numpy_on_a_jitted_function_s_inputs_gets_no_code_that_calls_numpy_on_its_result():
    """``np.dot(a, b)`` inside ``cosine_sim``: ``np.dot(result)`` after the call would raise."""
    definition = "@jax.jit\ndef cosine_sim(a, b):\n    return np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b))\n"
    found, ns, _ = diagnosed(definition, "cosine_sim(jnp.array([1.0, 2.0, 3.0]), jnp.array([1.0, 0.0, 1.0]))")
    assert found.pitfall == "numpy-in-jit" and found.check.outcome == "same"
    assert all("(result)" not in code for _, code in found.alternatives), found.alternatives


def test_vmap_over_arguments_written_inline_gets_its_card_and_a_checked_fix():
    """``jax.vmap(weighted)(jnp.ones((4, 3)), jnp.ones(3))``: the arguments are JAX calls, safe to
    evaluate again; the card maps the weight over nothing, as it does where they are names."""
    definition = "def weighted(x, w):\n    return jnp.sum(x * w)\n"
    call = "out = jax.vmap(weighted)(jnp.ones((4, 3)), jnp.arange(3.0))"
    found, ns, _ = diagnosed(definition, call)
    assert found is not None and found.pitfall == "vmap-sizes", found
    assert "in_axes=(0, None)" in found.fix and found.check.outcome == "runs", found.check
    apply(found.fix, ns)
    np.testing.assert_allclose(ns["out"], np.full(4, 3.0))


@pytest.mark.parametrize("body", ["x[x > 0].mean()", "jnp.mean(x[x > 0])", "x[x > 0].std()", "x[x > 0].prod()"])
def test_a_reduction_of_a_boolean_mask_is_reduced_where_the_mask_holds_and_keeps_its_values(body):
    """``x[x > 0].mean()`` under jit: zeros in place of the dropped elements would change the mean
    (1.5 where the code means 3.0); JAX's reductions take the mask as ``where=``."""
    definition = f"@jax.jit\ndef positive_stat(x):\n    return {body}\n"
    found, ns, _ = diagnosed(definition, "positive_stat(jnp.array([1.0, -2.0, 5.0, 3.0]))")
    assert found.pitfall == "traced-shape" and "where=x > 0" in found.fix, found.fix
    assert found.check.outcome == "same", found.check_note
    same_as_eager(found, ns, definition, "positive_stat(jnp.array([1.0, -2.0, 5.0, 3.0]))")


@pytest.mark.parametrize(
    "condition", ["jnp.dot(self.w, x) > 0", "self.w.sum() > 0"], ids=["a-traced-argument-too", "an-array-field"]
)
def test_an_equinox_field_is_never_made_static_where_that_would_not_fix_the_branch(condition):
    """``if jnp.dot(self.w, x) > 0`` in a module under ``eqx.filter_jit``: ``x`` is traced whatever
    ``w`` is, so ``w = eqx.field(static=True)`` still raises; an array field made static is hashed
    by identity (Equinox warns). The branch is kept traced instead."""
    pytest.importorskip("equinox")
    definition = (
        "import equinox as eqx\nclass Gate(eqx.Module):\n    w: jax.Array\n    def __call__(self, x):\n"
        f"        if {condition}:\n            return x\n        return jnp.zeros_like(x)\n\n"
        "@eqx.filter_jit\ndef apply(model, x):\n    return model(x)\n"
    )
    found, _, _ = diagnosed(definition, "apply(Gate(jnp.array([1.0, -1.0])), jnp.array([3.0, 1.0]))")
    assert found is not None and found.pitfall == "python-control-flow"
    assert "static=True" not in found.fix and all("static=True" not in code for _, code in found.alternatives)
    assert "cond" in found.fix or "where" in found.fix, found.fix


def test_a_jitted_method_that_keeps_its_state_on_self_gets_no_code_that_cannot_run():
    """``self.avg = decay * self.avg + …`` in a method jitted with ``self`` static: a caller line
    ``result, self.decay * self.avg + … = update(...)`` is not Python, and handing the value back
    leaves the state on ``self``; the card says where the state belongs instead."""
    definition = (
        "from functools import partial\nclass EMA:\n    def __init__(self, decay):\n        self.decay = decay\n"
        "        self.avg = None\n    @partial(jax.jit, static_argnums=0)\n    def update(self, x):\n"
        "        if self.avg is None:\n            self.avg = x\n"
        "        self.avg = self.decay * self.avg + (1 - self.decay) * x\n        return self.avg\n"
        "ema = EMA(0.9)\nema.update(jnp.ones(3))\n"
    )
    found, _, _ = diagnosed(definition, "ema.update(jnp.full(3, 2.0))")
    assert found is not None and found.pitfall == "tracer-leak"
    for code in [found.fix or "", *(code for _, code in found.alternatives)]:
        compile(code, "<card>", "exec")  # what is shown parses
        assert "= update(" not in code  # nor does a comment tell the caller to write what cannot run
    assert "argument" in str(found.fix_note) and "self.avg" in str(found.fix_note)


@pytest.mark.parametrize("use", ["jnp.tile(x, k)", "jnp.zeros(k)", "x.reshape(k, -1)"])
def test_a_number_taken_from_traced_data_for_a_size_is_not_kept_an_array_where_it_cannot_be_run(use):
    """``k = int(self.scale.value)`` in a Flax NNX module, then ``jnp.tile(x, k)``: the fix cannot be
    run (the call goes through the model), and ``k.astype(int)`` would still fail (a size must be
    a plain int while JAX traces): the card offers no such edit and says a size cannot come from
    traced data."""
    pytest.importorskip("flax")
    definition = (
        "from flax import nnx\nclass Scaler(nnx.Module):\n    def __init__(self):\n"
        "        self.scale = nnx.Variable(jnp.array(2))\n    def __call__(self, x):\n"
        f"        k = int(self.scale.value)\n        return {use}\n\n"
        "@nnx.jit\ndef run_model(m, x):\n    return m(x)\n"
    )
    found, _, _ = diagnosed(definition, "run_model(Scaler(), jnp.ones(4))")
    assert found is not None and found.pitfall == "python-scalar-conversion"
    assert ".astype(int)" not in (found.fix or ""), found.fix
    assert "cannot come from traced data" in str(found.fix_note) + " ".join(
        str(label) for label, _ in found.alternatives
    )
