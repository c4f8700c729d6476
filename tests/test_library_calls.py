"""Callees traced with their own jit semantics: methods jitted in the class body, Flax NNX's
``nnx.jit`` (its static arguments honoured), Equinox's ``eqx.filter_jit`` (non-array leaves static),
and function-valued arguments made static. The truth is JAX's: the traced program, run on the
call's array leaves, gives what the user's own call gives."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.extend.core import jaxpr_as_fun

from jaxmagic.tracing.names import EQUINOX_MARKER

SETUP = """
import functools
from jax import lax
from flax import nnx
import equinox as eqx

class Scaler:
    def __init__(self, k):
        self.k = k

    @functools.partial(jax.jit, static_argnums=0)
    def calc(self, y):
        return y * self.k

scaler = Scaler(3.0)
x = jnp.arange(3.0)
xs = jnp.ones((4, 3))

linear = nnx.Linear(3, 2, rngs=nnx.Rngs(0))

@nnx.jit(static_argnames=("act",))
def forward(m, x, act=True):
    y = m(x)
    return jax.nn.relu(y) if act else y

mlp = eqx.nn.MLP(3, 2, 8, 2, key=jax.random.PRNGKey(0))

@eqx.filter_jit
def batched(model, x):
    return jax.vmap(model)(x)

class Net(eqx.Module):
    w: jax.Array
    act: str = eqx.field(static=True, default="relu")

    @eqx.filter_jit
    def __call__(self, x):
        return jnp.tanh(self.w * x) if self.act == "tanh" else jax.nn.relu(self.w * x)

net = Net(jnp.array([1.0, -2.0, 3.0]), act="tanh")

def loss(model, x, y):
    return jnp.mean((jax.vmap(model)(x) - y) ** 2)

ys = jnp.zeros((4, 2))

def cond_fun(i):
    return i < 10

def body_fun(i):
    return i + 3
"""


@pytest.fixture
def libraries_defined(run):
    run(SETUP).assert_ok()


def leaves_of(report, args):
    return [leaf for leaf in jax.tree_util.tree_leaves(args) if isinstance(leaf, jax.Array)]


def assert_traced_program_computes_the_call(report, args, expected):
    """Running the traced jaxpr on the call's array leaves gives the user's own result."""
    outputs = jaxpr_as_fun(report.jaxpr)(*leaves_of(report, args))
    np.testing.assert_allclose(np.asarray(outputs[-1]), np.asarray(expected), rtol=1e-6)


def test_a_method_jitted_in_the_class_body_keeps_self(ip, run, libraries_defined):
    report = run("%jaxpr -o scaler.calc(x)").assert_ok().result
    assert report.primitive_counts == {"mul": 1} and report.name.endswith("calc")
    ns = ip.user_ns
    assert_traced_program_computes_the_call(report, ns["x"], ns["scaler"].calc(ns["x"]))
    run("%jitcompare -q -n 2 -r 2 scaler.calc(x)").assert_ok()


@pytest.mark.parametrize("act", [True, False])
def test_nnx_jit_static_argnames_are_honoured(ip, run, libraries_defined, act):
    from flax import nnx

    report = run(f"%jaxpr -o forward(linear, xs, act={act})").assert_ok().result
    ns = ip.user_ns
    truth = ns["forward"].trace(ns["linear"], ns["xs"], act=act).traced.jaxpr  # NNX's own trace
    assert str(report.jaxpr) == str(truth)
    assert ("custom_jvp_call" in report.primitive_counts) == act, "relu only when act=True"
    leaves = [*jax.tree_util.tree_leaves(nnx.state(ns["linear"])), ns["xs"]]
    outputs = jaxpr_as_fun(report.jaxpr)(*leaves)
    np.testing.assert_allclose(
        np.asarray(outputs[-1]), np.asarray(ns["forward"](ns["linear"], ns["xs"], act=act)), rtol=1e-6
    )


def test_eqx_filter_jit_makes_non_array_leaves_static(ip, run, libraries_defined):
    report = run("%jaxpr -o batched(mlp, xs)").assert_ok().result
    ns = ip.user_ns
    assert report.primitive_counts["dot_general"] == 3, "three layers, the activation baked in"
    assert_traced_program_computes_the_call(report, (ns["mlp"], ns["xs"]), ns["batched"](ns["mlp"], ns["xs"]))


def test_an_equinox_module_whose_call_is_filter_jitted(ip, run, libraries_defined):
    report = run("%jaxpr -o net(x)").assert_ok().result
    ns = ip.user_ns
    assert "tanh" in report.primitive_counts, "the static field act='tanh' chose the branch"
    assert_traced_program_computes_the_call(report, (ns["net"], ns["x"]), ns["net"](ns["x"]))
    run("%jitcompare -q -n 2 -r 2 net(x)").assert_ok()


@pytest.mark.parametrize(
    "call, expected",
    [
        ("lax.while_loop(cond_fun, body_fun, 0)", 12),
        ("lax.fori_loop(0, 4, lambda i, v: v * 2, x)", np.arange(3.0) * 16),
        ("lax.map(jnp.sin, x)", np.sin(np.arange(3.0))),
    ],
)
def test_function_valued_arguments_are_static_by_themselves(ip, run, libraries_defined, call, expected):
    report = run(f"%jaxpr -o {call}").assert_ok().result
    args = [
        a
        for a in eval(f"({call.split('(', 1)[1]}", dict(ip.user_ns))  # noqa: S307
        if isinstance(a, (int, jax.Array)) and not callable(a)
    ]
    outputs = jaxpr_as_fun(report.jaxpr)(*[jnp.asarray(a) for a in args])
    np.testing.assert_allclose(np.asarray(outputs[-1]), expected, rtol=1e-6)


def test_a_transform_of_a_library_jitted_callee_names_the_idiom_that_works(run, libraries_defined):
    shown = run("%jaxpr -t grad batched(mlp, xs)")
    assert shown.usage_error and "eqx.filter_jit" in shown.usage_error and "eqx.filter_grad" in shown.usage_error


def test_untraceable_leaves_of_a_plain_callee_s_arguments_are_static(ip, run, libraries_defined):
    report = run("%jaxpr -o loss(mlp, xs, ys)").assert_ok().result
    ns = ip.user_ns
    assert len(report.jaxpr.in_avals) == 6 + 2, "the MLP's six arrays and the batch are inputs; its activation is not"
    assert_traced_program_computes_the_call(
        report, (ns["mlp"], ns["xs"], ns["ys"]), ns["loss"](ns["mlp"], ns["xs"], ns["ys"])
    )


def test_a_module_that_holds_arrays_is_an_input_not_a_constant(ip, run, libraries_defined):
    report = run("%jaxpr -o mlp(x)").assert_ok().result
    ns = ip.user_ns
    assert len(report.jaxpr.in_avals) == 6 + 1 and not report.jaxpr.consts
    assert_traced_program_computes_the_call(report, (ns["mlp"], ns["x"]), ns["mlp"](ns["x"]))
    nnx_report = run("%jaxpr -o linear(xs)").assert_ok().result
    assert [str(a) for a in nnx_report.jaxpr.in_avals] == ["float32[2]", "float32[3,2]", "float32[4,3]"]


def test_a_function_like_module_that_holds_arrays_is_an_input_too(ip, run, libraries_defined):
    """``eqx.filter_vmap(model)`` is a module that acts as a function (it has ``__get__``, so Python
    calls it a routine): its model's arrays are inputs too, as ``eqx.filter_jit`` of it traces them
    (as constants, a CNN's weights were 440 KB of constants, and a TPU peak 30% under the user's)."""
    ip.run_cell("batched_mlp = eqx.filter_vmap(mlp)\nxb = jnp.ones((5, 3))")
    report = run("%jaxpr -o --memory batched_mlp(xb)").assert_ok().result
    ns = ip.user_ns
    assert len(report.jaxpr.in_avals) == 6 + 1 and not report.jaxpr.consts
    assert not [b for b in report.live_at_peak if b.kind == "constant" and b.bytes >= 32], report.live_at_peak
    assert_traced_program_computes_the_call(report, (ns["mlp"], ns["xb"]), ns["batched_mlp"](ns["xb"]))


def test_grad_over_untraceable_leaves_names_the_filtered_transform(run, libraries_defined):
    shown = run("%jaxpr -t grad loss(mlp, xs, ys)")
    assert shown.usage_error and "eqx.filter_grad(loss)" in shown.usage_error
    report = run("%jaxpr -o eqx.filter_grad(loss)(mlp, xs, ys)").assert_ok().result
    assert report.primitive_counts["dot_general"] >= 6


NNX_SETUP = """
class Noisy(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(2, 3, rngs=rngs)
        self.dropout = nnx.Dropout(rate=0.5)

    def __call__(self, x, rngs):
        return self.dropout(self.linear(x), rngs=rngs)

noisy = Noisy(nnx.Rngs(0))
stream = nnx.Rngs(1)
two = jnp.ones((4, 2))

def plain_loss(model, x, rngs):
    return jnp.mean(model(x, rngs) ** 2)
"""


@pytest.mark.parametrize("call", ["noisy(two, stream)", "plain_loss(noisy, two, stream)"])
def test_nnx_objects_given_to_a_plain_callee_are_traced_as_nnx_jit_does(ip, run, libraries_defined, call):
    run(NNX_SETUP).assert_ok()
    count_before = int(ip.user_ns["stream"].default.count[...])
    report = run(f"%jaxpr -o {call}").assert_ok().result
    assert report.primitive_counts["random_bits"] == 1 and report.primitive_counts["dot_general"] == 1
    assert int(ip.user_ns["stream"].default.count[...]) == count_before, "tracing left the user's Rngs alone"


@pytest.mark.parametrize(
    "call, how",
    [
        ("batched(mlp, xs)", "eqx.filter_jit"),
        ("loss(mlp, xs, ys)", "eqx.filter_jit"),  # a plain function given a module holding functions
        ("forward(linear, xs, act=False)", "nnx.jit"),
    ],
)
def test_jitcompare_times_a_library_callee_with_its_own_jit(ip, run, libraries_defined, call, how):
    comparison = run(f"%jitcompare -o -q -n 2 -r 2 {call}").assert_ok().result
    assert set(comparison.modes) == {"eager", "jit"} and comparison.compile.compile_s > 0
    assert how in comparison.setups["jit"]
    assert not [w for w in comparison.warnings if "differ" in w], comparison.warnings


def test_the_marker_an_eqx_filter_jit_program_returns_is_named_among_the_buffers(ip, run, libraries_defined):
    """``eqx.filter_jit`` compiles an ``int32`` marker as its first output: traced as Equinox
    compiles it, its buffer is named as that output, not "(no source line)"."""
    report = run("%jaxpr -o --memory batched(mlp, xs)").assert_ok().result
    assert report.output_names[0] == EQUINOX_MARKER
    labels = {b.label for b in report.live_at_peak}
    assert f"output {EQUINOX_MARKER}" in labels and "(no source line)" not in labels, labels
