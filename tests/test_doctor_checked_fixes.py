"""The doctor is right or silent, and a fix is shown only once it is checked: over the whole
doctor corpus (the pages' failing examples, the cases below), every fix shown was traced on the
user's own arguments (``checked``) or its card says plainly that it could not be; every checked
fix, applied, runs and computes what JAX computes for the code with jit switched off; checking
leaves the user's namespace and objects as they were."""

from __future__ import annotations

import inspect
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from doctor_cases import diagnosed, namespace, run
from test_doctor_corpus import FIXES_THAT_RUN, SILENT

from jaxmagic import doctor
from jaxmagic.tracing import callables

# (name, definition, failing call, pitfall or None (silent), call after the fix or None, what the
# fixed code computes: an expression evaluated with jit switched off, or None: the call itself)
MORE = [
    (
        "an unhashable static dict read by key",
        """
     from functools import partial
     @partial(jax.jit, static_argnames=("config",))
     def scaled(x, config):
         return x * config["scale"]
     """,
        "out = scaled(jnp.ones(3), {'scale': 2.0})",
        "unhashable-static",
        "__fixed__",
        "jnp.ones(3) * 2.0",
    ),
    (
        "a ShapeDtypeStruct given to a jitted call",
        """
     @jax.jit
     def double(x):
         return x * 2
     """,
        "out = double(jax.ShapeDtypeStruct((3,), jnp.float32))",
        "shape-struct-argument",
        "__fixed__",
        "jax.ShapeDtypeStruct((3,), jnp.float32)",
    ),
    (
        "nnx.jit: print(f'{float(loss):.3f}')",
        """
     from flax import nnx
     @nnx.jit
     def step(model, x):
         loss = jnp.mean(model(x) ** 2)
         print(f"{float(loss):.3f}")
         return loss
     model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
     """,
        "step(model, jnp.ones((1, 2)))",
        "python-scalar-conversion",
        None,
        None,
    ),
    (
        "grad through a jitted fori_loop with a traced bound",
        """
     @jax.jit
     def power(x, n):
         return jax.lax.fori_loop(0, n, lambda i, acc: acc * x, 1.0)
     """,
        "jax.grad(power)(2.0, 3)",
        "dynamic-loop-grad",
        None,
        None,
    ),
    (
        "grad through fori_loop, jitted at the call",
        """
     def power(x, n):
         return jax.lax.fori_loop(0, n, lambda i, acc: acc * x, 1.0)
     """,
        "slope = jax.jit(jax.grad(power))(2.0, 3)",
        "dynamic-loop-grad",
        "__fixed__",
        "jax.grad(power)(2.0, 3)",
    ),
    (
        "grad through a while_loop whose number of steps depends on the value (JAX's control-flow page)",
        """
     def doubled_until_ten(x):
         return jax.lax.while_loop(lambda v: v < 10.0, lambda v: v * 2.0, x)
     grad_of_while = jax.grad(doubled_until_ten)
     """,
        "grad_of_while(1.0)",
        "dynamic-loop-grad",
        None,
        None,
    ),
    (
        "grad through a while_loop, jax.grad written at the call",
        """
     def doubled_until_ten(x):
         return jax.lax.while_loop(lambda v: v < 10.0, lambda v: v * 2.0, x)
     """,
        "slope = jax.grad(doubled_until_ten)(3.0)",
        "dynamic-loop-grad",
        "__fixed__",
        "jax.grad(doubled_until_ten)(3.0)",
    ),
    (
        "a loss returning a tuple without has_aux",
        """
     def loss_fn(w, x):
         pred = x @ w
         return jnp.mean(pred ** 2), pred
     """,
        "grads = jax.grad(loss_fn)(jnp.ones(3), jnp.ones((2, 3)))",
        "grad-has-aux",
        "__fixed__",
        "jax.grad(lambda w, x: loss_fn(w, x)[0])(jnp.ones(3), jnp.ones((2, 3)))",
    ),
    (
        "a NumPy array made inside the function, indexed by a traced array (JAX issue 553)",
        "import numpy as np\n@jax.jit\ndef positions(x):\n    return np.arange(x.shape[0])[x]\n",
        "positions(jnp.array([2, 0, 1]))",
        "numpy-in-jit",
        None,
        None,
    ),
    (
        "a gradient at an integer (JAX issue 2663)",
        "grad_tanh = jax.grad(jnp.tanh)\n",
        "slope = grad_tanh(2)",
        "grad-of-integer",
        "__fixed__",
        "jax.grad(jnp.tanh)(2.0)",
    ),
    (
        "a gradient at an integer array, the second of two arguments an int too",
        "def power_sum(x, n):\n    return jnp.sum(x ** n)\nxs = jnp.arange(3)\n",
        "grads = jax.grad(power_sum)(xs, 2)",
        "grad-of-integer",
        "__fixed__",
        "jax.grad(power_sum)(jnp.arange(3.0), 2)",
    ),
]

VMAP_SIZES = (
    "def total(a, b):\n    return jnp.sum(a) + jnp.sum(b)\nX = jnp.ones((10, 4))\nU = jnp.arange(20.0).reshape(10, 2)\n"
)
ROW_BY_ROW = "jnp.stack([total(X[i], U[i]) for i in range(10)])"  # what vmap means: the function on each row
MORE += [
    (
        "jax.vmap with in_axes that map axes of other sizes, called at once (JAX issue 705)",
        VMAP_SIZES,
        "out = jax.vmap(total, in_axes=(0, 1))(X, U)",
        "vmap-sizes",
        "__fixed__",
        ROW_BY_ROW,
    ),
    (
        "jax.vmap with in_axes that map axes of other sizes, defined in another cell",
        VMAP_SIZES + "mapped_total = jax.vmap(total, in_axes=(0, 1))\n",
        "out = mapped_total(X, U)",
        "vmap-sizes",
        "mapped_total(X, U)",
        ROW_BY_ROW,
    ),
    (
        "jax.vmap over a batch and a vector the same for every row",
        "def scale(xs, w):\n    return xs * w\nxs = jnp.arange(24.0).reshape(8, 3)\nw = jnp.array([1.0, 2.0, 3.0])\n",
        "out = jax.vmap(scale)(xs, w)",
        "vmap-sizes",
        "__fixed__",
        "xs * w",
    ),
]

MORE += [
    (
        "jax.jit of a lambda given an Equinox MLP, which holds its activation functions",
        """
     import equinox as eqx
     mlp = eqx.nn.MLP(in_size=2, out_size=3, width_size=8, depth=1, key=jax.random.PRNGKey(1))
     xs = jnp.linspace(0.0, 1.0, 8).reshape(4, 2)
     def batched(model, x):
         return jax.jit(lambda m, v: jax.vmap(m)(v))(model, x)
     """,
        "out = batched(mlp, xs)",
        "non-array-argument",
        None,
        None,
    ),
    (
        "jax.jit of a named function given an Equinox MLP, at the top level",
        """
     import equinox as eqx
     mlp = eqx.nn.MLP(in_size=2, out_size=3, width_size=8, depth=1, key=jax.random.PRNGKey(1))
     xs = jnp.linspace(0.0, 1.0, 8).reshape(4, 2)
     def apply(model, x):
         return jax.vmap(model)(x)
     """,
        "out = jax.jit(apply)(mlp, xs)",
        "non-array-argument",
        "__fixed__",
        "apply(mlp, xs)",
    ),
]

NNX_CLOSURE = [
    (
        "an NNX BatchNorm captured by a jax.jit function",
        """
     from flax import nnx
     model = nnx.BatchNorm(2, rngs=nnx.Rngs(0))
     @jax.jit
     def forward(x):
         return model(x) * 2
     """,
        "out = forward(jnp.arange(8.0).reshape(4, 2))",
        "nnx-closure",
        "__fixed__",
        "model(jnp.arange(8.0).reshape(4, 2)) * 2",
    ),
    (
        "an NNX model and optimizer captured by an nnx.jit train step",
        """
     from flax import nnx
     import optax
     model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
     optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
     @nnx.jit
     def train(x):
         def loss_fn(model):
             return jnp.mean(model(x) ** 2)
         loss, grads = nnx.value_and_grad(loss_fn)(model)
         optimizer.update(model, grads)
         return loss
     """,
        "loss = train(jnp.ones((1, 2)))",
        "nnx-closure",
        "__fixed__",
        "jnp.mean(model(jnp.ones((1, 2))) ** 2)",
    ),
]
MORE += NNX_CLOSURE

# the trace-time cases: (name, definition, function, arguments, the warnings' pitfalls)
TRACED = [
    (
        "print inside a pure_callback host function",
        """
     import numpy
     def host_log(x):
         print("host sees", x)
         return numpy.asarray(x) * 2
     def f(x):
         return jax.pure_callback(host_log, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
     """,
        "f",
        (np.ones(3, np.float32),),
        [],
    ),
    (
        "jax.jit of a bound method that changes its object (stateful computations)",
        """
     class Counter:
         def __init__(self):
             self.n = 0
         def count(self):
             self.n += 1
             return self.n
     counter = Counter()
     fast_count = jax.jit(counter.count)
     """,
        "fast_count",
        (),
        ["state-mutation"],
    ),
    (
        "Sharp Bits: print while tracing",
        """
     def noisy(x):
         print("Executing function", x)
         return x * 2
     """,
        "noisy",
        (np.float32(4.0),),
        ["print-side-effect"],
    ),
    (
        "Sharp Bits: a global baked in",
        """
     offset = 1.0
     def shifted(x):
         return x + offset
     """,
        "shifted",
        (np.ones(3, np.float32),),
        ["baked-global"],
    ),
    (
        "random: one key, two draws",
        """
     def noise(key):
         a = jax.random.normal(key, (3,))
         b = jax.random.normal(key, (3,))
         return a + b
     """,
        "noise",
        (jax.random.key(0),),
        ["key-reuse"],
    ),
]

CORPUS = list(FIXES_THAT_RUN)
CORPUS += [(page, "", call, None, None, None) for page, call in SILENT]
CORPUS += MORE


def verdict(source: str, call: str, pitfall, fixed_call, expected, *, said: bool = True) -> tuple[str, str]:
    """``right``, ``silent`` or ``wrong`` for one case, with what was wrong (``said=False``: whether
    a fix shown says it was checked is not judged, only whether it runs)."""
    ns = namespace()
    assert run(textwrap.dedent(source) or "pass", ns) is None, "the definitions themselves must run"
    error = run(call, ns)
    assert error is not None, f"expected `{call}` to fail"
    found = doctor.diagnose(error)
    if found is None:
        return ("right", "") if pitfall is None else ("silent", "no diagnosis")
    if pitfall is None:
        return "wrong", f"a diagnosis where JAX's error stands: {found.pitfall}"
    if found.pitfall != pitfall:
        return "wrong", f"{found.pitfall}, not {pitfall}"
    if not found.fix:
        return "silent", "no fix shown"
    checked, note = getattr(found, "checked", False), getattr(found, "check_note", "")
    if said and not checked:
        if "Not checked on your arguments" not in note:
            return "wrong", "a fix shown unchecked, and not said so"
        return "right", "unchecked, and said so"
    if said and not any(words in note for words in ("Checked on your arguments", "Checked by running your code")):
        return "wrong", "a checked fix not said to be"
    return _runs(found, ns, source, call, fixed_call, expected)


def _runs(found, ns, source, call, fixed_call, expected) -> tuple[str, str]:
    """A checked fix, applied in the user's namespace: the call runs and computes the intended value."""
    failed = run(found.fix, ns)
    if failed is not None:
        return "wrong", f"the fix failed: {type(failed).__name__}: {failed}"
    if fixed_call != "__fixed__":  # else the fix is the call itself
        again = run(f"__result__ = {fixed_call or call}", ns)
        if again is not None:
            return "wrong", f"the fixed call failed: {type(again).__name__}: {again}"
    eager = namespace(__result__=expected)
    assert run(textwrap.dedent(source) or "pass", eager) is None
    if expected is None or isinstance(expected, str):
        with jax.disable_jit():
            assert run(f"__result__ = {expected or call}", eager) is None, "the intended value must compute"
    if fixed_call == "__fixed__":
        target = ast_target(found.fix)
        got = ns[target] if target else None
    else:
        got = ns["__result__"]
    want = eager["__result__"]
    if isinstance(want, jax.ShapeDtypeStruct):
        return ("right", "") if (got.shape, got.dtype) == (want.shape, want.dtype) else ("wrong", f"{got} vs {want}")
    got_leaves, want_leaves = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    if isinstance(got, tuple) and not isinstance(want, tuple):
        got_leaves = got_leaves[:1]  # (value, aux) where the value alone is intended
    if len(got_leaves) != len(want_leaves) or not all(
        np.allclose(np.asarray(g), np.asarray(w), rtol=1e-5) for g, w in zip(got_leaves, want_leaves, strict=True)
    ):
        return "wrong", f"the fixed code computes {got}, JAX computes {want}"
    return "right", ""


def ast_target(fix: str) -> str | None:
    """The first name the fix's last statement assigns (``grads, aux = ...`` -> ``grads``)."""
    import ast

    last = ast.parse(fix).body[-1]
    if isinstance(last, ast.Assign):
        target = last.targets[0]
        names = [target] if isinstance(target, ast.Name) else getattr(target, "elts", [])
        return names[0].id if names and isinstance(names[0], ast.Name) else None
    return None


@pytest.mark.parametrize("page, source, call, pitfall, fixed_call, expected", CORPUS, ids=[c[0] for c in CORPUS])
def test_the_doctor_is_right_or_silent_and_every_fix_shown_is_checked(
    page, source, call, pitfall, fixed_call, expected
):
    kind, why = verdict(source, call, pitfall, fixed_call, expected)
    assert kind == "right", f"{page}: {kind}: {why}"


@pytest.mark.parametrize("page, source, function, arguments, pitfalls", TRACED, ids=[c[0] for c in TRACED])
def test_trace_time_warnings_are_right_or_silent(page, source, function, arguments, pitfalls):
    ns = namespace()
    assert run(textwrap.dedent(source), ns) is None
    from jaxmagic.tracing.call import Call

    fn = ns[function]
    with doctor.watch_prints() as printed:
        closed = jax.make_jaxpr(fn)(*arguments)
    found = doctor.observe_trace(Call(fn, arguments, {}, function=callables.python_function(fn)), closed, printed.text)
    assert [d.pitfall for d in found] == pitfalls
    for warning in found:
        assert warning.checked or not warning.fix or "Not checked on your arguments" in warning.check_note
        if warning.checked:  # the fixed code runs, called as the fix says
            fixed = {**ns, "arguments": arguments}
            assert run(warning.fix, fixed) is None
            called = warning.fix_call or f"{function}(*arguments)"
            new = [p for p in inspect.signature(fixed[function]).parameters][len(arguments) :]
            if new and not warning.fix_call:  # a global made a parameter: passed its value
                called = f"{function}(*arguments, {', '.join(new)})"
            assert (
                run(f"__result__ = jax.jit({called.split('(')[0]})({called.split('(', 1)[1]}", {**fixed, **ns_of(fn)})
                is None
            )


def ns_of(fn) -> dict:
    """The names a fix call reads: ``self`` for a bound method's object."""
    bound = getattr(getattr(fn, "__wrapped__", fn), "__self__", None)
    return {"self": bound} if bound is not None else {}


NNX_CASES = [MORE[2], *NNX_CLOSURE]


@pytest.mark.parametrize("page, source, call, pitfall, fixed_call, expected", NNX_CASES, ids=[c[0] for c in NNX_CASES])
def test_checking_a_fix_leaves_the_users_namespace_and_nnx_objects_as_they_were(
    page, source, call, pitfall, fixed_call, expected
):
    ns = namespace()
    assert run(textwrap.dedent(source), ns) is None
    error = run(call, ns)
    before = {k: v for k, v in ns.items() if k != "__builtins__"}
    objects = {name: ns[name] for name in ("model", "optimizer") if name in ns}
    arrays = {name: [np.asarray(a) for a in jax.tree_util.tree_leaves(nnx_state(o))] for name, o in objects.items()}
    found = doctor.diagnose(error)
    assert found.pitfall == pitfall and found.checked
    assert {k: v for k, v in ns.items() if k != "__builtins__"} == before  # the same names, the same objects
    for name, obj in objects.items():
        leaves = jax.tree_util.tree_leaves(nnx_state(obj))
        assert not any(isinstance(leaf, jax.core.Tracer) for leaf in leaves), f"{name} holds a tracer"
        for was, now in zip(arrays[name], leaves, strict=True):
            np.testing.assert_array_equal(was, np.asarray(now))


def nnx_state(model):
    from flax import nnx

    return nnx.state(model)


def test_a_fix_that_does_not_trace_on_the_arguments_is_not_shown():
    from jaxmagic.doctor.checked_fixes import checked_diagnosis
    from jaxmagic.doctor.fix_check import UserCall, check

    def first(x, n):
        return x[:n]

    call = UserCall(globals={"jax": jax, "first": first}, callee_name="first", args=(jnp.ones(3), 2), kwargs={})
    wrong = "@jax.jit\ndef first(x, n):\n    return x[:n]"
    right = '@jax.jit(static_argnames=("n",))\ndef first(x, n):\n    return x[:n]'
    assert check(wrong, call).outcome == "failed" and check(right, call).outcome == "same"
    shown = checked_diagnosis(
        doctor.Diagnosis("traced-shape", explanation="n is traced.", fix=wrong, alternatives=(("Or:", right),)), call
    )
    assert shown.fix == right and shown.checked and shown.alternatives == ()
    hidden = checked_diagnosis(doctor.Diagnosis("traced-shape", explanation="n is traced.", fix=wrong), call)
    assert hidden.fix == "" and not hidden.checked and "run on your arguments, it still fails" in hidden.fix_note


def test_a_fix_withdrawn_for_the_users_own_error_points_at_the_arguments_not_at_jaxmagic():
    """Passing a string to a jitted function that multiplies: making it static would only move the
    error into the user's own code. The card withholds that fix, says why in the user's terms (the
    error their function raises), and does not call it jaxmagic's failure."""
    found, _, _ = diagnosed("@jax.jit\ndef sq(x):\n    return x * x\n", 'sq("oops")')
    assert found is not None and found.pitfall == "non-array-argument"
    assert found.fix == "" and not found.checked
    assert "can't multiply sequence" in found.fix_note and "what the function expects" in found.fix_note
    assert "jaxmagic" not in found.fix_note


def test_the_card_says_whether_the_fix_was_checked():
    ns = namespace()
    assert run("@jax.jit\ndef first(x, n):\n    return x[:n]\n", ns) is None
    found = doctor.diagnose(run("first(jnp.ones(3), 2)", ns))
    assert found.checked
    assert "Checked on your arguments" in found.to_text()
    html = found._repr_mimebundle_()["text/html"]
    assert 'data-checked="true"' in html and "Checked on your arguments" in html


def counts(*, said: bool = True) -> dict[str, int]:
    """Right / silent / wrong over the corpus (``python tests/test_doctor_checked_fixes.py``)."""
    tally = {"right": 0, "silent": 0, "wrong": 0}
    for page, source, call, pitfall, fixed_call, expected in CORPUS:
        try:
            kind, why = verdict(source, call, pitfall, fixed_call, expected, said=said)
        except Exception as exc:  # a case the doctor crashed on counts as wrong
            kind, why = "wrong", f"{type(exc).__name__}: {exc}"
        tally[kind] += 1
        if kind != "right":
            print(f"{kind:6} {page}: {why[:160]}")
    return tally


if __name__ == "__main__":
    print("fixes that run, checked or not:", counts(said=False))
    print("and each fix says whether it was checked:", counts())


def test_a_fix_of_top_level_code_says_it_was_checked_by_running_it_not_on_arguments():
    """A cell's own statements take no arguments: the note says what the check ran on."""
    from doctor_cases import diagnosed

    found, _, _ = diagnosed("import jax.numpy as jnp\n", "x = jnp.zeros(3)\nx[0] = 1.0")
    assert found is not None and found.pitfall == "in-place-update" and found.checked
    assert str(found.check_note).startswith("Checked by running your code:"), found.check_note
    found, _, _ = diagnosed(
        "import jax, jax.numpy as jnp\n@jax.jit\ndef put(x):\n    x[0] = 1.0\n    return x\n", "put(jnp.zeros(3))"
    )
    assert found is not None and found.pitfall == "in-place-update" and found.checked
    assert str(found.check_note).startswith("Checked on your arguments:"), found.check_note


def test_a_fix_that_is_one_expression_says_it_runs_and_names_no_error_it_did_not_see():
    """``grad_tanh(2.0)`` for ``grad_tanh(2)``: the check runs the expression, and the user's call
    is not run again, so the note claims no error of it."""
    from doctor_cases import diagnosed

    found, _, _ = diagnosed("grad_tanh = jax.grad(jnp.tanh)\n", "slope = grad_tanh(2)")
    assert found is not None and found.pitfall == "grad-of-integer" and found.checked
    assert found.fix.strip() == "slope = grad_tanh(2.0)"
    assert str(found.check_note) == "Checked by running your code: the fix runs.", found.check_note
