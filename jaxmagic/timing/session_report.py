"""What a timing session reports at its end: each mode's ``Timing`` (from its repeats, or from the
one call that stands for them), the ``Comparison`` they make, and the notes that go with it (lines
the function printed, Python's warnings, repeats too uneven or too short for the timer).
"""

from __future__ import annotations

import warnings as python_warnings

import jaxmagic.timing.deadline as deadline
import jaxmagic.timing.modes as mode_setup
import jaxmagic.timing.stopwatch as stopwatch
from jaxmagic.timing.comparison import Comparison, Timing, slower_than_eager_notes
from jaxmagic.timing.notes import TIMER_FLOOR_FACTOR, Note
from jaxmagic.timing.stopwatch import TIMER
from jaxmagic.tracing.call import Call

SLOW_REPEAT_RATIO = 4.0  # as %timeit: warn when the slowest repeat is this much slower


class SessionReport:
    """The part of a timing session (``session._Session``) that makes its report; the session
    holds the state named here."""

    call: Call
    modes: tuple[str, ...]
    budget: float
    runners: dict
    first_calls: dict
    estimates: dict
    runs: dict
    pipelined_runs: dict
    plans: dict
    stopped: dict
    stopped_compiling: dict
    repeat_loops: dict
    memory: dict
    communication: dict
    printed: dict
    calls: dict
    warnings: list
    notes: list
    one_calls: dict
    facts: list
    start: float
    fallback: set
    outputs: dict
    hard_end: float

    def note(self, kind: str, *, warning: bool = False, mode: str | None = None, **facts) -> None:
        raise NotImplementedError

    def record(self, note: Note) -> None:
        raise NotImplementedError

    def _uncompiled(self) -> list[str]:
        raise NotImplementedError

    def _quiet(self, mode: str):
        raise NotImplementedError

    def _fallbacks(self) -> None:
        """A mode with no repeats keeps its figure from what did run, and says so."""
        for mode in sorted(self.fallback, key=self.modes.index):
            cost = self.first_calls[mode]
            if mode in self.estimates:
                source = {"warmup_calls": self.estimates[mode].calls}
            elif cost.run_s > 0:
                source = {"run_s": cost.run_s, "compiled": self._compiled_by_first_call(mode)}
            else:  # JAX's reported phases filled the whole first call (JAX 0.8 overlaps them): time one call
                self.calls[mode] = self.calls.get(mode, 1) + 1
                try:
                    with (
                        deadline.stop_after(max(0.0, self.hard_end - TIMER())),
                        stopwatch.gc_paused(),
                        self._quiet(mode),
                    ):
                        self.one_calls[mode] = stopwatch.timed_loop(
                            self.runners[mode], 1, stopwatch.waiter(self.outputs[mode])
                        )
                except deadline.Overran:
                    self.one_calls[mode] = cost.first_call_s  # the first call, compiling included: an upper bound
                source = {"one_call_s": self.one_calls[mode]}
            self.note(
                "single_sample", warning=True, mode=mode, budget_s=self.budget, first_call_s=cost.first_call_s, **source
            )

    def _compiled_by_first_call(self, mode: str) -> int:
        """Programs an uncompiled mode's first call compiled, which each later call may compile
        again (eager code does, for a ``lax`` loop over a closure made anew): then its first call
        less its compiling is only a lower bound. ``0`` for a compiled mode."""
        return self.first_calls[mode].compilations if mode in self._uncompiled() else 0

    def _timings(self) -> dict[str, Timing]:
        timings = {}
        for mode in self.modes:
            runs = self.runs.get(mode)
            if runs:
                timings[mode] = Timing(mode, list(runs), loops=min(self.repeat_loops[mode]))
            elif mode in self.estimates:
                estimate = self.estimates[mode]
                timings[mode] = Timing(mode, [estimate.timed], loops=estimate.calls, source="warm-up")
            elif mode in self.one_calls:
                timings[mode] = Timing(mode, [self.one_calls[mode]], loops=1, source="one call")
            elif mode in self.first_calls:
                source = "first call, compiled" if self._compiled_by_first_call(mode) else "first call"
                timings[mode] = Timing(mode, [self.first_calls[mode].run_s], loops=1, source=source)
            elif mode in self.stopped and mode not in self.stopped_compiling:
                timings[mode] = Timing(mode, [self.stopped[mode]], loops=1, source="stopped")
        return timings

    def _pipelined(self) -> dict[str, Timing]:
        return {
            mode: Timing(mode, list(runs), loops=min(self.repeat_loops[mode]))
            for mode in self.modes
            if (runs := self.pipelined_runs.get(mode))
        }

    def _report(self, interrupted: bool) -> Comparison:
        timings = self._timings()
        per_call_timed = {m for m, r in self.runners.items() if r.donates}
        for note in _timing_warnings(timings, self.plans, stopwatch.timer_overhead(), per_call_timed):
            self.record(note)
        result = Comparison(
            name=self.call.source or self.call.name,
            modes=timings,
            pipelined=self._pipelined(),
            first_calls={m: self.first_calls[m] for m in self.modes if m in self.first_calls},
            memory=self.memory,
            communication=self.communication,
            warnings=self.warnings,
            notes=self.notes,
            setups={m: r.setup for m, r in self.runners.items()},
            calls=dict(self.calls),
            budget=self.budget,
            elapsed=TIMER() - self.start,
            interrupted=interrupted,
            devices=mode_setup.describe_devices(),
            requested=self.modes,
            facts=self.facts,
        )
        for note in slower_than_eager_notes(result):
            self.record(note)
        return result

    def _print_notes(self) -> None:
        for mode, lines in self.printed.items():
            if lines:
                self.note("printed_lines", mode=mode, lines=lines)
        uncompiled = self._uncompiled()
        if any(self.printed.get(m) for m in uncompiled) and not any(
            self.printed.get(m) for m in self.runners if m not in uncompiled
        ):
            self.note("only_eager_printed", mode=uncompiled[0])

    def _jax_warnings(self, caught) -> None:
        seen = set()
        for item in caught:
            if issubclass(item.category, (DeprecationWarning, PendingDeprecationWarning)):
                # Not about this timing: hand it back to Python's own filters.
                python_warnings.warn_explicit(item.message, item.category, item.filename, item.lineno)
                continue
            text = str(item.message).strip().splitlines()[0] if str(item.message).strip() else ""
            if text and text not in seen:
                seen.add(text)
                self.note("python_warning", warning=True, category=item.category.__name__, message=text)


def _timing_warnings(timings: dict, plans: dict, timer_floor: float, per_call_timed: set) -> list[Note]:
    found = []
    for mode, timing in timings.items():
        if timing.repeat >= 2 and timing.best > 0 and timing.worst > SLOW_REPEAT_RATIO * timing.best:
            found.append(Note("uneven_repeats", warning=True, mode=mode, facts={"ratio": timing.worst / timing.best}))
        plan = plans.get(mode)
        if plan is None or timing.source != "repeats":
            continue
        stretch = timing.best * (1 if mode in per_call_timed else plan.loops)
        if stretch < TIMER_FLOOR_FACTOR * timer_floor:
            facts = {
                "per_call": mode in per_call_timed,
                "stretch_s": stretch,
                "timer_s": timer_floor,
                "factor": TIMER_FLOOR_FACTOR,
            }
            found.append(Note("timer_floor", warning=True, mode=mode, facts=facts))
    return found
