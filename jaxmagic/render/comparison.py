"""``Comparison`` -> HTML and text. Pure functions of the report.

HTML: the verdict, then one table that answers it (each mode's median per call with an inline SVG
bar and a whisker from best to worst repeat, its speed with the interval, its first call and when
jit has repaid it), warnings, and the rest folded: every statistic of the repeats, the first calls
split into trace / lower / compile / run as stacked bars, memory per compiled mode, notes. No
JavaScript. Text: the same tables, aligned, unfolded.
"""

from __future__ import annotations

import math

from jaxmagic.render import theme
from jaxmagic.render.terminal import paint
from jaxmagic.render.theme import escape
from jaxmagic.words.units import format_bytes, format_seconds, times

BAR_WIDTH = 180  # px, the longest bar in the HTML table
BAR_HEIGHT = 14
TEXT_BAR_WIDTH = 24  # characters
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
        eager, jit = report.modes["eager"], report.modes["jit"]
        per_call = f"{format_seconds(jit.median)} vs {format_seconds(eager.median)} per call"
        sure = _interval_words(report.speedup_interval)
        if report.measurable is False:
            rest = (
                f": no measurable difference between jit and eager ({_times(speedup)}, {sure}; {per_call}), "
                f"so no break-even count"
            )
            return lead, name, rest
        if speedup >= 1:
            head = f"jit is {_times(speedup)} faster than eager"
        else:
            head = f"jit is {_times(1 / speedup)} slower than eager"
        rest = f": {head} ({sure + '; ' if sure else ''}{per_call})"
        first = report.compile
        even = report.break_even_calls
        if first is not None and even is not None:
            if math.isinf(even):
                rest += f"; its first call ({format_seconds(first.first_call_s)}) is never repaid"
            elif even <= 1:
                rest += f"; ahead from the first call ({format_seconds(first.first_call_s)})"
            else:
                rest += f"; its first call ({format_seconds(first.first_call_s)}) is repaid after {_calls(even)}"
        return lead, name, rest
    if not report.modes:
        return lead, name, ": nothing was measured"
    parts = ", ".join(f"{mode} {format_seconds(t.median)}" for mode, t in report.modes.items())
    return lead, name, f": {parts} per call"


def _interval_words(found) -> str:
    """``95% interval 0.97–1.08×`` for a speed-up interval; empty without one."""
    if found is None:
        return ""
    return f"95% interval {_times(found[0])[:-1]}–{_times(found[1])}"


def _runs_text(timing) -> str:
    if timing.source == "first call":
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
        rows.append(
            [
                mode,
                format_seconds(t.median),
                f"{format_seconds(t.mean)} ± {format_seconds(t.stdev) if t.repeat > 1 else '–'}",
                format_seconds(t.best),
                format_seconds(t.worst),
                _runs_text(t),
                _times(speedups.get(mode)),
            ]
        )
    return rows


def _mode_header(report) -> list[str]:
    return ["mode", "median", "mean ± std", "best", "worst", "calls × repeats", f"vs {report.baseline or '–'}"]


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
        if mode == "eager" or not stats:
            continue
        rows.append([mode] + [format_bytes(stats[key]) if key in stats else "–" for key, _ in MEMORY_COLUMNS])
    return rows


def _eager_memory_line(report) -> str:
    stats = report.memory.get("eager")
    if not stats or not stats.get("intermediates"):
        return ""  # one operation, or nothing measured: no intermediate arrays to compare
    compiled = {m: s for m, s in report.memory.items() if m != "eager" and "temporaries" in s}
    line = (
        f"besides its outputs, eager writes out at least {format_bytes(stats['intermediates'])} of intermediate "
        f"arrays, one per operation"
    )
    if "jit" in compiled:
        line += f"; jit needs {format_bytes(compiled['jit']['temporaries'])} of temporaries"
    return line + "."


def _break_even_line(report) -> str:
    even = report.break_even_calls
    first = report.compile
    if even is None or first is None:
        return ""
    eager, jit = report.modes["eager"].median, report.modes["jit"].median
    if report.measurable is False:
        return (
            f"jit and eager cannot be told apart from these repeats ({_interval_words(report.speedup_interval)} "
            f"for the speed-up contains 1), so there is no break-even count: one from the medians would "
            f"be noise. More repeats (-r, --budget) narrow the interval."
        )
    if math.isinf(even):
        return (
            f"jit never pays off here: each jit call ({format_seconds(jit)}) is no faster than an eager one "
            f"({format_seconds(eager)}), so its first call ({format_seconds(first.first_call_s)}) is never repaid."
        )
    if even <= 1:
        return (
            f"jit is ahead from the first call: even with tracing and compiling, its first call "
            f"({format_seconds(first.first_call_s)}) costs no more than an eager call ({format_seconds(eager)})."
        )
    return (
        f"jit pays off after {_calls(even)}: its first call costs {format_seconds(first.first_call_s)} "
        f"(tracing and compiling included), and each later call saves {format_seconds(eager - jit)} over eager."
    )


# ----------------------------------------------------------------------------------------------
# Text


def _table(header: list[str], rows: list[list[str]], extra: list[str] | None = None) -> list[str]:
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]

    def line(cells, tail=""):
        first = cells[0].ljust(widths[0])
        rest = [c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=False)]
        return "  ".join([first] + rest) + (f"  {tail}" if tail else "")

    out = [line(header)]
    for index, row in enumerate(rows):
        out.append(line(row, extra[index] if extra else ""))
    return out


def _text_bar(value: float, largest: float) -> str:
    if largest <= 0:
        return ""
    eighths = round(TEXT_BAR_WIDTH * 8 * value / largest)
    full, part = divmod(max(1, eighths), 8)
    return "█" * full + ("" if not part else " ▏▎▍▌▋▊▉"[part])


def text(report, *, color: bool = False) -> str:
    """The report as terminal text (``color`` makes warnings yellow)."""
    lines = [summary(report)]
    if report.modes:
        largest = max(t.median for t in report.modes.values())
        bars = [_text_bar(t.median, largest) for t in report.modes.values()]
        lines += [""] + _table(_mode_header(report), _mode_rows(report), bars)
    if report.first_calls:
        lines += [""] + _table(FIRST_CALL_HEADER, _first_call_rows(report))
    even = _break_even_line(report)
    if even:
        lines += ["", even]
    memory = _memory_rows(report)
    if memory:
        lines += ["", *_table(["memory per device"] + [label for _, label in MEMORY_COLUMNS], memory)]
    eager_memory = _eager_memory_line(report)
    if eager_memory:
        lines += ([""] if not memory else []) + [eager_memory]
    if report.warnings:
        lines += [""] + [paint(f"! {w}", "yellow", color=color) for w in report.warnings]
    notes = _notes(report)
    if notes:
        lines += [""] + [paint(f"· {n}", "faint", color=color) for n in notes]
    return "\n".join(lines)


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
# HTML


def html(report) -> str:
    """The report as self-contained HTML: the verdict, one table that answers (each mode's time per
    call with its bar, its speed against the baseline with the interval, its first call and when
    that is repaid), warnings; then, folded, the spread of the repeats, the first calls by phase,
    memory and how it was timed. No JavaScript."""
    lead, name, rest = summary_parts(report)
    shown = f'{escape(lead)}<b class="jm-name">{escape(name)}</b>{escape(rest)}'
    parts = [f'<div class="jm-summary">{shown}</div>']
    if report.modes:
        parts.append(_answer_table_html(report))
    if report.warnings:
        items = "".join(f"<li>{escape(w)}</li>" for w in report.warnings)
        parts.append(f'<ul class="jm-warn jm-warnings">{items}</ul>')
    parts.append(_details_html(report))
    return f'<div class="{theme.ROOT_CLASS} jm-comparison">{theme.style_tag()}{"".join(parts)}</div>'


ANSWER_HEADER = ("mode", "per call", "", "first call", "repaid after")


def _answer_table_html(report) -> str:
    """One row per mode: the median per call with its bar (whisker: best to worst repeat), the speed
    against the baseline with its 95% interval, the first call, and after how many calls jit has
    repaid it."""
    largest = max(t.worst for t in report.modes.values())
    baseline = report.baseline or "–"
    header = "".join(f"<th>{escape(h)}</th>" for h in ANSWER_HEADER[:3])
    header += f"<th>vs {escape(baseline)}</th>" + "".join(f"<th>{escape(h)}</th>" for h in ANSWER_HEADER[3:])
    rows = []
    for mode, timing in report.modes.items():
        first = report.first_calls.get(mode)
        first_cell = escape(format_seconds(first.first_call_s)) if first is not None else "–"
        title = escape(", ".join(f"{n} {format_seconds(getattr(first, a))}" for n, a in SEGMENTS)) if first else ""
        rows.append(
            f'<tr data-mode="{escape(mode)}"><td>{escape(mode)}</td><td>{escape(format_seconds(timing.median))}</td>'
            f"<td>{_bar_svg(timing, largest)}</td><td>{escape(_speed_cell(report, mode))}</td>"
            f'<td title="{title}">{first_cell}</td><td>{escape(_repaid_cell(report, mode))}</td></tr>'
        )
    return f'<table class="jm-table jm-modes"><tr>{header}</tr>{"".join(rows)}</table>'


def _speed_cell(report, mode: str) -> str:
    """``1.91× (1.36–2.57×)`` for jit against eager; the speed alone for other modes."""
    speed = _times(report.speedups.get(mode))
    if mode == "jit" and report.speedup_interval is not None:
        low, high = report.speedup_interval
        return f"{speed} ({_times(low)[:-1]}–{_times(high)})"
    return speed


def _repaid_cell(report, mode: str) -> str:
    if mode != "jit" or report.break_even_calls is None or report.measurable is False:
        return "–"
    even = report.break_even_calls
    return "at once" if even <= 1 else _calls(even)


def _details_html(report) -> str:
    """What stands behind the answer, folded: every statistic of the repeats, the first calls by
    phase, the break-even reasoning, memory, and how the modes were set up and timed."""
    inside = []
    if report.modes:
        inside.append(_stats_html(report))
    if report.first_calls:
        inside.append(_first_calls_html(report))
    even = _break_even_line(report)
    if even:
        inside.append(f'<div class="jm-break-even">{escape(even)}</div>')
    memory = _memory_rows(report)
    if memory:
        header = "".join(f"<th>{escape(label)}</th>" for _, label in MEMORY_COLUMNS)
        body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in memory)
        inside.append(f'<table class="jm-table jm-memory"><tr><th>memory per device</th>{header}</tr>{body}</table>')
    eager_memory = _eager_memory_line(report)
    if eager_memory:
        inside.append(f'<div class="jm-muted">{escape(eager_memory)}</div>')
    notes = "".join(f"<li>{escape(n)}</li>" for n in _notes(report))
    inside.append(f'<ul class="jm-muted jm-notes">{notes}</ul>')
    topics = ["spread of the repeats"] + (["first calls by phase"] if report.first_calls else [])
    topics += (["memory"] if memory or eager_memory else []) + ["how it was timed"]
    label = escape("Details: " + ", ".join(topics))
    return f'<details class="jm-details"><summary class="jm-muted">{label}</summary>{"".join(inside)}</details>'


def _stats_html(report) -> str:
    header = "".join(f"<th>{escape(h)}</th>" for h in _mode_header(report))
    body = "".join(
        f'<tr data-mode="{escape(mode)}">' + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>"
        for mode, cells in zip(report.modes, _mode_rows(report), strict=False)
    )
    return f'<table class="jm-table jm-stats"><tr>{header}</tr>{body}</table>'


def _scale(value: float, largest: float) -> float:
    return 0.0 if largest <= 0 else max(1.0, BAR_WIDTH * value / largest)


def _bar_svg(timing, largest: float) -> str:
    width = _scale(timing.median, largest)
    best, worst = _scale(timing.best, largest), _scale(timing.worst, largest)
    middle = BAR_HEIGHT / 2
    label = escape(
        f"median {format_seconds(timing.median)}; best {format_seconds(timing.best)}, "
        f"worst {format_seconds(timing.worst)}"
    )
    return (
        f'<svg class="jm-bars" width="{BAR_WIDTH + 4}" height="{BAR_HEIGHT}" role="img" aria-label="{label}">'
        f"<title>{label}</title>"
        f'<rect class="jm-bar jm-bar-{escape(timing.mode)}" x="0" y="2" width="{width:.1f}" height="{BAR_HEIGHT - 4}"/>'
        f'<line class="jm-whisker" x1="{best:.1f}" x2="{worst:.1f}" y1="{middle}" y2="{middle}"/>'
        f'<line class="jm-whisker" x1="{best:.1f}" x2="{best:.1f}" y1="{middle - 3}" y2="{middle + 3}"/>'
        f'<line class="jm-whisker" x1="{worst:.1f}" x2="{worst:.1f}" y1="{middle - 3}" y2="{middle + 3}"/>'
        "</svg>"
    )


def _stacked_svg(cost, largest: float) -> str:
    x = 0.0
    pieces = []
    for name, attribute in SEGMENTS:
        seconds = getattr(cost, attribute)
        width = 0.0 if largest <= 0 else BAR_WIDTH * seconds / largest
        if width <= 0:
            continue
        label = escape(f"{name} {format_seconds(seconds)}")
        pieces.append(
            f'<rect class="jm-bar jm-bar-{name}" x="{x:.1f}" y="2" width="{width:.1f}" '
            f'height="{BAR_HEIGHT - 4}"><title>{label}</title></rect>'
        )
        x += width
    total = escape(f"first call {format_seconds(cost.first_call_s)}")
    return (
        f'<svg class="jm-bars" width="{BAR_WIDTH + 4}" height="{BAR_HEIGHT}" role="img" aria-label="{total}">'
        f"<title>{total}</title>{''.join(pieces)}</svg>"
    )


def _first_calls_html(report) -> str:
    largest = max(cost.first_call_s for cost in report.first_calls.values())
    legend = " ".join(
        f'<span class="jm-key"><svg width="10" height="10"><rect class="jm-bar jm-bar-{name}" width="10" height="10"/>'
        f"</svg> {name}</span>"
        for name, _ in SEGMENTS
    )
    header = "".join(f"<th>{escape(h)}</th>" for h in FIRST_CALL_HEADER) + f"<th>{legend}</th>"
    rows = []
    for (mode, cost), cells in zip(report.first_calls.items(), _first_call_rows(report), strict=False):
        tds = "".join(f"<td>{escape(c)}</td>" for c in cells)
        rows.append(f'<tr data-mode="{escape(mode)}">{tds}<td>{_stacked_svg(cost, largest)}</td></tr>')
    return f'<table class="jm-table jm-first-calls"><tr>{header}</tr>{"".join(rows)}</table>'


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
