"""Who compiled, with which arguments, and why: turning one JAX compilation into its causes.

Given the jitted call read from the stack (``_jax_private.jit_call_in_progress``), this module
names the function (the user's own, even inside a JAX wrapper such as ``pmap``'s), tells JAX's
internal compilations from the user's, describes the call's ``CallSignature`` and decides the
causes: jaxmagic's comparison first, JAX's explanation where there is nothing to compare with,
``unknown`` where neither can tell.

>>> base_name("jit(step)"), base_name("pmap(f)")
('step', 'pmap(f)')
>>> [c.kind for c in decide_causes("f", None, None, [], None, seen=False, internal=False)]
['first_call']
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import sys
import weakref
from typing import Callable

from jaxmagic import _jax_private
from jaxmagic.compiled.collective_causes import sharding_request
from jaxmagic.recompiles.causes import BUILT_AGAIN, Cause
from jaxmagic.recompiles.closures import made_of
from jaxmagic.recompiles.explanations import parse_explanation
from jaxmagic.recompiles.handles import captured_handles, handle_of, passed_positionally, user_frame
from jaxmagic.recompiles.redefinitions import library_of
from jaxmagic.recompiles.signatures import CallSignature, describe_argument, describe_call, function_identity
from jaxmagic.tracing.callables import innermost
from jaxmagic.tracing.jitting import is_own_wrapper
from jaxmagic.tracing.sources import is_jaxmagic_file, is_library_file


def base_name(jax_name: str) -> str:
    """``jit(f)`` -> ``f`` (the name JAX gives the trace event and its explanation)."""
    if jax_name.startswith("jit(") and jax_name.endswith(")"):
        return jax_name[4:-1]
    return jax_name


def call_signature(call) -> CallSignature:
    static_argnums, static_argnames = _jax_private.jit_info_static(call.jit_info)
    options = {"static_argnums": static_argnums, "static_argnames": tuple(sorted(static_argnames))}
    options.update(_jax_private.jit_info_options(call.jit_info))
    signature = describe_call(
        call.fun,
        call.args,
        call.kwargs,
        static_argnums=static_argnums,
        static_argnames=static_argnames,
        options=options,
        config=_jax_private.tracing_context(),
    )
    return with_handle(signature, call.fun)


def with_handle(signature: CallSignature, fun) -> CallSignature:
    """The signature with the user's own name for ``fun`` (``handles.Handle``), read from the line
    of the user's code on the stack that made the call: the name of ``fun`` itself, or, for a
    library's function compiled inside a library call, the library function the user called."""
    frame = user_frame(sys._getframe(1))
    if frame is None:
        return signature
    try:
        handle = handle_of(fun, frame, entry=False)
        if handle is None and (_is_library_function(fun) or _jax_private.is_primitive_wrapper(fun)):
            handle = handle_of(fun, frame, entry=True)  # a library's function, or its loop run eagerly
        captured = captured_handles(innermost(fun), frame)
        defined_by_caller = getattr(innermost(fun), "__code__", None) in frame.f_code.co_consts
        unnamed = any(p.name.startswith("args[") for p in signature.params)
        written = passed_positionally(fun, frame) if unnamed else None
    finally:
        del frame
    signature = dataclasses.replace(
        signature,
        handle=handle,
        captured=captured,
        defined_by_caller=defined_by_caller,
        params=_named_as_written(signature.params, written),
    )
    if _code_not_users(fun):  # where the user's code built it, not where a library defines it
        built_at = handle.built_at if handle is not None and not handle.entry else None
        signature = dataclasses.replace(signature, defined_at=built_at)
    return signature


def _named_as_written(params: tuple, written: list[str] | None) -> tuple:
    """Arguments that reached the callee's ``*args`` (``args[1]``), named as the user's line wrote
    them (``x``) where it wrote a plain name, once, and no parameter has that name already."""
    if not written:
        return params
    taken = {p.name for p in params}
    named = []
    for index, param in enumerate(params):
        text = written[index] if param.passed == "position" and index < len(written) else ""
        if param.name.startswith("args[") and text.isidentifier() and text not in taken and written.count(text) == 1:
            param = dataclasses.replace(param, name=text)
        named.append(param)
    return tuple(named)


def _code_not_users(fun) -> bool:
    code = getattr(innermost(fun), "__code__", None)
    return code is not None and (
        is_library_file(code.co_filename) or _jax_private.is_jax_internal_file(code.co_filename)
    )


def shown_name(signature: CallSignature | None, name: str) -> str:
    """The name a compilation is shown by: for a function a library defines under a name the user
    cannot write (a closure it built, such as an optimizer's ``update_fn``; a private function,
    compiled inside a call of the user's), the user's own name for it where their code has one
    (``update``, ``nuts.step``, ``mcmc.run``); ``name`` otherwise (``jnp.sin`` stays ``sin``).

    >>> shown_name(None, "step")
    'step'
    """
    handle = signature.handle if signature is not None else None
    inner = signature.inner_ref() if signature is not None and signature.inner_ref is not None else None
    if handle is None or not _is_library_function(inner):
        return name
    qualname = str(getattr(inner, "__qualname__", "") or "")
    unwritable = "<locals>" in qualname or any(part.startswith("_") for part in qualname.split("."))
    return handle.name if unwritable or handle.entry else name


def _is_library_function(fun) -> bool:
    """A function (not an object the user built and calls, such as a module) whose code a library holds."""
    if not (inspect.isroutine(fun) or isinstance(fun, functools.partial) or hasattr(fun, "__wrapped__")):
        return False
    code = getattr(innermost(fun), "__code__", None)
    return code is not None and is_library_file(code.co_filename)


def signature_or_none(call, on_error: Callable[[BaseException], None] | None = None) -> CallSignature | None:
    """The call's signature; ``None`` if describing it failed (a static argument whose ``repr`` or
    ``hash`` raises, an exotic callee): the event is still recorded, from what else is known."""
    try:
        return call_signature(call)
    except Exception as exc:
        if on_error is not None:
            on_error(exc)
        return None


def equinox_user_call(frame):
    """``(function, args, kwargs)`` of the user's call through ``equinox.filter_jit``, read from
    Equinox's ``_call(jit_wrapper, is_lower, args, kwargs)`` frame on the stack: what the user
    passed, before Equinox split it into ``dynamic_nodonate`` / ``static``. ``None`` elsewhere."""
    while frame is not None:
        code = frame.f_code
        if code.co_name == "_call" and code.co_filename.replace("\\", "/").endswith("equinox/_jit.py"):
            local = frame.f_locals
            wrapper, args, kwargs = local.get("jit_wrapper"), local.get("args"), local.get("kwargs")
            function = getattr(wrapper, "__wrapped__", None) or getattr(wrapper, "fn", None)
            if function is None or args is None:
                return None
            return function, tuple(args), dict(kwargs or {})
        frame = frame.f_back
    return None


def is_equinox_wrapper(fun) -> bool:
    """The function ``equinox.filter_jit`` hands to ``jax.jit`` (its ``fun_wrapped``)."""
    code = getattr(fun, "__code__", None)
    return code is not None and code.co_filename.replace("\\", "/").endswith("equinox/_jit.py")


def user_call_signature(fun, args: tuple, kwargs: dict, on_error=None) -> CallSignature | None:
    """The signature of the user's own call ``fun(*args, **kwargs)`` (as ``equinox.filter_jit``
    received it: arrays traced, everything else static)."""
    try:
        signature = describe_call(
            fun,
            args,
            kwargs,
            options={"filter_jit": True},
            config=_jax_private.tracing_context(),
            non_arrays_static=True,
        )
        # eqx.filter_jit's compilations are its own: never compared with a jax.jit of the same function
        signature = dataclasses.replace(signature, family=signature.family + ("eqx.filter_jit",))
        signature = with_handle(signature, fun)
        if dataclasses.is_dataclass(fun) and not isinstance(fun, type):  # a module called: Equinox splits it too
            signature = _with_callee(signature, fun)
        return signature
    except Exception as exc:
        if on_error is not None:
            on_error(exc)
        return None


def _with_callee(signature: CallSignature, module) -> CallSignature:
    """The signature of a call of a module object (``eqx.filter_jit(mlp)(x)``): the module is an
    argument like the others, named as the user's code names it (``mlp``), and the function is its
    class's ``__call__``, the same for every module of that class."""
    handle = signature.handle
    name = handle.name if handle is not None and not handle.entry else "self"
    call = type(module).__call__
    return dataclasses.replace(
        signature,
        params=(describe_argument(name, module, non_arrays_static=True), *signature.params),
        function_id=id(call),
        function_ref=weak_reference(call),
        inner_ref=weak_reference(innermost(call)),
        made=(),
    )


def jit_request(call, event):
    """What the jitted call compiling now asked for (``collective_causes.ShardingRequest``): its
    ``out_shardings``, and the line of the user's code that gave them (searched in the function's
    own file and in the file of the call); ``None`` where it asked for none."""
    if call is None:
        return None
    try:
        asked = _jax_private.jit_info_shardings(call.jit_info).get("out_shardings")
        site = event.call_site.file if event.call_site is not None else None
        return sharding_request(innermost(call.fun), asked, files=(site,) if site else ())
    except Exception:  # a JAX release that keeps them otherwise: no line rather than a wrong one
        return None


def stack_frames(frame) -> list[tuple[str, int, str]]:
    """``(file, line, function)`` from ``frame`` outward: where to look for the user's call site."""
    frames = []
    while frame is not None and len(frames) < 200:
        frames.append((frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name))
        frame = frame.f_back
    return frames


def attributed_to(signature: CallSignature, function, name: str) -> CallSignature:
    """The signature, attributed to ``function`` (the user's function inside JAX's wrapper)."""
    _, family, defined_at = function_identity(function)
    return dataclasses.replace(
        signature,
        function=name,
        family=family,
        defined_at=defined_at,
        function_id=id(function),
        function_ref=weak_reference(function),
        inner_ref=weak_reference(innermost(function)),
        made=made_of(function),
        handle=None,  # the user's line named JAX's wrapper (jax.pmap), not this function
        params=_named_as_the_user(signature.params, function),
    )


def _named_as_the_user(params: tuple, function) -> tuple:
    """JAX's wrapper takes the flattened arguments (``flat_args[0]``, ``flat_args[1]``): when
    there is one per parameter of the user's function, each is named after its parameter (``v``)."""
    import inspect
    import re

    flat = [p for p in params if re.fullmatch(r"\w+\[\d+\]", p.name)]
    if not flat or len(flat) != len(params):
        return params
    try:
        names = [
            q.name
            for q in inspect.signature(function).parameters.values()
            if q.kind in (q.POSITIONAL_ONLY, q.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        return params
    if len(names) != len(flat):
        return params
    return tuple(dataclasses.replace(p, name=n) for p, n in zip(params, names, strict=False))


def weak_reference(obj):
    try:
        return weakref.ref(obj)
    except TypeError:
        return None


def user_function_inside(fun):
    """The user's function that a JAX-internal wrapper calls (``pmap`` jits such a wrapper)."""
    try:
        for candidate in _jax_private.wrapped_callables(fun):
            if not is_internal(candidate) and getattr(candidate, "__code__", None) is not None:
                return candidate
    except Exception:
        return None
    return None


def is_jaxmagics_own(fun) -> bool:
    """A function jaxmagic itself jits: the fresh wrappers ``%jitcompare`` and ``%jaxpr`` compile, or any function
    written in jaxmagic's files. What it compiles is jaxmagic's measurement, not the user's code."""
    if is_own_wrapper(fun):
        return True
    code = getattr(fun, "__code__", None)
    return code is not None and is_jaxmagic_file(code.co_filename)


def is_internal(fun) -> bool:
    """JAX's own compilations (an eager primitive, a ``jnp`` helper) and jaxmagic's own wrappers."""
    if fun is None:
        return False
    if _jax_private.is_primitive_wrapper(fun) or is_jaxmagics_own(fun):
        return True
    code = getattr(innermost(fun), "__code__", None)
    if code is None:
        return False
    return _jax_private.is_jax_internal_file(code.co_filename) or is_jaxmagic_file(code.co_filename)


def called_by_jax(fun, frame) -> bool:
    """For a compilation with no call of a jitted function to read (``fun`` is ``None``): whether it
    is of a program JAX made while running a transformation eagerly (``jnp.where``'s transpose
    under an eager ``jax.vjp`` a library ran): JAX's own compilation, not one of the user's."""
    return fun is None and _jax_private.compiling_jaxs_own_program(frame)


def jitted_by_user(fun, caller_file: str | None) -> bool:
    """A library function the user wrapped in ``jax.jit`` themselves (``jax.jit(jax.nn.relu)``,
    ``jax.jit(jnp.sin)``): called from the user's code, and not JAX's own module-level ``@jit`` of
    that function (which an eager ``jnp.sin(x)`` compiles)."""
    if fun is None or caller_file is None or _jax_private.is_primitive_wrapper(fun) or is_jaxmagics_own(fun):
        return False
    if _jax_private.is_jax_internal_file(caller_file) or is_jaxmagic_file(caller_file) or is_library_file(caller_file):
        return False  # JAX's own, jaxmagic's, or a library's eager use of a jnp function
    return not _jax_private.is_module_level_jit_of(fun)


def persistent_cache_in_use() -> bool:
    try:
        return _jax_private.persistent_cache_enabled()
    except Exception:
        return False


def in_users_terms(causes: list[Cause], signature: CallSignature | None) -> list[Cause]:
    """Causes of a compilation a library made inside a call of the user's (``mcmc.run``), said of
    that call: what differs is named by its kind and values, never by the library's own names."""
    handle = getattr(signature, "handle", None)
    if signature is None or handle is None or not handle.entry:
        return causes
    library = library_of(signature)
    said = []
    for cause in causes:
        if cause.kind == "first_call":
            said.append(Cause("first_call", reason="first_seen", facts=(("function", handle.name),)))
            continue
        built_again = cause.detail == BUILT_AGAIN or cause.reason in ("built_again", "attribute_built_again")
        private = any(str(part).lstrip("`").startswith("_") for part in (cause.before, cause.after))
        said.append(
            Cause(
                cause.kind,
                argument=handle.name,
                before=None if built_again or private else cause.before,
                after=None if built_again or private else cause.after,
                reason="inside_library_call",
                facts=(
                    ("library", library),
                    ("built_again", built_again),
                    ("fix", handle.fix),
                    ("root", handle.name.split(".", 1)[0]),
                ),
            )
        )
    return said


def after_caches_cleared(causes: list[Cause], name: str, cleared: bool) -> list[Cause]:
    """``causes``, where they could not tell why a function compiled again with the same arguments
    and ``jax.clear_caches()`` ran since its last compilation: that is why.

    >>> [c.kind for c in after_caches_cleared([Cause("unknown", reason="same_arguments")], "g", True)]
    ['caches_cleared']
    """
    if cleared and len(causes) == 1 and causes[0].reason == "same_arguments":
        return [Cause("caches_cleared", reason="caches_cleared", facts=(("function", name),))]
    return causes


def decide_causes(
    name: str,
    signature: CallSignature | None,
    closest: CallSignature | None,
    own: list[Cause],
    raw: str | None,
    seen: bool,
    *,
    internal: bool,
    unwatched: list[Cause] | None = None,
) -> list[Cause]:
    """The causes of one compilation: jaxmagic's own comparison first; JAX's explanation where
    jaxmagic has nothing to compare with, or the comparison with what jax.jit traced before
    anything watched (``unwatched``); ``unknown`` (never nothing) where neither can tell. A
    compilation a library made inside the user's call is said of that call (``in_users_terms``)."""
    causes = _decided(name, signature, closest, own, raw, seen, internal=internal, unwatched=unwatched)
    return in_users_terms(causes, signature)


def _decided(
    name: str,
    signature: CallSignature | None,
    closest: CallSignature | None,
    own: list[Cause],
    raw: str | None,
    seen: bool,
    *,
    internal: bool,
    unwatched: list[Cause] | None = None,
) -> list[Cause]:
    parsed = parse_explanation(raw, signature) if raw else None
    if signature is None:
        if parsed:
            return parsed
        if seen:
            return [Cause("unknown", reason="arguments_unseen", facts=(("function", name),))]
        return [Cause("first_call", reason="first_seen", facts=(("function", name),))]
    if closest is None:
        if parsed and any(
            c.kind not in ("first_call", "unknown") and c.reason != "redefined_repeatedly" for c in parsed
        ):
            return parsed
        if unwatched:
            return unwatched
        if parsed and any(c.kind != "first_call" and c.reason != "redefined_repeatedly" for c in parsed):
            return parsed
        # JAX's "re-defined repeatedly" is about a function on that line compiled before anything
        # watched: for the watch, this function object compiles for the first time.
        return [Cause("first_call", after=signature.summary(), reason="first_for", facts=(("function", name),))]
    if own:
        return own
    if parsed and any(c.kind not in ("unknown", "first_call") for c in parsed):
        return parsed
    return [Cause("unknown", reason="same_arguments", facts=(("function", name),))]
