"""``--values`` summarised on the device (where an accelerator holds the values) says what the
values themselves say: over JAX's documentation examples, the library examples and NaN traps,
the summaries computed on the device and packed equal NumPy's summaries of the same arrays, the
first NaN or inf is the same equation, and the results are the call's own. On an accelerator, the
four recorded models are evaluated at their recorded sizes and the cost against one eager call is
printed (goal: at most 3×, first run included)."""

import threading
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmagic import _jax_private as jax_private
from jaxmagic.tracing import value_program, values
from tests import test_corpus_libraries as libraries
from tests import test_jaxpr_corpus_jax_docs as docs
from tests.fixtures.tpu import models as recorded

CASES = [("docs", call) for call in docs.EXAMPLES] + [("libraries", call) for call in libraries.EXAMPLES]

TRAPS = {
    "log of negatives": (lambda x: jnp.sum(jnp.log(x * 2)), (jnp.linspace(-1.0, 1.0, 12),)),
    "inf then nan": (lambda x: (1.0 / (x - x)) - (1.0 / (x - x)), (jnp.ones(12),)),
    "gradient of a norm at 0": (jax.grad(lambda x: jnp.sqrt(jnp.sum(x**2))), (jnp.zeros(12),)),
    "bfloat16 overflow": (lambda x: jnp.exp(x.astype(jnp.bfloat16)) * 2, (jnp.linspace(0.0, 100.0, 16),)),
    "integers and booleans": (lambda n: (jnp.arange(20) * n, jnp.arange(20) > n), (jnp.int32(3),)),
    "complex": (lambda x: jnp.sqrt(x.astype(jnp.complex64) - 2), (jnp.linspace(0.0, 4.0, 16),)),
}


@pytest.fixture(scope="module")
def corpora(ip):
    for setup in (docs.SETUP, libraries.SETUP):
        result = ip.run_cell(setup)
        assert result.success, result.error_in_exec
    yield


def _same(device: values.Summary, host: values.Summary) -> None:
    assert (device.shape, device.dtype, device.nans, device.infs) == (host.shape, host.dtype, host.nans, host.infs)
    for mine, theirs in ((device.minimum, host.minimum), (device.maximum, host.maximum), (device.mean, host.mean)):
        assert (mine is None) == (theirs is None)
        if mine is not None:
            assert mine == pytest.approx(theirs, rel=1e-4, abs=1e-5)
    assert (device.value is None) == (host.value is None)
    if device.value is not None:
        np.testing.assert_array_equal(np.asarray(device.value), np.asarray(host.value))


def _both(closed, flat):
    return values.evaluate(closed, flat, summaries="device"), values.evaluate(closed, flat, summaries="host")


def _check(closed, flat) -> None:
    device, host = _both(closed, flat)
    assert device.summarised_on == "device" and host.summarised_on == "host"
    assert [(v.path, v.primitive) for v in device.equations] == [(v.path, v.primitive) for v in host.equations]
    for mine, theirs in zip(device.equations, host.equations, strict=True):
        for a, b in zip(mine.outputs, theirs.outputs, strict=True):
            _same(a, b)
    for a, b in zip(device.inputs, host.inputs, strict=True):
        _same(a, b)
    for first in ("first_nonfinite", "first_nan"):
        mine, theirs = getattr(device, first), getattr(host, first)
        assert (mine.path if mine else None) == (theirs.path if theirs else None)
        if mine is not None:
            for a, b in zip(mine.inputs, theirs.inputs, strict=True):
                _same(a, b)


@pytest.mark.parametrize("corpus,call", CASES, ids=[f"{c}:{call}" for c, call in CASES])
def test_device_summaries_are_what_the_values_say(run, corpora, corpus, call):
    report = run(f"%jaxpr -o --max-eqns 5 {call}").assert_ok().result
    args, kwargs, static_argnums, static_argnames = report.arguments
    flat = values.flat_arguments(report.jaxpr.in_avals, args, kwargs, static_argnums, static_argnames)
    _check(report.jaxpr, flat)


@pytest.mark.parametrize("name", list(TRAPS))
def test_device_summaries_find_the_same_first_nan_as_jax_debug_nans(name):
    fn, args = TRAPS[name]
    closed = jax.make_jaxpr(fn)(*args)
    _check(closed, values.flat_arguments(closed.in_avals, args, {}))


def test_packed_summaries_read_back_every_kind_of_array():
    arrays = [
        jnp.array([1.0, jnp.nan, -jnp.inf, 4.0] * 3),
        jnp.arange(40, dtype=jnp.int8),
        jnp.arange(12) % 3 == 0,
        jnp.ones(3, jnp.bfloat16),
        jnp.full(10, 1e30, jnp.float32) * 10,
        jax.random.key(0),
        jnp.zeros((0, 3)),
    ]
    found = value_program.unpacked(jax.device_get(value_program.summarised(arrays)), arrays)
    for array, one in zip(arrays, found, strict=True):
        if jnp.issubdtype(array.dtype, jax.dtypes.extended):
            assert values.from_arrays(array, one) == values.Summary(tuple(array.shape), str(array.dtype))
        else:
            _same(values.from_arrays(array, one), values.summarise(np.asarray(array)))


def _first_call(call) -> float:
    jax.clear_caches()
    start = time.perf_counter()
    jax.block_until_ready(call())
    return time.perf_counter() - start


@pytest.mark.accelerator
@pytest.mark.parametrize("name", list(recorded.MODELS))
def test_values_of_a_recorded_model_on_the_accelerator(name):
    """At the recorded sizes: the summaries live on the device and say what the values say, the
    results are the call's own; the cost against one eager call is printed for the record."""
    fn, make = recorded.MODELS[name]
    args = make(jax.random.PRNGKey(0))
    closed = jax.jit(fn).trace(*args).jaxpr
    flat = values.flat_arguments(closed.in_avals, args, {})
    eager_first = _first_call(lambda: fn(*args))
    values_first = _first_call(lambda: values.evaluate(closed, flat).outputs)
    run = values.evaluate(closed, flat)
    assert run.summarised_on == "device"
    expected = jax.tree_util.tree_leaves(fn(*args))
    for mine, theirs in zip(run.outputs, expected, strict=True):
        np.testing.assert_allclose(np.asarray(mine, np.float32), np.asarray(theirs, np.float32), rtol=2e-2, atol=2e-2)
    warm_eager = min(_timed(lambda: fn(*args)) for _ in range(5))
    warm_values = min(_timed(lambda: values.evaluate(closed, flat).outputs) for _ in range(5))
    print(
        f"\n{name} on {jax.default_backend()}: --values / one eager call: first run "
        f"{values_first / eager_first:.2f}x ({values_first * 1e3:.0f} / {eager_first * 1e3:.0f} ms), "
        f"warm {warm_values / warm_eager:.2f}x ({warm_values * 1e3:.2f} / {warm_eager * 1e3:.2f} ms)"
    )
    assert values_first / eager_first < 10 and warm_values / warm_eager < 10  # loose: the figure is the record
    host_check = values.evaluate(closed, flat, summaries="host")
    assert [(v.path, v.primitive) for v in run.equations] == [(v.path, v.primitive) for v in host_check.equations]


def _timed(call) -> float:
    start = time.perf_counter()
    jax.block_until_ready(call())
    return time.perf_counter() - start


def _summaries(arrays: list) -> list:
    return [
        values.from_arrays(a, value_program.unpacked(part, [a])[0])
        for a, part in zip(arrays, value_program.fetched([value_program.summarised([a]) for a in arrays]), strict=True)
    ]


def test_summaries_fetched_together_or_one_by_one_read_as_numpy_does():
    """Up to ``MOST_CONCATENATED`` packed summaries come back as one transfer, more one by one;
    each is read back at its own place either way."""
    for count in (1, 7, value_program.MOST_CONCATENATED + 3):
        arrays = [jnp.arange(12.0) * i - 3 if i % 2 else jnp.arange(i % 5 + 1, dtype=jnp.int32) for i in range(count)]
        for device, array in zip(_summaries(arrays), arrays, strict=True):
            _same(device, values.summarise(np.asarray(array)))


def test_summaries_on_different_devices_come_back_each_from_its_own(tmp_path):
    """Parts on two devices cannot be concatenated in one program: each is brought back alone."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import jax, jax.numpy as jnp, numpy as np
        from jaxmagic.tracing import value_program
        a = jax.device_put(jnp.arange(20.0), jax.devices()[0])
        b = jax.device_put(jnp.arange(30.0) - 40, jax.devices()[1])
        parts = [value_program.summarised([a]), value_program.summarised([b])]
        back = value_program.fetched(parts)
        found = [value_program.unpacked(part, [x])[0] for part, x in zip(back, (a, b))]
        print(float(found[0]["maximum"]), float(found[1]["minimum"]))
        """
    )
    env = {**__import__("os").environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2", "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["19.0", "-40.0"]


def test_the_summary_programs_compile_on_worker_threads_while_the_user_operations_run(caplog):
    """A first run compiles, on the calling thread, the operations the function's eager call would
    compile and nothing else: every summary program, and the one that joins them, compiled ahead
    on the workers (JAX's own log of compilations on the caller's thread, and its compile events
    by thread, are the truth)."""
    fn, args = recorded.MODELS["mlp"][0], recorded.MODELS["mlp"][1](jax.random.PRNGKey(0), batch=8, width=16)
    closed = jax.jit(fn).trace(*args).jaxpr
    flat = values.flat_arguments(closed.in_avals, args, {})
    threads = []

    def compiled(event, duration_secs, **_):
        if event == "/jax/core/compile/backend_compile_duration":
            threads.append(threading.current_thread().name)

    jax.clear_caches()
    jax.monitoring.register_event_duration_secs_listener(compiled)
    try:
        with jax.log_compiles(True), caplog.at_level("WARNING"):
            run = values.evaluate(closed, flat, summaries="device")
    finally:
        jax_private.unregister_duration_listener(compiled)
    logged = [r.getMessage() for r in caplog.records if "Finished XLA compilation" in r.getMessage()]
    assert logged and all("<lambda>" not in m for m in logged), logged  # the user's operations only
    assert len(logged) == threads.count(threading.current_thread().name)
    assert len(threads) - len(logged) >= 2, threads  # the summaries and the join, elsewhere
    np.testing.assert_allclose(np.asarray(run.outputs[0]), np.asarray(fn(*args)), rtol=1e-5)
