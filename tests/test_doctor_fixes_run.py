"""Every fix the doctor leads with runs: applied to the failing example, the call works and computes
what JAX computes for the same code with jit switched off. The fix fits the value: data stays
traced (``jnp.where`` / ``lax.cond``), a setting is made static."""

from __future__ import annotations

import textwrap

import jax
import numpy as np
from doctor_cases import apply, diagnosed, fix_runs, run

X = np.array([1.0, -2.0, 3.0, -4.0], dtype=np.float32)


def test_a_condition_on_data_and_a_threshold_is_not_fixed_by_marking_the_threshold_static():
    source = """
    @jax.jit
    def above(v, t):
        if v.mean() > t:
            return v * 2
        return v
    """
    found = fix_runs(source, "above(x, 0.5)", x=X)
    assert found.pitfall == "python-control-flow"
    assert found.static_argnames == () and "static" not in found.fix
    assert not any("static" in code for _, code in found.alternatives)  # `t` static alone would still raise


def test_and_between_two_traced_conditions_becomes_logical_and():
    source = """
    @jax.jit
    def both(x, y):
        if x > 0 and y > 0:
            return x + y
        return x - y
    """
    found = fix_runs(source, "both(a, b)", a=np.float32(1.0), b=np.float32(2.0))
    assert "logical_and(x > 0, y > 0)" in found.fix and " and " not in found.fix.split("return", 1)[1]


def test_a_data_dependent_if_leads_with_where_not_static():
    source = """
    @jax.jit
    def relu(x):
        if x > 0:
            y = x
        else:
            y = 0.0
        return y
    """
    found = fix_runs(source, "relu(s)", s=np.float32(3.0))
    assert "where(x > 0" in found.fix and found.static_argnames == ()


def test_a_python_float_threshold_keeps_where_first_and_offers_static_second():
    source = """
    @jax.jit
    def clip(x, limit):
        if limit > 1.0:
            return x * limit
        return x
    """
    found = fix_runs(source, "clip(x, 2.0)", x=X)
    assert found.static_argnames == ()
    assert any('static_argnames=("limit",)' in code for _, code in found.alternatives)


def test_a_bool_setting_leads_with_static():
    source = """
    @jax.jit
    def act(x, use_relu):
        if use_relu:
            return jnp.maximum(x, 0)
        return jnp.tanh(x)
    """
    found = fix_runs(source, "act(x, True)", x=X)
    assert found.static_argnames == ("use_relu",)


def test_a_float_size_is_not_a_traced_value_and_the_fix_is_floor_division():
    source = """
    @jax.jit
    def half_zeros(x):
        return jnp.zeros(x.shape[0] / 2)
    """
    found = fix_runs(source, "half_zeros(x)", expected=np.zeros(2), x=X)  # it fails eagerly too
    assert found.pitfall == "float-size"
    assert "x.shape[0] // 2" in found.fix and "traced" not in found.explanation


def test_a_float_size_outside_jit_is_diagnosed_the_same():
    found, ns, error = diagnosed("def half(x):\n    return jnp.ones(x.shape[0] / 2)\n", "half(x)", x=X)
    assert found.pitfall == "float-size"
    apply(found.fix, ns)
    assert run("y = half(x)", ns) is None and ns["y"].shape == (2,)


def test_range_of_int_of_a_traced_count_gets_a_fix_that_runs():
    source = """
    @jax.jit
    def repeat_add(x, n):
        total = x
        for _ in range(int(n)):
            total = total + x
        return total
    """
    found = fix_runs(source, "repeat_add(x, 3)", x=X)
    assert "range(n.astype(int))" not in found.fix


def test_nnx_jit_gets_its_own_static_argnames_not_a_jax_jit_stacked_on_top():
    source = """
    from flax import nnx

    class Scale(nnx.Module):
        def __init__(self):
            self.w = nnx.Param(jnp.full(4, 2.0))

    @nnx.jit
    def forward(model, x, use_relu):
        y = x * model.w
        if use_relu:
            return jnp.maximum(y, 0)
        return y

    model = Scale()
    """
    found = fix_runs(source, "forward(model, x, True)", x=X)
    assert found.fix.splitlines()[0] == '@nnx.jit(static_argnames=("use_relu",))'
    assert "jax.jit" not in found.fix


def test_eqx_filter_jit_is_fixed_by_passing_a_python_value():
    source = """
    import equinox as eqx

    @eqx.filter_jit
    def head(x, n):
        return x[:n]
    """
    found = fix_runs(source, "head(x, jnp.array(2))", fixed_call="head(x, 2)", x=X)
    assert found.fix == "head(x, 2)" and "eqx.filter_jit" in found.fix_note
    assert "jax.jit" not in found.fix


def test_a_global_counter_is_not_turned_into_a_parameter():
    import jax
    from doctor_cases import namespace

    from jaxmagic import doctor

    source = """
    n_calls = 0
    scale = 3.0

    def counted(x):
        global n_calls
        n_calls += 1
        return x * scale
    """
    ns = namespace()
    assert run(source, ns) is None
    found = doctor.observe_trace(ns["counted"], jax.make_jaxpr(ns["counted"])(X))
    assert [d.variable for d in found if d.pitfall == "baked-global"] == ["scale"]
    (baked,) = found
    compile(baked.fix, "<fix>", "exec")  # no `global n_calls` left beside a parameter n_calls
    apply(baked.fix, ns)
    np.testing.assert_allclose(jax.jit(ns["counted"])(X, 3.0), X * 3.0)


def test_an_equinox_field_used_as_a_size_is_declared_static():
    source = """
    import equinox as eqx

    class Head(eqx.Module):
        weight: jax.Array
        n: int

        def __call__(self, x):
            return x[:self.n] * self.weight[:self.n]

    @jax.jit
    def apply(model, x):
        return model(x)

    model = Head(jnp.arange(4.0), 2)
    """
    found = fix_runs(
        source,
        "apply(model, x)",
        expected=np.array([0.0, -2.0], dtype=np.float32),
        fixed_call="apply(Head(jnp.arange(4.0), 2), x)",
        x=X,
    )
    assert found.pitfall == "traced-shape" and "n: int = eqx.field(static=True)" in found.fix
    assert "jax.jit(static_argnames" not in found.fix


def test_an_nnx_state_donated_in_place_is_fixed_by_updating_the_model_with_the_result():
    from flax import nnx

    definition = """
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    halve = jax.jit(lambda s: jax.tree_util.tree_map(lambda a: a / 2, s), donate_argnums=0)
    new_state = halve(nnx.state(model))
    """
    found, ns, _ = diagnosed(definition, "model(jnp.ones(2))", nnx=nnx)
    assert found.pitfall == "donated-nnx-state" and found.variable == "model"
    kept_label, kept = found.alternatives[0]
    assert kept == "new_state = halve(jax.tree_util.tree_map(lambda a: a.copy(), nnx.state(model)))"
    fixed = textwrap.dedent(definition).replace("new_state = halve(nnx.state(model))", found.fix)
    fresh = {**ns}
    assert run(fixed, fresh) is None and run("__result__ = model(jnp.ones(2))", fresh) is None
    # the intended value, by JAX with jit off: the model with its weights halved
    eager = {**ns}
    with jax.disable_jit():
        assert (
            run(textwrap.dedent(definition) + "nnx.update(model, new_state)\n__result__ = model(jnp.ones(2))", eager)
            is None
        )
    np.testing.assert_allclose(np.asarray(fresh["__result__"]), np.asarray(eager["__result__"]), rtol=1e-5)
    # donating a copy instead leaves the model as the un-donated code does
    copied = {**ns}
    assert run(textwrap.dedent(definition).replace("new_state = halve(nnx.state(model))", kept), copied) is None
    assert run("__result__ = model(jnp.ones(2))", copied) is None
    undonated = {**ns}
    assert run(textwrap.dedent(definition).replace("donate_argnums=0", ""), undonated) is None
    assert run("__result__ = model(jnp.ones(2))", undonated) is None
    np.testing.assert_allclose(np.asarray(copied["__result__"]), np.asarray(undonated["__result__"]), rtol=1e-6)


def test_an_assignment_to_at_becomes_a_call_of_its_method_whose_result_is_kept():
    source = """
    def reset(v):
        v.at[0] = 10.0
        return v * 2
    """
    found = fix_runs(source, "reset(jnp.ones(3))", expected=np.array([20.0, 2.0, 2.0]))
    assert found.pitfall == "at-assignment" and found.variable == "v" and found.checked
    assert "v = v.at[0].set(10.0)" in found.fix and "`v.at[0]`" in found.explanation


def test_an_augmented_assignment_to_at_under_jit_becomes_the_matching_method():
    source = """
    @jax.jit
    def bump(v, i):
        v.at[i] += 1.0
        return v
    """
    found = fix_runs(source, "bump(jnp.zeros(3), 2)", expected=np.array([0.0, 0.0, 1.0]))
    assert found.pitfall == "at-assignment" and "v = v.at[i].add(1.0)" in found.fix and found.checked
    assert "`.add(...)`" in found.fix_note


def test_a_traced_product_of_the_shape_becomes_the_array_s_size():
    # The reshape of JAX's "sharp bits" page: the product of a shape made into an array is traced.
    for product in ("jnp.array(x.shape).prod()", "jnp.prod(jnp.array(x.shape))"):
        source = f"""
        @jax.jit
        def flatten(x):
            return x.reshape({product})
        """
        found = fix_runs(source, "flatten(x)", x=np.ones((2, 3), np.float32))
        assert found.pitfall == "traced-shape"
        assert "x.reshape(x.size)" in found.fix
