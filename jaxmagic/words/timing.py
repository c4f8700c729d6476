"""Sentences about a comparison besides its figures: each ``Note`` of ``%jitcompare`` (a kind,
the mode it concerns, its numbers) written as the sentence ``Comparison.warnings`` and
``Comparison.notes`` hold. The facts come from ``jaxmagic.timing``; the sentences only from here.

>>> str(note_text("stopped_early", None, {"done": 3, "planned": 7, "budget_s": 6.0}))
'Stopped after 3 of 7 planned repeats: the 6.00 s budget ran out (calls took longer than the warm-up foretold).'
>>> from jaxmagic.timing.notes import KINDS
>>> sorted(WORDS) == sorted(KINDS)
True
"""

from __future__ import annotations

import math
from typing import Any, Callable

from jaxmagic.words.units import format_bytes, format_seconds


def note_text(kind: str, mode: str | None, facts: dict[str, Any]) -> str:
    """The sentence of a note of ``kind`` about ``mode`` (``None``: the whole comparison), from its facts."""
    return WORDS[kind](mode, **facts)


def _runs(repeat: int, loops: int) -> str:
    return f"{repeat} repeat{'s' * (repeat != 1)} of {loops:,} call{'s' * (loops != 1)}"


def _dispatch_words(dispatches: int | None, floor_s: float | None, estimate_s: float | None) -> str:
    """`` (it dispatches at least N operations one by one: at least X)`` where that was estimated."""
    if dispatches is None or floor_s is None or estimate_s is None:
        return ""
    return (
        f" (before it ran: at least {dispatches:,} operations dispatched one by one, "
        f"at least {format_seconds(estimate_s)} at {format_seconds(floor_s)} each)"
    )


def _recompiled_words(compiled: int) -> str:
    """Why an uncompiled first call less its compiling is only a lower bound."""
    if not compiled:
        return ""
    programs = f"{compiled} program{'s' * (compiled != 1)}"
    return (
        f", at least: it compiled {programs}, which later calls may compile again (a lax loop over a new closure does)"
    )


def _late_words(late_s: float) -> str:
    """``0.65 s past the time `` (the sentence goes on: "the budget left it")."""
    return f"{format_seconds(late_s)} past the time "


def _inside_words(late_s: float | None) -> str:
    """Why a first call ran past its time, where it did."""
    if not late_s:
        return ""
    return (
        ": it was inside JAX or a library (compiling, say), where no call is stopped, since an exception "
        "there can leave JAX's caches half written: a call is stopped only in your own code"
    )


def _more_budget(budget_s: float, needed_s: float) -> str:
    """A budget that leaves ``needed_s`` more room: ``--budget 20``.

    >>> _more_budget(6.0, 3.1), _more_budget(6.0, 400.0)
    ('13', '806')
    """
    return f"{math.ceil(budget_s + 2 * needed_s):,}".replace(",", "")


def _not_run(
    mode: str,
    budget_s: float,
    left_s: float,
    dispatches: int | None = None,
    floor_s: float | None = None,
    estimate_s: float | None = None,
    donates_held: bool = False,
) -> str:
    """Why a mode was not run: it would consume arrays it holds, its dispatches alone would outlast
    the time left, or no time was left."""
    if donates_held:
        return (
            f"{mode}: not run: called as written, it hands a jitted function arrays it holds (in a partial, a "
            f"closure or a global) to donate (donate_argnums): the first call would consume them, yours "
            f"included, and the next would fail. Pass them as arguments to time it eagerly."
        )
    if dispatches is not None and floor_s is not None and estimate_s is not None:
        return (
            f"{mode}: not run: it dispatches at least {dispatches:,} operations one by one, each at least "
            f"{format_seconds(floor_s)} here, so one call would take at least {format_seconds(estimate_s)}, "
            f"many times the {format_seconds(left_s)} the {format_seconds(budget_s)} budget left it; "
            f"--budget {_more_budget(budget_s, estimate_s)} lets it run."
        )
    left = format_seconds(left_s) if left_s > 0 else "no time"
    return (
        f"{mode}: not run: the compiled modes' first calls and repeats took the {format_seconds(budget_s)} "
        f"budget, leaving it {left}; --budget {_more_budget(budget_s, budget_s)} lets it run."
    )


def _names(names: list[str]) -> str:
    quoted = [f"`{n}`" for n in names]
    return " and ".join([", ".join(quoted[:-1]), quoted[-1]] if len(quoted) > 1 else quoted)


def _not_fitted(budget_s: float, left_s: float | None) -> str:
    """What a compiled mode's repeats did not fit in: the budget, or what the first calls left of it.

    >>> _not_fitted(2.0, 1.9), _not_fitted(2.0, 0.0)
    ('did not fit in the 2.00 s budget', 'found the 2.00 s budget spent by the first calls')
    """
    budget = format_seconds(budget_s)
    if left_s is None or left_s >= 0.5 * budget_s:
        return f"did not fit in the {budget} budget"
    if left_s < 1e-3:
        return f"found the {budget} budget spent by the first calls"
    return f"did not fit in what the first calls left of the {budget} budget ({format_seconds(left_s)})"


WORDS: dict[str, Callable[..., str]] = {
    "jit_disabled": lambda mode: (
        "jax_disable_jit is on in this session: the compiled modes were timed with jit on all the "
        "same (jax.disable_jit(False) around their calls only); the setting itself is unchanged."
    ),
    "simulated_devices": lambda mode: (
        "The devices are simulated on the CPU and share its cores: sharded and pmap show what "
        "splitting the work costs, not the speed-up real accelerators give."
    ),
    "nnx_copies": lambda mode, names: (
        f"Timed on copies of {_names(names)}, with arrays of their own: what the calls changed in them (a training "
        "step's updates, an optimizer's step count, donated arrays) went to the copies, and yours are as they were."
    ),
    "numpy_converted": lambda mode, count: (
        f"eager: {count} NumPy array{'s were' if count != 1 else ' was'} given; eager and jit ran on "
        f"device copies (jnp.asarray), so neither mode pays a copy to the device per call."
    ),
    "pmap_no_donation": lambda mode: (
        "pmap: donated arguments are not donated in pmap mode (it runs on copies placed on each device)."
    ),
    "interrupted": lambda mode, phase: (
        f"Interrupted (Ctrl-C) while {phase}: the report shows what was measured until then."
    ),
    "sharded_communication": lambda mode, count, moved, seconds, device_seconds: (
        f"sharded: {count} collective{'s' * (count != 1)} move{'s' * (count == 1)} {format_bytes(moved)} per device per call; "
        f"by the profiler, communication took {format_seconds(seconds)} of {format_seconds(device_seconds)} "
        f"device time per call ({seconds / device_seconds if device_seconds else 0.0:.0%}). "
        f"%jaxpr --collectives names the line behind each."
    ),
    "sharded_no_communication": lambda mode: "sharded: the program needs no communication between the devices.",
    "persistent_cache_first_call": lambda mode, compile_s, first_call_s: (
        f"{mode}: its first call was served by JAX's persistent compilation cache "
        f"(jax_compilation_cache_dir): XLA's compile took {format_seconds(compile_s)} of a "
        f"{format_seconds(first_call_s)} first call, where a cold compile costs more; the "
        f"break-even count rests on this first call, as the next session's will."
    ),
    "pmap_per_device_results": lambda mode, reference: (
        f"pmap: results not compared with {reference}'s: every device returns its own "
        f"small result (f of its slice), which {reference} has no counterpart for."
    ),
    "pmap_slices_differ": lambda mode, reference, difference: (
        f"pmap: results not compared with {reference}'s: each device runs f on its own "
        f"slice of the leading axis ({difference})."
    ),
    "pmap_results_differ": lambda mode, reference, difference: (
        f"pmap and {reference} results differ beyond tolerance: {difference}. Under pmap each device sees only "
        f"its slice of the leading axis, so a function that mixes rows (a mean or sum over the batch) "
        f"computes something else; the sharded mode keeps the function's meaning."
    ),
    "results_differ": lambda mode, reference, difference: (
        f"{mode} and {reference} results differ beyond tolerance: {difference}. The usual causes: the function "
        f"reads Python state that changes between calls (a global, a counter, Python randomness), or a "
        f"computation is sensitive to float rounding that XLA's fusion changes (--rtol / --atol loosen "
        f"the check), or XLA rewrote the algebra (log(exp(x)) becomes x under jit, so an overflow "
        f"to inf or a NaN in one mode need not happen in the other)."
    ),
    "pmap_memory_skipped": lambda mode: (
        "pmap: memory analysis skipped (it would compile the program again, and the budget is short)."
    ),
    "budget_cut": lambda mode, budget_s, cuts: (
        f"To stay within the {format_seconds(budget_s)} budget, the timing was cut: "
        + "; ".join(
            f"{m} {_runs(repeat, loops)} instead of {_runs(wanted_repeat, wanted_loops)}"
            for m, repeat, loops, wanted_repeat, wanted_loops in cuts
        )
        + ". --budget raises it."
    ),
    "single_sample": lambda mode, budget_s, first_call_s, warmup_calls=None, run_s=None, one_call_s=None, compiled=0: (
        f"{mode}: the budget ({format_seconds(budget_s)}) left no time for repeats after its first call "
        f"({format_seconds(first_call_s)}); its figure comes from "
        + (
            f"the {warmup_calls} warm-up call{'s' * (warmup_calls != 1)} that sized the repeats"
            if warmup_calls is not None
            else f"its first call less its compiling ({format_seconds(run_s)})" + _recompiled_words(compiled)
            if run_s is not None
            else f"one call after its first ({format_seconds(one_call_s)}; JAX's phases filled the first call)"
        )
        + ", a single sample. Raise --budget for a real measurement."
    ),
    "stopped_early": lambda mode, done, planned, budget_s, late_s=None: (
        f"{mode + ': s' if mode else 'S'}topped after {done} of {planned} planned repeats: the "
        f"{format_seconds(budget_s)} budget ran out (calls took longer than the warm-up foretold"
        + (
            f"; one ran {_late_words(late_s)}{mode} was left, inside JAX or a library, where no call is "
            "stopped: the comparison ran that much past its budget"
            if late_s
            else ""
        )
        + ")."
    ),
    "repeat_overran": lambda mode, budget_s, late_s: (
        f"{mode}: one call in its repeats ran {_late_words(late_s)}{mode} was left of the "
        f"{format_seconds(budget_s)} budget (calls took longer than the warm-up foretold), inside JAX or a "
        "library, where no call is stopped: the comparison ran that much past its budget."
    ),
    "budget_overrun": lambda mode, repeats, seconds, budget_s, left_s=None: (
        f"{mode}: the {repeats} repeats its figure needs (about {format_seconds(seconds)}) "
        f"{_not_fitted(budget_s, left_s)}; they ran all the same, past it, and the other modes got what was left."
    ),
    "stopped": lambda mode, seconds, budget_s, dispatches=None, floor_s=None, estimate_s=None, late_s=None: (
        f"{mode}: 1 call, ≥ {format_seconds(seconds)}: its first call was stopped after {format_seconds(seconds)}, "
        + (_late_words(late_s) if late_s else "the time ")
        + f"the {format_seconds(budget_s)} budget left it once the compiled modes' repeats were set aside"
        + _dispatch_words(dispatches, floor_s, estimate_s)
        + _inside_words(late_s)
        + f". Its figure is a lower bound, and so is the speed-up (the break-even count an upper bound); "
        f"--budget {_more_budget(budget_s, seconds)} measures it."
    ),
    "stopped_compiling": lambda mode, seconds, budget_s, compilations, compile_s, late_s=None: (
        f"{mode}: not measured: its first call was stopped after {format_seconds(seconds)}, "
        + (_late_words(late_s) if late_s else "the time ")
        + f"the {format_seconds(budget_s)} budget left it once the compiled modes' repeats were set aside, while "
        f"JAX was still compiling the operations it runs for the first time ({compilations} program"
        f"{'s' * (compilations != 1)}, {format_seconds(compile_s)} so far), which a later call may not do again"
        + _inside_words(late_s)
        + ". That time is no bound on a later call, so no speed-up or break-even is given. "
        f"--budget {_more_budget(budget_s, seconds)} measures it."
    ),
    "first_call_overran": lambda mode, seconds, budget_s, late_s: (
        f"{mode}: its first call took {format_seconds(seconds)}, {_late_words(late_s)}the "
        f"{format_seconds(budget_s)} budget left it once the compiled modes' repeats were set aside"
        + _inside_words(late_s)
        + f"; the comparison ran that much past its budget. --budget {_more_budget(budget_s, seconds)} gives it the time."
    ),
    "eager_donates": lambda mode: (
        f"{mode}: your call hands its arguments to a jitted function that donates them (donate_argnums), "
        f"as written: each {mode} call got fresh copies of them, made outside the timed region, and yours "
        f"are as they were."
    ),
    "not_run": lambda mode, **facts: _not_run(mode, **facts),
    "printed_lines": lambda mode, lines: (
        f"{mode}: the function printed {lines:,} more line{'s' * (lines != 1)} while being "
        f"timed (hidden; what its first call printed is shown)."
    ),
    "only_eager_printed": lambda mode: (
        "Only eager printed on every call: under jit, Python's print runs once, while JAX "
        "traces the function, not when the compiled program runs (jax.debug.print does)."
    ),
    "python_warning": lambda mode, category, message: f"{category} during the timing: {message}",
    "uneven_repeats": lambda mode, ratio: (
        f"{mode}: the slowest repeat took {ratio:.1f}× longer than the fastest: another "
        f"program was busy, or something is cached between calls; the median is the robust figure."
    ),
    "timer_floor": lambda mode, per_call, stretch_s, timer_s, factor: (
        f"{mode}: {'each timed call' if per_call else 'each repeat'} lasted only {format_seconds(stretch_s)}, "
        f"less than {factor:,} times the timer's resolution ({format_seconds(timer_s)} per reading): "
        f"the clock's own cost and granularity weigh on the figure. Leave out -n to let %jitcompare size the "
        f"repeats, or raise it."
    ),
    "slower_than_eager": lambda mode, speedup, interval, repeats: (
        f"jit is slower than eager here ({speedup:.2f}×; "
        + (
            f"95% interval {interval[0]:.2f}–{interval[1]:.2f}× from {repeats} repeats"
            if interval
            else "from a single sample, so not sure"
        )
        + "): the work is too small for compiling to pay off, and each jit call has a dispatch cost of its own. "
        "jit pays off on functions with many operations on large arrays; keep this one eager, or jit a larger "
        "function that calls it."
    ),
}
