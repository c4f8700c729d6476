"""The report of a comparison: ``Timing`` per mode, ``Comparison`` for the whole, and the break-even
rule. Plain objects with documented attributes; ``timing.compare`` fills them in.

>>> t = Timing("jit", [1e-3, 2e-3, 3e-3], loops=100)
>>> t.median, t.repeat
(0.002, 3)
>>> break_even(eager_per_call=1e-3, jit_first_call=0.05, jit_per_call=1e-4)
56
"""

from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass
from typing import Sequence

from jaxmagic.report import Report
from jaxmagic.timing.interval import contains_one, ratio_interval
from jaxmagic.timing.notes import Note
from jaxmagic.timing.stopwatch import CompileCost
from jaxmagic.words.units import format_seconds

__all__ = [
    "Comparison",
    "CompileCost",
    "Note",
    "Timing",
    "break_even",
    "slower_than_eager_notes",
    "slower_than_eager_warnings",
]


@dataclass
class Timing:
    """The steady-state time of one mode: ``all_runs`` holds seconds per call, one per repeat.

    ``loops`` is the calls per repeat. ``source`` says where the figures come from: ``"repeats"``
    (the normal case), ``"warm-up"`` (the budget or a Ctrl-C left only the calls that sized the
    repeats), ``"first call"`` (not even those: the first call less its compiling; ``"first call,
    compiled"`` where the mode is uncompiled and its first call compiled programs, which each later
    call may compile again: a lower bound), ``"one call"``
    (one call timed after the first, where JAX's reported phases filled the whole first call) or
    ``"stopped"`` (the first call ran out of the time the budget left it and was stopped: the one
    figure is how long it had run, a lower bound, ``lower_bound``).

    >>> t = Timing("jit", [1e-3, 2e-3, 3e-3], loops=100)
    >>> t.median, t.best, t.worst, t.repeat, round(t.stdev, 6)
    (0.002, 0.001, 0.003, 3, 0.001)
    >>> str(t)
    '2 ms ± 1 ms per call (median 2 ms; 3 repeats × 100 calls)'
    """

    mode: str
    all_runs: list[float]
    loops: int
    source: str = "repeats"

    @property
    def repeat(self) -> int:
        return len(self.all_runs)

    @property
    def lower_bound(self) -> bool:
        """Whether the figure is only a lower bound: a first call stopped before it ended, or an
        uncompiled first call less what it compiled (eager code may compile again at every call)."""
        return self.source in ("stopped", "first call, compiled")

    @property
    def median(self) -> float:
        return statistics.median(self.all_runs)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.all_runs)

    @property
    def stdev(self) -> float:
        return statistics.stdev(self.all_runs) if len(self.all_runs) > 1 else 0.0

    @property
    def best(self) -> float:
        return min(self.all_runs)

    @property
    def worst(self) -> float:
        return max(self.all_runs)

    def __str__(self) -> str:
        if self.lower_bound:
            return f"≥ {format_seconds(self.median)} per call (1 call, stopped)"
        calls = f"{self.loops:,} call{'s' * (self.loops != 1)}"
        runs = f"{self.repeat} repeat{'s' * (self.repeat != 1)} × {calls}"
        return f"{format_seconds(self.mean)} ± {format_seconds(self.stdev)} per call (median {format_seconds(self.median)}; {runs})"


class Comparison(Report):
    """Eager versus jit (versus sharded and pmap) for one call: what ``%jitcompare -o`` returns.

    Attributes:

    - ``modes``: mode name -> ``Timing`` of calls each waited for (in the order asked for; a mode
      interrupted, or not run for want of time, before any measurement is missing).
    - ``pipelined``: mode name -> ``Timing`` of the same calls in a pipelined loop (each repeat's
      calls dispatched one after the other, the last one waited for; seconds per call): what a
      training loop pays, where dispatching a call overlaps the device's work on the previous one.
    - ``loop_speedup``, ``loop_break_even_calls``: ``speedup`` and ``break_even_calls`` from the
      pipelined figures (``None`` without both).
    - ``first_calls``: mode name -> ``CompileCost`` of its first call; ``compile`` is jit's.
    - ``speedup``: eager median / jit median, calls waited for (``None`` without both; where
      eager's figure is a ``lower_bound``, so is this); ``speedups``: each mode's speed relative
      to the ``baseline`` mode (eager where measured).
    - ``speedup_interval``: ``(low, high)``, a 95% bootstrap interval for ``speedup`` from the
      repeats (seeded: the same repeats give the same interval); ``None`` without two repeats of
      each. ``measurable`` is false when it contains 1: the difference is within the noise.
    - ``break_even_calls``: the number of calls after which jit, its first call included, has
      cost no more than as many eager calls, waited for (``math.inf`` if never; ``None`` without
      both; where eager's figure is a lower bound, an upper bound). Eager is charged its median per
      call: the compilations of its first call (one per primitive and shape) are shared by all code
      in the session and cached for it.
    - ``memory``: compiled mode -> bytes from XLA's ``memory_analysis()`` (``arguments``,
      ``outputs``, ``aliased``, ``temporaries``, ``code``), per device; ``eager`` ->
      ``{"intermediates": ...}``, the arrays an op-by-op run writes out (a lower bound).
    - ``warnings``: what may make the figures misleading; ``notes``: how the modes were set up;
      ``facts``: the same as ``timing.notes.Note`` objects (a kind, the mode, the numbers).
    - ``calls``: mode -> how many times it was called in all (first call, warm-up and repeats):
      eager ran the user's Python function that many times; a compiled mode ran its program that
      many times and the Python function only while tracing.
    - ``setups``: mode -> one line on how it ran; ``budget``, ``elapsed`` (seconds),
      ``interrupted`` (Ctrl-C stopped the timing), ``devices`` (``8 × cpu``), ``name``.

    >>> result = Comparison(
    ...     name="f(x)", modes={"eager": Timing("eager", [1e-3], 10), "jit": Timing("jit", [1e-4], 100)},
    ...     first_calls={"jit": CompileCost(0.001, 0.002, 0.02, 0.025)}, memory={}, warnings=[], notes=[],
    ...     setups={}, budget=6.0, elapsed=1.0, interrupted=False, devices="1 × cpu", requested=("eager", "jit"))
    >>> round(result.speedup, 6), result.break_even_calls, result.speedup_interval
    (10.0, 28, None)
    """

    _renderer = "jaxmagic.render.comparison"

    def __init__(
        self,
        *,
        name: str,
        modes: dict,
        first_calls: dict,
        memory: dict,
        warnings: list,
        notes: list,
        setups: dict,
        budget: float,
        elapsed: float,
        interrupted: bool,
        devices: str,
        requested: Sequence[str],
        calls: dict | None = None,
        facts: list | None = None,
        communication: dict | None = None,
        pipelined: dict | None = None,
    ):
        self.name = name
        self.modes: dict[str, Timing] = modes
        self.pipelined: dict[str, Timing] = dict(pipelined or {})
        self.first_calls: dict[str, CompileCost] = first_calls
        self.memory: dict[str, dict[str, int]] = memory
        # sharded mode: ``collectives`` (jaxmagic.compiled.collectives.Collective) and, where the profiler
        # reports them, ``seconds`` (device time in them per call) of ``device_seconds``
        self.communication: dict = communication or {}
        self.warnings: list[str] = warnings
        self.notes: list[str] = notes
        self.setups: dict[str, str] = setups
        self.budget = budget
        self.elapsed = elapsed
        self.interrupted = interrupted
        self.devices = devices
        self.requested = tuple(requested)
        self.calls: dict[str, int] = dict(calls or {})
        self.facts: list[Note] = facts if facts is not None else []

    @property
    def compile(self) -> CompileCost | None:
        """The jit mode's first call: trace, lower, compile and the whole first call."""
        return self.first_calls.get("jit")

    @property
    def baseline(self) -> str | None:
        """The mode others are compared with: eager if it was measured, else the first mode."""
        if "eager" in self.modes:
            return "eager"
        return next(iter(self.modes), None)

    @property
    def speedups(self) -> dict[str, float]:
        """Mode -> baseline median / that mode's median (above 1: faster than the baseline)."""
        base = self.modes.get(self.baseline) if self.baseline else None
        if base is None:
            return {}
        return {mode: base.median / t.median if t.median > 0 else math.inf for mode, t in self.modes.items()}

    @property
    def speedup(self) -> float | None:
        """Eager median / jit median (``None`` unless both were measured)."""
        if "eager" not in self.modes or "jit" not in self.modes:
            return None
        jit = self.modes["jit"].median
        return self.modes["eager"].median / jit if jit > 0 else math.inf

    @functools.cached_property
    def speedup_interval(self) -> tuple[float, float] | None:
        """``(low, high)``: how far the speed-up may lie from ``speedup`` given the spread of the
        repeats (95%, bootstrap of the medians); ``None`` without two repeats of eager and jit."""
        if "eager" not in self.modes or "jit" not in self.modes:
            return None
        eager, jit = self.modes["eager"], self.modes["jit"]
        if eager.source != "repeats" or jit.source != "repeats":
            return None
        return ratio_interval(eager.all_runs, jit.all_runs)

    @property
    def measurable(self) -> bool | None:
        """Whether jit and eager differ beyond the noise: ``False`` when ``speedup_interval``
        contains 1, ``None`` when there is no interval to tell."""
        found = self.speedup_interval
        return None if found is None else not contains_one(found)

    def cost_of_calls(self, mode: str, calls: int) -> float:
        """Seconds that ``calls`` calls of ``mode`` take, as break-even counts them: a compiled mode
        pays its first call, then its median per call; eager pays its median for every call."""
        if mode == "eager":
            return calls * self.modes[mode].median
        return self.first_calls[mode].first_call_s + (calls - 1) * self.modes[mode].median

    @property
    def break_even_calls(self) -> float | None:
        """After how many calls jit has paid for its compile (``math.inf``: never)."""
        if not {"eager", "jit"} <= set(self.modes) or "jit" not in self.first_calls:
            return None
        return break_even(self.modes["eager"].median, self.first_calls["jit"].first_call_s, self.modes["jit"].median)

    @property
    def loop_speedup(self) -> float | None:
        """Eager / jit, both per call in a pipelined loop (``None`` unless both were measured so)."""
        if "eager" not in self.pipelined or "jit" not in self.pipelined:
            return None
        jit = self.pipelined["jit"].median
        return self.pipelined["eager"].median / jit if jit > 0 else math.inf

    @property
    def loop_break_even_calls(self) -> float | None:
        """``break_even_calls`` for calls in a pipelined loop (``None`` unless both were measured so)."""
        if not {"eager", "jit"} <= set(self.pipelined) or "jit" not in self.first_calls:
            return None
        return break_even(
            self.pipelined["eager"].median, self.first_calls["jit"].first_call_s, self.pipelined["jit"].median
        )

    def __repr__(self) -> str:
        """The measured medians, from the facts alone (the sentences are the renderer's)."""
        lead = "interrupted, " if self.interrupted else ""
        medians = (
            ", ".join(f"{mode} {format_seconds(t.median)}" for mode, t in self.modes.items()) or "nothing measured"
        )
        speedup = f" (jit {self.speedup:.3g}× eager's speed)" if self.speedup is not None else ""
        return f"<Comparison {self.name}: {lead}{medians} per call{speedup}>"


def break_even(eager_per_call: float, jit_first_call: float, jit_per_call: float) -> float:
    """The fewest calls N for which N jit calls, the first one included, cost no more than N eager
    calls: ``jit_first_call + (N - 1) * jit_per_call <= N * eager_per_call``.

    >>> break_even(0.001, 0.1, 0.0001)  # 0.1 + 0.0001 (N - 1) <= 0.001 N
    111
    >>> break_even(0.001, 0.1, 0.002)  # each jit call is slower: never
    inf
    """
    if jit_first_call <= eager_per_call:
        return 1
    saved_per_call = eager_per_call - jit_per_call
    if saved_per_call <= 0:
        return math.inf
    return math.ceil((jit_first_call - jit_per_call) / saved_per_call - 1e-12)


def slower_than_eager_notes(report: Comparison) -> list[Note]:
    """A warning when jit is slower than eager beyond the noise, saying how sure that is; none when
    the speed-up's interval contains 1 (the headline then says there is no measurable difference).

    >>> slow = Comparison(name="f(x)", modes={"eager": Timing("eager", [1e-4, 1.01e-4, 0.99e-4], 10),
    ...     "jit": Timing("jit", [2e-4, 2.02e-4, 1.98e-4], 10)}, first_calls={}, memory={}, warnings=[],
    ...     notes=[], setups={}, budget=6.0, elapsed=1.0, interrupted=False, devices="1 × cpu",
    ...     requested=("eager", "jit"))
    >>> slower_than_eager_notes(slow)[0].text[:54]
    'jit is slower than eager here (0.50×; 95% interval 0.4'
    """
    if report.speedup is None or report.speedup >= 1 or report.measurable is False:
        return []
    facts = {"speedup": report.speedup, "interval": report.speedup_interval, "repeats": report.modes["jit"].repeat}
    return [Note("slower_than_eager", warning=True, mode="jit", facts=facts)]


def slower_than_eager_warnings(report: Comparison) -> list[str]:
    """The sentences of ``slower_than_eager_notes``."""
    return [note.text for note in slower_than_eager_notes(report)]
