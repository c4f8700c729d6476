"""Each private JAX API jaxmagic relies on, checked directly: these fail loudly when JAX changes one."""

import functools

import jax
import jax.numpy as jnp

from jaxmagic import _jax_private


def test_jit_options_reads_static_and_donated_arguments():
    @functools.partial(jax.jit, static_argnums=(1,), static_argnames=("mode",), donate_argnums=(0,))
    def f(x, n, mode="a"):
        return x * n

    options = _jax_private.jit_options(f)
    assert options.static_argnums == (1,)
    assert set(options.static_argnames) == {"mode", "n"} or options.static_argnames == ("mode",)
    assert options.donate_argnums == (0,)
    assert "x" in options.donate_argnames


def test_an_object_that_answers_every_attribute_is_not_jitted():
    from flax import nnx

    assert not _jax_private.is_jitted(nnx.Rngs(0))


def test_is_jitted_tells_a_jitted_function_from_a_plain_one():
    def plain(x):
        return x

    assert _jax_private.is_jitted(jax.jit(plain))
    assert not _jax_private.is_jitted(plain)
    assert jax.jit(plain).__wrapped__ is plain


def test_traceback_frames_of_an_equation_reach_this_file():
    def f(x):
        return jnp.sin(x)

    eqn = jax.make_jaxpr(f)(jnp.ones(2)).jaxpr.eqns[0]
    frames = list(_jax_private.traceback_frames(eqn.source_info))
    assert frames, "JAX recorded no traceback for the equation"
    assert any(file == __file__ and function.endswith("f") for file, _, function in frames)
    assert all(isinstance(line, int) for _, line, _ in frames)


def test_is_jax_internal_file():
    assert _jax_private.is_jax_internal_file(jax.numpy.__file__)
    assert not _jax_private.is_jax_internal_file(__file__)


# -- recompiles: reading the jitted call being compiled, and JAX's explanations ----------------


def _at_event(event_name, action):
    """Run ``action`` and return what ``jit_call_in_progress`` saw at each ``event_name`` event."""
    import sys

    from jax import monitoring

    seen = []

    def listener(event, duration, **kwargs):
        if event == event_name:
            seen.append((kwargs.get("fun_name"), _jax_private.jit_call_in_progress(sys._getframe())))

    monitoring.register_event_duration_secs_listener(listener)
    try:
        action()
    finally:
        _jax_private.unregister_duration_listener(listener)
    return seen


def test_jit_call_in_progress_reads_the_callee_and_arguments_at_compile_time():
    def scaled(x, n, *, mode=1.0):
        return x * n * mode

    jitted = jax.jit(scaled, static_argnums=(1,), donate_argnums=(0,))
    x = jnp.arange(5.0)
    names = _jax_private.compile_event_names()
    seen = _at_event(names["compile"], lambda: jitted(x, 3, mode=2.0))
    ((fun_name, call),) = [s for s in seen if s[0] == "jit(scaled)"]
    assert call is not None and call.called
    assert call.fun is scaled
    assert call.args[0] is x and call.args[1] == 3
    assert call.kwargs == {"mode": 2.0}
    assert _jax_private.jit_info_static(call.jit_info) == ((1,), ("n",))
    options = _jax_private.jit_info_options(call.jit_info)
    assert set(options) == set(_jax_private.JIT_OPTION_FIELDS), "PjitInfo lost or renamed an option field"
    assert options["donate_argnums"] == (0,)


def test_jit_call_in_progress_at_trace_time_of_an_ahead_of_time_lowering():
    def f(x):
        return x + 1

    names = _jax_private.compile_event_names()
    x = jnp.ones(7)
    seen = _at_event(names["trace"], lambda: jax.jit(f).lower(x))
    ((fun_name, call),) = [s for s in seen if s[0] == "f"]
    assert call is not None and not call.called
    assert call.fun is f and call.args[0] is x


def test_eager_primitive_compilations_are_recognised():
    names = _jax_private.compile_event_names()
    x = jnp.ones((3, 37))  # a shape nothing else compiles tanh for
    seen = _at_event(names["compile"], lambda: jax.lax.tanh(x))  # one primitive, run eagerly
    calls = [call for _, call in seen if call is not None]
    assert calls and all(_jax_private.is_primitive_wrapper(call.fun) for call in calls)


def test_tracing_context_is_named_on_every_jax():
    import jax

    context = _jax_private.tracing_context()
    assert "jax_enable_x64" in context and context["jax_enable_x64"] in (False, True)
    assert len(context) > 10
    assert context["jax_numpy_rank_promotion"] == "allow"
    with jax.numpy_rank_promotion("raise"):  # a setting changed in this thread only
        assert _jax_private.tracing_context()["jax_numpy_rank_promotion"] == "raise"
    assert _jax_private.tracing_context() == context


def test_monitoring_listeners_are_removed_again():
    from jax import monitoring

    heard = []

    def on_duration(event, duration, **_):
        heard.append(event)

    def on_event(event, **_):
        heard.append(event)

    monitoring.register_event_duration_secs_listener(on_duration)
    monitoring.register_event_listener(on_event)
    _jax_private.unregister_duration_listener(on_duration)
    _jax_private.unregister_event_listener(on_event)
    jax.jit(lambda v: v * 3 + 1)(jnp.ones(7))
    assert heard == [], "neither listener hears a compilation after it was removed"


def test_explanations_arrive_on_the_named_logger():
    import logging

    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    logger = logging.getLogger(_jax_private.explanation_logger_names()[0])
    handler = Keep(level=logging.WARNING)
    logger.addHandler(handler)
    was = jax.config.values["jax_explain_cache_misses"]
    jax.config.update("jax_explain_cache_misses", True)
    try:

        def never_seen_before(x):
            return x - 1

        jax.jit(never_seen_before)(jnp.ones(2))
    finally:
        jax.config.update("jax_explain_cache_misses", was)
        logger.removeHandler(handler)
    assert any(r.startswith("TRACING CACHE MISS") and "never_seen_before" in r for r in records), records


def test_persistent_cache_enabled_answers_a_bool():
    assert _jax_private.persistent_cache_enabled() in (False, True)


def test_compile_event_names_are_recorded_while_a_new_function_compiles():
    names = _jax_private.compile_event_names()
    assert set(names) == {"trace", "lower", "compile"}
    seen = []

    def listen(event, duration, **_):
        seen.append(event)

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        jax.jit(lambda x: jnp.cosh(x) + 3)(jnp.ones(5)).block_until_ready()
    finally:
        _jax_private.unregister_duration_listener(listen)
    for kind, name in names.items():
        assert name in seen, f"JAX no longer records {name!r} ({kind}) through jax.monitoring"


def test_wrapped_callables_reach_the_users_function_inside_pmap():
    def user_function(x):
        return x * 2

    names = _jax_private.compile_event_names()
    seen = _at_event(names["compile"], lambda: jax.pmap(user_function)(jnp.ones((1, 5))))
    calls = [call for _, call in seen if call is not None]
    assert calls, "pmap compiled nothing through jit"
    assert any(user_function in list(_jax_private.wrapped_callables(call.fun)) for call in calls)


def test_a_dropped_output_is_told_from_a_used_one():
    from jax._src import core  # how JAX marks an output nothing reads

    used = jax.make_jaxpr(jnp.sin)(jnp.ones(3)).jaxpr.outvars[0]
    assert not _jax_private.is_dropped_variable(used)
    assert _jax_private.is_dropped_variable(core.DropVar(used.aval))


# -- recompiles: who called the jitted function --------------------------------------------------


def test_jit_caller_filename_is_the_file_that_called_the_jitted_function():
    from jax import monitoring

    seen = []

    def listener(event, duration, **kwargs):
        import sys

        if event == _jax_private.compile_event_names()["compile"]:
            seen.append(_jax_private.jit_caller_filename(sys._getframe(1)))

    monitoring.register_event_duration_secs_listener(listener)
    try:
        jax.jit(lambda x: x * 7)(jnp.ones(13))
    finally:
        monitoring.unregister_event_duration_listener(listener)
    assert __file__ in seen
    assert _jax_private.jit_caller_filename(None) is None


def test_a_program_jax_made_while_transposing_eagerly_is_told_from_a_call():
    from jax import monitoring

    seen = []

    def listener(event, duration, **kwargs):
        import sys

        if event == _jax_private.compile_event_names()["compile"]:
            frame = sys._getframe(1)
            seen.append(
                (_jax_private.jit_call_in_progress(frame) is None, _jax_private.compiling_jaxs_own_program(frame))
            )

    @jax.jit
    def cube(x):
        return x**3

    monitoring.register_event_duration_secs_listener(listener)
    try:
        cube(jnp.ones(11))  # a call
        _, pullback = jax.vjp(cube, jnp.ones(12))  # eager: JAX compiles the linearized and transposed programs
        pullback(jnp.ones(12))
    finally:
        monitoring.unregister_event_duration_listener(listener)
    assert seen[0] == (False, False)
    assert (True, True) in seen[1:]
    assert all(own == unseen for unseen, own in seen)


def test_is_module_level_jit_of_tells_jaxs_own_decorated_functions():
    from jax._src.numpy import ufuncs

    assert _jax_private.is_module_level_jit_of(jnp.sin.__wrapped__)
    assert ufuncs.sin.__wrapped__ is jnp.sin.__wrapped__
    assert not _jax_private.is_module_level_jit_of(jnp.sin)  # the user's jax.jit(jnp.sin) wraps this one
    assert not _jax_private.is_module_level_jit_of(jax.nn.softmax)


def test_traced_keys_hold_each_traced_signature_of_a_function():
    import numpy as np

    @jax.jit
    def twice(x, scale=1.0):
        return x * scale

    twice(jnp.ones(3))
    twice(jnp.ones((2, 2), jnp.int32), scale=2.0)
    keys = _jax_private.traced_keys(twice.__wrapped__)
    assert keys is not None and len(keys) == 2
    avals = sorted(key.avals for key in keys)
    assert avals == sorted(
        [(((3,), np.dtype("float32"), False),), (((2, 2), np.dtype("int32"), False), ((), np.dtype("float32"), True))]
    )
    assert _jax_private.traced_keys(lambda x: x) == []

    @functools.partial(jax.jit, static_argnames="n")
    def repeat(x, n):
        return x * n

    repeat(jnp.ones(2), n=3)
    (key,) = _jax_private.traced_keys(repeat.__wrapped__)
    assert key.static_values == ((3,), ("n",))
    assert len(key.structure[1]) == 1, "one dynamic argument's structure"


def test_the_program_being_compiled_is_the_one_xla_compiled():
    import sys

    from jax import monitoring

    seen = []

    def listener(event, duration, **kwargs):
        if event == _jax_private.compile_event_names()["compile"]:
            seen.append(_jax_private.program_being_compiled(sys._getframe()))

    def f(x):
        return jnp.tanh(x) * 2

    monitoring.register_event_duration_secs_listener(listener)
    try:
        jax.jit(f)(jnp.ones(7))
    finally:
        _jax_private.unregister_duration_listener(listener)
    assert seen and seen[-1] is not None, "pxla._cached_compilation no longer holds xla_executable"
    program = seen[-1]
    compiled = jax.jit(f).trace(jnp.ones(7)).lower().compile()
    assert "tanh" in program.hlo_text and program.hlo_text.count(" tanh(") == compiled.as_text().count(" tanh(")
    assert program.cost["flops"] == compiled.cost_analysis()["flops"]
    assert program.memory_stats.argument_size_in_bytes == 28
    assert _jax_private.program_being_compiled(sys._getframe()) is None  # nothing compiling here


def test_jit_shardings_reads_what_the_jit_was_given():
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()[:1]), ("d",))
    given = NamedSharding(mesh, P())
    shardings = _jax_private.jit_shardings(jax.jit(lambda x, y: x + y, in_shardings=(given, None), out_shardings=given))
    assert shardings == {"in_shardings": (given, None), "out_shardings": given}
    assert _jax_private.jit_shardings(jax.jit(lambda x: x)) == {}


def test_jaxpr_argument_names_are_the_parameters_paths():
    closed = jax.make_jaxpr(lambda params, x: params["w"] * x)({"w": 1.0}, 2.0)
    assert _jax_private.jaxpr_argument_names(closed) == ["params['w']", "x"]


def test_bind_equation_runs_plain_and_calling_equations_on_concrete_values():
    import numpy as np

    inner = jax.jit(lambda a: jnp.cumsum(a) * 2)
    closed = jax.make_jaxpr(lambda v: inner(jnp.sin(v)))(jnp.ones(3))
    v = jnp.arange(3.0)
    sin_eqn, jit_eqn = closed.jaxpr.eqns
    (s,) = _jax_private.bind_equation(sin_eqn, [v])
    (out,) = _jax_private.bind_equation(jit_eqn, [s])
    np.testing.assert_allclose(np.asarray(out), np.cumsum(np.sin(np.arange(3.0))) * 2, rtol=1e-6)


def test_lowered_input_shardings_tell_committed_inputs_from_uncommitted_ones():
    @jax.jit
    def total(x, y):
        return x.sum() + y.sum()

    placed = jax.device_put(jnp.ones(3), jax.devices()[0])
    total(jnp.ones(3), jnp.ones(2))
    total(placed, jnp.ones(2))  # the same trace, lowered again for a committed x
    lowerings = _jax_private.lowered_input_shardings(total.trace(placed, jnp.ones(2)).jaxpr)
    assert sorted((s is None, t is None) for s, t in lowerings) == [(False, True), (True, True)]
    assert _jax_private.lowered_input_shardings(None) is None


def test_transform_chain_reads_the_transforms_jax_wrapped_a_function_in():
    from jax.experimental import checkify

    def f(x):
        return x

    words = {"grad", "value_and_grad", "vmap", "jacfwd", "jacrev", "checkpoint", "checkify"}
    assert _jax_private.transform_chain(jax.vmap(jax.grad(f)), words) == (["vmap", "grad"], f)
    assert _jax_private.transform_chain(jax.value_and_grad(f), words) == (["value_and_grad"], f)
    assert _jax_private.transform_chain(jax.hessian(f), words) == (["jacfwd", "jacrev"], f)
    assert _jax_private.transform_chain(jax.checkpoint(f), words) == (["checkpoint"], f)
    assert _jax_private.transform_chain(checkify.checkify(f), words) == (["checkify"], f)
    assert _jax_private.transform_chain(f, words) == ([], f)


def test_persistent_cache_writes_off_writes_nothing_in_the_users_cache_and_the_user_still_does(tmp_path):
    """Run apart: JAX initialises its persistent cache once per process."""
    import subprocess
    import sys

    script = f"""
import os, jax, jax.numpy as jnp
jax.config.update("jax_compilation_cache_dir", {str(tmp_path)!r})
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
from jaxmagic._jax_private import persistent_cache_writes_off
with persistent_cache_writes_off():
    jax.jit(lambda x: jnp.sin(x) * 3).lower(jnp.ones(3)).compile()
inside = len(os.listdir({str(tmp_path)!r}))
jax.jit(lambda x: jnp.cos(x) * 5)(jnp.ones(3))
print("ENTRIES", inside, len(os.listdir({str(tmp_path)!r})) > inside, jax.config.jax_persistent_cache_min_compile_time_secs)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert "ENTRIES 0 True 0" in done.stdout, done.stdout + done.stderr[-2000:]
