"""What %jitcompare's eager mode runs: the user's own call, ``f(*args)``, exactly as they would make it
without the outer ``jax.jit``: jit stays on, so jitted functions inside it (their own, JAX's, a
library's) run compiled; the callee's own jit wrapper (``jax.jit``, ``nnx.jit``,
``eqx.filter_jit``) is the one left out. Running every operation on its own under
``jax.disable_jit()`` is the separate ``op-by-op`` mode.

Checked by structure, never by time: probes count how the user's Python runs (with concrete
values, or with tracers while JAX traces it) and how often an inner jit compiles.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from jaxmagic.timing import compare, modes
from jaxmagic.tracing.call import Call, resolve_call

QUICK = dict(loops=3, repeat=2, budget=5.0)


class Probe:
    """Counts the runs of a function by what it sees: concrete arrays (it ran), or tracers (JAX
    traced it), and whether jit was switched off around it."""

    def __init__(self):
        self.concrete = 0
        self.traced = 0
        self.jit_off = []

    def saw(self, value) -> None:
        if isinstance(value, jax.core.Tracer):
            self.traced += 1
        else:
            self.concrete += 1
        self.jit_off.append(bool(jax.config.jax_disable_jit))


def _with_an_inner_jit():
    outer, inner = Probe(), Probe()

    @jax.jit
    def layer(v):
        inner.saw(v)
        return jnp.tanh(v) * 2

    def model(v):
        outer.saw(v)
        return jnp.sum(layer(v) + 1.0)

    return model, layer, outer, inner


def test_eager_calls_the_function_with_jit_on_and_its_inner_jit_compiled():
    model, layer, outer, inner = _with_an_inner_jit()
    result = compare(Call(model, (jnp.ones(64),), {}), modes="eager", **QUICK)
    # The user's Python ran once per eager call, with values, and jit on (and was traced at most
    # once, by jaxmagic, to see what eager dispatches and donates).
    assert outer.traced <= 1 and outer.concrete == result.calls["eager"]
    assert not any(outer.jit_off)
    # The inner jit was traced once and compiled once, then ran compiled on every call: its Python
    # body never saw a concrete value (under jax.disable_jit() it would have, on every call).
    assert (inner.traced, inner.concrete) == (1, 0)
    assert layer._cache_size() == 1


def test_op_by_op_runs_everything_under_disable_jit_inner_jits_included():
    model, layer, outer, inner = _with_an_inner_jit()
    result = compare(Call(model, (jnp.ones(64),), {}), modes="op-by-op", **QUICK)
    assert list(result.modes) == ["op-by-op"]
    assert outer.concrete == inner.concrete == result.calls["op-by-op"]
    assert outer.traced == inner.traced == 0 and all(outer.jit_off + inner.jit_off)
    assert layer._cache_size() == 0
    assert not jax.config.jax_disable_jit


def test_a_jitted_callee_runs_as_its_python_function_in_eager_and_compiled_in_jit():
    probe = Probe()

    @jax.jit
    def step(v):
        probe.saw(v)
        return v * 2 + 1

    result = compare(Call(step, (jnp.ones(8),), {}), **QUICK)
    assert probe.concrete == result.calls["eager"]  # every eager call ran the Python function
    assert probe.traced == 1  # jit traced it once, for its own fresh wrapper
    assert not any(probe.jit_off)


def test_eager_keeps_the_session_setting_where_jit_is_switched_off_for_the_session():
    probe = Probe()

    def f(v):
        probe.saw(v)
        return v + 1

    jax.config.update("jax_disable_jit", True)
    try:
        compare(Call(f, (jnp.ones(4),), {}), modes="eager", **QUICK)
    finally:
        jax.config.update("jax_disable_jit", False)
    assert probe.jit_off and all(probe.jit_off)  # as the user's own call would run there


def test_eager_runner_is_the_function_itself_and_says_so():
    def f(v):
        return v + 1

    wrapped = jax.jit(f)
    runner = modes.build("eager", Call(wrapped, (jnp.ones(2),), {}))
    assert runner.fn is f and runner.setup.startswith("f(*args)")
    op_by_op = modes.build("op-by-op", Call(wrapped, (jnp.ones(2),), {}))
    assert op_by_op.fn is f and "jax.disable_jit()" in op_by_op.setup


def test_nnx_jit_callee_eager_is_the_wrapped_function_called_on_the_objects():
    nnx = pytest.importorskip("flax.nnx")
    probe = Probe()

    class Counter(nnx.Module):
        def __init__(self):
            self.total = nnx.Variable(jnp.zeros(()))
            self.w = nnx.Param(jnp.ones((4, 4)))

    @nnx.jit
    def step(counter, x):
        probe.saw(x)
        counter.total[...] = counter.total[...] + 1  # NNX's graph semantics: changed in place
        return jnp.sum(x @ counter.w[...])

    counter, x = Counter(), jnp.ones((2, 4))
    call = resolve_call("step(counter, x)", {"step": step, "counter": counter, "x": x}, magic="%jitcompare")
    result = compare(call, **QUICK)
    assert probe.concrete == result.calls["eager"] and probe.traced >= 1
    assert not any(probe.jit_off)
    assert float(counter.total[...]) == 0.0  # timed on copies: the user's module is as it was


def test_equinox_filter_jit_callee_eager_is_the_wrapped_function():
    eqx = pytest.importorskip("equinox")
    probe = Probe()

    @eqx.filter_jit
    def apply(model, x):
        probe.saw(x)
        return model(x)

    model = eqx.nn.Linear(4, 3, key=jax.random.key(0))
    call = resolve_call("apply(model, x)", {"apply": apply, "model": model, "x": jnp.ones(4)}, magic="%jitcompare")
    result = compare(call, **QUICK)
    assert probe.concrete == result.calls["eager"] and probe.traced >= 1
    assert not any(probe.jit_off)


def test_op_by_op_is_asked_for_by_name_and_all_includes_it():
    assert modes.parse_modes("eager,op-by-op,jit") == ("eager", "op-by-op", "jit")
    assert "op-by-op" in modes.parse_modes("all", device_count=1)
    assert modes.parse_modes(None) == ("eager", "jit")


def test_an_inner_jit_that_donates_the_arguments_gets_copies_and_yours_are_kept():
    step = jax.jit(lambda p, g: p - 0.1 * g, donate_argnums=0)

    def train(p, g):
        return step(p, g)  # as written, the user's call consumes `p`

    p, g = jnp.ones(16), jnp.ones(16)
    result = compare(Call(train, (p, g), {}), **QUICK)
    assert result.modes["eager"].source == "repeats"
    assert not p.is_deleted() and not g.is_deleted()
    assert any(note.kind == "eager_donates" for note in result.facts)


def test_an_inner_jit_that_donates_arrays_the_call_holds_is_not_run_eagerly():
    import functools

    step = jax.jit(lambda p, g: p - 0.1 * g, donate_argnums=0)
    params = jnp.ones(16)
    apply = functools.partial(step, params)  # eagerly, apply(g) consumes `params`
    result = compare(Call(apply, (jnp.ones(16),), {}), **QUICK)
    assert "eager" not in result.modes and not params.is_deleted()
    (note,) = [n for n in result.facts if n.kind == "not_run"]
    assert note.facts["donates_held"] and "Pass them as arguments" in note.text


def test_an_equinox_module_holding_functions_is_jitted_as_equinox_documents_with_filter_jit():
    """``mlp(x)`` with an ``eqx.nn.MLP`` (its activation functions are leaves): the jit mode is what
    its users write, ``eqx.filter_jit`` flattening the module on every call, and computes eager's values."""
    eqx = pytest.importorskip("equinox")
    mlp = eqx.nn.MLP(in_size=2, out_size=3, width_size=8, depth=1, key=jax.random.key(1))
    call = resolve_call("mlp(x)", {"mlp": mlp, "x": jnp.ones(2)}, magic="%jitcompare")
    runner = modes.build("jit", call)
    assert runner.setup == "eqx.filter_jit" and type(runner.fn).__module__.startswith("equinox")
    assert jnp.allclose(runner.fn(*runner.args, **runner.kwargs), mlp(jnp.ones(2)))
    linear = eqx.nn.Linear(2, 3, key=jax.random.key(0))  # arrays only: jax.jit takes it as it is
    plain = modes.build("jit", resolve_call("linear(x)", {"linear": linear, "x": jnp.ones(2)}, magic="%jitcompare"))
    assert plain.setup == "jax.jit"
