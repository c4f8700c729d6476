"""The doctor on the failing examples of JAX's own documentation (the Sharp Bits, the JIT and
control-flow tutorials, the errors reference) and of Flax and Equinox: each example is written
here in its own words, with the trap the page shows. For each, the diagnosis JAX's page calls for
(or none, where the page shows a plain error), and its fix, applied, runs and computes what JAX
computes for the code with jit switched off (or what the page says it should)."""

from __future__ import annotations

import functools
import textwrap

import jax
import numpy as np
import pytest
from doctor_cases import apply, diagnosed, fix_runs, namespace, run

from jaxmagic import doctor
from jaxmagic.doctor import global_watch
from jaxmagic.tracing.call import Call

# (page, source, failing call, pitfall, fixed call or None, expected result or None: jit off)
FIXES_THAT_RUN = [
    (
        "errors: ConcretizationTypeError, a traced axis",
        """
     @jax.jit
     def smallest(v, axis):
         return v.min(axis)
     """,
        "smallest(jnp.arange(4), 0)",
        "traced-shape",
        None,
        None,
    ),
    (
        "errors: NonConcreteBooleanIndexError, a mask then a sum",
        """
     @jax.jit
     def positive_total(v):
         return v[v > 0].sum()
     """,
        "positive_total(jnp.arange(-5, 5))",
        "traced-shape",
        None,
        None,
    ),
    (
        "errors: NonConcreteBooleanIndexError, a masked update",
        """
     @jax.jit
     def clip_below(v):
         return v.at[v < 0].set(0)
     """,
        "clip_below(jnp.arange(-2, 2))",
        "traced-shape",
        None,
        None,
    ),
    (
        "errors: TracerArrayConversionError, np.sin",
        """
     @jax.jit
     def wave(v):
         return np.sin(v)
     """,
        "wave(np.arange(4.0))",
        "numpy-in-jit",
        None,
        None,
    ),
    (
        "errors: TracerArrayConversionError, a NumPy array indexed by a traced index",
        """
     lookup_table = np.arange(10) * 3
     @jax.jit
     def pick(i):
         return lookup_table[i]
     """,
        "pick(4)",
        "numpy-in-jit",
        None,
        None,
    ),
    (
        "errors: TracerIntegerConversionError, np.split with a traced axis",
        """
     @jax.jit
     def halves(v, axis):
         return np.split(v, 2, axis)
     """,
        "halves(np.arange(4), 0)",
        "numpy-in-jit",
        None,
        None,
    ),
    (
        "errors: TracerIntegerConversionError, a list indexed by a traced index",
        """
     weights = [1.0, 2.0, 3.0]
     @jax.jit
     def weight(i):
         return weights[i]
     """,
        "weight(2)",
        "python-scalar-conversion",
        None,
        None,
    ),
    (
        "errors: TracerBoolConversionError, a ternary on data",
        """
     @jax.jit
     def smaller(a, b):
         return a if a.sum() < b.sum() else b
     """,
        "smaller(jnp.ones(4), jnp.zeros(4))",
        "python-control-flow",
        None,
        None,
    ),
    (
        "errors: TracerBoolConversionError, a flag",
        """
     @jax.jit
     def scaled(v, normalize=True):
         if normalize:
             return v / v.sum()
         return v
     """,
        "scaled(jnp.arange(1.0, 6.0), True)",
        "python-control-flow",
        None,
        None,
    ),
    (
        "jit-compilation: if on a traced value",
        """
     @jax.jit
     def bump(x):
         if x > 0:
             return x
         else:
             return 2 * x
     """,
        "bump(10.0)",
        "python-control-flow",
        None,
        None,
    ),
    (
        "jit-compilation: while on a traced bound",
        """
     @jax.jit
     def count_up(x, n):
         i = 0
         while i < n:
             i += 1
         return x + i
     """,
        "count_up(10, 20)",
        "python-control-flow",
        None,
        None,
    ),
    (
        "control-flow: a piecewise function",
        """
     @jax.jit
     def piecewise(x):
         if x < 3:
             return 3.0 * x ** 2
         else:
             return -4 * x
     """,
        "piecewise(2.0)",
        "python-control-flow",
        None,
        None,
    ),
    (
        "Sharp Bits: dynamic shapes (a NaN-skipping sum)",
        """
     def sum_skipping_nans(v):
         keep = ~jnp.isnan(v)
         kept = v[keep]
         return kept.sum()
     fast_sum = jax.jit(sum_skipping_nans)
     """,
        "fast_sum(jnp.array([1.0, 2.0, jnp.nan, 3.0]))",
        "traced-shape",
        "jax.jit(sum_skipping_nans)(jnp.array([1.0, 2.0, jnp.nan, 3.0]))",
        np.float32(6.0),
    ),
    (
        "Sharp Bits: in-place updates",
        """
     def reset(v):
         v[0] = 10.0
         return v
     """,
        "reset(jnp.zeros(3))",
        "in-place-update",
        None,
        np.array([10.0, 0.0, 0.0]),
    ),
    (
        "Sharp Bits: non-array inputs",
        "",
        "jnp.sum([1, 2, 3])",
        "list-input",
        "jnp.sum(jnp.array([1, 2, 3]))",
        np.int32(6),
    ),
    (
        "Flax NNX: nnx.jit with a flag",
        """
     from flax import nnx
     class Block(nnx.Module):
         def __init__(self, rngs):
             self.linear = nnx.Linear(3, 2, rngs=rngs)
         def __call__(self, x, train):
             y = self.linear(x)
             if train:
                 return y * 0.5
             return y
     @nnx.jit
     def forward(model, x, train):
         return model(x, train)
     model = Block(nnx.Rngs(0))
     """,
        "forward(model, jnp.ones((1, 3)), True)",
        "python-control-flow",
        None,
        None,
    ),
    (
        "Equinox: filter_jit with an array where a size goes",
        """
     import equinox as eqx
     @eqx.filter_jit
     def first_rows(x, n):
         return x[:n]
     """,
        "first_rows(jnp.ones((4, 2)), jnp.array(3))",
        "traced-shape",
        "first_rows(jnp.ones((4, 2)), 3)",
        np.ones((3, 2)),
    ),
]


@pytest.mark.parametrize(
    "page, source, call, pitfall, fixed_call, expected", FIXES_THAT_RUN, ids=[c[0] for c in FIXES_THAT_RUN]
)
def test_the_pages_failing_example_is_diagnosed_and_its_fix_runs(page, source, call, pitfall, fixed_call, expected):
    found = fix_runs(textwrap.dedent(source) or "pass", call, expected=expected, fixed_call=fixed_call)
    assert found.pitfall == pitfall, page


def test_sharp_bits_print_side_effect_is_a_warning():
    source = "def noisy(x):\n    print('Executing function')\n    return x\n"
    ns = namespace()
    run(source, ns)
    with doctor.watch_prints() as printed:
        closed = jax.make_jaxpr(ns["noisy"])(4.0)
    assert [d.pitfall for d in doctor.observe_trace(ns["noisy"], closed, printed.text)] == ["print-side-effect"]


def test_sharp_bits_global_read_is_baked_in():
    ns = namespace()
    run("offset = 0.0\ndef shifted(x):\n    return x + offset\n", ns)
    (found,) = doctor.observe_trace(ns["shifted"], jax.make_jaxpr(ns["shifted"])(4.0))
    assert found.pitfall == "baked-global" and found.variable == "offset"
    apply(found.fix, ns)
    ns["offset"] = 10.0
    assert float(jax.jit(ns["shifted"])(5.0, ns["offset"])) == 15.0  # the new value is used


def test_sharp_bits_global_saved_from_inside_is_a_tracer_leak_whose_fix_hands_it_back():
    definition = "saved = 0.0\ndef keep(x):\n    global saved\n    saved = x\n    return x\n_ = jax.jit(keep)(4.0)\n"
    found, ns, error = diagnosed(definition, "saved + 1")
    assert found.pitfall == "tracer-leak" and found.variable == "saved"
    apply(found.fix, ns)
    assert run("result, saved = jax.jit(keep)(4.0)\nafter = saved + 1", ns) is None
    assert float(ns["after"]) == 5.0


def test_sharp_bits_iterator_in_a_loop_body_is_a_warning_whose_fix_gives_45():
    ns = namespace()
    run(
        "numbers = iter(range(10))\ndef total():\n    return jax.lax.fori_loop(0, 10, lambda i, acc: acc + next(numbers), 0)\n",
        ns,
    )
    assert int(ns["total"]()) == 0  # the trap: every iteration added the one value seen while tracing
    ns["numbers"] = iter(range(10))
    (found,) = doctor.observe_trace(ns["total"], jax.make_jaxpr(ns["total"])())
    assert found.pitfall == "python-iterator" and found.variable == "numbers"
    ns["numbers"] = iter(range(10))
    apply(found.fix, ns)
    assert int(ns["total"]()) == 45


def test_a_print_inside_a_models_call_is_found_through_the_model_argument():
    ns = namespace()
    run(
        """
class Doubler:
    def __call__(self, x):
        print("called with", x)
        return x * 2

def step(model, x):
    return model(x) + 1
model = Doubler()
""",
        ns,
    )
    x = np.ones(2, np.float32)
    with doctor.watch_prints() as printed:
        closed = jax.make_jaxpr(lambda x: ns["step"](ns["model"], x))(x)
    found = doctor.observe_trace(Call(ns["step"], (ns["model"], x), {}, function=ns["step"]), closed, printed.text)
    assert [(d.pitfall, d.function) for d in found] == [("print-side-effect", "__call__")]


# Examples where the page shows a plain error, not a JIT trap: the doctor stays silent.
SILENT = [
    ("Sharp Bits: out-of-bounds indexing in NumPy", "np.arange(10)[11]"),
    ("a typo: jnp.sofmax", "jnp.sofmax(jnp.ones(3))"),
]


@pytest.mark.parametrize("page, call", SILENT, ids=[c[0] for c in SILENT])
def test_a_plain_error_gets_no_diagnosis(page, call):
    error = run(call, namespace())
    assert error is not None and doctor.diagnose(error) is None


def test_a_tracer_kept_by_a_helper_is_found_where_it_is_stored():
    definition = """
seen = []
def layer(x):
    h = jnp.tanh(x)
    seen.append(h)
    return h
@jax.jit
def forward(x):
    return layer(x) * 2
forward(jnp.ones(3))
"""
    found, ns, error = diagnosed(definition, "seen[0] + 1")
    assert found.pitfall == "tracer-leak" and found.function == "layer" and found.variable == "h"
    assert found.where.text == "seen.append(h)" and "seen.append" not in found.fix
    apply(found.fix, ns)
    ns["seen"].clear()
    assert run("y = jax.jit(lambda x: layer(x) * 2)(jnp.ones(3))", ns) is None and ns["seen"] == []


def test_a_tracer_kept_on_self_in_a_models_call_is_found_there():
    definition = """
class Net:
    def __init__(self):
        self.last = None
    def __call__(self, x):
        h = jnp.sin(x)
        self.last = h
        return h * 2
net = Net()
@jax.jit
def step(x):
    return net(x).sum()
step(jnp.ones(3))
"""
    found, ns, error = diagnosed(definition, "net.last + 1")
    assert found.pitfall == "tracer-leak" and found.function == "__call__"
    assert found.where.text == "self.last = h" and "self.last" not in found.fix
    apply(f"class Net:\n    def __init__(self):\n        self.last = None\n{textwrap.indent(found.fix, '    ')}\n", ns)
    assert run("net = Net()\nout = jax.jit(lambda x: net(x).sum())(jnp.ones(3))", ns) is None
    np.testing.assert_allclose(ns["out"], 2 * 3 * np.sin(1.0), rtol=1e-6)


def test_sharp_bits_random_key_reused_is_a_warning_whose_fix_draws_independently():
    ns = namespace()
    run(
        "def noise(key):\n    a = jax.random.normal(key, (3,))\n    b = jax.random.normal(key, (3,))\n    return a, b\n",
        ns,
    )
    a, b = ns["noise"](jax.random.key(0))
    assert (a == b).all()  # the trap: the same numbers twice
    (found,) = doctor.observe_trace(ns["noise"], jax.make_jaxpr(ns["noise"])(jax.random.key(0)))
    assert found.pitfall == "key-reuse" and found.variable == "key"
    apply(found.fix, ns)
    a, b = jax.jit(ns["noise"])(jax.random.key(0))
    assert not (a == b).any()


def test_a_key_split_between_draws_is_not_reuse():
    ns = namespace()
    run(
        "def noise(key):\n    a = jax.random.normal(key, (3,))\n    key, sub = jax.random.split(key)\n"
        "    b = jax.random.normal(key, (3,))\n    return a, b\n",
        ns,
    )
    assert doctor.observe_trace(ns["noise"], jax.make_jaxpr(ns["noise"])(jax.random.key(0))) == []


def test_sharp_bits_jit_on_a_method_gets_a_jitted_function_of_its_attributes_that_sees_changes():
    definition = """
class Scaler:
    def __init__(self, factor, on):
        self.factor = factor
        self.on = on

    @jax.jit
    def apply(self, y):
        if self.on:
            return self.factor * y
        return y

s = Scaler(2.0, True)
"""
    found, ns, error = diagnosed(definition, "s.apply(3.0)")
    assert found.pitfall == "non-array-argument" and found.variable == "self"
    assert 'static_argnames=("on",)' in found.fix and "def apply(self, y):" in found.fix
    apply(found.fix, ns)
    assert run("s = Scaler(2.0, True)\nfirst = s.apply(3.0)\ns.on = False\nsecond = s.apply(3.0)", ns) is None
    assert float(ns["first"]) == 6.0 and float(ns["second"]) == 3.0  # the change is seen, not a stale compile


def test_a_string_setting_passed_to_a_jitted_function_is_made_static():
    found = fix_runs(
        "@jax.jit\ndef act(x, name):\n    return x * 2 if name == 'double' else x\n",
        "act(x, 'double')",
        x=np.float32(1.5),
    )
    assert found.pitfall == "non-array-argument" and found.static_argnames == ("name",)


def test_a_linen_flag_passed_through_apply_is_made_static_by_its_place_and_checked():
    """Flax's batch-norm guide: ``train`` reaches ``__call__`` through ``apply``'s ``*args``, so no
    parameter of the jitted ``apply`` has its name; JAX names it ``args[1]``, and the fix marks
    place 2 of the user's call static on their own ``jax.jit`` line, checked by value."""
    definition = """
import flax.linen as nn
class Normed(nn.Module):
    @nn.compact
    def __call__(self, x, train: bool):
        x = nn.Dense(8)(x)
        x = nn.BatchNorm(use_running_average=not train)(x)
        return nn.Dense(1)(x)
normed = Normed()
xs = jax.random.normal(jax.random.key(0), (16, 4))
normed_vars = normed.init(jax.random.key(1), xs, train=False)
apply_jit = jax.jit(normed.apply)
"""
    found = fix_runs(definition, "apply_jit(normed_vars, xs, False)")
    assert found.pitfall == "python-control-flow" and found.checked, found
    assert found.fix.strip() == "apply_jit = jax.jit(normed.apply, static_argnums=2)", found.fix
    assert "argument 2 of `apply_jit` (`False`)" in str(found.fix_note), found.fix_note


def test_equinox_donation_is_found_at_the_filter_jit_call_that_donated():
    definition = """
import equinox as eqx

@eqx.filter_jit(donate="all")
def step(params):
    return jax.tree_util.tree_map(lambda p: p * 2, params)

params = {"w": jnp.ones(3)}
new = step(params)
"""
    found, ns, error = diagnosed(definition, "params['w'] + 1")
    assert found.pitfall == "donated-buffer" and found.variable == "params"
    assert 'donate="all"' in found.explanation and found.fix.startswith("params = step(params)")
    ns["params"] = {"w": jax.numpy.ones(3)}
    apply(found.fix, ns)
    assert run("after = params['w'] + 1", ns) is None and float(ns["after"][0]) == 3.0


def test_sharp_bits_and_on_arrays_outside_jit_becomes_logical_and():
    found = fix_runs(
        "def both(a, b):\n    return (a > 0) and (b > 0)\n",
        "both(a, b)",
        expected=np.array([True, False]),
        a=np.array([1.0, 2.0]),
        b=np.array([3.0, -4.0]),
    )
    assert found.pitfall == "array-truth-value"


def test_faq_impure_function_warns_of_its_print_and_its_global_and_the_global_fix_restores_eager_results():
    ns = namespace()
    run("y = 0\ndef impure_func(x):\n    print('Inside:', y)\n    return x + y\n", ns)
    with doctor.watch_prints() as printed:
        closed = jax.make_jaxpr(ns["impure_func"])(0)
    found = doctor.observe_trace(ns["impure_func"], closed, printed.text)
    assert [d.pitfall for d in found] == ["print-side-effect", "baked-global"]
    stale = jax.jit(ns["impure_func"])
    assert [int(stale(v)) for v in range(3)] == [0, 1, 2]  # the trap: y stays 0 in the compiled code
    apply(found[1].fix, ns)
    fresh = jax.jit(ns["impure_func"])
    assert [int(fresh(v, v)) for v in range(3)] == [0, 2, 4]  # what it computes without jit


def test_sharp_bits_static_self_mutated_is_a_warning_whose_fix_sees_the_change():
    ns = namespace()
    run(
        """
from functools import partial

class Scaler:
    def __init__(self, factor, on):
        self.factor = factor
        self.on = on

    @partial(jax.jit, static_argnums=0)
    def apply(self, y):
        if self.on:
            return self.factor * y
        return y

s = Scaler(2.0, True)
""",
        ns,
    )
    s = ns["s"]
    assert float(s.apply(3.0)) == 6.0
    s.on = False
    assert float(s.apply(3.0)) == 6.0  # the trap: the change is not seen
    closed = jax.make_jaxpr(lambda y: s.apply(y))(3.0)
    (found,) = doctor.observe_trace(Call(ns["Scaler"].apply, (s, 3.0), {}, function=ns["Scaler"].apply), closed)
    assert found.pitfall == "static-self" and found.function == "apply"
    apply(found.fix, ns)
    assert run("t = Scaler(2.0, True)\nfirst = t.apply(3.0)\nt.on = False\nsecond = t.apply(3.0)", ns) is None
    assert float(ns["first"]) == 6.0 and float(ns["second"]) == 3.0


# Flax NNX's "Functional training loop" (guides/performance): nnx.split before the loop, a plain
# jax.jit step that merges, trains and returns nnx.state, nnx.update after the loop. Here the step
# donates its state (as Flax's examples do for their nnx.jit steps), and the model is used before
# nnx.update: its Variables hold the arrays the first call donated.
NNX_FUNCTIONAL_LOOP = """
from flax import nnx
import optax

class Model(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(2, 3, rngs=rngs)

    def __call__(self, x):
        return self.linear(x)

model = Model(nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
graphdef, state = nnx.split((model, optimizer))

@functools.partial(jax.jit, donate_argnums=1)
def train_step(graphdef, state, x, y):
    model, optimizer = nnx.merge(graphdef, state)

    def loss_fn(model):
        return ((model(x) - y) ** 2).mean()

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss, nnx.state((model, optimizer))

for _ in range(3):
    x, y = jnp.ones((4, 2)), jnp.zeros((4, 3))
    loss, state = train_step(graphdef, state, x, y)
"""
DONATING_LINE = "    loss, state = train_step(graphdef, state, x, y)\n"


def _eager(definition: str, after: str):
    """``after`` evaluated once ``definition`` ran with JAX's jit switched off (nothing is donated)."""
    ns = namespace(functools=functools)
    with jax.disable_jit():
        assert run(definition, ns) is None
        assert run(f"__result__ = {after}", ns) is None
    return np.asarray(ns["__result__"])


def _undonated(after: str):
    """``after`` evaluated once the loop ran jitted without donation (the model keeps its weights)."""
    ns = namespace(functools=functools)
    assert run(NNX_FUNCTIONAL_LOOP.replace("donate_argnums=1", ""), ns) is None
    assert run(f"__result__ = {after}", ns) is None
    return np.asarray(ns["__result__"])


def test_flax_functional_loop_with_a_donated_state_names_the_model_the_split_and_the_donating_call():
    found, ns, error = diagnosed(NNX_FUNCTIONAL_LOOP, "model(jnp.ones((1, 2)))", functools=functools)
    assert "has been deleted" in str(error)
    assert found.pitfall == "donated-nnx-state" and found.variable == "model" and found.function == "train_step"
    assert "`graphdef, state = nnx.split((model, optimizer))`" in found.explanation
    assert "share their arrays" in found.explanation and "`donate_argnums`" in found.explanation
    assert found.fix == (
        "loss, state = train_step(graphdef, state, x, y)\n"
        "nnx.update((model, optimizer), state)  # `model` takes the arrays `train_step` returned"
    )


def test_flax_functional_loop_fix_updates_the_model_and_gives_the_trained_models_output():
    found, _, _ = diagnosed(NNX_FUNCTIONAL_LOOP, "model(jnp.ones((1, 2)))", functools=functools)
    fixed = NNX_FUNCTIONAL_LOOP.replace(DONATING_LINE, textwrap.indent(found.fix, "    ") + "\n")
    assert fixed != NNX_FUNCTIONAL_LOOP
    ns = namespace(functools=functools)
    assert run(fixed, ns) is None and run("__result__ = model(jnp.ones((1, 2)))", ns) is None
    # what Flax's guide computes: the loop without donation, then nnx.update after it, jit off
    trained = _eager(NNX_FUNCTIONAL_LOOP + "nnx.update((model, optimizer), state)\n", "model(jnp.ones((1, 2)))")
    np.testing.assert_allclose(np.asarray(ns["__result__"]), trained, rtol=1e-6)
    assert not np.allclose(trained, _undonated("model(jnp.ones((1, 2)))"))  # the update matters: it trained


def test_flax_functional_loop_clone_alternative_keeps_the_model_as_the_undonated_code_does():
    found, _, _ = diagnosed(NNX_FUNCTIONAL_LOOP, "model(jnp.ones((1, 2)))", functools=functools)
    label, kept = found.alternatives[0]
    assert "a.copy()" in kept and "as it was" in label
    fixed = NNX_FUNCTIONAL_LOOP.replace("graphdef, state = nnx.split((model, optimizer))\n", kept + "\n")
    ns = namespace(functools=functools)
    assert run(fixed, ns) is None and run("__result__ = model(jnp.ones((1, 2)))", ns) is None
    np.testing.assert_allclose(np.asarray(ns["__result__"]), _undonated("model(jnp.ones((1, 2)))"), rtol=1e-6)


def test_a_model_run_before_the_donation_fails_with_jaxs_other_wording_and_is_diagnosed_the_same():
    # a model called once already goes through JAX's fast path, which words the error as a buffer
    # "deleted or donated" (a ValueError) instead of "Array has been deleted" (a RuntimeError)
    found, _, error = diagnosed(
        "model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))\nbefore = model(jnp.ones(2))\n"
        "halve = jax.jit(lambda s: jax.tree_util.tree_map(lambda a: a / 2, s), donate_argnums=0)\n"
        "new_state = halve(nnx.state(model))\n",
        "after = model(jnp.ones(2))",
        nnx=pytest.importorskip("flax.nnx"),
    )
    assert "has been deleted" in str(error) and found.pitfall == "donated-nnx-state"
    assert "`halve`" in found.explanation and found.fix.endswith(
        "nnx.update(model, new_state)  # `model` takes the arrays `halve` returned"
    )


# Flax NNX's checkpointing guide restores through plain dicts (nnx.to_pure_dict); nnx.jit keeps
# an nnx.State's Variables alive when it donates them, but a pure dict's arrays are the model's own.
NNX_PURE_DICT = """
from flax import nnx

model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
params = nnx.to_pure_dict(nnx.state(model))

@nnx.jit(donate_argnames="params")
def decay(params):
    return jax.tree_util.tree_map(lambda a: a * 0.9, params)

params = decay(params)
"""


def test_flax_pure_dict_donated_by_nnx_jit_is_diagnosed_and_its_fix_gives_the_decayed_models_output():
    found, ns, _ = diagnosed(NNX_PURE_DICT, "model(jnp.ones((1, 2)))")
    assert found.pitfall == "donated-nnx-state" and found.variable == "model"
    assert "`params`" in found.explanation and "`decay`" in found.explanation
    assert found.fix.splitlines()[-1].startswith("nnx.update(model, params)")
    fixed = NNX_PURE_DICT.replace("params = decay(params)\n", found.fix + "\n")
    fresh = namespace()
    assert run(fixed, fresh) is None and run("__result__ = model(jnp.ones((1, 2)))", fresh) is None
    # the intended value, by JAX with jit off: the model with its weights decayed once
    expected = _eager_code(NNX_PURE_DICT + "nnx.update(model, params)\n", "model(jnp.ones((1, 2)))")
    np.testing.assert_allclose(np.asarray(fresh["__result__"]), expected, rtol=1e-5)  # XLA fuses the product


def _eager_code(definition: str, after: str):
    ns = namespace()
    with jax.disable_jit():
        assert run(definition, ns) is None and run(f"__result__ = {after}", ns) is None
    return np.asarray(ns["__result__"])


# Flax NNX's model surgery guide (memory-efficient partial initialization): a pretrained state
# donated to the step that builds the new model, here with jax.jit; reading that state again fails.
NNX_SURGERY = """
from flax import nnx

old_state = nnx.state(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))

@functools.partial(jax.jit, donate_argnums=0)
def rescale(old_state):
    return jax.tree_util.tree_map(lambda a: a * 2, old_state)

new_state = rescale(old_state)
"""


def test_flax_state_read_after_it_was_donated_is_a_donated_buffer_whose_fix_rebinds_it():
    found, ns, _ = diagnosed(NNX_SURGERY, "total = old_state['kernel'][...].sum()", functools=functools)
    assert found.pitfall == "donated-buffer" and found.variable == "old_state"
    assert found.fix.startswith("old_state = rescale(old_state)")
    fixed = NNX_SURGERY.replace("new_state = rescale(old_state)\n", found.fix + "\n")
    fresh = namespace(functools=functools)
    assert run(fixed, fresh) is None and run("__result__ = old_state['kernel'][...].sum()", fresh) is None
    expected = _eager(
        NNX_SURGERY.replace("new_state = rescale", "old_state = rescale"), "old_state['kernel'][...].sum()"
    )
    np.testing.assert_allclose(np.asarray(fresh["__result__"]), expected, rtol=1e-6)


def test_sharp_bits_jit_written_at_each_call_reuses_the_compiled_code_and_is_warned_of():
    """JAX's Sharp Bits ("Pure functions"), as the page writes it; the watch on as %load_ext turns it on."""
    was = global_watch.is_watching()
    global_watch.start()
    global_watch.WATCH.clear()  # what other tests' functions left is not this test's
    ns = namespace(jit=jax.jit)
    try:
        _sharp_bits_stale_global(ns)
    finally:
        if not was:
            global_watch.stop()


def _sharp_bits_stale_global(ns):
    source = "g = 0.\ndef impure_uses_globals(x):\n    return x + g\nfirst = jit(impure_uses_globals)(4.)\n"
    assert run(source, ns) is None and run("g = 10.\nsecond = jit(impure_uses_globals)(5.)", ns) is None
    assert float(ns["second"]) == 5.0  # the trap, as the page shows it
    (found,) = doctor.observe_cell(ns)
    assert found.pitfall == "stale-global" and found.function == "impure_uses_globals"
    apply(found.fix, ns)
    assert run("fixed = jit(impure_uses_globals)(5., g)", ns) is None and float(ns["fixed"]) == 15.0
