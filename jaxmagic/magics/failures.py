"""Failing cleanly: a UsageError for bad input, the user's own traceback (and the doctor's note) for an
error in their code, the user's frames for Ctrl-C, and JAX's configuration given back.
"""

from __future__ import annotations

import contextlib
import os
import re
import types
from typing import Any, Callable, ContextManager, Iterator, Literal, overload

from IPython.core.error import UsageError

from jaxmagic.errors import UsageProblem, UserCodeError
from jaxmagic.magics.output import show
from jaxmagic.tracing import sources
from jaxmagic.words import code, say


class MagicFailure(Exception):
    """The user's code failed inside a magic. IPython shows it through ``_render_traceback_``:
    the user's own frames only (or one line, when the doctor's explanation is shown above it).
    Its traceback ends in the user's frames, so that ``%debug`` opens where their code failed."""

    def __init__(self, original: BaseException, lines: list[str]):
        super().__init__(f"{type(original).__name__}: {original}")
        self.original = original
        self._lines = lines
        self.__traceback__ = _where_the_user_failed(original)

    def _render_traceback_(self) -> list[str]:
        return self._lines


class MagicInterrupted(KeyboardInterrupt):
    """Ctrl-C (or a ``KeyboardInterrupt`` the user's code raised) inside a magic. Still a
    ``KeyboardInterrupt`` to whoever catches it; IPython shows it with the user's frames only."""

    def __init__(self, original: BaseException, lines: list[str]):
        super().__init__(*original.args)
        self.original = original
        self._lines = lines

    def _render_traceback_(self) -> list[str]:
        return self._lines


def _where_the_user_failed(original: BaseException) -> types.TracebackType | None:
    """The user's frames of ``original`` (neither jaxmagic's nor JAX's): raised from inside a
    magic, the failure's traceback goes on into them, and a post-mortem debugger (``%debug``)
    starts in the innermost, where the user's code failed."""
    return sources.without_jaxmagic_frames(original.__traceback__, jax_too=True)


def interrupted(shell, exc: KeyboardInterrupt) -> MagicInterrupted:
    """The interruption to raise in place of ``exc``: the same, with the user's frames only (JAX
    filters its own frames from its errors, not from an interruption)."""
    tb = sources.without_jaxmagic_frames(exc.__traceback__, jax_too=True)
    exc.__traceback__ = tb
    try:
        lines = list(shell.InteractiveTB.structured_traceback(type(exc), exc, tb, tb_offset=0))
    except Exception:  # showing where it stopped must never hide that it stopped
        lines = [f"{type(exc).__name__}: {exc}".rstrip(": ")]
    return MagicInterrupted(exc, lines)


def user_traceback(tb: types.TracebackType | None) -> types.TracebackType | None:
    """The traceback without jaxmagic's frames: what remains is the user's code (and JAX's)."""
    return sources.without_jaxmagic_frames(tb)


def diagnose(exc: BaseException, fn: Callable | None = None):
    """The doctor's ``Diagnosis`` for ``exc``, or ``None``."""
    try:
        from jaxmagic.doctor import diagnose as doctor_diagnose
    except ImportError:
        return None
    try:
        return doctor_diagnose(exc, fn=fn)
    except Exception:  # the doctor must never hide the user's own error
        return None


def failure(shell, err: UserCodeError, *, fn: Callable | None = None, full_traceback: bool = False) -> MagicFailure:
    """Show the doctor's explanation (if any) and build the exception that fails the cell."""
    exc = err.original
    tb = user_traceback(exc.__traceback__)
    exc.__traceback__ = tb
    for linked in _linked_exceptions(exc):  # JAX's "source of the operation" before a transform, too
        linked.__traceback__ = user_traceback(linked.__traceback__)
    diagnosis = diagnose(exc, fn)
    if diagnosis is not None:
        show(shell, diagnosis, text=_diagnosis_text)
    if diagnosis is not None and not full_traceback:
        note = f"{type(exc).__name__} while {err.during}: {_first_line(exc)}  (add --tb for the full traceback)"
        return MagicFailure(exc, [note])
    lines = shell.InteractiveTB.structured_traceback(type(exc), exc, tb, tb_offset=0)
    if err.during and not err.during.startswith("running the cell"):
        lines = [f"(raised while {err.during})"] + list(lines)
    traced_by_jaxmagic = bool(err.during) and not err.during.startswith("running the cell")
    hint = static_hint(exc) if diagnosis is None and traced_by_jaxmagic else None
    return MagicFailure(exc, list(lines) + ([hint] if hint else []))


_TRACED_ARGUMENT = re.compile(r"depends on the value of the argument (\w+)")


def static_hint(exc: BaseException) -> str | None:
    """A hint for JAX's "needs a concrete value" errors that name the argument at fault: the
    magics trace every argument, so a shape, size or flag must be made static.

    >>> static_hint(TypeError("... because it depends on the value of the argument shape."))
    'Hint: `shape` must be known while JAX traces (a shape, size or flag): make it static with `-s shape`.'
    >>> static_hint(ValueError("other")) is None
    True
    """
    found = _TRACED_ARGUMENT.search(str(exc))
    if found is None:
        return None
    name = found.group(1)
    return say(
        "Hint: {} must be known while JAX traces (a shape, size or flag): make it static with {}.",
        code(name),
        code(f"-s {name}"),
    )


def unexpected(exc: BaseException) -> UsageError:
    """The message for an exception jaxmagic did not expect, blamed on whoever raised it: the
    innermost frame of its traceback. jaxmagic's own frame: a bug in jaxmagic. JAX's (or another
    library's, or the user's own code's): their error about the input, shown as theirs.

    >>> def inside_json():
    ...     import json
    ...     json.loads("{")
    >>> try:
    ...     inside_json()
    ... except ValueError as exc:
    ...     print(str(unexpected(exc)).splitlines()[0])
    json raised JSONDecodeError: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)
    """
    where = _innermost_file(exc.__traceback__)
    first = _first_line(exc)
    shown = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    if where is None or sources.is_jaxmagic_file(where):
        return UsageError(
            f"jaxmagic failed unexpectedly ({shown}). This is a bug in jaxmagic; add --tb to see where it happened."
        )
    if sources.is_library_file(where):
        owner = _package_of(where)
        owner = "JAX" if owner in ("jax", "jaxlib") else owner
    else:
        owner = "your code"
    return UsageError(
        f"{owner} raised {shown}\n"
        f"(raised in {os.path.basename(where)}, about the input of your call; add --tb to see the full traceback)"
    )


def _innermost_file(tb: types.TracebackType | None) -> str | None:
    filename = None
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        tb = tb.tb_next
    return filename


def _package_of(filename: str) -> str:
    """The top-level package a library file belongs to (``numpy``), else its module's name."""
    import sysconfig

    path = os.path.normpath(os.path.abspath(filename))
    parts = path.split(os.sep)
    for folder in ("site-packages", "dist-packages"):
        if folder in parts and parts.index(folder) + 1 < len(parts):
            return parts[parts.index(folder) + 1].removesuffix(".py")
    stdlib = os.path.normpath(sysconfig.get_paths()["stdlib"])
    if path.startswith(stdlib + os.sep):
        return path[len(stdlib) + 1 :].split(os.sep)[0].removesuffix(".py")
    return os.path.splitext(os.path.basename(filename))[0]


def _linked_exceptions(exc: BaseException) -> list[BaseException]:
    """The exceptions ``exc`` was raised from (``__cause__``) or while handling (``__context__``),
    each once, nearest first."""
    found, seen = [], {id(exc)}
    linked = exc.__cause__ or exc.__context__
    while linked is not None and id(linked) not in seen:
        seen.add(id(linked))
        found.append(linked)
        linked = linked.__cause__ or linked.__context__
    return found


def _diagnosis_text(diagnosis, color: bool = False) -> str:
    render = getattr(diagnosis, "to_text", None)
    return render(color=color) if render else str(diagnosis)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


class ConfigKept:
    """JAX's configuration as it was, to be given back when a magic ends. What the cell's own body
    sets on purpose (``jax.config.update`` in a ``%%jaxpr`` cell) is taken as the new state."""

    def __init__(self):
        import jax

        self.before = dict(jax.config.values)

    def accept_current(self) -> None:
        """The settings as they are now are the user's: keep them (call after the cell's body ran)."""
        import jax

        self.before = dict(jax.config.values)

    def restore(self) -> None:
        import jax

        after = jax.config.values
        for name, value in self.before.items():
            if after.get(name) is not value and after.get(name) != value:
                with contextlib.suppress(Exception):
                    jax.config.update(name, value)


@contextlib.contextmanager
def jax_config_kept() -> Iterator[ConfigKept]:
    """Whatever happens inside, JAX's configuration is as it was afterwards (or as the cell's own
    body left it, once ``accept_current`` was called)."""
    kept = ConfigKept()
    try:
        yield kept
    finally:
        kept.restore()


# With JAX's configuration kept (the default), ``guarded`` gives the ``ConfigKept``; without, None.
@overload
def guarded(
    shell, *, fn_hint: Callable[[], Any] = ..., full_traceback: bool = ..., keep_config: Literal[True] = ...
) -> ContextManager[ConfigKept]: ...
@overload
def guarded(
    shell, *, fn_hint: Callable[[], Any] = ..., full_traceback: bool = ..., keep_config: Literal[False]
) -> ContextManager[None]: ...
@contextlib.contextmanager
def guarded(
    shell, *, fn_hint: Callable[[], Any] = lambda: None, full_traceback: bool = False, keep_config: bool = True
) -> Iterator[ConfigKept | None]:
    """Turn jaxmagic's failures into what a user should see: a ``UsageError`` for bad input, the
    user's own traceback (and the doctor's note) for an error in their code, a ``KeyboardInterrupt``
    showing the user's frames for Ctrl-C; never jaxmagic's internals. JAX's configuration is
    restored whatever happens.
    """
    __tracebackhide__ = True
    config = jax_config_kept() if keep_config else contextlib.nullcontext()
    with config as kept:
        try:
            yield kept
        except UsageProblem as problem:
            raise UsageError(str(problem)) from None
        except UserCodeError as err:
            raise failure(shell, err, fn=fn_hint(), full_traceback=full_traceback) from None
        except (UsageError, MagicFailure, MagicInterrupted):
            raise
        except KeyboardInterrupt as interruption:
            raise interrupted(shell, interruption) from None
        except Exception as exc:
            if full_traceback:
                raise
            raise unexpected(exc) from None
