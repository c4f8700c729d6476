"""The jit mode's first call is a first call, whatever jitted the callee: after the user has
called their own ``jax.jit``, ``nnx.jit`` or ``eqx.filter_jit`` wrapper (of a function, a bound
method, a ``functools.partial``, an Equinox module's method), ``%jitcompare`` still traces and
compiles anew, computes the user's values, and leaves the user's wrapper's cache as it was.

The compilations are counted twice: by the first-call split, and from outside, by the log JAX
writes with ``jax_log_compiles`` on."""

import functools

import jax
import jax.numpy as jnp
import pytest
from test_recompiles_library_fixes import Compiles  # JAX's own log of what it compiles

from jaxmagic.timing import compare, modes, stopwatch
from jaxmagic.tracing import libraries
from jaxmagic.tracing.call import resolve_call

eqx = pytest.importorskip("equinox")
nnx = pytest.importorskip("flax.nnx")


def body(x):
    for _ in range(3):
        x = jnp.sin(x) @ jnp.ones((8, 8))
    return x


def scaled(x, k):
    return body(x) * k


def repeated(x, times):  # under eqx.filter_jit, the int ``times`` is static
    for _ in range(times):
        x = jnp.cos(x)
    return x


class Holder:
    def __init__(self, k):
        self.k = k

    def apply(self, x):
        return body(x) * self.k


class Model(eqx.Module):
    w: jax.Array

    @eqx.filter_jit
    def __call__(self, x):
        return body(x) @ self.w

    @eqx.filter_jit
    def method(self, x):
        return jnp.tanh(body(x) @ self.w)


class Callable(eqx.Module):
    w: jax.Array
    activation: object  # a function: a leaf eqx.filter_jit keeps static

    def __call__(self, x):
        return self.activation(body(x) @ self.w)


class Plain(eqx.Module):
    w: jax.Array

    def apply(self, x):
        return body(x) @ self.w


class Dense(nnx.Module):
    def __init__(self):
        self.w = nnx.Param(jnp.full((8, 8), 0.5))


@nnx.jit
def dense_step(layer, x):
    return body(x) @ layer.w[...]


def namespace():
    holder = Holder(2.0)
    return {
        "x": jnp.ones((8, 8)),
        "layer": Dense(),
        "model": Model(jnp.full((8, 8), 0.25)),
        "f_eqx": eqx.filter_jit(body),
        "f_jax": jax.jit(body),
        "f_nnx": nnx.jit(body),
        "dense_step": dense_step,
        "method_jax": jax.jit(holder.apply),
        "partial_jax": jax.jit(functools.partial(scaled, k=3.0)),
        "method_eqx": eqx.filter_jit(holder.apply),
        "partial_eqx": eqx.filter_jit(functools.partial(scaled, k=3.0)),
        "static_eqx": eqx.filter_jit(repeated),
        "module_eqx": eqx.filter_jit(Callable(jnp.full((8, 8), 0.5), jax.nn.relu)),
        "donating_eqx": eqx.filter_jit(scaled, donate="all-except-first"),
        "module_method_eqx": eqx.filter_jit(Plain(jnp.full((8, 8), 2.0)).apply),
    }


CALLS = {
    "eqx.filter_jit of a function": "f_eqx(x)",
    "jax.jit of a function": "f_jax(x)",
    "nnx.jit of a function": "f_nnx(x)",
    "nnx.jit of a function of a module": "dense_step(layer, x)",
    "jax.jit of a bound method": "method_jax(x)",
    "jax.jit of a functools.partial": "partial_jax(x)",
    "eqx.filter_jit of a bound method": "method_eqx(x)",
    "eqx.filter_jit of a functools.partial": "partial_eqx(x)",
    "eqx.filter_jit with a static int": "static_eqx(x, 3)",
    "eqx.filter_jit of a module": "module_eqx(x)",
    "eqx.filter_jit that donates": "donating_eqx(x, 2.0)",
    "an Equinox module's filter_jit __call__": "model(x)",
    "an Equinox module's filter_jit method": "model.method(x)",
    "eqx.filter_jit of an Equinox module's method": "module_method_eqx(x)",
}


def same_values(a, b) -> bool:
    return all(jax.tree.leaves(jax.tree.map(lambda u, v: bool(jnp.allclose(u, v)), a, b)))


@pytest.mark.parametrize("text", CALLS.values(), ids=CALLS.keys())
def test_the_jit_mode_compiles_a_callee_the_user_has_already_called(text):
    names = namespace()
    theirs = jax.block_until_ready(eval(text, dict(names)))  # the user's call: their wrapper is compiled
    call = resolve_call(text, names, magic="%jitcompare")
    runner = modes.build("jit", call)
    runner.fresh_arguments()  # copying donated arguments compiles a copy once: not the callee's compile
    with Compiles() as logged:
        cost, output = stopwatch.first_call(runner)
    assert len(logged.names) >= 1, f"no XLA compilation during the jit mode's first call of {text}"
    assert cost.compilations >= 1 and cost.compile_s > 0
    assert same_values(output, theirs)
    with Compiles() as again:  # the user's own wrapper still finds its compiled program
        jax.block_until_ready(eval(text, dict(names)))
    assert again.names == []


def test_a_filter_jit_function_already_called_is_reported_with_its_compile():
    names = namespace()
    jax.block_until_ready(names["f_eqx"](names["x"]))
    result = compare(resolve_call("f_eqx(x)", names, magic="%jitcompare"), loops=3, repeat=2, budget=5.0)
    first = result.first_calls["jit"]
    assert first.compilations >= 1 and first.compile_s > 0 and first.trace_s > 0
    assert first.first_call_s > result.modes["jit"].median


@pytest.mark.parametrize("name", ["f_eqx", "method_eqx", "partial_eqx", "module_eqx", "module_method_eqx"])
def test_the_fresh_callee_keeps_what_filter_jit_traces_and_what_it_keeps_static(name):
    theirs = namespace()[name].__wrapped__
    fresh = libraries.fresh_callee(theirs)
    (traced, _), (fresh_traced, fresh_static) = (eqx.partition(f, eqx.is_array) for f in (theirs, fresh))
    pairs = list(zip(jax.tree.leaves(fresh_traced), jax.tree.leaves(traced), strict=True))
    assert all(mine is yours for mine, yours in pairs)  # a module's arrays stay inputs, the same ones
    if name == "module_eqx":
        assert jax.nn.relu in jax.tree.leaves(fresh_static)  # its activation stays static
    assert fresh != theirs  # nothing keyed by the user's function finds it
