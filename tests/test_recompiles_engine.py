"""The recompile engine with real JAX, no shell: one test per cause, and the watch's promises
(nothing left behind, no strong references, bounded, threads, --max)."""

from __future__ import annotations

import functools
import gc
import json
import logging
import os
import subprocess
import sys
import textwrap
import threading
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmagic.recompiles import RecompileLimitExceeded, RecompileLog, watch
from jaxmagic.recompiles.watch import watch_recompiles


def kinds(log, function=None):
    """The cause kinds of each event (of ``function``), e.g. ``[['first_call'], ['shape']]``."""
    return [event.kinds for event in log.events if function is None or event.function == function]


def only_cause(event):
    (cause,) = event.causes
    return cause


# ----------------------------------------------------------------------------------------------
# One test per cause


def test_first_call_names_the_signature():
    @jax.jit
    def first(x, y):
        return x + y

    with watch_recompiles() as log:
        first(jnp.ones(3), jnp.ones(3))
        first(jnp.ones(3), jnp.ones(3))  # a cache hit: nothing to record
    (event,) = log.events
    cause = only_cause(event)
    assert cause.kind == "first_call"
    assert cause.after == "(x: f32[3], y: f32[3])"
    assert event.function == "first" and log.counts == {"first": 1}
    assert event.call_site.file == __file__ and event.call_site.function == "test_first_call_names_the_signature"
    assert event.defined_at.file == __file__ and "def first" in event.defined_at.text
    assert event.compile_s > 0 and event.compile_s >= event.backend_s > 0


def test_shape_names_the_argument_and_axis():
    @jax.jit
    def summed(x, w):
        return (x @ w).sum()

    w = jnp.ones((3, 2))
    with watch_recompiles() as log:
        summed(jnp.ones((4, 3)), w)
        summed(jnp.ones((5, 3)), w)
    cause = only_cause(log.events[1])
    assert (cause.kind, cause.argument, cause.before, cause.after) == ("shape", "x", "f32[4,3]", "f32[5,3]")
    assert cause.detail == "axis 0: 4 → 5"
    assert "pad" in cause.advice and "`x`" in cause.advice


def test_dtype():
    @jax.jit
    def plus_one(x):
        return x + 1

    with watch_recompiles() as log:
        plus_one(jnp.ones(3, jnp.float32))
        plus_one(jnp.ones(3, jnp.int32))
    cause = only_cause(log.events[1])
    assert (cause.kind, cause.argument, cause.before, cause.after) == ("dtype", "x", "f32[3]", "i32[3]")
    assert "dtype" in cause.advice


def test_weak_type_python_float_after_a_float32_array():
    @jax.jit
    def scale(x, lr):
        return x * lr

    x = jnp.ones(3)
    with watch_recompiles() as log:
        scale(x, jnp.float32(0.1))
        scale(x, 0.1)
    cause = only_cause(log.events[1])
    assert (cause.kind, cause.argument) == ("weak_type", "lr")
    assert cause.before == "f32[]" and "Python float" in cause.after
    assert "array" in cause.advice


def test_static_value_says_the_values_not_an_input_path():
    @functools.partial(jax.jit, static_argnums=(1,))
    def repeat(x, n):
        for _ in range(n):
            x = x * 2
        return x

    x = jnp.ones(2)
    with watch_recompiles(explain=True) as log:
        repeat(x, 2)
        repeat(x, 3)
    cause = only_cause(log.events[1])
    assert (cause.kind, cause.argument, cause.before, cause.after) == ("static_value", "n", "2", "3")
    assert cause.message == "static argument `n` changed: 2 → 3"
    assert "Static(" not in cause.message and "input path" not in cause.message
    # JAX's own text was kept, in its own words
    assert log.events[1].raw is not None and "TRACING CACHE MISS" in log.events[1].raw


def test_pytree_structure_a_dict_gaining_a_key():
    @jax.jit
    def total(params):
        return sum(params.values())

    with watch_recompiles() as log:
        total({"w": jnp.ones(2)})
        total({"w": jnp.ones(2), "b": jnp.ones(2)})
    cause = only_cause(log.events[1])
    assert (cause.kind, cause.argument) == ("pytree_structure", "params")
    assert "['b']" in cause.message and "added" in cause.message
    assert cause.before == "{'w': f32[2]}" and cause.after == "{'b': f32[2], 'w': f32[2]}"


def test_a_leaf_inside_a_pytree_is_named_by_its_path():
    @jax.jit
    def loss(params, x):
        return (x @ params["w"]).sum()

    x = jnp.ones((2, 3))
    with watch_recompiles() as log:
        loss({"w": jnp.ones((3, 4))}, x)
        loss({"w": jnp.ones((3, 5))}, x)
    cause = only_cause(log.events[1])
    assert (cause.kind, cause.argument, cause.before, cause.after) == ("shape", "params['w']", "f32[3,4]", "f32[3,5]")


def test_function_redefined_in_a_loop():
    x = jnp.ones(3)
    with watch_recompiles() as log:
        for i in range(4):

            def body(v):
                return v + i  # noqa: B023 -- called at once, within this pass of the loop

            jax.jit(body)(x)
    assert kinds(log) == [["first_call"]] + [["redefined_function"]] * 3
    cause = log.events[-1].causes[0]
    assert cause.argument == "body"
    assert "outside the loop" in cause.advice
    assert log.headlines and log.headlines[0].startswith(
        "`body` compiled 4 times: `body` is re-defined before each call"
    )


def test_same_function_rewrapped_with_other_jit_options():
    def update(x, y):
        return x + y

    x = jnp.ones(3)
    with watch_recompiles() as log:
        jax.jit(update)(x, x)
        jax.jit(update, donate_argnums=(0,))(jnp.ones(3), x)
    cause = only_cause(log.events[1])
    assert (cause.kind, cause.argument) == ("jit_options", "donate_argnums")
    assert cause.before == "()" and cause.after.startswith("(0,)")
    assert "hoist jax.jit out of the loop" in cause.advice


def test_marking_an_argument_static_is_a_jit_option_change():
    def power(x, n):
        return x**n

    x = jnp.ones(3)
    with watch_recompiles() as log:
        jax.jit(power)(x, 2)
        jax.jit(power, static_argnums=(1,))(x, 2)
    cause = only_cause(log.events[1])
    assert (cause.kind, cause.argument, cause.before) == ("jit_options", "static_argnums", "()")
    assert cause.after == "(1,) · n"


# JAX 0.8 names neither its tracing settings nor, in the same words, its cache-miss causes: there a
# changed setting and a cause only JAX's explanation gives are "unknown", with JAX's text kept.
JAX_BEFORE_0_9 = tuple(int(p) for p in jax.__version__.split(".")[:2]) < (0, 9)
words_of_jax_0_9 = pytest.mark.skipif(JAX_BEFORE_0_9, reason="JAX 0.8 words these differently (documented)")


@pytest.mark.parametrize(
    "setting,option,before,after",
    [
        (lambda: jax.default_matmul_precision("highest"), "jax_default_matmul_precision", "None", "'highest'"),
        (lambda: jax.numpy_rank_promotion("raise"), "jax_numpy_rank_promotion", "'allow'", "'raise'"),
    ],
    ids=["matmul-precision", "rank-promotion"],
)
def test_config_change_is_named_on_every_jax(setting, option, before, after):
    @jax.jit
    def halve(x):
        return x / 2

    x = np.ones(3, np.float32)
    with watch_recompiles() as log:
        halve(x)
        with setting():
            halve(x)
    cause = only_cause(log.events[1])
    assert (cause.kind, cause.argument) == ("config", option)
    assert (cause.before, cause.after) == (before, after)


def test_passing_an_argument_by_keyword_instead_of_by_position():
    @jax.jit
    def mul(x, y):
        return x * y

    x = jnp.ones(2)
    with watch_recompiles() as log:
        mul(x, x)
        mul(x, y=x)
    cause = only_cause(log.events[1])
    assert (cause.kind, cause.argument, cause.before, cause.after) == (
        "pytree_structure",
        "y",
        "by position",
        "by keyword",
    )
    assert "by position or always by keyword" in cause.advice


def test_committing_an_array_is_a_sharding_change():
    # JAX's tracing cache explains nothing here: the same program is lowered for another
    # input sharding (uncommitted, then SingleDeviceSharding), on the same device.
    @jax.jit
    def neg(x):
        return -x

    with watch_recompiles() as log:
        neg(jnp.ones(5))
        neg(jax.device_put(jnp.ones(5), jax.devices()[0]))
    event = log.events[1]
    cause = only_cause(event)
    assert (cause.kind, cause.argument) == ("sharding", "x")
    assert cause.before == "default device (uncommitted)" and cause.after == "cpu:0"
    assert "committed to cpu:0 now and was uncommitted" in cause.message and "another device" not in cause.message
    assert event.raw is None


def test_several_causes_at_once_are_all_listed():
    @functools.partial(jax.jit, static_argnames=("mode",))
    def mixed(x, params, mode):
        return x.sum() + sum(params.values()) + len(mode)

    with watch_recompiles() as log:
        mixed(jnp.ones(3), {"a": jnp.ones(1)}, mode="a")
        mixed(jnp.ones(4, jnp.int32), {"a": jnp.ones(1), "b": jnp.ones(1)}, mode="bb")
    found = {(c.kind, c.argument) for c in log.events[1].causes}
    assert found == {("shape", "x"), ("dtype", "x"), ("pytree_structure", "params"), ("static_value", "mode")}
    assert len(log.events[1].advice) == 4


def test_nearest_earlier_compilation_is_compared_not_just_the_last():
    @jax.jit
    def pick(x):
        return x * 3

    with watch_recompiles() as log:
        pick(jnp.ones(3))
        pick(jnp.ones(7, jnp.int32))
        pick(jnp.ones(4))  # nearest: f32[3] (one difference), not i32[7] (two)
    cause = only_cause(log.events[2])
    assert (cause.kind, cause.before, cause.after) == ("shape", "f32[3]", "f32[4]")


def test_unknown_when_nothing_differs_keeps_a_message_never_silence():
    """A signature that differs in nothing from the nearest one, no cause found, nothing from JAX
    (after jax.clear_caches(), the cause is said: see the test below)."""
    from jaxmagic.recompiles.attribution import decide_causes

    signature, closest = object(), object()  # only their presence matters here
    (cause,) = decide_causes("same", signature, closest, [], None, True, internal=False)  # type: ignore[arg-type]
    assert cause.kind == "unknown"
    assert "clear_caches" in cause.message  # one of the reasons it names


@words_of_jax_0_9
def test_jax_explanation_fills_in_when_jaxmagic_saw_no_earlier_call():
    @functools.partial(jax.jit, static_argnums=(1,))
    def seen_before(x, n):
        return x * n

    seen_before(jnp.ones(2), 2)  # compiled before anyone watched
    watch.forget()
    with watch_recompiles(explain=True) as log:  # JAX's explanation asked for
        seen_before(jnp.ones(2), 5)
    cause = only_cause(log.events[0])
    assert (cause.kind, cause.argument, cause.before, cause.after) == ("static_value", "n", "2", "5")


# Compiled before anything watched: jax.jit's tracing cache still knows those signatures, and the
# causes agree with JAX's own explanation of the same miss (asked for in a second, fresh case).


def _before_and_watched(make, before, now):
    """The causes of calling ``make()``'s jitted function with ``now`` after it compiled for
    ``before`` while nothing watched: jaxmagic's own, and the ones JAX's explanation gives."""
    found = []
    for explain in (False, True):
        fn = make()
        fn(*before[0], **before[1])
        watch.forget()
        with watch_recompiles(explain=explain) as log:
            fn(*now[0], **now[1])
        (event,) = log.events
        found.append(event.causes)
    return found


def _kinds(causes):
    return [(c.kind, c.argument) for c in causes]


def test_a_shape_change_since_an_unwatched_compilation_is_named_as_jax_names_it():
    def make():
        return jax.jit(lambda x, y: x + y)

    own, jaxs = _before_and_watched(make, ((jnp.ones(3), 1.0), {}), ((jnp.ones(4), 1.0), {}))
    assert _kinds(own) == [("shape", "x")]
    assert JAX_BEFORE_0_9 or _kinds(jaxs) == _kinds(own)
    assert (own[0].before, own[0].after) == ("f32[3]", "f32[4]")
    assert "compared with a compilation made while nothing watched" in own[0].message


def test_static_and_weak_type_changes_since_an_unwatched_compilation():
    def make():
        @functools.partial(jax.jit, static_argnames="n")
        def scaled(x, n=1, *, b, a):
            return x * n + a + b

        return scaled

    before = ((jnp.ones(2),), {"n": 2, "b": jnp.ones(2), "a": 1.0})
    own, jaxs = _before_and_watched(make, before, ((jnp.ones(2),), {"n": 2, "b": jnp.ones(2), "a": jnp.float32(1)}))
    assert _kinds(own) == [("weak_type", "a")], "keyword arguments in JAX's order, not the call's"
    assert JAX_BEFORE_0_9 or _kinds(jaxs) == _kinds(own)
    own, jaxs = _before_and_watched(make, before, ((jnp.ones(2),), {"n": 3, "b": jnp.ones(2), "a": 1.0}))
    assert _kinds(own) == [("static_value", "n")]
    assert JAX_BEFORE_0_9 or _kinds(jaxs) == _kinds(own)
    assert (own[0].before, own[0].after) == ("2", "3")


def test_a_structure_change_since_an_unwatched_compilation():
    def make():
        return jax.jit(lambda tree, y: tree["a"] * y)

    own, jaxs = _before_and_watched(
        make, (({"a": jnp.ones(2)}, 2.0), {}), (({"a": jnp.ones(2), "b": jnp.ones(1)}, 2.0), {})
    )
    assert _kinds(own) == [("pytree_structure", "tree")]
    assert JAX_BEFORE_0_9 or [c.kind for c in jaxs] == ["pytree_structure"]
    assert (own[0].before, own[0].after) == ("{'a': *}", "{'a': *, 'b': *}")


def test_a_function_jax_never_traced_is_a_first_compilation_even_if_another_was():
    twin = jax.jit(lambda x: x * 2)
    twin(jnp.ones(2))
    watch.forget()
    with watch_recompiles() as log:
        jax.jit(lambda x: x * 2)(jnp.ones(3))  # another function object, never traced before
    assert kinds(log) == [["first_call"]]


def test_jax_explains_its_cache_misses_only_while_a_log_asks_for_the_text():
    assert not jax.config.jax_explain_cache_misses
    with watch_recompiles():
        assert not jax.config.jax_explain_cache_misses  # jaxmagic's own comparison decides
        with watch_recompiles(explain=True):
            assert jax.config.jax_explain_cache_misses
        assert not jax.config.jax_explain_cache_misses
    assert not jax.config.jax_explain_cache_misses


def test_repeated_cause_headline_with_the_fix():
    @jax.jit
    def step(batch):
        return batch.sum()

    with watch_recompiles() as log:
        for n in range(2, 8):
            step(jnp.ones((n, 3)))
    assert log.counts == {"step": 6}
    assert log.headlines == [
        "`step` compiled 6 times: the shape of `batch` changes on axis 0 — pad to a few bucket sizes"
    ]


def test_ahead_of_time_compile_is_counted_with_its_arguments():
    def aot(x):
        return x * 5

    with watch_recompiles() as log:
        jax.jit(aot).lower(jnp.ones(6)).compile()
    (event,) = log.events
    assert event.signature == "(x: f32[6])"
    assert event.call_site.file == __file__


# ----------------------------------------------------------------------------------------------
# Scope and filters


def test_internal_compilations_only_with_include_internal():
    x = jnp.ones((5, 41))
    with watch_recompiles() as mine, watch_recompiles(include_internal=True) as everything:
        jnp.sin(x) * jnp.float32(3.0)
    assert mine.total == 0
    assert everything.total >= 1 and all(e.internal for e in everything.events)


def test_function_filter():
    @jax.jit
    def wanted(x):
        return x + 1

    @jax.jit
    def other(x):
        return x + 2

    with watch_recompiles("wanted") as log:
        wanted(jnp.ones(2))
        other(jnp.ones(2))
    assert log.counts == {"wanted": 1}


def test_compilations_in_a_background_thread_are_recorded():
    @jax.jit
    def threaded(x):
        return x * 7

    errors = []
    earlier = watch.internal_errors()  # what earlier tests left in the list (the latest 20)

    def work():
        try:
            for n in (2, 3):
                threaded(jnp.ones(n))
        except Exception as exc:  # pragma: no cover - the failure is reported below
            errors.append(exc)

    with watch_recompiles() as log:
        thread = threading.Thread(target=work, name="worker")
        thread.start()
        thread.join()
    assert not errors and watch.internal_errors() == earlier
    assert kinds(log) == [["first_call"], ["shape"]]
    assert {e.thread for e in log.events} == {"worker"}


def test_the_log_is_a_bounded_ring_buffer_and_keeps_counting():
    @jax.jit
    def ring(x):
        return x + 1

    with watch_recompiles(capacity=3) as log:
        for n in range(1, 7):
            ring(jnp.ones(n))
    assert len(log.events) == 3 and log.dropped == 3
    assert log.counts == {"ring": 6}
    assert [e.signature for e in log.events] == ["(x: f32[4])", "(x: f32[5])", "(x: f32[6])"]


def test_clear_forgets_events_and_counts():
    @jax.jit
    def cleared(x):
        return x + 1

    with watch_recompiles() as log:
        cleared(jnp.ones(2))
        log.clear()
        cleared(jnp.ones(3))
    assert log.counts == {"cleared": 1} and len(log.events) == 1


# ----------------------------------------------------------------------------------------------
# --max


def test_max_compiles_raises_at_the_call_that_went_over():
    @jax.jit
    def limited(x):
        return x * 2

    reached = []
    with pytest.raises(RecompileLimitExceeded) as info, watch_recompiles(max_compiles=2):
        for n in range(1, 6):
            limited(jnp.ones(n))
            reached.append(n)
    assert reached == [1, 2], "the third compilation should have stopped the loop"
    error = info.value
    assert (error.function, error.count, error.limit) == ("limited", 3, 2)
    assert "shape of `x` changed" in str(error) and "--max 2" in str(error)
    assert error._render_traceback_()[0].startswith("RecompileLimitExceeded: `limited` compiled 3 times")


def test_max_zero_forbids_any_compilation_and_a_warm_function_passes():
    @jax.jit
    def warm(x):
        return x * 2

    x = jnp.ones(3)
    warm(x)
    with watch_recompiles(max_compiles=0) as log:
        warm(x)
    assert log.total == 0
    with pytest.raises(RecompileLimitExceeded), watch_recompiles(max_compiles=0):
        warm(jnp.ones(4))


def test_max_in_a_background_thread_is_raised_at_the_end_not_in_the_thread():
    @jax.jit
    def background(x):
        return x + 5

    errors = []

    def work():
        try:
            for n in (1, 2, 3):
                background(jnp.ones(n))
        except Exception as exc:
            errors.append(exc)

    with pytest.raises(RecompileLimitExceeded), watch_recompiles(max_compiles=1):
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
    assert errors == []


# ----------------------------------------------------------------------------------------------
# Cheap and clean


def _listener_counts():
    from jax._src import monitoring

    return len(monitoring.get_event_duration_listeners()), len(monitoring.get_event_listeners())


def _explanation_filters():
    from jaxmagic import _jax_private

    return [f for name in _jax_private.explanation_logger_names() for f in logging.getLogger(name).filters]


def test_stopping_restores_listeners_config_and_logging():
    before = _listener_counts()
    filters_before = list(_explanation_filters())
    assert jax.config.values["jax_explain_cache_misses"] is False
    log = RecompileLog(explain=True).start()  # asking for JAX's text turns its explanations on
    assert watch.is_installed()
    assert _listener_counts() == (before[0] + 1, before[1] + 1)
    assert jax.config.values["jax_explain_cache_misses"] is True
    log.stop()
    assert not watch.is_installed()
    assert _listener_counts() == before
    assert jax.config.values["jax_explain_cache_misses"] is False
    assert _explanation_filters() == filters_before


def test_two_logs_share_one_installation_until_the_last_stops():
    before = _listener_counts()
    first, second = RecompileLog().start(), RecompileLog().start()
    assert _listener_counts() == (before[0] + 1, before[1] + 1)
    first.stop()
    assert watch.is_installed()
    second.stop()
    assert _listener_counts() == before


def test_a_user_who_turned_explanations_on_keeps_them(caplog):
    jax.config.update("jax_explain_cache_misses", True)
    try:
        with caplog.at_level(logging.WARNING), watch_recompiles():
            jax.jit(lambda x: x * 11)(jnp.ones(2))
        assert jax.config.values["jax_explain_cache_misses"] is True
        assert any("TRACING CACHE MISS" in r.getMessage() for r in caplog.records)
    finally:
        jax.config.update("jax_explain_cache_misses", False)


def test_explanations_do_not_reach_the_users_output_when_jaxmagic_turned_them_on(caplog):
    with caplog.at_level(logging.WARNING), watch_recompiles() as log:
        jax.jit(lambda x: x * 13)(jnp.ones(2))
    assert log.total == 1
    assert not any("CACHE MISS" in r.getMessage() for r in caplog.records)


def test_no_strong_references_to_functions_or_arrays():
    def make():
        def held(x, scale):
            return x * scale["k"]

        return held

    with watch_recompiles() as log:
        fn = make()
        x = jnp.ones(9)
        scale = {"k": jnp.ones(9)}
        jitted = jax.jit(fn)
        jitted(x, scale)
        jitted(jnp.ones(10), {"k": jnp.ones(10)})
        refs = [weakref.ref(obj) for obj in (fn, x, scale["k"])]
        del fn, x, scale, jitted
    gc.collect()
    assert log.total == 2
    assert [r() for r in refs] == [None, None, None], "the log or the watch kept user objects alive"


def test_no_work_when_nothing_compiles():
    """A cache hit runs none of jaxmagic's code: count calls into the listeners."""

    @jax.jit
    def hot(x):
        return x + 1

    x = jnp.ones(4)
    hot(x)
    calls = []
    hub = watch._HUB
    original = hub.on_duration
    with watch_recompiles():
        hub_listener = hub.duration_listener

        def counting(*args, **kwargs):
            calls.append(args[0])
            return original(*args, **kwargs)

        from jax._src import monitoring

        index = monitoring._event_duration_secs_listeners.index(hub_listener)
        monitoring._event_duration_secs_listeners[index] = counting
        try:
            for _ in range(200):
                hot(x)
        finally:
            monitoring._event_duration_secs_listeners[index] = hub_listener
    assert calls == []


# ----------------------------------------------------------------------------------------------
# Subprocesses: several devices, the persistent compilation cache


def _run_script(script: str, env_extra: dict) -> dict:
    env = dict(os.environ, JAX_PLATFORMS="cpu", **env_extra)
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_device_and_sharding_changes_with_eight_cpu_devices():
    result = _run_script(
        """
        import json, jax, jax.numpy as jnp
        from jax.sharding import NamedSharding, PartitionSpec as P
        from jaxmagic import watch_recompiles

        @jax.jit
        def f(x):
            return x * 2

        devices = jax.devices()
        mesh = jax.make_mesh((8,), ("i",))
        with watch_recompiles() as log:
            f(jax.device_put(jnp.ones(8), devices[0]))
            f(jax.device_put(jnp.ones(8), devices[1]))
            f(jax.device_put(jnp.ones(8), NamedSharding(mesh, P("i"))))
            f(jax.device_put(jnp.ones(8), NamedSharding(mesh, P())))
        print(json.dumps({"n": len(devices), "events": [
            [[c.kind, c.argument, c.before, c.after] for c in e.causes] for e in log.events],
            "raw": [e.raw for e in log.events]}))
        """,
        {"XLA_FLAGS": "--xla_force_host_platform_device_count=8"},
    )
    assert result["n"] == 8
    first, moved, sharded, replicated = result["events"]
    assert first[0][0] == "first_call"
    assert moved == [["device", "x", "cpu:0", "cpu:1"]]
    assert result["raw"][1] is None, "JAX explains nothing here; jaxmagic must"
    # JAX 0.10 writes a PartitionSpec as P('i',), JAX 0.8 as PartitionSpec('i',)
    spec = lambda text: text.replace("PartitionSpec(", "P(")  # noqa: E731
    assert sharded[0][0] == "sharding" and "P('i',)" in spec(sharded[0][3]) and "i=8" in sharded[0][3]
    assert replicated[0][0] == "sharding" and "P()" in spec(replicated[0][3])


def test_persistent_compilation_cache_hit_is_reported(tmp_path):
    result = _run_script(
        f"""
        import json, jax, jax.numpy as jnp
        jax.config.update("jax_compilation_cache_dir", {str(tmp_path)!r})
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
        from jaxmagic import watch_recompiles

        def f(x):
            return x * 2 + 1

        with watch_recompiles() as log:
            jax.jit(f)(jnp.ones(3))
            jax.clear_caches()
            jax.jit(f)(jnp.ones(3))
        print(json.dumps([e.persistent_cache for e in log.events]))
        """,
        {},
    )
    assert result == [False, True]


def test_persistent_cache_not_in_use_is_none():
    @jax.jit
    def plain(x):
        return x * 17

    with watch_recompiles() as log:
        plain(jnp.ones(2))
    assert log.events[0].persistent_cache is None


# ----------------------------------------------------------------------------------------------
# Compilations JAX makes on the user's behalf


def test_pmap_is_attributed_to_the_users_function():
    def doubled(x):
        return x * 2

    with watch_recompiles() as log:
        jax.pmap(doubled)(jnp.ones((1, 3)))
    (event,) = log.events
    assert event.function == "doubled" and not event.internal
    assert "def doubled" in event.defined_at.text


def test_a_function_first_traced_inside_another_then_called_alone_is_a_first_call():
    @jax.jit
    def inner(x):
        return x * 3

    @jax.jit
    def outer(x):
        return inner(x) + 1

    with watch_recompiles() as log:
        outer(jnp.ones(2))
        inner(jnp.ones(2))
    assert kinds(log) == [["first_call"], ["first_call"]]
    assert [e.function for e in log.events] == ["outer", "inner"]


def test_a_static_argument_whose_repr_raises_still_gives_an_event():
    class Opaque:
        def __repr__(self):
            raise RuntimeError("no repr for you")

        def __hash__(self):
            return 1

        def __eq__(self, other):
            return isinstance(other, Opaque)

    @functools.partial(jax.jit, static_argnums=(1,))
    def with_opaque(x, config):
        return x + 1

    with watch_recompiles() as log:
        with_opaque(jnp.ones(2), Opaque())
        with_opaque(jnp.ones(3), Opaque())
    assert kinds(log) == [["first_call"], ["shape"]]


def test_a_headline_counts_per_function_and_cause_and_survives_another_cause():
    @functools.partial(jax.jit, static_argnames=("n",))
    def mixed(x, n):
        return x * n

    with watch_recompiles() as log:
        for size in (2, 3, 4, 5):
            mixed(jnp.ones(size), n=1)
        mixed(jnp.ones(5), n=2)  # a different cause comes next
        mixed(jnp.ones(5), n=3)
    assert log.headlines == ["`mixed` compiled 6 times: the shape of `x` changes on axis 0 — pad to a few bucket sizes"]
    mixed(jnp.ones(5), n=4)
    with watch_recompiles() as log:
        for n in (5, 6, 7):
            mixed(jnp.ones(5), n=n)
        mixed(jnp.ones(6), n=7)
    assert log.headlines[0].startswith("`mixed` compiled 4 times: static argument `n` takes a new value each time")


def test_weak_type_wording_takes_the_right_article():
    @jax.jit
    def plus(x):
        return x + 1

    with watch_recompiles() as log:
        plus(2)
        plus(jnp.int32(2))
    message = only_cause(log.events[1]).message
    assert message.startswith("`x` is an i32[] array now and was a Python int (weak i32[]) before")


def test_a_library_function_the_user_jits_is_counted_but_eager_library_calls_are_not():
    relu = jax.jit(jax.nn.relu)
    softmax = jax.jit(jax.nn.softmax)
    sine = jax.jit(jnp.sin)
    with watch_recompiles() as log:
        for n in (3, 4):
            relu(jnp.ones(n))
            softmax(jnp.ones(n))
            sine(jnp.ones(n))
            jnp.where(jnp.arange(n) > 1, 1.0, 2.0)  # eager: JAX's own compilations
            jnp.cos(jnp.ones(n))
    assert log.counts == {"relu": 2, "softmax": 2, "sin": 2}
    assert [e.kinds for e in log.events if e.function == "relu"] == [["first_call"], ["shape"]]
    with pytest.raises(RecompileLimitExceeded, match="`relu` compiled 2 times"), watch_recompiles(max_compiles=1):
        for n in (5, 6):
            relu(jnp.ones(n))


def test_pytree_text_is_written_from_the_tree_whatever_its_keys_hold():
    @jax.jit
    def starry(tree):
        return tree["c"].sum()

    with watch_recompiles() as log:
        starry({"a*b": jnp.ones(2), "c": jnp.ones(3)})
    assert log.events[0].signature == "(tree: {'a*b': f32[2], 'c': f32[3]})"


def test_a_before_seen_ahead_of_an_unwatched_stretch_says_so():
    @jax.jit
    def gap(x):
        return x + 5

    with watch_recompiles() as first:
        gap(jnp.ones(3))
        gap(jnp.ones(4))
    gap(jnp.ones(6))  # compiled while nothing watched
    with watch_recompiles() as log:
        gap(jnp.ones(7))
        gap(jnp.ones(8))
    assert not first.events[1].unwatched_since_before
    stale, fresh = log.events
    assert stale.unwatched_since_before and not fresh.unwatched_since_before
    assert "what compiled while nothing watched is not known" in log.to_text()


def test_a_transform_wrapper_built_anew_in_a_loop_is_blamed_not_the_function():
    def kernel(x):
        return x * 2

    with watch_recompiles() as log:
        for _ in range(3):
            jax.jit(jax.vmap(kernel))(jnp.ones((2, 3)))
    assert log.counts == {"kernel": 3}
    cause = only_cause(log.events[1])
    assert cause.kind == "redefined_function"
    assert cause.message.startswith("`kernel` is the same function, but the jax.vmap wrapper around it was built anew")
    assert cause.advice == "Build `jax.jit(jax.vmap(kernel))` once, outside the loop, and call that."
    with watch_recompiles() as log:  # a function truly defined anew keeps its own words
        for _ in range(2):

            def fresh(x):
                return x + 1

            jax.jit(fresh)(jnp.ones(2))
    assert only_cause(log.events[1]).message.startswith("`fresh` is a new function object")


def test_pmap_compilations_name_the_users_parameters():
    def body(v, w):
        return v * w

    mapped = jax.pmap(body)
    with watch_recompiles() as log:
        mapped(jnp.ones((1, 3)), jnp.ones((1, 3)))
        mapped(jnp.ones((1, 4)), jnp.ones((1, 4)))
    assert log.events[0].signature == "(v: f32[1,3], w: f32[1,3])"
    assert [(c.kind, c.argument) for c in log.events[1].causes] == [("shape", "v"), ("shape", "w")]


def test_a_recompile_after_clear_caches_says_so_not_unknown():
    import jax
    import jax.numpy as jnp

    from jaxmagic import watch_recompiles

    @jax.jit
    def cleared(x):
        return x + 1

    with watch_recompiles() as log:
        cleared(jnp.ones(3))
        jax.clear_caches()
        cleared(jnp.ones(3))
        cleared(jnp.ones(3))  # still cached: no third compilation
    assert [[c.kind for c in e.causes] for e in log.events] == [["first_call"], ["caches_cleared"]]
    assert "jax.clear_caches()" in log.events[1].causes[0].message
    assert log.events[1].causes[0].advice.startswith("Expected after jax.clear_caches()")


def test_arguments_whose_shapes_change_together_are_told_one_fix():
    @jax.jit
    def weighted(L, C):
        return L @ C

    watch.forget()
    with watch_recompiles() as log:
        for n in (3, 4, 5):
            weighted(jnp.ones((n, n)), jnp.ones(n))
    text = log.to_text()
    assert [c.argument for c in log.events[1].causes] == ["L", "C"]
    assert text.count("→ Keep") == 1 and "→ Keep the shapes of `L` and `C` fixed" in text, text
