"""``Comparison`` as blocks, walked to HTML and to text. Pure functions of the report.

HTML: the verdict, then one table that answers it (each mode's median per call with an inline SVG
bar and a whisker from best to worst repeat, its speed with the interval, its first call and when
jit has repaid it), warnings, and the rest folded: every statistic of the repeats, the first calls
split into trace / lower / compile / run as stacked bars, memory per compiled mode, notes. No
JavaScript. Text: the same, aligned and unfolded, with the fuller table of the repeats (bars in
block characters) in place of the answer table.
"""

from __future__ import annotations

import math

from jaxmagic.render import blocks_html, blocks_text, theme
from jaxmagic.render.blocks import Bar, Block, Cell, Fold, Grid, Headline, Items, Only, Sections, Sentence, Stacked
from jaxmagic.words.units import format_bytes, format_seconds, times

BAR_WIDTH = blocks_html.BAR_WIDTH  # px, the longest bar in the HTML table
LOOP_DIFFERS = 1.25  # the headline gives the pipelined loop's speed-up where it differs this much
SEGMENTS = (("trace", "trace_s"), ("lower", "lower_s"), ("compile", "compile_s"), ("run", "run_s"))
MEMORY_COLUMNS = (
    ("arguments", "arguments"),
    ("outputs", "outputs"),
    ("temporaries", "temporaries"),
    ("aliased", "aliased (donated)"),
    ("code", "generated code"),
)


# ----------------------------------------------------------------------------------------------
# Words shared by both views


def _times(value: float | None) -> str:
    if value is None:
        return "–"
    if math.isinf(value):
        return "∞"
    return f"{value:.3g}×" if value < 100 else f"{value:,.0f}×"


def _calls(value: float | None) -> str:
    if value is None:
        return "–"
    if math.isinf(value):
        return "never"
    return f"{int(value):,} call{'s' * (value != 1)}"


def summary(report) -> str:
    """One line: the headline of the comparison."""
    return "".join(summary_parts(report))


def summary_parts(report) -> tuple[str, str, str]:
    """The headline as (what comes before the call's name, the name, the rest), so that the HTML
    view sets the name in bold without searching the sentence for it."""
    name = report.name
    lead = "interrupted: " if report.interrupted else ""
    speedup = report.speedup
    if speedup is not None:
        return lead, name, _speedup_words(report, speedup)
    if not report.modes:
        return lead, name, ": nothing was measured"
    parts = ", ".join(f"{mode} {per_call(t)}" for mode, t in report.modes.items())
    missing = [mode for mode in report.requested if mode not in report.modes]
    rest = f": {parts} per call"
    if missing and not report.interrupted:
        rest += f"; {' and '.join(missing)} not measured (the budget: see below)"
    return lead, name, rest


def _speedup_words(report, speedup: float) -> str:
    """``: jit is 5.4× faster than eager (…); its first call … is repaid after 29 calls``: calls
    waited for, as a hand loop with ``block_until_ready`` measures them; a pipelined loop's speed-up
    after it where it differs."""
    eager, jit = report.modes["eager"], report.modes["jit"]
    figures = f"{format_seconds(jit.median)} vs {per_call(eager)} per call, each waited for"
    sure = _interval_words(report.speedup_interval)
    if report.measurable is False:
        return (
            f": no measurable difference between jit and eager ({_times(speedup)}, {sure}; {figures}), "
            f"so no break-even count"
        )
    at_least = "at least " if eager.lower_bound else ""
    if speedup >= 1:
        head = f"jit is {at_least}{_times(speedup)} faster than eager"
    else:
        head = f"jit is {_times(1 / speedup)} slower than eager"
    rest = f": {head} ({sure + '; ' if sure else ''}{figures})"
    loop = report.loop_speedup
    if loop is not None and abs(math.log(max(loop, 1e-12) / speedup)) > math.log(LOOP_DIFFERS):
        rest += f"; {_times(loop)} in a pipelined loop"
    first = report.compile
    even = report.break_even_calls
    if first is not None and even is not None:
        at_most = "at most " if eager.lower_bound else ""
        if math.isinf(even):
            rest += f"; its first call ({format_seconds(first.first_call_s)}) is never repaid"
        elif even <= 1:
            rest += f"; ahead from the first call ({format_seconds(first.first_call_s)})"
        else:
            rest += f"; its first call ({format_seconds(first.first_call_s)}) is repaid after {at_most}{_calls(even)}"
    return rest


def per_call(timing) -> str:
    """A mode's median per call; ``≥ 3.1 s`` where it is a lower bound (a call stopped)."""
    return ("≥ " if timing.lower_bound else "") + format_seconds(timing.median)


def _interval_words(found) -> str:
    """``95% interval 0.97–1.08×`` for a speed-up interval; empty without one."""
    if found is None:
        return ""
    return f"95% interval {_times(found[0])[:-1]}–{_times(found[1])}"


def _runs_text(timing) -> str:
    if timing.source == "stopped":
        return "1, stopped"
    if timing.source in ("first call", "first call, compiled"):
        return "first call only"
    if timing.source == "one call":
        return "1 (after the first call)"
    if timing.source == "warm-up":
        return f"{timing.loops:,} (warm-up only)"
    return f"{timing.loops:,} × {timing.repeat}"


def _mode_rows(report) -> list[list[str]]:
    speedups = report.speedups
    rows = []
    for mode, t in report.modes.items():
        spread = t.repeat > 1
        looped = report.pipelined.get(mode)
        rows.append(
            [
                mode,
                per_call(t),
                f"{format_seconds(t.mean)} ± {format_seconds(t.stdev)}" if spread else "–",
                format_seconds(t.best) if spread else "–",
                format_seconds(t.worst) if spread else "–",
                format_seconds(looped.median) if looped else "–",
                _runs_text(t),
                _speed_text(report, mode, speedups.get(mode)),
            ]
        )
    return rows


def _speed_text(report, mode: str, speed: float | None) -> str:
    """A mode's speed against the baseline: ``≥`` where the baseline is a lower bound (a stopped
    call), ``≤`` where this mode is; ``–`` where both are."""
    base = report.modes.get(report.baseline) if report.baseline else None
    lower_base = base is not None and base.lower_bound and mode != report.baseline
    lower_self = report.modes[mode].lower_bound and mode != report.baseline
    if lower_base and lower_self:
        return "–"
    return ("≥ " if lower_base else "≤ " if lower_self else "") + _times(speed)


def _mode_header(report) -> list[str]:
    return [
        "mode",
        "median",
        "mean ± std",
        "best",
        "worst",
        "in a loop",
        "calls × repeats",
        f"vs {report.baseline or '–'}",
    ]


def _first_call_rows(report) -> list[list[str]]:
    rows = []
    for mode, cost in report.first_calls.items():
        cells = [mode, format_seconds(cost.first_call_s)]
        cells += [format_seconds(getattr(cost, attribute)) for _, attribute in SEGMENTS]
        cells.append(f"{cost.compilations:,}")
        rows.append(cells)
    return rows


FIRST_CALL_HEADER = ["first call", "total", "trace", "lower", "compile", "run", "XLA compilations"]


def _memory_rows(report) -> list[list[str]]:
    rows = []
    for mode, stats in report.memory.items():
        if not stats or "intermediates" in stats:
            continue
        rows.append([mode] + [format_bytes(stats[key]) if key in stats else "–" for key, _ in MEMORY_COLUMNS])
    return rows


def _eager_memory_line(report) -> str:
    """What the uncompiled modes write out besides their outputs, against jit's temporaries."""
    written = {m: s["intermediates"] for m, s in report.memory.items() if s and s.get("intermediates")}
    if not written:
        return ""  # one operation, or nothing measured: no intermediate arrays to compare
    parts = [
        f"{mode} writes out at least {format_bytes(size)} of intermediate arrays"
        + (
            ", one per operation"
            if mode == "op-by-op"
            else ", one per operation it dispatches (inner jits keep theirs)"
        )
        for mode, size in written.items()
    ]
    line = "besides its outputs, " + "; ".join(parts)
    compiled = report.memory.get("jit", {})
    if "temporaries" in compiled:
        line += f"; jit needs {format_bytes(compiled['temporaries'])} of temporaries"
    return line + "."


def _break_even_line(report) -> str:
    even = report.break_even_calls
    first = report.compile
    if even is None or first is None:
        return ""
    eager_timing = report.modes["eager"]
    eager, jit = eager_timing.median, report.modes["jit"].median
    if report.measurable is False:
        return (
            f"jit and eager cannot be told apart from these repeats ({_interval_words(report.speedup_interval)} "
            f"for the speed-up contains 1), so there is no break-even count: one from the medians would "
            f"be noise. More repeats (-r, --budget) narrow the interval."
        )
    basis = " Counted on calls each waited for, as a hand loop with block_until_ready times them" + _loop_break_even(
        report
    )
    if math.isinf(even):
        return (
            f"jit never pays off here: each jit call ({format_seconds(jit)}) is no faster than an eager one "
            f"({format_seconds(eager)}), so its first call ({format_seconds(first.first_call_s)}) is never repaid."
            + basis
        )
    if even <= 1:
        return (
            f"jit is ahead from the first call: even with tracing and compiling, its first call "
            f"({format_seconds(first.first_call_s)}) costs no more than an eager call ({per_call(eager_timing)})."
            + basis
        )
    at_most = "at most " if eager_timing.lower_bound else ""
    saves = "at least " if eager_timing.lower_bound else ""
    return (
        f"jit pays off after {at_most}{_calls(even)}: its first call costs {format_seconds(first.first_call_s)} "
        f"(tracing and compiling included), and each later call saves {saves}{format_seconds(eager - jit)} over eager."
        + basis
    )


def _loop_break_even(report) -> str:
    """``; in a pipelined loop …`` where both modes were timed in one, ``.`` otherwise."""
    loop, even = report.loop_speedup, report.loop_break_even_calls
    if loop is None or even is None:
        return "."
    eager, jit = report.pipelined["eager"].median, report.pipelined["jit"].median
    repaid = "never repaid" if math.isinf(even) else "ahead at once" if even <= 1 else f"repaid after {_calls(even)}"
    return (
        f". In a pipelined loop (each call dispatched while the device works on the one before, as a "
        f"training loop runs) a jit call takes {format_seconds(jit)} and an eager one {format_seconds(eager)}: "
        f"{_times(loop)}, {repaid}."
    )


def _calls_note(report) -> list[str]:
    """How many times the user's code ran: eager runs the Python function on every call."""
    calls = getattr(report, "calls", {})
    if not calls:
        return []
    counts = ", ".join(f"{mode} {count:,}" for mode, count in calls.items())
    line = f"calls made in all (first, warm-up and timed): {counts}"
    if "eager" in calls:
        line += f"; your Python function ran {times(calls['eager'])} in eager mode"
        if any(mode != "eager" for mode in calls):
            line += ", and in the compiled modes only while being traced"
    return [line + "."]


def _notes(report) -> list[str]:
    setups = [f"{mode}: {setup}" for mode, setup in report.setups.items() if setup]
    setups += _calls_note(report)
    budget = f"took {format_seconds(report.elapsed)} of a {format_seconds(report.budget)} budget on {report.devices}"
    return setups + list(report.notes) + [budget]


# ----------------------------------------------------------------------------------------------
# The report, once, as blocks; then as text and as HTML


def text(report, *, color: bool = False, shown: tuple[Block, ...] | None = None) -> str:
    """The report as terminal text (``color`` makes warnings yellow); ``shown``: its blocks, when already made."""
    return blocks_text.text(shown if shown is not None else blocks(report), color=color)


def html(report, *, shown: tuple[Block, ...] | None = None) -> str:
    """The report as self-contained HTML: the verdict, one table that answers (each mode's time per
    call with its bar, its speed against the baseline with the interval, its first call and when
    that is repaid), warnings; then, folded, the spread of the repeats, the first calls by phase,
    memory and how it was timed. No JavaScript. ``shown``: its blocks, when already made."""
    body = blocks_html.html(shown if shown is not None else blocks(report))
    return f'<div class="{theme.ROOT_CLASS} jm-comparison">{theme.style_tag()}{body}</div>'


def blocks(report) -> tuple[Block, ...]:
    """The verdict, then the table that answers it (a notebook's answer table; the terminal's fuller
    table of the repeats, with bars), warnings, and what stands behind the answer (folded in a
    notebook, in place in text): the repeats' spread, the first calls by phase, the break-even
    reasoning, memory, and how the modes were set up and timed."""
    shown: list[Block] = [Headline(*summary_parts(report))]
    if report.modes:
        shown.append(Only("html", (_answer_table(report),)))
        shown.append(Only("text", (_stats_table(report, with_bars=True),)))
    if report.warnings:
        shown.append(Items(tuple(report.warnings), "jm-warn jm-warnings", lead="! ", style="yellow"))
    shown.append(_details(report))
    return (Sections(tuple(shown)),)


ANSWER_HEADER = ("mode", "per call, waited for", "", "in a loop", "first call", "repaid after")


def _answer_table(report) -> Grid:
    """One row per mode: the median per call waited for with its bar (whisker: best to worst
    repeat), the median per call in a pipelined loop, the speed against the baseline with its 95%
    interval, the first call, and after how many calls jit has repaid it. A mode asked for and not
    measured has a row that says so."""
    largest = max(t.worst for t in report.modes.values())
    header = (*ANSWER_HEADER[:4], f"vs {report.baseline or '–'}", *ANSWER_HEADER[4:])
    rows = []
    for mode, timing in report.modes.items():
        first = report.first_calls.get(mode)
        phases = ", ".join(f"{n} {format_seconds(getattr(first, a))}" for n, a in SEGMENTS) if first else ""
        label = (
            f"median {format_seconds(timing.median)}; best {format_seconds(timing.best)}, "
            f"worst {format_seconds(timing.worst)}"
        )
        if timing.lower_bound:
            how = "its one call was stopped" if timing.source == "stopped" else "its first call, less compiling"
            label = f"at least {format_seconds(timing.median)}: {how}"
        looped = report.pipelined.get(mode)
        rows.append(
            (
                Cell(mode),
                Cell(per_call(timing)),
                Bar(timing.median, largest, timing.best, timing.worst, label, f"jm-bar-{timing.mode}"),
                Cell(format_seconds(looped.median) if looped else "–"),
                Cell(_speed_cell(report, mode)),
                Cell(format_seconds(first.first_call_s) if first is not None else "–", title=phases),
                Cell(_repaid_cell(report, mode)),
            )
        )
    missing = [m for m in report.requested if m not in report.modes and not report.interrupted]
    for mode in missing:
        rows.append((Cell(mode), Cell("not run"), Cell(""), Cell("–"), Cell("–"), Cell("–"), Cell("–")))
    keys = (*report.modes, *missing)
    return Grid(header, tuple(rows), "jm-modes", key_name="mode", keys=keys)


def _stats_table(report, *, with_bars: bool) -> Grid:
    """Every statistic of the repeats, a row per mode; ``with_bars``: each median as a bar after it."""
    largest = max(t.median for t in report.modes.values())
    rows = tuple(
        tuple(Cell(c) for c in cells) + ((Bar(t.median, largest, t.best, t.worst, ""),) if with_bars else ())
        for t, cells in zip(report.modes.values(), _mode_rows(report), strict=True)
    )
    header = tuple(_mode_header(report))
    return Grid(header, rows, "jm-stats", right_aligned(header), "mode", tuple(report.modes))


def right_aligned(header) -> str:
    """Text alignment for a table of figures: the first column left, the figures right (a column past the header, left)."""
    return "<" + ">" * (len(header) - 1)


def _first_calls_table(report) -> Grid:
    """The first call of each mode by phase, its parts stacked into one bar (a notebook only)."""
    largest = max(cost.first_call_s for cost in report.first_calls.values())
    rows = []
    for cost, cells in zip(report.first_calls.values(), _first_call_rows(report), strict=True):
        parts = tuple((name, getattr(cost, a), f"{name} {format_seconds(getattr(cost, a))}") for name, a in SEGMENTS)
        stacked = Stacked(parts, largest, f"first call {format_seconds(cost.first_call_s)}")
        rows.append((*(Cell(c) for c in cells), stacked))
    names = tuple(name for name, _ in SEGMENTS)
    keys = tuple(report.first_calls)
    header = tuple(FIRST_CALL_HEADER)
    return Grid(header, tuple(rows), "jm-first-calls", right_aligned(header), "mode", keys, names)


def _speed_cell(report, mode: str) -> str:
    """``1.91× (1.36–2.57×)`` for jit against eager; the speed alone for other modes."""
    speed = _speed_text(report, mode, report.speedups.get(mode))
    if mode == "jit" and report.speedup_interval is not None:
        low, high = report.speedup_interval
        return f"{speed} ({_times(low)[:-1]}–{_times(high)})"
    return speed


def _repaid_cell(report, mode: str) -> str:
    if mode != "jit" or report.break_even_calls is None or report.measurable is False:
        return "–"
    even = report.break_even_calls
    at_most = "≤ " if report.modes["eager"].lower_bound else ""
    return "at once" if even <= 1 else at_most + _calls(even)


def _details(report) -> Fold:
    """What stands behind the answer: folded in a notebook under the topics it covers."""
    inside: list[Block] = []
    if report.modes:
        inside.append(Only("html", (_stats_table(report, with_bars=False),)))
    if report.first_calls:
        inside.append(_first_calls_table(report))
    even = _break_even_line(report)
    if even:
        inside.append(Sentence(even, "jm-break-even"))
    memory = _memory_rows(report)
    if memory:
        header = ("memory per device", *(label for _, label in MEMORY_COLUMNS))
        inside.append(
            Grid(header, tuple(tuple(Cell(c) for c in row) for row in memory), "jm-memory", right_aligned(header))
        )
    eager_memory = _eager_memory_line(report)
    if eager_memory:
        inside.append(Sentence(eager_memory, "jm-muted"))
    inside.append(Items(tuple(_notes(report)), "jm-muted jm-notes", lead="· ", style="faint"))
    topics = ["spread of the repeats"] + (["first calls by phase"] if report.first_calls else [])
    topics += (["memory"] if memory or eager_memory else []) + ["how it was timed"]
    return Fold("Details: " + ", ".join(topics), (Sections(tuple(inside)),))


# ----------------------------------------------------------------------------------------------
# Progress


def progress_line(name: str, step) -> str:
    """The one status line shown while a comparison runs (a ``timing.progress.Progress``).

    >>> from jaxmagic.timing.progress import Progress
    >>> progress_line("f(x)", Progress("repeat", "jit", 3, 7, 4.25, 6.0))
    '%jitcompare f(x): jit, repeat 3 of 7 · 4.25 s left of the 6.00 s budget'
    """
    if step.stage == "repeat":
        doing = f"{step.mode}, repeat {step.index} of {step.of}"
    elif step.mode is not None:
        doing = f"{step.mode}, {step.stage}"
    else:
        doing = step.stage
    return (
        f"%jitcompare {name}: {doing} · {format_seconds(step.seconds_left)} left of the "
        f"{format_seconds(step.budget)} budget"
    )
