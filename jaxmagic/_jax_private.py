"""The few places where only a private JAX API will do, each wrapped in one small function.

``tests/test_jax_private.py`` fails loudly when a JAX release changes any of them.
"""

from __future__ import annotations

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
    """True for the object ``jax.jit`` returns."""
    return hasattr(fn, "_jit_info") and hasattr(fn, "trace") and hasattr(fn, "lower")


def jit_options(fn: Any) -> JitOptions:
    """The static and donated arguments of a ``jax.jit``-wrapped function (``PjitFunction._jit_info``)."""
    info = fn._jit_info
    return JitOptions(
        static_argnums=tuple(info.static_argnums),
        static_argnames=tuple(info.static_argnames),
        donate_argnums=tuple(info.donate_argnums),
        donate_argnames=tuple(info.donate_argnames),
    )


def traceback_frames(source_info: Any) -> Iterator[tuple[str, int, str]]:
    """``(file, line, function)`` of each frame that JAX recorded for an equation, innermost first.

    Uses ``eqn.source_info.traceback.frames`` (jaxlib's ``Traceback``).
    """
    traceback = getattr(source_info, "traceback", None)
    if traceback is None:
        return
    for frame in traceback.frames:
        yield frame.file_name, frame.line_num, frame.function_name


def is_jax_internal_file(filename: str) -> bool:
    """True for a file of JAX's own (``source_info_util.is_user_filename`` says it is not the user's)."""
    from jax._src import source_info_util

    return not source_info_util.is_user_filename(filename)


def compile_event_names() -> dict[str, str]:
    """The ``jax.monitoring`` duration events JAX records while tracing, lowering and compiling:
    ``{"trace": ..., "lower": ..., "compile": ...}`` (names from ``jax._src.dispatch``)."""
    from jax._src import dispatch

    return {
        "trace": dispatch.JAXPR_TRACE_EVENT,
        "lower": dispatch.JAXPR_TO_MLIR_MODULE_EVENT,
        "compile": dispatch.BACKEND_COMPILE_EVENT,
    }
