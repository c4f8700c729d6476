"""Several calls' comparisons in one table (a row per call: eager and jit medians, speed-up with
its interval, jit's first call, break-even), then each call's warnings under its name.

>>> from jaxmagic.timing.side_by_side import SideBySide
>>> text(SideBySide([])).splitlines()[0]
'%jitcompare: no calls'
"""

from __future__ import annotations

import math

from jaxmagic.render import comparison as one
from jaxmagic.render import theme
from jaxmagic.render.terminal import paint
from jaxmagic.render.theme import escape
from jaxmagic.words.units import format_seconds

HEADER = ["call", "eager", "jit", "jit vs eager", "95% interval", "jit first call", "break-even"]


def _verdict(report) -> str:
    if report.speedup is None:
        return "–"
    if report.measurable is False:
        return "no measurable difference"
    return f"{one._times(report.speedup)} {'faster' if report.speedup >= 1 else 'slower'}"


def _row(report) -> list[str]:
    eager, jit = report.modes.get("eager"), report.modes.get("jit")
    found = report.speedup_interval
    even = report.break_even_calls
    if report.measurable is False or even is None:
        even_text = "–"
    elif math.isinf(even):
        even_text = "never"
    else:
        even_text = one._calls(even)
    return [
        report.name,
        format_seconds(eager.median) if eager else "–",
        format_seconds(jit.median) if jit else "–",
        _verdict(report),
        f"{one._times(found[0])[:-1]}–{one._times(found[1])}" if found else "–",
        format_seconds(report.compile.first_call_s) if report.compile else "–",
        even_text,
    ]


def _warnings(reports) -> list[str]:
    return [f"{report.name}: {warning}" for report in reports for warning in report.warnings]


def text(side, *, color: bool = False) -> str:
    """The table as aligned terminal text."""
    if not side.comparisons:
        return "%jitcompare: no calls"
    lines = [f"%jitcompare: {len(side.comparisons)} calls, each eager and jit (median per call)", ""]
    lines += one._table(HEADER, [_row(r) for r in side.comparisons])
    warnings = _warnings(side.comparisons)
    if warnings:
        lines += [""] + [paint(f"! {w}", "yellow", color=color) for w in warnings]
    return "\n".join(lines)


def html(side) -> str:
    """The table as self-contained HTML."""
    if not side.comparisons:
        return f'<div class="{theme.ROOT_CLASS} jm-comparison">%jitcompare: no calls</div>'
    head = "".join(f"<th>{escape(h)}</th>" for h in HEADER)
    rows = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in _row(r)) + "</tr>" for r in side.comparisons)
    parts = [
        f'<div class="jm-summary">%jitcompare: {len(side.comparisons)} calls, each eager and jit (median per call)</div>',
        f'<table class="jm-table jm-side-by-side"><tr>{head}</tr>{rows}</table>',
    ]
    warnings = _warnings(side.comparisons)
    if warnings:
        parts.append('<ul class="jm-warn jm-warnings">' + "".join(f"<li>{escape(w)}</li>" for w in warnings) + "</ul>")
    return f'<div class="{theme.ROOT_CLASS} jm-comparison">{theme.style_tag()}{"".join(parts)}</div>'
