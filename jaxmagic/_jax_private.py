"""The few places where only a private JAX API will do, each wrapped in one small function.

``tests/test_jax_private.py`` fails loudly when a JAX release changes any of them.
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass
from typing import Any, Iterator


@dataclass(frozen=True)
class JitOptions:
    """The options a ``jax.jit``-wrapped function was made with."""

    static_argnums: tuple[int, ...] = ()
    static_argnames: tuple[str, ...] = ()
    donate_argnums: tuple[int, ...] = ()
    donate_argnames: tuple[str, ...] = ()


def is_jitted(fn: Any) -> bool:
    """True for the object ``jax.jit`` returns. Its type has ``trace`` and ``lower`` (an object that
    answers every attribute, such as Flax's ``nnx.Rngs``, is not taken for one)."""
    kind = type(fn)
    return hasattr(kind, "trace") and hasattr(kind, "lower") and hasattr(fn, "_jit_info")


def jit_options(fn: Any) -> JitOptions:
    """The static and donated arguments of a ``jax.jit``-wrapped function (``PjitFunction._jit_info``)."""
    info = fn._jit_info
    return JitOptions(
        static_argnums=tuple(info.static_argnums),
        static_argnames=tuple(info.static_argnames),
        donate_argnums=tuple(info.donate_argnums),
        donate_argnames=tuple(info.donate_argnames),
    )


def jit_shardings(fn: Any) -> dict[str, Any]:
    """The ``in_shardings`` / ``out_shardings`` a ``jax.jit``-wrapped function was given, as given
    (``PjitInfo``'s ``*_treedef`` and ``*_leaves``); ``{}`` when it was given neither.

    >>> import jax
    >>> jit_shardings(jax.jit(lambda x: x))
    {}
    """
    return jit_info_shardings(fn._jit_info)


def jit_info_shardings(info: Any) -> dict[str, Any]:
    """``jit_shardings`` of a ``PjitInfo`` (a ``JitCallInProgress``'s ``jit_info``)."""
    import jax

    found = {}
    for name in ("in_shardings", "out_shardings"):
        treedef, leaves = getattr(info, f"{name}_treedef", None), getattr(info, f"{name}_leaves", None)
        if treedef is None or leaves is None:
            continue
        if all(type(leaf).__name__ == "UnspecifiedValue" for leaf in leaves):
            continue
        found[name] = jax.tree_util.tree_unflatten(treedef, list(leaves))
    return found


def is_dropped_variable(var: Any) -> bool:
    """True for an equation's output that nothing uses, which JAX prints as ``_`` (``core.DropVar``;
    ``jax.extend.core`` exports it only from JAX 0.9)."""
    from jax._src import core

    return isinstance(var, core.DropVar)


_FRAMES_READ: dict = {}  # jaxlib ``Traceback`` -> its frames as tuples, read once
_FRAMES_KEPT = 4096


def traceback_frames(source_info: Any) -> tuple[tuple[str, int, str], ...]:
    """``(file, line, function)`` of each frame that JAX recorded for an equation, innermost first.

    Uses ``eqn.source_info.traceback.frames`` (jaxlib's ``Traceback``). The equations one line
    makes in a loop share equal tracebacks (the same code, at the same instruction): each is read
    once, as reading a traceback's frames builds a Python object per frame.

    >>> import jax, jax.numpy as jnp
    >>> def f(x):
    ...     for _ in range(2):
    ...         x = jnp.sin(x)
    ...     return x
    >>> first, second = (traceback_frames(e.source_info) for e in jax.make_jaxpr(f)(1.0).jaxpr.eqns)
    >>> first is second, "f" in [function for _, _, function in first], traceback_frames(None)
    (True, True, ())
    """
    traceback = getattr(source_info, "traceback", None)
    if traceback is None:
        return ()
    frames = _FRAMES_READ.get(traceback)
    if frames is None:
        frames = _within_trace(
            tuple((frame.file_name, frame.line_num, frame.function_name) for frame in traceback.frames)
        )
        if len(_FRAMES_READ) >= _FRAMES_KEPT:
            _FRAMES_READ.clear()
        _FRAMES_READ[traceback] = frames
    return frames


def _within_trace(frames: tuple[tuple[str, int, str], ...]) -> tuple[tuple[str, int, str], ...]:
    """The frames up to the function being traced: those outside the call that began the trace
    (``partial_eval.trace_to_jaxpr_dynamic``, the entry of ``jax.jit``'s and ``lax.scan``'s traces)
    are left out. JAX 0.9 and later record none of them; JAX 0.8 records the whole stack, whose outer
    frames (the line that called the jitted function) made no equation of the program."""
    from jax._src.interpreters import partial_eval

    entry = partial_eval.__file__
    for index, (file, _, function) in enumerate(frames):
        if file == entry and function.endswith("trace_to_jaxpr_dynamic"):
            return frames[:index]
    return frames


def is_jax_internal_file(filename: str) -> bool:
    """True for a file of JAX's own (``source_info_util.is_user_filename`` says it is not the user's)."""
    from jax._src import source_info_util

    return not source_info_util.is_user_filename(filename)


def unregister_duration_listener(listener: Any) -> None:
    """Remove a ``jax.monitoring`` duration listener (public from JAX 0.9; before, only
    ``jax._src.monitoring`` can remove one)."""
    from jax import monitoring

    public = getattr(monitoring, "unregister_event_duration_listener", None)
    if public is not None:
        public(listener)
        return
    from jax._src import monitoring as private_monitoring

    # Only in JAX releases before the public function came: a type checker on a newer JAX cannot see it.
    private_monitoring._unregister_event_duration_listener_by_callback(listener)  # pyright: ignore[reportAttributeAccessIssue]


def unregister_event_listener(listener: Any) -> None:
    """Remove a ``jax.monitoring`` event listener (public from JAX 0.9; before, only
    ``jax._src.monitoring`` can remove one)."""
    from jax import monitoring

    public = getattr(monitoring, "unregister_event_listener", None)
    if public is not None:
        public(listener)
        return
    from jax._src import monitoring as private_monitoring

    # Only in JAX releases before the public function came: a type checker on a newer JAX cannot see it.
    private_monitoring._unregister_event_listener_by_callback(listener)  # pyright: ignore[reportAttributeAccessIssue]


# The ``jax.monitoring`` event JAX records when its persistent compilation cache served an executable.
PERSISTENT_CACHE_HIT_EVENT = "/jax/compilation_cache/cache_hits"


def compile_event_names() -> dict[str, str]:
    """The ``jax.monitoring`` duration events JAX records while tracing, lowering and compiling:
    ``{"trace": ..., "lower": ..., "compile": ...}`` (names from ``jax._src.dispatch``)."""
    from jax._src import dispatch

    return {
        "trace": dispatch.JAXPR_TRACE_EVENT,
        "lower": dispatch.JAXPR_TO_MLIR_MODULE_EVENT,
        "compile": dispatch.BACKEND_COMPILE_EVENT,
    }


# ------------------------------------------------------------------------------------------------
# Recompiles: which jitted call JAX is tracing or compiling right now, and what keys its caches


@dataclass(frozen=True, eq=False)
class JitCallInProgress:
    """A call of a jitted function that JAX is tracing or compiling in this thread.

    ``fun`` is the Python callee, ``jit_info`` JAX's record of the ``jax.jit`` options, ``args`` /
    ``kwargs`` the call's arguments. ``called`` is False for ``jit(f).trace(...)`` / ``.lower(...)``
    (ahead of time), True for an ordinary call. Do not keep it: it holds the user's arrays.
    """

    fun: Any
    jit_info: Any
    args: tuple
    kwargs: dict
    called: bool


def jit_call_in_progress(frame: Any) -> JitCallInProgress | None:
    """The innermost jitted call on the stack from ``frame`` outward, read from ``pjit``'s frames.

    ``pjit``'s ``cache_miss(*args, **kwargs)`` (a call that missed the C++ cache; ``fun`` and
    ``jit_info`` are its closure cells) and ``_infer_params(fun, ji, args, kwargs)`` (tracing) hold
    the callee and its arguments as local variables.
    """
    from jax._src import pjit

    pjit_file = pjit.__file__
    found = None
    while frame is not None:
        code = frame.f_code
        if code.co_filename == pjit_file and code.co_name in ("cache_miss", "_infer_params"):
            local = frame.f_locals
            if code.co_name == "cache_miss":
                if found is not None:
                    return JitCallInProgress(found.fun, found.jit_info, found.args, found.kwargs, called=True)
                return _call_from_locals(local, "jit_info", called=True)
            if found is not None:  # a second trace further out: the inner one was a nested trace
                return found
            found = _call_from_locals(local, "ji", called=False)
        frame = frame.f_back
    return found


def _call_from_locals(local: dict, info_name: str, *, called: bool) -> JitCallInProgress | None:
    try:
        return JitCallInProgress(local["fun"], local[info_name], tuple(local["args"]), dict(local["kwargs"]), called)
    except (KeyError, TypeError):
        return None


# ``PjitInfo`` fields that are ``jax.jit`` options (all but the static arguments, read separately).
JIT_OPTION_FIELDS = (
    "donate_argnums",
    "donate_argnames",
    "device",
    "backend",
    "keep_unused",
    "inline",
    "compiler_options_kvs",
    "in_shardings_leaves",
    "out_shardings_leaves",
    "in_layouts_leaves",
    "out_layouts_leaves",
)


def jit_info_static(jit_info: Any) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """``(static_argnums, static_argnames)`` of a ``PjitInfo`` (each completed from the other by JAX)."""
    return tuple(jit_info.static_argnums), tuple(jit_info.static_argnames)


def jit_info_options(jit_info: Any) -> dict[str, Any]:
    """The ``jax.jit`` options of a ``PjitInfo`` that enter the compilation cache key."""
    return {name: getattr(jit_info, name) for name in JIT_OPTION_FIELDS if hasattr(jit_info, name)}


def tracing_context() -> dict[str, Any]:
    """JAX's settings that are part of every tracing cache key (``config.trace_context()``), by name.

    JAX 0.9 names them (``config.trace_context_names``); before, the key's values carry no names,
    and the settings are read one by one: those ``config.py`` declares with
    ``include_in_trace_context=True``, each at its value in this thread.
    """
    from jax._src import config

    names_of = getattr(config, "trace_context_names", None)
    if names_of is None:
        states = config.config_states
        return {name: states[name].value for name in _trace_context_settings() if name in states}
    names, values = names_of(), config.trace_context()
    if len(names) != len(values):
        return {}
    return dict(zip(names, values, strict=True))


@functools.cache
def _trace_context_settings() -> tuple[str, ...]:
    """The names of the settings JAX 0.8's ``config.py`` declares part of the tracing cache key."""
    import ast
    import inspect

    from jax._src import config

    names = []
    for node in ast.walk(ast.parse(inspect.getsource(config))):
        if not isinstance(node, ast.Call):
            continue
        flags = {k.arg: k.value for k in node.keywords}
        flag = flags.get("include_in_trace_context")
        if not (isinstance(flag, ast.Constant) and flag.value is True):
            continue
        name = flags.get("name", node.args[0] if node.args else None)
        if isinstance(name, ast.Constant) and isinstance(name.value, str):
            names.append(name.value)
    return tuple(sorted(set(names)))


def is_primitive_wrapper(fun: Any) -> bool:
    """True for the function JAX jits to run one primitive eagerly (``dispatch.apply_primitive``)."""
    return bool(getattr(fun, "_apply_primitive", False))


def explanation_logger_names() -> tuple[str, ...]:
    """The loggers on which JAX writes its cache-miss explanations (``jax_explain_cache_misses``):
    the tracing cache's (``partial_eval`` from JAX 0.9, ``pjit`` before) and the persistent
    compilation cache's."""
    from jax._src import compilation_cache, compiler, pjit
    from jax._src.interpreters import partial_eval

    modules = (partial_eval, pjit, compiler, compilation_cache)
    return tuple(module.logger.name for module in modules if hasattr(module, "logger"))


CACHE_KEY_PART_MESSAGE = "get_cache_key hash of serialized %s: %s"


@contextlib.contextmanager
def compile_logs_off() -> Iterator[None]:
    """In this thread, JAX neither logs its compilations (``jax_log_compiles``) nor explains its
    cache misses (``jax_explain_cache_misses``), whatever they are set to; as it was afterwards.
    Neither option enters JAX's cache keys.

    Uses the thread-local context of ``jax._src.config.log_compiles`` and ``explain_cache_misses``.

    >>> import jax
    >>> with compile_logs_off():
    ...     inside = jax.config.jax_log_compiles
    >>> inside, jax.config.jax_log_compiles
    (False, False)
    """
    from jax._src import config

    with contextlib.ExitStack() as stack:
        # Only an option that is on is turned off: a thread-local setting, even one equal to the
        # global value, slows every dispatch of JAX's while it is set (an eager gradient: +2-3%).
        for option in (config.log_compiles, config.explain_cache_misses):
            if option.value:
                stack.enter_context(option(False))
        yield


@contextlib.contextmanager
def persistent_cache_writes_off() -> Iterator[None]:
    """In this thread, JAX writes nothing into the user's persistent compilation cache: it writes
    an entry only for a program whose compile time reaches ``jax_persistent_cache_min_compile_time_secs``,
    set here to infinity (reading from the cache goes on). As it was afterwards; the user's
    setting is untouched.

    Uses the thread-local context of ``jax._src.config.persistent_cache_min_compile_time_secs``.

    >>> import jax
    >>> before = jax.config.jax_persistent_cache_min_compile_time_secs
    >>> with persistent_cache_writes_off():
    ...     pass
    >>> jax.config.jax_persistent_cache_min_compile_time_secs == before
    True
    """
    from jax._src import config

    if config.persistent_cache_min_compile_time_secs.value == float("inf"):
        yield  # already so: no thread-local setting (it would slow every dispatch while set)
        return
    with config.persistent_cache_min_compile_time_secs(float("inf")):
        yield


class _ClearingMark:
    """Registered among JAX's caches, so that ``jax.clear_caches()`` (which clears each of them)
    tells jaxmagic; it holds nothing."""

    def __init__(self, callback: Any):
        self.callback = callback

    def cache_clear(self) -> None:
        self.callback()

    def cache_info(self) -> None:
        return None

    def cache_keys(self) -> list:
        return []


def on_caches_cleared(callback: Any) -> Any:
    """Call ``callback()`` each time ``jax.clear_caches()`` runs, through JAX's registry of the
    caches it clears (``jax._src.util.register_cache``); returns the mark registered, which the
    caller keeps (JAX holds it weakly), or ``None`` where this JAX has no such registry.

    >>> import jax
    >>> cleared = []
    >>> mark = on_caches_cleared(lambda: cleared.append(1))
    >>> jax.clear_caches(); cleared
    [1]
    """
    from jax._src import util

    register = getattr(util, "register_cache", None)
    if register is None:
        return None
    mark = _ClearingMark(callback)
    register(mark, "jaxmagic: notices jax.clear_caches()")
    return mark


def cache_key_logger_name() -> str:
    """The logger on which JAX writes, at DEBUG level, the hash of each part of a persistent
    cache key (``cache_key.get``: the computation, jaxlib's and the backend's versions, XLA flags,
    compile options, the devices...), one record per part: ``CACHE_KEY_PART_MESSAGE`` with the
    part's name and its hash as arguments."""
    from jax._src import cache_key

    return cache_key.logger.name


def jit_disabled() -> bool:
    """Whether ``jax_disable_jit`` is on here (``jax.disable_jit()`` included): JAX's config answers
    each of its options as an attribute made at run time, which a type checker cannot see."""
    import jax

    return bool(jax.config.jax_disable_jit)  # pyright: ignore[reportAttributeAccessIssue]


def persistent_cache_directory() -> str | None:
    """The persistent compilation cache's directory (``jax_compilation_cache_dir``), if set."""
    import jax

    directory = jax.config.values.get("jax_compilation_cache_dir")
    return str(directory) if directory else None


def persistent_cache_enabled() -> bool:
    """Whether JAX's persistent compilation cache is in use (``compilation_cache.is_persistent_cache_enabled``)."""
    from jax._src import compilation_cache

    return bool(compilation_cache.is_persistent_cache_enabled())


def wrapped_callables(fun: Any, depth: int = 4) -> Iterator[Any]:
    """The callables a JAX-internal wrapper closes over, nearest first (``pmap`` jits a wrapper of
    the user's function), looking through ``linear_util.WrappedFun`` to the function it wraps."""
    from jax._src import linear_util

    queue, seen = [(fun, 0)], {id(fun)}
    while queue:
        obj, level = queue.pop(0)
        for cell in getattr(obj, "__closure__", None) or ():
            try:
                value = cell.cell_contents
            except ValueError:
                continue
            if isinstance(getattr(value, "__self__", None), linear_util.WrappedFun):
                value = value.__self__  # its bound ``call_wrapped`` (JAX 0.8's pmap)
            if isinstance(value, linear_util.WrappedFun):
                value = value.f
            if callable(value) and id(value) not in seen:
                seen.add(id(value))
                yield value
                if level + 1 < depth:
                    queue.append((value, level + 1))


def transform_chain(fun: Any, transforms: frozenset[str] | set[str], depth: int = 12) -> tuple[list[str], Any]:
    """The transforms JAX wrapped a function in, outermost first, and the function inside them:
    ``(["vmap", "grad"], f)`` for ``jax.vmap(jax.grad(f))``, read from the wrappers' own code
    (``grad.<locals>.grad_f``, each behind an ``api_boundary`` wrapper) and what each closes over.
    Only the words in ``transforms`` count; ``grad`` is made of ``value_and_grad``, said once.
    ``([], fun)`` for a function of the user's."""
    words: list[str] = []
    for _ in range(depth):
        code = getattr(fun, "__code__", None)
        if code is None or not is_jax_internal_file(code.co_filename):
            break
        qualname = getattr(code, "co_qualname", code.co_name)
        outer = qualname.split(".<locals>.")[0] if ".<locals>." in qualname else ""
        if outer in transforms and not (outer == "value_and_grad" and words and words[-1] == "grad"):
            words.append(outer)
        inner = next(
            (
                cell.cell_contents
                for cell in fun.__closure__ or ()
                if hasattr(_cell_contents(cell), "__code__") and callable(_cell_contents(cell))
            ),
            None,
        )
        if inner is None:
            break
        fun = inner
    return words, fun


def _cell_contents(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return None


# -- recompiles: who called the jitted function --------------------------------------------------


def jit_caller_filename(frame: Any) -> str | None:
    """The file of the Python frame that called the jitted function now compiling: the frame just
    outside ``pjit``'s ``cache_miss`` (the C++ dispatch that calls it leaves no frame of its own).
    ``None`` when no such frame is on the stack (``.lower()``, a nested trace)."""
    from jax._src import pjit, traceback_util

    pjit_file = pjit.__file__
    while frame is not None:
        code = frame.f_code
        if code.co_filename == pjit_file and code.co_name == "cache_miss":
            caller = frame.f_back
            while caller is not None and caller.f_code.co_filename == traceback_util.__file__:
                caller = caller.f_back  # JAX's traceback filtering wraps the call
            return caller.f_code.co_filename if caller is not None else None
        frame = frame.f_back
    return None


def compiling_jaxs_own_program(frame: Any) -> bool:
    """Whether the compilation under way is of a program JAX made itself while running a
    transformation eagerly (the transpose or the linearized form of a jitted function under an
    eager ``jax.vjp``): ``pjit``'s ``_pjit_call_impl`` is on the stack with no ``cache_miss`` (a
    call of a jitted function) and no ``_infer_params`` (a trace) further out."""
    from jax._src import pjit

    pjit_file = pjit.__file__
    impl = False
    while frame is not None:
        code = frame.f_code
        if code.co_filename == pjit_file:
            if code.co_name in ("cache_miss", "_infer_params"):
                return False
            impl = impl or code.co_name == "_pjit_call_impl"
        frame = frame.f_back
    return impl


def is_module_level_jit_of(fun: Any) -> bool:
    """Whether ``fun`` is what a module-level ``@jax.jit`` decorated in its own module (JAX's
    ``jnp.sin``, ``_where``): the module's attribute of that name is a jitted function wrapping it."""
    import sys as _sys

    module = _sys.modules.get(getattr(fun, "__module__", None) or "")
    attribute = getattr(module, getattr(fun, "__name__", "") or "", None) if module is not None else None
    return attribute is not None and attribute is not fun and getattr(attribute, "__wrapped__", None) is fun


def compiling_jaxpr(frame: Any) -> Any | None:
    """The ``ClosedJaxpr`` JAX is compiling now, from ``pjit``'s ``_pjit_call_impl_python`` frame
    on the stack (its ``jaxpr`` argument); ``None`` when there is none (``.lower().compile()``)."""
    from jax._src import pjit

    pjit_file = pjit.__file__
    while frame is not None:
        code = frame.f_code
        if code.co_filename == pjit_file and code.co_name == "_pjit_call_impl_python":
            return frame.f_locals.get("jaxpr")
        frame = frame.f_back
    return None


@dataclass(frozen=True)
class CompiledProgram:
    """What XLA made of a program it has just compiled: the optimized HLO (with JAX's source
    metadata), XLA's cost estimate and its memory statistics (per device)."""

    hlo_text: str
    cost: dict
    memory_stats: Any


def program_being_compiled(frame: Any) -> CompiledProgram | None:
    """The program XLA has just compiled (or the persistent cache served), read when JAX records
    its backend-compile event: ``pxla._cached_compilation``'s ``xla_executable`` (a jaxlib
    ``LoadedExecutable``) is on the stack then. ``None`` where it is not (another JAX layout)."""
    from jax._src.interpreters import pxla

    pxla_file = pxla.__file__
    while frame is not None:
        code = frame.f_code
        if code.co_filename == pxla_file and code.co_name == "_cached_compilation":
            executable = frame.f_locals.get("xla_executable")
            if executable is None:
                return None
            modules = executable.hlo_modules()
            cost = executable.cost_analysis()
            if isinstance(cost, (list, tuple)):  # one entry per device on some releases
                cost = cost[0] if cost else {}
            return CompiledProgram(
                modules[0].to_string() if modules else "", dict(cost or {}), executable.get_compiled_memory_stats()
            )
        frame = frame.f_back
    return None


def lowered_input_shardings(jaxpr: Any) -> list[tuple[Any, ...]] | None:
    """For each lowering jax.jit's lowering cache (``pjit._pjit_lower``, keyed on the jaxpr and
    its ``in_shardings``) holds of ``jaxpr``: the sharding of each input, ``None`` for an
    uncommitted one (JAX's ``UnspecifiedValue``). ``None`` where this JAX keeps them otherwise.
    A tracing-cache hit that compiles again differs from an earlier lowering only there."""
    from jax._src import pjit

    if jaxpr is None:
        return None
    try:
        keys = pjit._pjit_lower.cache_keys()
    except Exception:
        return None
    found = []
    for key in keys:
        try:
            ref, _context, arguments, _ = key
            if ref() is not jaxpr:
                continue
            in_shardings = arguments[0]
            found.append(tuple(None if type(s).__name__ == "UnspecifiedValue" else s for s in in_shardings))
        except Exception:
            return None
    return found


def equation_user_line(eqn: Any) -> tuple[str, int] | None:
    """``(file, line)`` of the user's code that emitted a jaxpr equation (JAX's ``user_frame``)."""
    from jax._src import source_info_util

    frame = source_info_util.user_frame(eqn.source_info.traceback)
    if frame is None:
        return None
    return frame.file_name, getattr(frame, "start_line", None) or getattr(frame, "line_num", 0)


def jaxpr_function_name(jaxpr: Any) -> str:
    """The name of the Python function a (nested) jaxpr was traced from: a ``lax.switch`` or
    ``lax.cond`` branch, a loop body; ``""`` where JAX did not record it.

    Uses ``Jaxpr.debug_info.func_name``.

    >>> import jax, jax.numpy as jnp
    >>> def double(v):
    ...     return v * 2
    >>> closed = jax.make_jaxpr(lambda i, x: jax.lax.switch(i, [double, jnp.sin], x))(0, 1.0)
    >>> [jaxpr_function_name(b.jaxpr) for b in closed.jaxpr.eqns[-1].params["branches"]]
    ['double', 'sin']
    """
    info = getattr(getattr(jaxpr, "jaxpr", jaxpr), "debug_info", None)
    name = getattr(info, "func_name", None)
    return name if isinstance(name, str) else ""


def jaxpr_argument_names(jaxpr: Any) -> list[str] | None:
    """What each input of a traced function's jaxpr stands for, as JAX names it from the user's
    parameters (``params['w']``, ``x``); ``None`` where JAX did not record them.

    Uses ``Jaxpr.debug_info.arg_names``.

    >>> import jax
    >>> jaxpr_argument_names(jax.make_jaxpr(lambda params, x: params["w"] * x)({"w": 1.0}, 2.0))
    ["params['w']", 'x']
    """
    info = getattr(getattr(jaxpr, "jaxpr", jaxpr), "debug_info", None)
    names = getattr(info, "arg_names", None)
    return [str(name) for name in names] if names is not None else None


@dataclass(frozen=True)
class TracedKey:
    """One entry of jax.jit's tracing cache for a function: its ``jit_info`` (the jit options),
    ``arguments`` (JAX's ``ArgumentSignature``: the pytree structures and static values) and
    ``avals`` (each array input's ``(shape, dtype, weak_type)``, in JAX's order)."""

    jit_info: Any
    arguments: Any
    avals: tuple[tuple[tuple, Any, bool], ...]
    traced_before: bool = True  # in the cache before the marks given to ``traced_keys`` were taken

    @property
    def static_values(self) -> tuple[tuple[Any, ...], tuple[str, ...]]:
        """The static arguments' values (those passed by position, then by keyword) and the
        keyword ones' names."""
        return tuple(self.arguments.static_args), tuple(self.arguments.static_arg_names)

    @property
    def structure(self) -> tuple:
        """The dynamic arguments' keyword names and pytree structures."""
        return tuple(self.arguments.dynamic_arg_names), tuple(self.arguments.dynamic_arg_treedefs)


def tracing_cache_marks() -> frozenset[int]:
    """A mark (the hash) of every key jax.jit's tracing cache holds now, to tell later which keys
    were traced since (``traced_keys(fun, marks)``); empty where this JAX keeps them otherwise."""
    from jax._src import pjit

    try:
        keys = pjit._infer_params_cached.cache_keys()
    except Exception:
        return frozenset()
    marks = set()
    for key in keys:
        with contextlib.suppress(Exception):  # a key whose function is gone cannot be hashed
            marks.add(_key_mark(key))
    return frozenset(marks)


def _key_mark(key: tuple) -> int:
    """The hash of a tracing cache key, its keyword dictionary (always empty) left out."""
    return hash(tuple(key[:3]))


def traced_keys(fun: Any, marks: frozenset[int] | None = None) -> list[TracedKey] | None:
    """The keys jax.jit's tracing cache holds for the Python function ``fun``
    (``pjit._infer_params_cached``: ``(weakref(fun), trace context, (jit_info, signature, avals,
    mesh), {})``), oldest first as far as the cache keeps an order; ``None`` where this JAX keeps
    them otherwise. With ``marks`` (from ``tracing_cache_marks``), a key traced after they were
    taken has ``traced_before`` False."""
    from jax._src import pjit

    try:
        keys = pjit._infer_params_cached.cache_keys()
    except Exception:
        return None
    found = []
    for key in keys:
        try:
            ref, _context, (jit_info, arguments, avals, _mesh), _ = key
            if ref() is not fun:
                continue
            traced = TracedKey(
                jit_info,
                arguments,
                tuple((tuple(a.shape), a.dtype, bool(getattr(a, "weak_type", False))) for a in avals),
                marks is None or _key_mark(key) in marks,
            )
            _ = traced.static_values, traced.structure  # read now: a JAX without them is told here
            found.append(traced)
        except Exception:
            return None
    return found


def bind_equation(eqn: Any, invals: list) -> list:
    """Run one jaxpr equation on concrete values, as ``jax.core.eval_jaxpr`` does: a primitive that
    calls a jaxpr (``jit``, ``closed_call``) first turns its parameters into bind arguments
    (``Primitive.get_bind_params``: the parameters on JAX 0.9 and later, ``(subfuns, params)``
    before), under the equation's own context (``eqn.ctx``). Always a list of outputs."""
    import contextlib

    found = eqn.primitive.get_bind_params(eqn.params)
    subfuns, params = found if isinstance(found, tuple) else ((), found)
    manager = getattr(getattr(eqn, "ctx", None), "manager", None) or contextlib.nullcontext()
    with manager:
        outs = eqn.primitive.bind(*subfuns, *invals, **params)
    return list(outs) if eqn.primitive.multiple_results else [outs]
