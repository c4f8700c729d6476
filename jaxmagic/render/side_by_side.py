"""Several calls' comparisons in one table (a row per call: eager and jit medians, speed-up with
its interval, jit's first call, break-even), then each call's warnings under its name.

>>> from jaxmagic.timing.side_by_side import SideBySide
>>> text(SideBySide([])).splitlines()[0]
'%jitcompare: no calls'
"""

from __future__ import annotations

import math

from jaxmagic.render import blocks_html, blocks_text, theme
from jaxmagic.render import comparison as one
from jaxmagic.render.blocks import Block, Cell, Grid, Items, Sections, Sentence
from jaxmagic.words.units import format_seconds

HEADER = ("call", "eager", "jit", "jit vs eager", "95% interval", "jit first call", "break-even")


def _verdict(report) -> str:
    if report.speedup is None:
        return "–"
    if report.measurable is False:
        return "no measurable difference"
    at_least = "≥ " if report.modes["eager"].lower_bound else ""
    return f"{at_least}{one._times(report.speedup)} {'faster' if report.speedup >= 1 else 'slower'}"


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
        one.per_call(eager) if eager else "not run",
        format_seconds(jit.median) if jit else "–",
        _verdict(report),
        f"{one._times(found[0])[:-1]}–{one._times(found[1])}" if found else "–",
        format_seconds(report.compile.first_call_s) if report.compile else "–",
        even_text,
    ]


def _warnings(reports) -> list[str]:
    return [f"{report.name}: {warning}" for report in reports for warning in report.warnings]


def text(side, *, color: bool = False, shown: tuple[Block, ...] | None = None) -> str:
    """The table as aligned terminal text; ``shown``: its blocks, when already made."""
    return blocks_text.text(shown if shown is not None else blocks(side), color=color)


def html(side, *, shown: tuple[Block, ...] | None = None) -> str:
    """The table as self-contained HTML; ``shown``: its blocks, when already made."""
    body = blocks_html.html(shown if shown is not None else blocks(side))
    return f'<div class="{theme.ROOT_CLASS} jm-comparison">{theme.style_tag()}{body}</div>'


def blocks(side) -> tuple[Block, ...]:
    """The headline, the table (a row per call), then each call's warnings under its name."""
    if not side.comparisons:
        return (Sentence("%jitcompare: no calls"),)
    head = Sentence(f"%jitcompare: {len(side.comparisons)} calls, each eager and jit (median per call)")
    rows = tuple(tuple(Cell(c) for c in _row(r)) for r in side.comparisons)
    shown: list[Block] = [head, Grid(tuple(HEADER), rows, "jm-side-by-side", one.right_aligned(HEADER))]
    warnings = _warnings(side.comparisons)
    if warnings:
        shown.append(Items(tuple(warnings), "jm-warn jm-warnings", lead="! ", style="yellow"))
    return (Sections(tuple(shown)),)
