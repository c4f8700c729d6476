"""A program's communication as text and HTML: the answer line first (how much, and the costliest
with its line), then one row per collective, largest first, capped at ``MAX_ROWS`` (the report
keeps them all). Pure functions of a list of ``jaxmagic.compiled.collectives.Collective``.

>>> print(text([]))
No communication: the optimized program has no collective (all-reduce, all-gather, …)
"""

from __future__ import annotations

from jaxmagic.compiled.collectives import communication_seconds
from jaxmagic.render import blocks_html, blocks_text
from jaxmagic.render.blocks import Block, Cell, Fold, Group, Note, Sentence, Table
from jaxmagic.words import collectives as words
from jaxmagic.words import say
from jaxmagic.words.units import format_bytes

MAX_ROWS = 20
FORMULA_NOTE = (
    "bytes per device, ring formulas: all-reduce 2·R·(n−1)/n, all-gather R·(n−1)/n, "
    "reduce-scatter R·(n−1), all-to-all R·(n−1)/n, collective-permute R "
    "(R: the result on one device, n: devices in the group)"
)


def _ranked(collectives):
    return sorted(collectives, key=lambda c: -c.bytes)


def _row(c) -> tuple[Cell, ...]:
    step = " per step" if c.in_loop else ""
    cause = words.cause_words(c)
    return (
        Cell(c.kind, "code"),
        Cell(format_bytes(c.bytes) + step, "number", title=f"{c.formula}, R = {c.result}, n = {c.group_size}"),
        Cell(words.axes_words(c)),
        Cell(say("{} → {}", words.placement_text(c.before), words.placement_text(c.after))),
        Cell(words.where_words(c)),
        Cell(cause if cause is not None else ""),
    )


def _timed(collectives, profile) -> str | None:
    """What the profiler says communication took, when the call was profiled (``--profile``)."""
    if profile is None or not collectives:
        return None
    seconds = communication_seconds(collectives, profile.kernels)
    return words.time_words(seconds, profile.device_seconds)


def blocks(collectives, profile=None) -> tuple[Block, ...]:
    """The answer line (and with a ``profile``, the time they took), then the table, largest
    first (folded in a notebook), and how the bytes are counted."""
    head: list[Block] = [Sentence(words.answer(collectives), "jm-summary jm-collectives-answer")]
    timed = _timed(collectives, profile)
    if timed is not None:
        head.append(Sentence(timed, "jm-muted"))
    if not collectives:
        return (Group("jm-collectives", tuple(head)),)
    ranked = _ranked(collectives)
    rows = tuple(_row(c) for c in ranked[:MAX_ROWS])
    header = ("kind", "bytes", "axes", "before → after", "line", "why")
    shown: list[Block] = [Table(header, rows, "jm-collective-rows", align="<>")]
    if len(ranked) > MAX_ROWS:
        shown.append(Note(f"… {len(ranked) - MAX_ROWS} more (the report's .collectives holds them all)"))
    shown.append(Sentence(FORMULA_NOTE, "jm-muted"))
    fold = Fold(f"{len(ranked)}, largest first", tuple(shown), "jm-nested", title="collectives")
    return (Group("jm-collectives", (*head, fold)),)


def text(collectives, profile=None) -> str:
    """The collectives as plain text: the answer line (and with a ``profile``, the time they
    took), then an aligned table."""
    return blocks_text.text(blocks(collectives, profile))


def html(collectives, profile=None) -> str:
    """The collectives as HTML: the answer line (and the time they took, when profiled), the
    table folded under it."""
    return blocks_html.html(blocks(collectives, profile))
