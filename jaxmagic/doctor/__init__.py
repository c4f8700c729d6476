"""The doctor: JAX's classic JIT traps recognised in an exception, or noticed while tracing, and
explained in plain words with the fix written as the user's own code changed.

``diagnose(exception)`` answers a ``Diagnosis`` or ``None`` (not a trap it knows: the traceback
stands). ``observe_trace(fn, closed_jaxpr, printed_text)`` answers warnings for code that traced
fine but will not do what it seems to. Neither ever raises.

>>> import jax, jax.numpy as jnp
>>> @jax.jit
... def relu_or_tanh(x, use_relu):
...     if use_relu:
...         return jnp.maximum(0, x)
...     return jnp.tanh(x)
>>> try:
...     relu_or_tanh(jnp.ones(3), True)
... except Exception as exc:
...     found = diagnose(exc)
>>> found.pitfall, found.variable, found.static_argnames
('python-control-flow', 'use_relu', ('use_relu',))
"""

from __future__ import annotations

import contextlib
import io
import sys
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from jaxmagic import streams
from jaxmagic.report import Report
from jaxmagic.sources import CellNamer, SourceLine, no_cells

DOCS = "docs/pitfalls.md"


@dataclass(frozen=True)
class Pitfall:
    """One trap the doctor knows: a stable id, a title in plain words, error or warning.

    >>> PITFALLS["baked-global"].severity
    'warning'
    """

    id: str
    title: str
    severity: str  # "error": JAX raised; "warning": it traced, but will not do what it seems to


PITFALLS: dict[str, Pitfall] = {
    p.id: p
    for p in (
        Pitfall("python-control-flow", "Python if / while on a traced value", "error"),
        Pitfall("traced-shape", "A size or slice that depends on a traced value", "error"),
        Pitfall("numpy-in-jit", "NumPy called on a traced value", "error"),
        Pitfall("python-scalar-conversion", "int() / float() / .item() on a traced value", "error"),
        Pitfall("unhashable-static", "An unhashable value passed as a static argument", "error"),
        Pitfall("tracer-leak", "A traced value escaped from its function", "error"),
        Pitfall("donated-buffer", "An array used after it was donated", "error"),
        Pitfall("print-side-effect", "print runs only while JAX traces", "warning"),
        Pitfall("baked-global", "A global value baked into the compiled code", "warning"),
    )
}


@dataclass(eq=False)
class Diagnosis(Report):
    """What went wrong, in which line of the user's code, and the change that fixes it.

    ``pitfall`` is a stable id (``python-control-flow``, ...: see ``PITFALLS``), ``explanation``
    plain words naming the user's variable and line, ``fix`` a code snippet fitted to the case,
    ``where`` the user's ``SourceLine``. Also: ``title``, ``severity`` (``error`` / ``warning``),
    ``variable``, ``function`` (the traced function's name), ``error_type`` (the original
    exception's class name), ``alternatives`` (``(label, code)`` pairs: other fixes),
    ``static_argnames`` (parameters the fix makes static), ``reference`` (JAX's page on the error).

    >>> d = Diagnosis("traced-shape", explanation="`n` sets a length.", fix="x[:n]")
    >>> d.title, d.severity
    ('A size or slice that depends on a traced value', 'error')
    """

    pitfall: str
    explanation: str
    fix: str
    where: SourceLine | None = None
    variable: str | None = None
    function: str | None = None
    error_type: str | None = None
    fix_note: str = ""
    alternatives: tuple[tuple[str, str], ...] = ()
    static_argnames: tuple[str, ...] = ()
    reference: str | None = None
    title: str = ""
    severity: str = ""

    _renderer = "jaxmagic.render.diagnosis"  # a class attribute, not a field

    def __post_init__(self):
        known = PITFALLS.get(self.pitfall)
        if not self.title:
            self.title = known.title if known else self.pitfall
        if not self.severity:
            self.severity = known.severity if known else "error"

    @property
    def docs(self) -> str:
        """Where the pitfall is explained at length: ``docs/pitfalls.md#<pitfall>``."""
        return f"{DOCS}#{self.pitfall}"

    def __repr__(self) -> str:
        where = f" at {self.where.label}" if self.where is not None else ""
        return f"<Diagnosis {self.pitfall}{where}: {self.title}>"


# ------------------------------------------------------------------------------------------------
# Entry points


_cell_namer: CellNamer = no_cells


def use_cell_namer(namer: CellNamer | None) -> None:
    """How diagnoses name notebook cells (``In [4] line 3``) when no namer is passed.

    The IPython layer sets it when the extension loads and resets it on unload.

    >>> use_cell_namer(lambda filename: "In [7]" if filename == "<cell-7>" else None)
    >>> use_cell_namer(None)  # back to plain file names
    """
    global _cell_namer
    _cell_namer = namer or no_cells


def diagnose(exception: BaseException, fn: Callable | None = None, *, cell_namer: CellNamer | None = None) -> Diagnosis | None:
    """The ``Diagnosis`` of a JIT trap behind ``exception``, or ``None`` if it is not one.

    ``fn`` is the function that was called (a jitted function, or the plain function a tool
    jitted), where known. Never raises: a failure to diagnose is ``None``.

    >>> diagnose(ZeroDivisionError("division by zero")) is None
    True
    """
    try:
        from jaxmagic.doctor import pitfalls

        return pitfalls.recognise(exception, fn, cell_namer or _cell_namer)
    except Exception:
        return None


def observe_trace(
    call_or_fn: Any,
    closed_jaxpr: Any = None,
    printed_text: str | None = None,
    *,
    cell_namer: CellNamer | None = None,
) -> list[Diagnosis]:
    """Warnings about a function that traced fine: ``print`` that runs only while tracing,
    globals baked in as constants, NumPy functions that happened to work on traced values.

    ``call_or_fn`` is a ``Call`` or the function; ``closed_jaxpr`` what JAX traced it into;
    ``printed_text`` what it printed while JAX traced it (``None``: not watched).

    >>> import jax, jax.numpy as jnp
    >>> scale = 3.0
    >>> def f(x):
    ...     return x * scale
    >>> [d.pitfall for d in observe_trace(f, jax.make_jaxpr(f)(jnp.ones(2)))]
    ['baked-global']
    """
    try:
        from jaxmagic.doctor import trace_checks

        fn = getattr(call_or_fn, "function", None) or call_or_fn
        return trace_checks.observe(fn, closed_jaxpr, printed_text, cell_namer or _cell_namer)
    except Exception:
        return []


class PrintedText:
    """What was printed inside a ``watch_prints()`` block (it still reached the screen).

    >>> PrintedText().text
    ''
    """

    def __init__(self):
        self._buffer = io.StringIO()

    @property
    def text(self) -> str:
        return self._buffer.getvalue()


class _Tee:
    """Writes to the real stream and to a copy; everything else is the real stream's (encoding...)."""

    def __init__(self, target, copy: io.StringIO):
        self._target, self._copy = target, copy

    def write(self, text):
        self._copy.write(text)
        return self._target.write(text)

    def flush(self):
        flush = getattr(self._target, "flush", None)
        if flush is not None:
            flush()

    def __getattr__(self, name):  # encoding, isatty, fileno... of the real stream
        return getattr(self._target, name)


@contextlib.contextmanager
def watch_prints() -> Iterator[PrintedText]:
    """Copy what is printed to ``sys.stdout`` inside the block, still letting it through.

    >>> with watch_prints() as printed:
    ...     print("tracing")
    tracing
    >>> printed.text
    'tracing\\n'
    """
    printed = PrintedText()
    # Only this thread's lines are copied: a background thread printing meanwhile is not the call's.
    with streams.this_thread_writes_to(_Tee(sys.stdout, printed._buffer)):
        yield printed
