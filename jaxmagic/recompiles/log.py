"""The compilations seen while watching: ``RecompileLog`` (a bounded ring buffer with counts and headlines).

>>> log = RecompileLog()
>>> log.summary
'no compilations'
"""

from __future__ import annotations

import collections
import contextlib
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable

from jaxmagic.recompiles.causes import CAUSE_KINDS
from jaxmagic.recompiles.differences import changed_axes
from jaxmagic.recompiles.events import RecompileEvent, RecompileLimitExceeded
from jaxmagic.report import Report
from jaxmagic.tracing.sources import CellNamer, no_cells
from jaxmagic.words.function_names import without_line
from jaxmagic.words.recompiles import repeated_headline

__all__ = ["RecompileLog", "matches", "DEFAULT_CAPACITY"]

DEFAULT_CAPACITY = 1000  # events a log keeps; older ones are dropped, counts go on
REPEATED_THRESHOLD = 3  # recompilations of one function for the same cause that earn a headline


@dataclass
class _Tally:
    """One function's recompilations by cause: how many each cause (kind, argument) explained,
    its latest ``Cause`` and the axes a shape changed on."""

    counts: dict = field(default_factory=dict)
    latest: dict = field(default_factory=dict)
    axes: dict = field(default_factory=dict)


class RecompileLog(Report):
    """The compilations seen while watching: ``events`` (``RecompileEvent``), ``counts``
    (function name -> compilations) and ``headlines`` (repeated causes, with the fix).

    ``functions`` restricts the log to those function names (all of the user's when empty);
    ``include_internal`` also keeps JAX's own compilations; ``max_compiles`` is the ``--max``
    limit; ``capacity`` bounds ``events`` (a ring buffer: ``dropped`` counts what fell out);
    ``explain`` also keeps JAX's own explanation of each cache miss in ``RecompileEvent.raw`` (it
    turns on ``jax_explain_cache_misses`` while watching, which makes each compilation dearer;
    jaxmagic's own comparison decides the causes either way); ``keep_programs`` also keeps the
    facts of each program XLA compiled (``RecompileEvent.program_facts``, for fingerprints).
    Start and stop it with ``start()`` / ``stop()``, or use ``jaxmagic.watch_recompiles``.

    >>> from jaxmagic.recompiles.causes import Cause
    >>> log = RecompileLog()
    >>> for n in range(4):
    ...     cause = Cause("static_value", argument="n", before=str(n), after=str(n + 1))
    ...     _ = log.record(RecompileEvent("step", None, None, 0.01, [cause]))
    >>> log.counts, log.total
    ({'step': 4}, 4)
    >>> log.headlines
    ['`step` compiled 4 times: static argument `n` takes a new value each time — pass it as an array or keep its values few']
    """

    _renderer = "jaxmagic.render.recompiles"

    def __init__(
        self,
        functions: Iterable[str] = (),
        *,
        include_internal: bool = False,
        max_compiles: int | None = None,
        capacity: int = DEFAULT_CAPACITY,
        cell_namer: CellNamer = no_cells,
        scope: str = "",
        explain: bool = False,
        keep_programs: bool = False,
    ):
        if isinstance(functions, (str, bytes)) or not isinstance(functions, Iterable):
            functions = (functions,)  # told below: names come as strings, several of them
        functions = tuple(functions)
        check_options(functions, include_internal, max_compiles, capacity, cell_namer, scope, explain)
        self.functions = functions
        self.include_internal = include_internal
        self.max_compiles = max_compiles
        self.capacity = capacity
        self.cell_namer = cell_namer
        self.explain = explain  # keep JAX's own explanation text (``raw``): JAX then explains every miss
        self.keep_programs = keep_programs  # keep the facts of each compiled program (fingerprints)
        self.scope = scope  # shown in the summary: "this cell", "the session since In [3]"
        self.started_at: float | None = None
        self.cleared_at: float | None = None  # when clear() last forgot the events
        self.watching = False
        self.owner_thread: int | None = None  # the thread a --max error may interrupt
        self._lock = threading.RLock()
        self._events: collections.deque[RecompileEvent] = collections.deque(maxlen=capacity)
        self._counts: dict[str, int] = {}
        self._tallies: dict[str, _Tally] = {}
        self._observers: list[Callable[[RecompileEvent | None], None]] = []
        self.dropped = 0
        self.limit_raised: set[str] = set()
        self.compile_s = 0.0
        self._seconds: dict[str, float] = {}

    # -- what it holds ---------------------------------------------------------------------------
    @property
    def events(self) -> list[RecompileEvent]:
        """The compilations held, oldest first (at most ``capacity``)."""
        with self._lock:
            return list(self._events)

    @property
    def counts(self) -> dict[str, int]:
        """Function name -> compilations seen, including those dropped from ``events``."""
        with self._lock:
            return dict(self._counts)

    @property
    def compile_s_by_function(self) -> dict[str, float]:
        """Function name -> seconds spent compiling it (trace + lower + XLA), dropped events included."""
        with self._lock:
            return dict(self._seconds)

    @property
    def total(self) -> int:
        """All compilations seen."""
        with self._lock:
            return sum(self._counts.values())

    @property
    def headlines(self) -> list[str]:
        """One sentence per function and kind of cause that keeps making it compile, with the fix
        (counted over the whole log: a different cause in between does not reset it)."""
        order = {kind: i for i, kind in enumerate(CAUSE_KINDS)}
        with self._lock:
            lines = []
            for function, tally in self._tallies.items():
                by_kind: dict[str, tuple] = {}
                for key, count in tally.counts.items():
                    if count >= REPEATED_THRESHOLD and (key[0] not in by_kind or count > by_kind[key[0]][0]):
                        by_kind[key[0]] = (count, key)
                # A re-defined function explains everything else about its calls: it comes first.
                ranked = sorted(
                    by_kind.values(), key=lambda item: (item[1][0] != "redefined_function", -item[0], order[item[1][0]])
                )
                for _, key in ranked:
                    cause = tally.latest[key]
                    axes = sorted(tally.axes.get(key, ()))
                    where = f" on axis {', '.join(map(str, axes))}" if axes and cause.kind == "shape" else ""
                    lines.append(repeated_headline(function, self._counts.get(function, 0), cause, where=where))
            return lines

    @property
    def summary(self) -> str:
        """``5 compilations of 2 functions (412 ms compiling)``."""
        total = self.total
        if total == 0:
            return "no compilations"
        functions = len(self._counts)
        return (
            f"{total} compilation{'s' * (total != 1)} of {functions} function{'s' * (functions != 1)} "
            f"({seconds_text(self.compile_s)} compiling)"
        )

    def save_html(self, path, *, inputs=()) -> str:
        """Write the log as a standalone HTML page (no JavaScript, no network) to ``path``, whole
        (``jaxmagic.files.write_atomically``: a reader never sees half a page); returns the path.

        >>> import os, tempfile
        >>> path = RecompileLog(scope="an example").save_html(os.path.join(tempfile.mkdtemp(), "log.html"))
        >>> open(path, encoding="utf-8").read().startswith("<!DOCTYPE html>")
        True
        """
        return super().save_html(path, inputs=inputs)

    def over_limit(self) -> list[str]:
        """Functions that compiled more often than ``max_compiles``."""
        if self.max_compiles is None:
            return []
        return [f for f, n in self.counts.items() if n > self.max_compiles]

    def limit_error(self, function: str) -> RecompileLimitExceeded:
        """The error that fails a cell for ``function`` going over ``max_compiles``."""
        events = [e for e in self.events if e.function == function]
        return RecompileLimitExceeded(function, self.counts.get(function, 0), self.max_compiles or 0, events)

    def for_functions(self, names: Iterable[str]) -> "RecompileLog":
        """A copy holding only the events of the functions ``names`` (matched as in ``matches``)."""
        names = tuple(names)
        copy = RecompileLog(
            names, include_internal=True, capacity=self.capacity, cell_namer=self.cell_namer, scope=self.scope
        )
        for event in self.events:
            if matches(event.function, names):
                copy.record(event)
        return copy

    # -- filling it ------------------------------------------------------------------------------
    def wants(self, function: str, internal: bool) -> bool:
        """Whether this log keeps a compilation of ``function``."""
        if internal and not self.include_internal:
            return False
        return not self.functions or matches(function, self.functions)

    def record(self, event: RecompileEvent) -> bool:
        """Add ``event`` if the log wants it; tell the observers. Returns whether it was kept."""
        if not self.wants(event.function, event.internal):
            return False
        with self._lock:
            if len(self._events) == self._events.maxlen:
                self.dropped += 1
            self._events.append(event)
            self._counts[event.function] = self._counts.get(event.function, 0) + 1
            self.compile_s += event.compile_s
            self._seconds[event.function] = self._seconds.get(event.function, 0.0) + event.compile_s
            self._tally(event)
            observers = list(self._observers)
        for observer in observers:
            with contextlib.suppress(Exception):  # a broken view must never break the user's computation
                observer(event)
        return True

    def _tally(self, event: RecompileEvent) -> None:
        tally = self._tallies.setdefault(event.function, _Tally())
        for cause in event.causes:
            if cause.kind == "first_call":
                continue
            tally.counts[cause.key] = tally.counts.get(cause.key, 0) + 1
            tally.latest[cause.key] = cause
            tally.axes.setdefault(cause.key, set()).update(changed_axes(cause))

    def clear(self) -> None:
        """Forget every event and count (the watch, if on, goes on)."""
        with self._lock:
            self._events.clear()
            self._counts.clear()
            self._tallies.clear()
            self.limit_raised.clear()
            self.dropped = 0
            self.compile_s = 0.0
            self._seconds.clear()
            self.cleared_at = time.time()
            observers = list(self._observers)
        for observer in observers:
            with contextlib.suppress(Exception):
                observer(None)

    def add_observer(self, callback: Callable[[RecompileEvent | None], None]) -> None:
        """Call ``callback(event)`` after each new event, ``callback(None)`` after ``clear()``."""
        with self._lock:
            self._observers.append(callback)

    def remove_observer(self, callback) -> None:
        """Stop calling ``callback``."""
        with self._lock:
            if callback in self._observers:
                self._observers.remove(callback)

    # -- watching --------------------------------------------------------------------------------
    def start(self) -> "RecompileLog":
        """Start receiving compilations (JAX's listeners are installed while any log watches)."""
        from jaxmagic.recompiles.hub import attach

        attach(self)
        return self

    def stop(self) -> "RecompileLog":
        """Stop receiving compilations; when no log watches any more, JAX is left as it was."""
        from jaxmagic.recompiles.hub import detach

        detach(self)
        return self

    def __repr__(self) -> str:
        return f"<RecompileLog: {self.summary}>"


def matches(function: str, names: Iterable[str]) -> bool:
    """Whether ``function`` (``step``, ``Model.apply``, ``partial(f)``) is one of ``names``.

    >>> matches("Model.apply", ["apply"]), matches("partial(step)", ["step"]), matches("f", ["g"])
    (True, True, False)
    >>> matches("<lambda> (line 3)", ["<lambda>"])
    True
    """
    function_only = without_line(function)
    bare = function_only
    bare = bare[len("partial(") : -1] if bare.startswith("partial(") and bare.endswith(")") else bare
    short = bare.rsplit(".", 1)[-1]
    return any(name in (function, function_only, bare, short) for name in names)


def seconds_text(seconds: float) -> str:
    """Compile time as a reader wants it: ``412 ms``, ``1.48 s``.

    >>> seconds_text(0.4123), seconds_text(1.477)
    ('412 ms', '1.48 s')
    """
    return f"{seconds:.2f} s" if seconds >= 1 else f"{seconds * 1e3:.0f} ms"


def check_options(functions, include_internal, max_compiles, capacity, cell_namer, scope, explain) -> None:
    """A ``TypeError`` or ``ValueError`` saying what is expected, for options a log cannot take.

    >>> check_options(("step",), False, 2, 10, no_cells, "", False)
    >>> check_options((), False, -1, 10, no_cells, "", False)
    Traceback (most recent call last):
    ValueError: max_compiles takes None or a whole number >= 0 (compilations allowed per function), not -1; e.g. watch_recompiles(max_compiles=1)
    """
    wrong = [name for name in functions if not isinstance(name, str) or not name]
    if isinstance(functions, (str, bytes)) or wrong:
        shown = repr(wrong[0] if wrong else functions)[:80]
        raise TypeError(f"functions are given by name, as strings, not {shown}; e.g. watch_recompiles('step', 'loss')")
    for name, value in (("include_internal", include_internal), ("explain", explain)):
        if not isinstance(value, bool):
            raise TypeError(f"{name} takes True or False, not {value!r:.80}; e.g. watch_recompiles({name}=True)")
    for name, value, least, meaning in (
        ("max_compiles", max_compiles, 0, "compilations allowed per function"),
        ("capacity", capacity, 1, "events kept"),
    ):
        if value is None and name == "max_compiles":
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(
                f"{name} takes a whole number ({meaning}), not {value!r:.80}; e.g. watch_recompiles({name}=1)"
            )
        if value < least:
            which = "None or a whole number" if name == "max_compiles" else "a whole number"
            raise ValueError(
                f"{name} takes {which} >= {least} ({meaning}), not {value}; e.g. watch_recompiles({name}=1)"
            )
    if not callable(cell_namer):
        raise TypeError(f"cell_namer takes a function of a file name, not {cell_namer!r:.80}")
    if not isinstance(scope, str):
        raise TypeError(f"scope takes a string (e.g. 'this cell'), not {scope!r:.80}")
