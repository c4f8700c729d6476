"""A program's communication as text and HTML: the answer line first (how much, and the costliest
with its line), then one row per collective, largest first, capped at ``MAX_ROWS`` (the report
keeps them all). Pure functions of a list of ``jaxmagic.compiled.collectives.Collective``.

>>> print(text([]))
No communication: the optimized program has no collective (all-reduce, all-gather, …)
"""

from __future__ import annotations

from jaxmagic.compiled.collectives import communication_seconds
from jaxmagic.render.terminal import table
from jaxmagic.render.theme import escape
from jaxmagic.render.words import words_html
from jaxmagic.words import collectives as words
from jaxmagic.words.units import format_bytes

MAX_ROWS = 20
FORMULA_NOTE = (
    "bytes per device, ring formulas: all-reduce 2·R·(n−1)/n, all-gather R·(n−1)/n, "
    "reduce-scatter R·(n−1), all-to-all R·(n−1)/n, collective-permute R "
    "(R: the result on one device, n: devices in the group)"
)


def _ranked(collectives):
    return sorted(collectives, key=lambda c: -c.bytes)


def _row(c) -> list[str]:
    step = " per step" if c.in_loop else ""
    cause = words.cause_words(c)
    return [
        c.kind,
        format_bytes(c.bytes) + step,
        str(words.axes_words(c)),
        f"{words.placement_text(c.before)} → {words.placement_text(c.after)}",
        str(words.where_words(c)),
        str(cause) if cause is not None else "",
    ]


def _timed(collectives, profile) -> str | None:
    """What the profiler says communication took, when the call was profiled (``--profile``)."""
    if profile is None or not collectives:
        return None
    seconds = communication_seconds(collectives, profile.kernels)
    return words.time_words(seconds, profile.device_seconds)


def text(collectives, profile=None) -> str:
    """The collectives as plain text: the answer line (and with a ``profile``, the time they
    took), then an aligned table."""
    lines = [str(words.answer(collectives))]
    if not collectives:
        return lines[0]
    timed = _timed(collectives, profile)
    if timed is not None:
        lines.append(str(timed))
    ranked = _ranked(collectives)
    lines.append(
        table(
            ["kind", "bytes", "axes", "before → after", "line", "why"], [_row(c) for c in ranked[:MAX_ROWS]], align="<>"
        )
    )
    if len(ranked) > MAX_ROWS:
        lines.append(f"… {len(ranked) - MAX_ROWS} more (the report's .collectives holds them all)")
    lines.append(FORMULA_NOTE)
    return "\n".join(lines)


def html(collectives, profile=None) -> str:
    """The collectives as HTML: the answer line (and the time they took, when profiled), the
    table folded under it."""
    answer = f'<div class="jm-summary jm-collectives-answer">{words_html(words.answer(collectives))}</div>'
    timed = _timed(collectives, profile)
    if timed is not None:
        answer += f'<div class="jm-muted">{words_html(timed)}</div>'
    if not collectives:
        return f'<div class="jm-collectives">{answer}</div>'
    ranked = _ranked(collectives)
    rows = []
    for c in ranked[:MAX_ROWS]:
        cause = words.cause_words(c)
        step = " per step" if c.in_loop else ""
        rows.append(
            f"<tr><td><code>{escape(c.kind)}</code></td>"
            f'<td class="jm-num" title="{escape(c.formula)}, R = {escape(c.result)}, n = {c.group_size}">'
            f"{escape(format_bytes(c.bytes) + step)}</td>"
            f"<td>{words_html(words.axes_words(c))}</td>"
            f"<td>{words_html(words.placement_text(c.before))} → {words_html(words.placement_text(c.after))}</td>"
            f"<td>{words_html(words.where_words(c))}</td>"
            f"<td>{words_html(cause) if cause is not None else ''}</td></tr>"
        )
    more = (
        f'<div class="jm-more">… {len(ranked) - MAX_ROWS} more (the report\'s .collectives holds them all)</div>'
        if len(ranked) > MAX_ROWS
        else ""
    )
    return (
        f'<div class="jm-collectives">{answer}<details class="jm-nested"><summary><b>collectives</b> · '
        f"{len(ranked)}, largest first</summary>"
        f'<table class="jm-table"><tr><th>kind</th><th>bytes</th><th>axes</th><th>before → after</th>'
        f"<th>line</th><th>why</th></tr>{''.join(rows)}</table>{more}"
        f'<div class="jm-muted">{escape(FORMULA_NOTE)}</div></details></div>'
    )
