"""One timing session: each mode's first call apart, then repeats of many calls taking turns,
within a budget, and the ``Comparison`` they make (``compare``).
"""

from __future__ import annotations

import contextlib
import math
import statistics
import warnings as python_warnings
from dataclasses import dataclass, field
from typing import Sequence

import jaxmagic.timing.budget as budget_fit
import jaxmagic.timing.deadline as deadline
import jaxmagic.timing.footprint as footprint
import jaxmagic.timing.modes as mode_setup
import jaxmagic.timing.progress as progress
import jaxmagic.timing.stopwatch as stopwatch
from jaxmagic import _jax_private
from jaxmagic.errors import UsageProblem, UserCodeError
from jaxmagic.timing.comparison import Comparison, CompileCost, Timing, break_even
from jaxmagic.timing.notes import Note
from jaxmagic.timing.session_facts import SessionFacts
from jaxmagic.timing.session_report import SessionReport
from jaxmagic.timing.settings import DEFAULT_BUDGET_S, DEFAULT_REPEAT, check_settings
from jaxmagic.timing.stopwatch import TIMER
from jaxmagic.tracing import streams
from jaxmagic.tracing.call import Call, check_traceable
from jaxmagic.tracing.jitting import own_work
from jaxmagic.tracing.nnx_copies import call_on_nnx_copies, nnx_argument_names

WALL_MARGIN = 1.1  # only a compiled mode's first call and its needed repeats run past budget × this
PLAN_MARGIN = 0.9  # repeats are planned to fill this share of what is left of the budget
RESERVED_SHARE = 0.25  # of the budget, set aside for the compiled modes' repeats before eager's first call
FIRST_SHARE = 0.5  # of the time left, the compiled modes' repeats are lengthened with before eager's
MIN_REPEATS = 3  # a compiled mode's repeats, never fewer (the median of 3 sets aside one outlier)
PIPELINED_SHARE = 2.0  # a call in a repeat costs this many calls waited for: itself, then pipelined
LATE_SHARE = 0.05  # of the budget: an uncompiled call ending past its time by more is said (no stop's latency)
MIN_SLICE = 0.02  # an uncompiled mode left less than this share of the budget is not run
SKIP_FACTOR = 3.0  # nor one whose dispatches alone would cost this many times the time it is left
SETTLE_S = 0.01  # a repeat after another mode's starts with this long of untimed calls of its own
REWARM_MOST_S = 1e-3  # a compiled call this cheap is called once more just before its repeats

__all__ = [
    "Comparison",
    "CompileCost",
    "Timing",
    "break_even",
    "check_settings",
    "compare",
    "DEFAULT_REPEAT",
    "DEFAULT_BUDGET_S",
]


# ------------------------------------------------------------------------------------------------
# Measuring


def compare(
    call: Call,
    *,
    modes: str | Sequence[str] | None = None,
    repeat: int = DEFAULT_REPEAT,
    loops: int | None = None,
    budget: float = DEFAULT_BUDGET_S,
    split: str | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    on_progress: progress.Listener | None = None,
) -> Comparison:
    """Time ``call`` in each of ``modes`` (default eager and jit) and compare them.

    ``repeat`` repeats of ``loops`` calls each (default: as many as fill 0.2 s), within ``budget``
    seconds, first calls included (an uncompiled first call is stopped only in the user's own code:
    one that runs past its time inside JAX or a library is said); what the budget cut is said in
    ``warnings``. ``split`` names the
    arguments whose leading axis ``sharded`` / ``pmap`` spread over the devices (default: all
    arrays). ``rtol`` / ``atol`` set the check that every mode's result matches eager's. Ctrl-C
    stops the timing: the report holds what was measured, and says so. ``on_progress`` gets a
    ``progress.Progress`` at each step (first calls, warm-up, each repeat) for a front end.
    """
    started = TIMER()  # everything from here counts against the budget
    # A block, not a decorator: each frame above the user's call is paid again by every array their
    # eager code makes (JAX records its traceback), so the timed calls run as shallow as a hand
    # loop's. The user's own call, jitted: their persistent cache keeps it as it would.
    with own_work(cache_writes=True):
        chosen = check_settings(
            modes=modes, repeat=repeat, loops=loops, budget=budget, rtol=rtol, atol=atol, split=split
        )
        if any(mode != "eager" for mode in chosen):
            check_traceable(call, magic="%jitcompare")
        copied = nnx_argument_names(call)
        if copied:  # NNX objects are changed in place by the calls (a training step): time copies
            call = call_on_nnx_copies(call)
        session = _Session(
            call,
            chosen,
            repeat=int(repeat),
            loops=None if loops is None else int(loops),
            budget=float(budget),
            split=split,
            rtol=rtol,
            atol=atol,
            on_progress=on_progress,
            start=started,
        )
        if copied:
            session.note("nnx_copies", names=copied)
        return session.run()


@dataclass
class _Plan:
    loops: int
    repeat: int
    cost_per_call: float = 0.0  # wall seconds a call costs in a repeat, waited for and pipelined

    @property
    def repeat_s(self) -> float:
        return self.loops * self.cost_per_call


@dataclass
class _Session(SessionFacts, SessionReport):
    """One comparison in progress: what was measured so far, so a Ctrl-C can still report it.

    The compiled modes come first: their first calls, then the repeats their figures need are
    reserved out of the budget. The uncompiled modes (eager, op-by-op) get what is left: their first
    call runs where it can be stopped at the end of that time (or not at all where the operations it
    would dispatch already cost more), and their repeats are cut first."""

    call: Call
    modes: tuple[str, ...]
    repeat: int
    loops: int | None
    budget: float
    split: str | None
    rtol: float | None
    atol: float | None
    on_progress: progress.Listener | None = None
    runners: dict = field(default_factory=dict)
    first_calls: dict = field(default_factory=dict)
    outputs: dict = field(default_factory=dict)
    estimates: dict = field(default_factory=dict)  # mode -> stopwatch.Estimate
    runs: dict = field(default_factory=dict)  # mode -> seconds per call, one per repeat
    pipelined_runs: dict = field(default_factory=dict)  # mode -> seconds per call in a pipelined loop, per repeat
    plans: dict = field(default_factory=dict)
    fallback: set = field(default_factory=set)
    stopped: dict = field(default_factory=dict)  # mode -> seconds its first call ran before it was stopped
    stopped_compiling: dict = field(default_factory=dict)  # mode -> what that call had compiled by then
    repeat_loops: dict = field(default_factory=dict)  # mode -> calls in each repeat run
    seen_costs: dict = field(default_factory=dict)  # mode -> wall seconds per call each repeat cost
    late: dict = field(default_factory=dict)  # uncompiled mode -> seconds a call of its repeats ran past its time
    cut_short: set = field(default_factory=set)  # modes whose repeats the budget stopped
    wanted: dict = field(default_factory=dict)  # mode -> (calls per repeat, repeats) asked for
    memory: dict = field(default_factory=dict)
    communication: dict = field(default_factory=dict)  # sharded mode: its collectives and the time they took
    printed: dict = field(default_factory=dict)  # mode -> lines the function printed after its first call
    calls: dict = field(default_factory=dict)  # mode -> calls made, the first included
    warnings: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    one_calls: dict = field(default_factory=dict)  # mode -> seconds of one call timed after its first
    facts: list = field(default_factory=list)  # every Note; ``warnings`` and ``notes`` hold their sentences
    jaxpr: object = None  # the call traced (by the jit mode), for what an uncompiled run does
    start: float = 0.0  # when the comparison began (``TIMER()``)
    phase: str = "setting up"

    def note(self, kind: str, *, warning: bool = False, mode: str | None = None, **facts) -> None:
        """Record a note of ``kind`` with its facts (its sentence goes to ``warnings`` or ``notes``)."""
        self.record(Note(kind, warning=warning, mode=mode, facts=facts))

    def record(self, note: Note) -> None:
        self.facts.append(note)
        (self.warnings if note.warning else self.notes).append(note.text)

    # -- the whole run -------------------------------------------
    def run(self) -> Comparison:
        self.start = self.start or TIMER()
        self.deadline = self.start + self.budget
        self.hard_end = self.start + self.budget * WALL_MARGIN
        interrupted = False
        if _jit_disabled() and any(mode not in mode_setup.UNCOMPILED_MODES for mode in self.modes):
            self.note("jit_disabled")
        with python_warnings.catch_warnings(record=True) as caught:
            python_warnings.simplefilter("always")
            try:
                for mode in self.modes:
                    self._build(mode)
                self._first_calls(self._compiled())
                self._memory()
                self._communication()
                with self._later_calls():
                    self._estimates(self._compiled(), self._remaining, keep=True)
                self._reserve()
                self._uncompiled_first_calls()
                self._check_results()
                self._eager_memory()
                with self._later_calls():
                    self._estimates(self._uncompiled(), self._left_for_uncompiled)
                self._plan()
                self._fallbacks()
                with self._later_calls():
                    self._repeats()
            except KeyboardInterrupt:
                interrupted = True
                self.note("interrupted", warning=True, phase=self.phase)
        self._jax_warnings(caught)
        self._print_notes()
        return self._report(interrupted)

    def _compiled(self) -> list[str]:
        return [m for m in self.modes if m in self.runners and self.runners[m].compiles]

    def _uncompiled(self) -> list[str]:
        return [m for m in self.modes if m in self.runners and not self.runners[m].compiles]

    @contextlib.contextmanager
    def _later_calls(self):
        """A block that calls the user's function again: an error there is the user's own."""
        try:
            yield
        except (UsageProblem, UserCodeError):
            raise
        except Exception as exc:
            raise UserCodeError(
                exc, during=f"timing {self.call.name}, {self.phase} (its first calls had run without error)"
            ) from None

    def _build(self, mode: str) -> None:
        self.phase = f"setting up the {mode} mode"
        self._tell("setting up", mode)
        try:
            runner = mode_setup.build(mode, self.call, split=self.split)
        except (UsageProblem, KeyboardInterrupt):
            raise
        except Exception as exc:
            raise UserCodeError(exc, during=f"placing the arguments of {self.call.name} for {mode} mode") from None
        self.runners[mode] = runner
        for note in runner.notes:
            if note.kind == "numpy_converted" and any(n.kind == note.kind for n in self.facts):
                continue  # said once for all modes
            self.record(note)
        simulated = mode in mode_setup.MULTI_DEVICE_MODES and mode_setup.simulated_devices()
        if simulated and not any(n.kind == "simulated_devices" for n in self.facts):
            self.note("simulated_devices")

    def _tell(self, stage: str, mode: str | None = None, index: int | None = None, of: int | None = None) -> None:
        progress.tell(
            self.on_progress, progress.Progress(stage, mode, index, of, max(0.0, self._remaining()), self.budget)
        )

    def _remaining(self) -> float:
        return self.deadline - TIMER()

    # -- first calls ---------------------------------------------
    def _first_calls(self, modes: list[str]) -> None:
        failures = {}
        for mode in modes:
            failure = self._first_call(mode)
            if failure is not None:
                failures[mode] = failure
        if failures:
            # Which modes run it without error says what the error is about (control flow on a traced
            # value runs eagerly): the uncompiled first calls, as long as the budget allows.
            for mode in self._uncompiled():
                failure = self._first_call(mode, stop_after=max(0.0, self.hard_end - TIMER()))
                if failure is not None:
                    failures[mode] = failure
            self._raise_first_failure(failures)

    def _raise_first_failure(self, failures: dict[str, Exception]) -> None:
        """The error of the first mode (in the order asked for) that failed, with the modes that ran."""
        mode = next(m for m in self.modes if m in failures)
        fine = [m for m in self.modes if m in self.first_calls]
        during = f"running {self.call.name} in {mode} mode"
        if fine:
            during += f" (it ran without error in {' and '.join(fine)} mode{'s' * (len(fine) > 1)})"
        raise UserCodeError(failures[mode], during=during)

    def _first_call(self, mode: str, *, stop_after: float | None = None) -> Exception | None:
        """The first call of ``mode``, stopped after ``stop_after`` seconds if given; the exception
        the user's code raised, if it did."""
        runner = self.runners[mode]
        self.phase = f"the first {mode} call"
        self._tell("first call", mode)
        started = TIMER()
        try:
            with deadline.stop_after(stop_after) if stop_after is not None else contextlib.nullcontext():
                cost, output = stopwatch.first_call(runner)
        except deadline.Overran as stop:
            self.stopped[mode] = TIMER() - started
            self.calls[mode] = 1
            if stop.compilations:
                self.stopped_compiling[mode] = {"compilations": stop.compilations, "compile_s": stop.compile_s}
            return None
        except Exception as exc:
            return exc
        self.first_calls[mode] = cost
        self.calls[mode] = 1
        self.outputs[mode] = output
        if runner.compiles and cost.persistent_cache_hits:
            self.note(
                "persistent_cache_first_call", mode=mode, compile_s=cost.compile_s, first_call_s=cost.first_call_s
            )
        return None

    def _uncompiled_first_calls(self) -> None:
        """Each uncompiled mode's first call, in what the compiled modes' repeats leave of the
        budget: not run where the operations it would dispatch one by one already cost several times
        that, else stopped when that time is up (its figure is then a lower bound)."""
        skipped = self._protect_from_donation()
        modes = [m for m in self._uncompiled() if m not in skipped]
        for index, mode in enumerate(modes):
            # up to the budget, not its margin (that is for what no plan sees: a stop's latency, a busy machine)
            allowance = (self.deadline - TIMER() - self._reserved_s()) / (len(modes) - index)
            if allowance < MIN_SLICE * self.budget:
                self.note("not_run", warning=True, mode=mode, budget_s=self.budget, left_s=max(0.0, allowance))
                continue
            estimate = footprint.dispatch_estimate(
                self.jaxpr, op_by_op=mode == "op-by-op", within_s=SKIP_FACTOR * allowance
            )
            if estimate is not None and estimate["estimate_s"] > SKIP_FACTOR * allowance:
                self.note("not_run", warning=True, mode=mode, budget_s=self.budget, left_s=allowance, **estimate)
                continue
            started = TIMER()
            failure = self._first_call(mode, stop_after=allowance)
            if failure is not None:
                self._raise_first_failure({mode: failure})
            took = TIMER() - started
            past = self._past(started + allowance)
            late = {"late_s": past} if past else {}
            if mode in self.stopped_compiling:  # its first run of each operation: no figure of a later call
                facts = {**self.stopped_compiling[mode], **late}
                seconds = self.stopped[mode]
                self.note("stopped_compiling", warning=True, mode=mode, seconds=seconds, budget_s=self.budget, **facts)
            elif mode in self.stopped:
                facts = {**(estimate or {}), **late}
                self.note("stopped", warning=True, mode=mode, seconds=self.stopped[mode], budget_s=self.budget, **facts)
            elif late:
                self.note("first_call_overran", warning=True, mode=mode, seconds=took, budget_s=self.budget, **late)

    # -- sizing the repeats --------------------------------------
    def _estimates(self, modes: list[str], seconds_left, *, keep: bool = False) -> None:
        """One more call of each mode, then a calibration run: its seconds per call. A first call
        longer than its share of ``seconds_left()`` is the mode's figure, or with ``keep`` (the
        compiled modes, whose repeats run whatever they cost) the estimate they are planned on."""
        modes = [m for m in modes if m in self.first_calls]
        for index, mode in enumerate(modes):
            runner, cost = self.runners[mode], self.first_calls[mode]
            share = seconds_left() / (len(modes) - index)
            if cost.run_s > share and not keep:
                self.fallback.add(mode)
                continue
            self.phase = f"warming up the {mode} mode"
            self._tell("warm-up", mode)
            wait = stopwatch.waiter(self.outputs[mode])
            with stopwatch.gc_paused(), self._quiet(mode):
                single = stopwatch.timed_loop(runner, 1, wait)
                self.calls[mode] += 1
                if cost.run_s > share:  # no time to calibrate: the one call is the estimate
                    self.estimates[mode] = stopwatch.Estimate(single, single, 1)
                    continue
                # Calibrated even when -n fixes the calls: one call alone costs more than one in a
                # loop (planning on it would cut repeats the budget has room for).
                self.estimates[mode] = stopwatch.estimate(runner, wait, single_call_s=single)
                if single < stopwatch.CALIBRATION_S:
                    self.calls[mode] += self.estimates[mode].calls

    def _wanted(self, modes: list[str]) -> dict[str, tuple[int, int]]:
        return {m: (self.loops or stopwatch.auto_loops(self.estimates[m].timed), self.repeat) for m in modes}

    def _cost_per_call(self, mode: str) -> float:
        """Wall seconds one call costs in a repeat: waited for, then as many again pipelined (no
        longer than waited for)."""
        return PIPELINED_SHARE * self.estimates[mode].wall

    def _reserve(self) -> None:
        """Set aside the compiled modes' repeats, as long as asked (as a hand ``timeit`` loop's), in
        all no more than ``RESERVED_SHARE`` of the budget, each at least ``budget.FLOOR_S`` long:
        the uncompiled first calls may take what is left (a longer one is stopped, and said)."""
        modes = [m for m in self._compiled() if m in self.estimates]
        most_s, floors = RESERVED_SHARE * self.budget / max(1, len(modes)), self._floors()
        for mode, (loops, repeat) in self._wanted(modes).items():
            cost = max(self._cost_per_call(mode), 1e-9)
            least = min(loops, floors[mode])
            self.plans[mode] = _Plan(max(least, min(loops, int(most_s / (repeat * cost)))), repeat, cost_per_call=cost)

    def _floors(self) -> dict[str, int]:
        """Mode -> the calls a compiled mode's repeat never goes below, whatever the budget says:
        ``budget.FLOOR_S`` of timed calls (a 1 ms call on a TPU swings by ±15%), at what a call was
        last seen to cost (a busy machine makes them slower than the warm-up foretold: the floor is
        a duration, not a count planned on a quiet moment)."""
        timed = {m: max(self._timed_per_call(m), 1e-9) for m in self._compiled() if m in self.estimates}
        return {m: max(1, math.ceil(budget_fit.FLOOR_S / t)) for m, t in timed.items()}

    def _timed_per_call(self, mode: str) -> float:
        """Seconds per call waited for, as the last two of ``mode``'s repeats (the warm-up counting
        as the first) saw it at the least: a slower machine once two repeats say so, not for one
        repeat that another program held up; a quicker one at once."""
        seen = [self.estimates[mode].timed, *self.runs.get(mode, ())]
        return min(seen[-2:])

    def _reserved_s(self) -> float:
        """Seconds the compiled modes' planned repeats still need."""
        total = 0.0
        for mode in self._compiled():
            plan = self.plans.get(mode)
            if plan is not None:
                cost = self._seen_cost(mode, plan)
                total += (plan.repeat - len(self.runs.get(mode, ()))) * plan.loops * cost
        return total

    def _left_for_uncompiled(self) -> float:
        return self._remaining() - self._reserved_s()

    def _plan(self) -> None:
        """Every mode's repeats in what is left of the budget (``budget.share``): the compiled modes
        keep the repeats asked for, the uncompiled ones are cut first."""
        modes = [m for m in self.modes if m in self.estimates and m not in self.fallback]
        wanted = self._wanted(modes)
        costs = {m: self._cost_per_call(m) for m in modes}
        seconds = PLAN_MARGIN * max(0.0, self._remaining())
        fitted = budget_fit.share(
            wanted, costs, seconds=seconds, first=tuple(self._compiled()), least=self._floors(), ahead_share=FIRST_SHARE
        )
        self.wanted = wanted
        for mode in modes:
            planned = fitted[mode]
            if planned is None:
                self.fallback.add(mode)
                self.plans.pop(mode, None)
                continue
            self.plans[mode] = _Plan(*planned, cost_per_call=costs[mode])
        compiled_s = sum(self.plans[m].repeat * self.plans[m].repeat_s for m in self._compiled() if m in self.plans)
        if compiled_s > seconds:
            for mode, plan in ((m, self.plans[m]) for m in self._compiled() if m in self.plans):
                needs = {
                    "repeats": plan.repeat,
                    "seconds": plan.repeat * plan.repeat_s,
                    "left_s": seconds / PLAN_MARGIN,
                }
                self.note("budget_overrun", warning=True, mode=mode, budget_s=self.budget, **needs)

    # -- the repeats ---------------------------------------------
    def _repeats(self) -> None:
        """The modes take turns, repeat by repeat: calls waited for, then as many pipelined. Before
        each round the repeats left are fitted again on what calls were seen to cost (see
        ``_refit``); an uncompiled repeat is stopped before it eats into the compiled modes' time."""
        waits = {m: stopwatch.waiter(self.outputs[m]) for m in self.plans}
        for mode in self.plans:
            self.runs[mode] = []
            self.pipelined_runs[mode] = []
            self.repeat_loops[mode] = []
        self._rewarm(waits)
        most = max((p.repeat for p in self.plans.values()), default=0)
        for index in range(most):
            for mode in [m for m in self.modes if m in self.plans]:  # in the order asked for
                plan = self.plans[mode]
                if self.seen_costs:
                    self._refit()
                if index >= plan.repeat or mode in self.cut_short:
                    continue
                if not self._room_for_repeat(mode, index):
                    self._cut_short(mode, index)
                    continue
                self.phase = f"repeat {index + 1} of {plan.repeat} ({mode})"
                self._tell("repeat", mode, index + 1, plan.repeat)
                if not self._repeat(mode, plan, waits[mode]):
                    self._cut_short(mode, index)
        for mode in [m for m in self.late if m not in self.cut_short]:  # a late call in a repeat that ended
            self.note("repeat_overran", warning=True, mode=mode, budget_s=self.budget, late_s=self.late[mode])
        self._cuts()

    def _rewarm(self, waits) -> None:
        """One untimed call of each cheap compiled mode before its first repeat: the first call
        after the other modes and the checks runs on cold caches (~130 µs, then 5 µs on the CPU)."""
        for mode in self._compiled():
            if mode in self.plans and mode in self.estimates and self.estimates[mode].wall <= REWARM_MOST_S:
                self._untimed_call(mode, waits[mode])

    def _untimed_call(self, mode: str, wait) -> None:
        """One call of ``mode`` left out of its figures, to warm what the other modes cooled."""
        with stopwatch.gc_paused(), self._quiet(mode):
            stopwatch.timed_loop(self.runners[mode], 1, wait)
        self.calls[mode] += 1

    def _cuts(self) -> None:
        """What the budget cut, as run: each mode's repeats and fewest calls per repeat against
        what was wanted (one note, after the repeats: they are fitted again as they go)."""
        cuts = []
        for mode, (loops, repeat) in self.wanted.items():
            done = self.repeat_loops.get(mode)
            if done and (len(done), min(done)) != (repeat, loops):
                cuts.append((mode, len(done), min(done), repeat, loops))
        if cuts:
            self.note("budget_cut", warning=True, budget_s=self.budget, cuts=cuts)

    def _cut_short(self, mode: str, done: int) -> None:
        self.cut_short.add(mode)
        planned = self.plans[mode].repeat
        late = {"late_s": self.late[mode]} if mode in self.late else {}
        self.note("stopped_early", warning=True, mode=mode, done=done, planned=planned, budget_s=self.budget, **late)

    def _refit(self) -> None:
        """Fit the repeats still to run in the time left, on the costs seen so far (a busy machine
        makes calls slower than the warm-up foretold): compiled modes keep their repeats with fewer
        calls each (never below their floor, which follows the calls' cost), the uncompiled are cut
        first; never longer than wanted."""
        left, costs = {}, {}
        for mode, plan in self.plans.items():
            done = len(self.runs[mode])
            if mode in self.cut_short or done >= plan.repeat:
                continue
            left[mode] = (plan.loops, plan.repeat - done)
            costs[mode] = self._seen_cost(mode, plan)
        seconds = PLAN_MARGIN * max(0.0, self._remaining())
        floors = self._floors()
        fitted = budget_fit.share(
            left, costs, seconds=seconds, first=tuple(self._compiled()), least=floors, ahead_share=FIRST_SHARE
        )
        for mode, planned in fitted.items():
            plan = self.plans[mode]
            if planned is None:
                self._cut_short(mode, len(self.runs[mode]))
                continue
            plan.cost_per_call = costs[mode]
            # back up to the floor where calls got quicker again, never past what was wanted
            floor = min(floors.get(mode, 0), self.wanted[mode][0])
            plan.loops = max(min(plan.loops, planned[0]), floor)
            plan.repeat = len(self.runs[mode]) + min(left[mode][1], planned[1])

    def _seen_cost(self, mode: str, plan: _Plan) -> float:
        """Wall seconds per call of ``mode``'s repeats so far (their median: one repeat slowed by
        another program does not shorten the rest), or as planned before any ran."""
        seen = self.seen_costs.get(mode)
        return statistics.median(seen) if seen else plan.cost_per_call

    def _needed_repeats(self, mode: str) -> int:
        """The repeats a compiled mode runs whatever the budget says: all those planned where, at
        one call each, they cost no more than the budget itself, else ``MIN_REPEATS``."""
        plan = self.plans[mode]
        one_call = self.estimates[mode].wall if mode in self.estimates else plan.cost_per_call
        return plan.repeat if plan.repeat * one_call <= self.budget else min(plan.repeat, MIN_REPEATS)

    def _room_for_repeat(self, mode: str, index: int) -> bool:
        plan = self.plans[mode]
        seen = self.seen_costs.get(mode)  # the last repeat's cost too: a machine that slows down
        repeat_s = plan.loops * max(self._seen_cost(mode, plan), seen[-1] if seen else 0.0)
        if self.runners[mode].compiles:
            return index < self._needed_repeats(mode) or TIMER() + repeat_s <= self.hard_end
        # an uncompiled mode up to the budget, not its margin: the margin is for what no plan sees
        return TIMER() + repeat_s <= self.deadline - self._reserved_s()

    def _repeat(self, mode: str, plan: _Plan, wait) -> bool:
        """One repeat of ``mode``; ``False`` where an uncompiled mode's repeat was stopped, between
        two of its calls, at the time the compiled modes leave it (nothing of it is kept)."""
        runner = self.runners[mode]
        stop_at = None if runner.compiles else self.deadline - self._reserved_s()
        started = TIMER()
        # After another mode's calls, caches are cold (a 10 ms eager repeat after jit's reads 5-30%
        # slow), which a hand loop never sees: untimed calls first, counted in the cost.
        settling = self._settling_calls(mode, plan) if len(self.plans) > 1 else 0
        self.calls[mode] += settling
        try:
            with stopwatch.gc_paused(), self._quiet(mode):
                if settling:
                    stopwatch.timed_loop(runner, settling, wait, stop_at=stop_at)
                blocked = stopwatch.timed_loop(runner, plan.loops, wait, stop_at=stop_at)
                pipelined = stopwatch.pipelined_loop(runner, plan.loops, stop_at=stop_at)
        except deadline.Overran:
            self.calls[mode] += plan.loops
            return False
        finally:  # one call far longer than the warm-up foretold ends past the time: by how much
            if stop_at is not None and (past := self._past(stop_at)):
                self.late[mode] = max(self.late.get(mode, 0.0), past)
        self.seen_costs.setdefault(mode, []).append((TIMER() - started) / plan.loops)
        self.runs[mode].append(blocked / plan.loops)
        self.pipelined_runs[mode].append(pipelined / plan.loops)
        self.repeat_loops[mode].append(plan.loops)
        self.calls[mode] += 2 * plan.loops
        return True

    def _past(self, stop_at: float) -> float:
        """Seconds an uncompiled call ran past ``stop_at``, where more than a stop's latency (it was
        inside JAX or a library, where no call is stopped), else ``0``."""
        past = TIMER() - stop_at
        return past if past > LATE_SHARE * self.budget else 0.0

    def _settling_calls(self, mode: str, plan: _Plan) -> int:
        """Untimed calls before a repeat that follows another mode's: ``SETTLE_S`` of them (at least
        one, no more than the repeat's own)."""
        per_call = self.estimates[mode].timed if mode in self.estimates else plan.cost_per_call
        return max(1, min(plan.loops, math.ceil(SETTLE_S / max(per_call, 1e-9))))

    def _quiet(self, mode: str):
        """What the function prints after its first call goes to a sink that counts the lines (not
        thousands of them in the notebook); only this thread's: a background thread's are shown."""
        return streams.this_thread_writes_to(stopwatch.LineCounter(self.printed, mode))


def _jit_disabled() -> bool:
    return _jax_private.jit_disabled()
