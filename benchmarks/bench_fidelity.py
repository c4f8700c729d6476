"""Fidelity over the shared corpus of user code (``tests/corpus/``): every figure jaxmagic shows,
against the truth measured from outside it, case by case.

- ``%jitcompare``'s eager and jit medians against hand ``timeit`` loops with ``block_until_ready``
  over the user's own call: eager is ``f(*args)`` exactly as the user would call it without the
  outer ``jax.jit`` (a callee the user jitted is unwrapped once), jit is the user's jitted
  function (or ``jax.jit`` of theirs; a module holding arrays jitted as its library documents,
  ``eqx.filter_jit`` where it holds functions too). The hand loops run from a cell of the same
  shell, as the user's own would; measured in alternating rounds, judged by the median of their
  ratios. Goals: eager within ±10%, jit within ±5%. A figure shown as a lower bound (an eager
  first call the budget stopped, "≥ 677 ms") is judged by being one: at most the truth (+10%).
- ``%jaxpr --memory``'s peak against XLA's own account of the same compiled program,
  ``compiled.memory_analysis()``: ``peak_memory_in_bytes`` where the backend reports it (TPU,
  GPU; goal within ±5%), else what XLA reserves, temp + arguments + outputs − aliased (the CPU;
  goal: never above it).
- ``%%recompiles``' count of compilations against what JAX logs (``jax_log_compiles``) for the
  same call, on a fresh definition of the cell with JAX's own caches warm (a first run of the call
  beforehand): goal equal.

Run alone it prints the table per library and per case::

    python benchmarks/bench_fidelity.py                # a sample of 40 cases, stratified by library
    python benchmarks/bench_fidelity.py --cases 0      # every case of the corpus
    python benchmarks/bench_fidelity.py --json out.json

``make bench`` (``benchmarks/run.py``) runs the sample (``JAXMAGIC_FIDELITY_CASES`` sets its size)
and writes the per-library table into docs/performance.md.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import inspect
import io
import json
import logging
import os
import re
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field

os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout: tests.corpus

import jax
import numpy as np
from hand_loops import Thunk, hand_seconds

from tests.corpus import Case, running
from tests.corpus.calls import JittedCall, ParsedCall, jitted, parse_call, static_names, static_positions

TOLERANCE = {"eager": 0.10, "jit": 0.05, "memory": 0.05}
DEFAULT_CASES = 40
BUDGET_S = 2.0  # %jitcompare's --budget per case and round (its default is 6 s)
HAND_REPEAT = 5
ROUNDS = 3  # alternating rounds of hand loops and %jitcompare per case


@dataclass
class Figure:
    """One figure of one case: what jaxmagic said, the truth, and whether they agree."""

    measure: str  # "eager", "jit", "memory", "count"
    ours: float | None
    truth: float | None
    within: bool | None  # None: could not be compared (said why in ``note``)
    note: str = ""
    rounds: list[float] = field(default_factory=list)  # ours / truth in each alternating round
    bounds: list[bool] = field(default_factory=list)  # each round's figure was a lower bound (a stopped call)

    @property
    def ratio(self) -> float | None:
        """The median of the rounds' ratios, those of lower bounds aside (a bound is judged only by
        being one: at most the truth); ``None`` where every round was a bound."""
        if self.rounds:
            bounds = self.bounds or [False] * len(self.rounds)
            measured = [r for r, bound in zip(self.rounds, bounds, strict=True) if not bound]
            return statistics.median(measured) if measured else None
        if self.ours is None or not self.truth:
            return None
        return self.ours / self.truth


@dataclass
class CaseResult:
    id: str
    library: str
    figures: list[Figure] = field(default_factory=list)


# ---------------------------------------------------------------- choosing cases
def select(count: int) -> list[Case]:
    """``count`` running cases (0: all), taken in turn from each library so every library is
    represented, in the corpus's order within a library."""
    available = [case for case in running() if case.available]
    if count <= 0 or count >= len(available):
        return available
    by_library: dict[str, list[Case]] = collections.defaultdict(list)
    for case in available:
        by_library[case.library].append(case)
    chosen: list[Case] = []
    while len(chosen) < count:
        for cases in by_library.values():
            if cases and len(chosen) < count:
                chosen.append(cases.pop(0))
    return chosen


def timed(case: Case) -> bool:
    """Whether eager and jit timing mean something for the case (its call can be jitted whole)."""
    return not case.tags & {"no-jit", "side-effect"}


# ---------------------------------------------------------------- the shell, as a notebook runs it
def _shell():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    if "jaxmagic" not in shell.extension_manager.loaded:
        shell.run_line_magic("load_ext", "jaxmagic")
    return shell


def _run_cell(shell, source: str):
    """Run ``source`` as a cell; (its value, the exception it raised or None)."""
    from IPython.utils.capture import capture_output

    with capture_output():
        outcome = shell.run_cell(source, store_history=True)
    return outcome.result, outcome.error_in_exec or outcome.error_before_exec


def _define(shell, case: Case) -> None:
    _, error = _run_cell(shell, case.setup)
    if error is not None:
        raise RuntimeError(f"{case.id}: its cell failed: {error!r}")


# ---------------------------------------------------------------- the truth, measured by hand
def _jit_wrapper(function) -> bool:
    """Whether the callee is a jitted function (jax.jit, eqx.filter_jit, nnx.jit, ...)."""
    return hasattr(function, "lower") and hasattr(function, "__wrapped__")


def eager_thunk(call: ParsedCall):
    """The user's call without the outer jit: a jitted callee unwrapped once."""
    function = call.function.__wrapped__ if _jit_wrapper(call.function) else call.function
    return Thunk(function, call.args, call.kwargs)


def jit_thunk(call: ParsedCall, case: Case):
    """The user's jitted call: their jitted callee as it is, or ``jax.jit`` of theirs."""
    if inspect.ismethod(call.function) and _jit_wrapper(call.function.__func__):  # a jitted method
        call = ParsedCall(call.function.__func__, (call.function.__self__, *call.args), call.kwargs)
    if _jit_wrapper(call.function):
        return call, Thunk(call.function, call.args, call.kwargs)
    static_scalars = "static" in case.tags
    statics = static_positions(call, static_scalars=static_scalars)
    names = static_names(call, static_scalars=static_scalars)
    try:
        hash((call.function, tuple(call.args[i] for i in statics), tuple(call.kwargs[n] for n in names)))
    except TypeError:  # a callee that holds arrays (a module): jitted as its users jit it
        idiom = _jitted_as_written(call)
        if idiom is not None:
            return None, idiom
        return None, jitted(call, static_scalars=static_scalars)
    function = jax.jit(call.function, static_argnums=statics, static_argnames=names)
    return ParsedCall(function, call.args, call.kwargs), Thunk(function, call.args, call.kwargs)


def _jitted_as_written(call: ParsedCall):
    """The user's own jit of a callee that cannot be a static function (a module holding arrays),
    as its library documents it: ``eqx.filter_jit`` where the call holds leaves ``jax.jit`` cannot
    trace (an Equinox module's activation), else ``jax.jit`` with the callee passed as an argument.
    Either flattens the callee and its arguments on every call, as the user's own loop does (the
    call held fixed around a ``jax.jit``, as ``jitted`` builds it, skips that work: no user can);
    ``None`` where neither applies (Python numbers, no Equinox)."""
    whole = (call.function, call.args, call.kwargs)
    if all(isinstance(leaf, (jax.Array, np.ndarray)) for leaf in jax.tree_util.tree_leaves(whole)):
        function = jax.jit(lambda callee, args, kwargs: callee(*args, **kwargs))
        return Thunk(function, whole, {})
    try:
        import equinox as eqx
    except ImportError:
        return None
    function = eqx.filter_jit(lambda callee, args, kwargs: callee(*args, **kwargs))
    return Thunk(function, whole, {})


def hand_seconds_in_a_cell(shell, thunk) -> float:
    """``hand_seconds`` run from a cell of the shell, where the user's own loop runs: JAX records a
    Python traceback for each operation an eager call makes, so the depth of the stack under the
    call is part of its cost (an eager gradient: about 0.4% a frame)."""
    shell.user_ns["_fidelity_hand"], shell.user_ns["_fidelity_thunk"] = hand_seconds, thunk
    try:
        seconds, error = _run_cell(shell, f"_fidelity_hand(_fidelity_thunk, {HAND_REPEAT})[0]")
    finally:
        for name in ("_fidelity_hand", "_fidelity_thunk"):
            shell.user_ns.pop(name, None)
    if error is not None:
        raise error
    return seconds


def xla_memory(compiled) -> tuple[float | None, str]:
    """XLA's account of the program's memory: its peak where the backend counts the program's
    temporaries in it (TPU, GPU; the CPU's figure is the arguments and outputs alone), else temp +
    arguments + outputs − aliased (what it reserves)."""
    from jaxmagic.compiled.memory import xla_peak

    analysis = compiled.memory_analysis()
    if analysis is None:
        return None, "the backend reports no memory analysis"
    peak = xla_peak(compiled)
    if peak:
        return float(peak), "peak"
    reserved = (
        analysis.temp_size_in_bytes
        + analysis.argument_size_in_bytes
        + analysis.output_size_in_bytes
        - analysis.alias_size_in_bytes
    )
    return float(reserved), "reserved"


def _compiled(call: ParsedCall, case: Case):
    """The program the user's jitted call runs, compiled: by their jitted callee's own ``lower``
    where it gives XLA's memory analysis, else by the outer ``jax.jit`` of the (unwrapped) call."""
    call_for_jit, thunk = jit_thunk(call, case)
    if call_for_jit is not None:
        with contextlib.suppress(Exception):  # a library's wrapper whose lowering is not JAX's
            lowered = call_for_jit.function.lower(*call_for_jit.args, **call_for_jit.kwargs)
            # Equinox's ``Lowered`` holds JAX's, of the program eqx.filter_jit compiles (its Python
            # floats static, its marker returned): without it, a jax.jit of the function, floats traced
            compiled = getattr(lowered, "lowered", lowered).compile()
            compiled.memory_analysis()
            return compiled
    if isinstance(thunk, JittedCall):
        return thunk.lower().compile()
    unwrapped = ParsedCall(call.function.__wrapped__, call.args, call.kwargs) if _jit_wrapper(call.function) else call
    return jitted(unwrapped, static_scalars="static" in case.tags).lower().compile()


_COMPILING = re.compile(r"Compiling (?:jit\()?([^\s()]+)")


class _CompileLog(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.names: list[str] = []

    def emit(self, record):
        match = _COMPILING.match(record.getMessage())
        if match:
            self.names.append(match[1])


def logged_compilations(thunk) -> list[str]:
    """The functions JAX says it compiled while ``thunk`` ran (``jax_log_compiles``)."""
    handler = _CompileLog()
    logger = logging.getLogger("jax")
    before = jax.config.jax_log_compiles
    logger.addHandler(handler)
    jax.config.update("jax_log_compiles", True)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            jax.block_until_ready(thunk())
    finally:
        jax.config.update("jax_log_compiles", before)
        logger.removeHandler(handler)
    return handler.names


# ---------------------------------------------------------------- jaxmagic's figures
def _static_option(call: ParsedCall, case: Case) -> str:
    if "static" not in case.tags:
        return ""
    positions = [
        str(i) for i, arg in enumerate(call.args) if isinstance(arg, (bool, int, float)) and not hasattr(arg, "shape")
    ]
    names = [name for name, arg in call.kwargs.items() if isinstance(arg, (bool, int, float))]
    chosen = positions + names
    return f"-s {','.join(chosen)} " if chosen else ""


def measure_timing(shell, case: Case, call: ParsedCall, budget: float, rounds: int = ROUNDS) -> list[Figure]:
    """Eager and jit, against hand loops measured in the same rounds: the hand loops, then
    ``%jitcompare``, ``rounds`` times; each figure is judged by the median of its rounds' ratios
    (a shared machine swings single rounds by ±10% and more)."""
    _, jit_call = jit_thunk(call, case)
    truths: dict[str, list[float]] = {"eager": [], "jit": []}
    ours: dict[str, list[float]] = {"eager": [], "jit": []}
    shapes: dict[str, list[str]] = {"eager": [], "jit": []}  # calls × repeats of each round: a cut shows
    bounds: dict[str, list[bool]] = {"eager": [], "jit": []}
    line = f"%jitcompare -o -q --budget {budget} {_static_option(call, case)}{case.call}"
    for _ in range(rounds):
        truths["eager"].append(hand_seconds_in_a_cell(shell, eager_thunk(call)))
        truths["jit"].append(hand_seconds_in_a_cell(shell, jit_call))
        report, error = _run_cell(shell, line)
        if error is not None or report is None:
            note = f"%jitcompare failed: {type(error).__name__}: {str(error)[:160]}"
            return [Figure(mode, None, statistics.median(truths[mode]), None, note) for mode in ("eager", "jit")]
        for mode in ("eager", "jit"):
            timing = report.modes.get(mode)
            if timing is not None:
                ours[mode].append(timing.median)
                shapes[mode].append(f"≥ ({timing.source})" if timing.lower_bound else f"{timing.loops}×{timing.repeat}")
                bounds[mode].append(timing.lower_bound)
    figures = []
    for mode in ("eager", "jit"):
        truth = statistics.median(truths[mode])
        if len(ours[mode]) < rounds:
            figures.append(Figure(mode, None, truth, None, f"no {mode} mode in the report"))
            continue
        figure = judged(mode, ours[mode], truths[mode], bounds[mode])
        figure.note += "; calls × repeats " + ", ".join(shapes[mode])
        figures.append(figure)
    return figures


def judged(mode: str, ours: list[float], truths: list[float], bounds: list[bool]) -> Figure:
    """A timing figure from its rounds: within where the median ratio of the measured rounds is
    within tolerance and every round shown as a lower bound is one (at most the truth, within
    tolerance); a figure only ever shown as a bound is judged by that alone.

    >>> judged("eager", [0.9, 1.0, 1.1], [1.0, 1.0, 1.0], [False] * 3).within
    True
    >>> bound = judged("eager", [0.05, 1.02, 0.98], [1.0, 1.0, 1.0], [True, False, False])
    >>> bound.within, round(bound.ratio, 2)
    (True, 1.0)
    >>> judged("eager", [1.3, 1.0, 1.0], [1.0, 1.0, 1.0], [True, False, False]).within  # above the truth
    False
    >>> judged("jit", [0.5, 0.5, 0.5], [1.0, 1.0, 1.0], [False] * 3).within
    False
    """
    ratios = [o / t for o, t in zip(ours, truths, strict=True)]
    figure = Figure(mode, statistics.median(ours), statistics.median(truths), None, "", ratios, bounds)
    true_bounds = all(r <= 1 + TOLERANCE[mode] for r, bound in zip(ratios, bounds, strict=True) if bound)
    figure.within = true_bounds and (figure.ratio is None or abs(figure.ratio - 1) <= TOLERANCE[mode])
    figure.note = "rounds " + ", ".join(f"{r:.3f}" for r in ratios)
    return figure


def measure_memory(shell, case: Case, call: ParsedCall) -> Figure:
    try:
        truth, kind = xla_memory(_compiled(call, case))
    except Exception as exc:  # the truth cannot be had: say so, compare nothing
        truth, kind = None, f"compiling by hand failed: {type(exc).__name__}: {str(exc)[:120]}"
    report, error = _run_cell(shell, f"%jaxpr -o --memory {_static_option(call, case)}{case.call}")
    ours = getattr(report, "peak_bytes", None) if error is None else None
    if truth is None or ours is None:
        note = kind if truth is None else f"%jaxpr --memory gave no peak ({type(error).__name__ if error else 'none'})"
        return Figure("memory", ours, truth, None, note)
    if kind == "peak":  # the buffers by line beside it: how far they add up from XLA's peak
        live = getattr(report.peak, "live_bytes", 0) / truth
        note = f"XLA's peak; the buffers in use at it add up to {live:.3f} of it"
        return Figure("memory", ours, truth, abs(ours / truth - 1) <= TOLERANCE["memory"], note)
    beside = sum(b.bytes for b in report.live_at_peak if b.kind == "constant")  # constants XLA holds apart
    return Figure(
        "memory", ours, truth, ours - beside <= truth, "XLA's reservation (temp + arguments + outputs − aliased)"
    )


def measure_count(shell, case: Case) -> Figure:
    _define(shell, case)  # warm JAX's own caches: the eager primitives and libraries' module-level jits
    with contextlib.suppress(Exception):
        logged_compilations(lambda: eval(case.call, shell.user_ns))
    _define(shell, case)
    truth_names = logged_compilations(lambda: eval(case.call, shell.user_ns))
    _define(shell, case)
    log, error = _run_cell(shell, f"%%recompiles -o\n{case.call}\n")
    if error is not None or log is None:
        return Figure("count", None, len(truth_names), None, f"%%recompiles failed: {error!r}"[:200])
    counts = dict(getattr(log, "counts", {}) or {})
    ours = sum(counts.values())
    truth = collections.Counter(truth_names)
    note = f"jaxmagic {dict(sorted(counts.items()))} / JAX's log {dict(sorted(truth.items()))}"
    return Figure("count", ours, len(truth_names), ours == len(truth_names), note)


def measure(shell, case: Case, budget: float, measures: tuple[str, ...]) -> CaseResult:
    result = CaseResult(case.id, case.library)
    _define(shell, case)
    call = parse_call(case.call, shell.user_ns)
    if timed(case):
        if "timing" in measures:
            result.figures += measure_timing(shell, case, call, budget)
        if "memory" in measures:
            result.figures.append(measure_memory(shell, case, parse_call(case.call, shell.user_ns)))
    if "count" in measures:
        result.figures.append(measure_count(shell, case))
    return result


def measure_all(
    cases: list[Case], budget: float, measures=("timing", "memory", "count"), after_each=None
) -> list[CaseResult]:
    """Every case measured in turn; ``after_each(results)`` runs after each case, so that a run
    stopped part-way keeps what it measured."""
    shell = _shell()
    results = []
    for case in cases:
        try:
            results.append(measure(shell, case, budget, measures))
        except Exception as exc:  # a case whose truth cannot be measured: recorded, not fatal
            results.append(CaseResult(case.id, case.library, [Figure("error", None, None, None, repr(exc)[:300])]))
        if after_each is not None:
            after_each(results)
    return results


# ---------------------------------------------------------------- tables
def per_library(results: list[CaseResult], measure: str) -> dict[str, dict]:
    """library -> {"cases", "within", "worst"}: figures compared, within tolerance, and the ratio
    furthest from 1 (ours / truth)."""
    table: dict[str, dict] = {}
    for result in results:
        for figure in result.figures:
            if figure.measure != measure or figure.within is None:
                continue
            row = table.setdefault(result.library, {"cases": 0, "within": 0, "worst": None})
            row["cases"] += 1
            row["within"] += bool(figure.within)
            ratio = figure.ratio
            if ratio is not None and (row["worst"] is None or abs(_log(ratio)) > abs(_log(row["worst"]))):
                row["worst"] = ratio
    return table


def _log(x: float) -> float:
    import math

    return math.log(x) if x > 0 else float("inf")


MEASURES = {
    "eager": "%jitcompare eager median / hand loop over f(*args)",
    "jit": "%jitcompare jit median / hand loop over the jitted call",
    "memory": "%jaxpr --memory peak / XLA's memory_analysis()",
    "count": "%%recompiles count / JAX's compile log",
}


def text_table(results: list[CaseResult]) -> str:
    lines = []
    for measure, title in MEASURES.items():
        table = per_library(results, measure)
        lines += [f"{title}", f"  {'library':<12} {'cases':>5} {'within':>6} {'worst':>8}"]
        for library, row in sorted(table.items()):
            worst = "-" if row["worst"] is None else f"{row['worst']:.3g}"
            lines.append(f"  {library:<12} {row['cases']:>5} {row['within']:>6} {worst:>8}")
        lines.append("")
    return "\n".join(lines)


def failures(results: list[CaseResult]) -> str:
    lines = []
    for result in results:
        for figure in result.figures:
            if figure.within is False or figure.within is None:
                ours = "-" if figure.ours is None else f"{figure.ours:.4g}"
                truth = "-" if figure.truth is None else f"{figure.truth:.4g}"
                state = "NOT COMPARED" if figure.within is None else "OUT"
                lines.append(f"{state:<12} {figure.measure:<6} {result.id}: ours {ours}, truth {truth}. {figure.note}")
    return "\n".join(lines)


GOALS = {"eager": "±10%", "jit": "±5%", "memory": "±5%", "count": "equal"}


def totals_table(results: list[CaseResult]) -> list[str]:
    """One markdown row a figure over every case: within / compared, the worst ratio, the cases out
    of tolerance with their ratios, and how many could not be compared."""
    out = ["| figure | goal | within | worst | out of tolerance; not compared |", "| --- | --- | ---: | ---: | --- |"]
    for measure, title in MEASURES.items():
        figures = [(r.id, f) for r in results for f in r.figures if f.measure == measure]
        compared = [(case, f) for case, f in figures if f.within is not None]
        ratios = [f.ratio for _, f in compared if f.ratio is not None]
        worst = max(ratios, key=lambda r: abs(_log(r))) if ratios else None
        missed = [f"`{case}` {_shown_ratio(f)}" for case, f in compared if not f.within]
        skipped = len(figures) - len(compared)
        bounded = sum(any(f.bounds) for _, f in compared)
        notes = missed
        if bounded:
            notes.append(f"{bounded} shown in a round as a lower bound (a stopped call; judged by being one)")
        if skipped:
            notes.append(f"{skipped} not compared")
        detail = "; ".join(notes) or "–"
        within = sum(bool(f.within) for _, f in compared)
        shown = "–" if worst is None else f"{worst:.3g}"
        out.append(f"| {title} | {GOALS[measure]} | {within} of {len(compared)} | {shown} | {detail} |")
    return out


def _shown_ratio(figure: Figure) -> str:
    if figure.ratio is not None:
        return f"{figure.ratio:.3g}"
    return "a lower bound above the truth: " + ", ".join(f"{r:.3g}" for r in figure.rounds)


def recorded_results(recorded: dict) -> list[CaseResult]:
    """The cases of a ``--json`` file, as ``CaseResult``s."""
    return [CaseResult(r["id"], r["library"], [Figure(**f) for f in r["figures"]]) for r in recorded["results"]]


def markdown(results: list[CaseResult], seconds: float, load: float | None = None) -> str:
    """The fidelity section of docs/performance.md."""
    out = [
        "## Fidelity over the corpus",
        "",
        f"Measured by `benchmarks/bench_fidelity.py` on {len(results)} cases of the shared corpus of user",
        "code (`tests/corpus/`: JAX's documentation and issue tracker, Flax, Equinox, Optax, Diffrax,",
        "chex / Orbax, NumPyro, BlackJAX)" + (f", in {seconds:.0f} s" if seconds else "") + ". The truth comes from",
        "outside jaxmagic: hand `timeit` loops",
        "with `block_until_ready` over the user's own call, XLA's `memory_analysis()`, JAX's compile",
        f"log. Timing is measured in {ROUNDS} alternating rounds (the hand loops, then `%jitcompare`) and",
        "judged by the median of the rounds' ratios. `worst` is the ratio furthest from 1 (jaxmagic / truth).",
        "",
    ]
    if load is not None:  # timing on a busy machine measures the machine: say how busy it was
        out[-1:] = [
            f"The machine's load average was {load:.1f} on {os.cpu_count()} cores while it ran: timing",
            "figures from a loaded machine are noise as much as measurement.",
            "",
        ]
    for measure, title in MEASURES.items():
        table = per_library(results, measure)
        goal = {
            "eager": "within ±10%",
            "jit": "within ±5%",
            "memory": "within ±5% of XLA's peak; on the CPU, never above what XLA reserves",
            "count": "equal",
        }[measure]
        out += [
            f"**{title}** (goal: {goal})",
            "",
            "| library | cases | within | worst |",
            "| --- | ---: | ---: | ---: |",
        ]
        for library, row in sorted(table.items()):
            worst = "–" if row["worst"] is None else f"{row['worst']:.3g}"
            out.append(f"| {library} | {row['cases']} | {row['within']} | {worst} |")
        out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------- the benchmark suite's protocol
_last: dict = {}


def run(quick: bool = False) -> list[dict]:
    """One row per measure: the share of compared figures within tolerance over the sample."""
    count = 1 if quick else int(os.environ.get("JAXMAGIC_FIDELITY_CASES", DEFAULT_CASES))
    started = time.perf_counter()
    results = measure_all(select(count), budget=1.0 if quick else BUDGET_S)
    seconds = time.perf_counter() - started
    _last.update(results=results, seconds=seconds, load=os.getloadavg()[0])
    rows = []
    for measure, title in MEASURES.items():
        table = per_library(results, measure)
        compared = sum(row["cases"] for row in table.values())
        within = sum(row["within"] for row in table.values())
        share = within / compared if compared else float("nan")
        rows.append(
            {
                "goal": f"fidelity: {title}, share within tolerance",
                "measured": share,
                "target": "100%",
                "met": compared > 0 and within == compared,
                "detail": f"{within} of {compared} figures over {len(results)} corpus cases",
            }
        )
    return rows


def section(quick: bool = False) -> str:
    """The fidelity section of the page, from the last :func:`run`."""
    if not _last:
        return ""
    return markdown(_last["results"], _last["seconds"], _last["load"])


PAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "performance.md")


def write_section(text: str, page: str = PAGE) -> None:
    """Put the fidelity section into docs/performance.md in place of the one there (or before the
    notes on what the figures mean), as ``benchmarks/run.py`` places it when it writes the page."""
    with open(page, encoding="utf-8") as existing:
        old = existing.read()
    heading = "## Fidelity over the corpus"
    if heading in old:
        before, rest = old.split(heading, 1)
        after = rest[rest.find("\n## ") :] if "\n## " in rest else "\n"
    else:
        marker = "## What the figures mean"
        before, after = (
            (old.split(marker, 1)[0], "\n" + marker + old.split(marker, 1)[1]) if marker in old else (old, "")
        )
    new = before.rstrip() + "\n\n" + text.strip() + "\n" + after
    temporary = page + ".tmp"
    with open(temporary, "w", encoding="utf-8") as out:
        out.write(new)
    os.replace(temporary, page)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=DEFAULT_CASES, help="cases to measure (0: every case)")
    parser.add_argument("--only", default="", help="only cases whose id starts with one of these (comma-separated)")
    parser.add_argument("--tags", default="", help="only cases with one of these tags (comma-separated)")
    parser.add_argument("--measures", default="timing,memory,count", help="timing, memory, count")
    parser.add_argument("--budget", type=float, default=BUDGET_S, help="%%jitcompare's --budget per case")
    parser.add_argument("--json", default="", help="write every figure to this file")
    parser.add_argument("--write-docs", action="store_true", help="write the section into docs/performance.md")
    parser.add_argument(
        "--from-json", default="", help="measure nothing: read the figures of earlier --json runs (comma-separated)"
    )
    parser.add_argument("--part", default="1/1", help="K/N: only the K-th of N equal parts of the cases")
    args = parser.parse_args(argv)
    cases = select(args.cases if not (args.only or args.tags) else 0)
    part, parts = (int(n) for n in args.part.split("/"))
    cases = cases[(part - 1) * len(cases) // parts : part * len(cases) // parts]
    if args.tags:
        cases = [case for case in cases if case.tags & set(args.tags.split(","))]
    if args.only:
        prefixes = tuple(args.only.split(","))
        cases = [case for case in cases if case.id.startswith(prefixes)]
    started = time.perf_counter()
    if args.from_json:
        results, seconds, load = [], 0.0, None
        for path in args.from_json.split(","):
            with open(path, encoding="utf-8") as saved:
                loaded = json.load(saved)
            if isinstance(loaded, list):  # figures written without their duration
                loaded = {"seconds": 0.0, "results": loaded}
            load = loaded.get("load") if load is None else load
            results += recorded_results(loaded)
            seconds += loaded["seconds"]
    else:
        after_each = None
        if args.json:

            def after_each(so_far):
                _write_json(args.json, so_far, time.perf_counter() - started, os.getloadavg()[0])

        results = measure_all(cases, args.budget, tuple(args.measures.split(",")), after_each)
        seconds = time.perf_counter() - started
        load = os.getloadavg()[0]
    print(text_table(results))
    print(failures(results))
    print(f"\n{len(results)} cases in {seconds:.0f} s")
    if args.write_docs:
        write_section(markdown(results, seconds, load))
    if args.json and not args.from_json:
        _write_json(args.json, results, seconds, load)
    return 0


def _write_json(path: str, results: list[CaseResult], seconds: float, load: float | None) -> None:
    temporary = path + ".tmp"
    with open(temporary, "w", encoding="utf-8") as out:
        json.dump({"seconds": seconds, "load": load, "results": [asdict(result) for result in results]}, out, indent=1)
    os.replace(temporary, path)


if __name__ == "__main__":
    sys.exit(main())
