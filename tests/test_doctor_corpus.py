"""The doctor on the failing examples of JAX's own documentation (the Sharp Bits, the JIT and
control-flow tutorials, the errors reference) and of Flax and Equinox: each example is written
here in its own words, with the trap the page shows. For each, the diagnosis JAX's page calls for
(or none, where the page shows a plain error), and its fix, applied, runs and computes what JAX
computes for the code with jit switched off (or what the page says it should)."""

from __future__ import annotations

import textwrap

import jax
import numpy as np
import pytest
from doctor_cases import apply, diagnosed, fix_runs, namespace, run

from jaxmagic import doctor
from jaxmagic.call import Call

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
    ("a typo: jnp.softmax", "jnp.softmax(jnp.ones(3))"),
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
