"""``--memory`` as blocks (walked to text and HTML): the peak and the source lines holding it, largest first, with
what the peak is made of and how it compares with XLA's own account. The answer line first, the table folded, rows capped.
Pure functions of the report's ``peak``."""

from __future__ import annotations

from jaxmagic.render import blocks_html, blocks_text
from jaxmagic.render.blocks import Block, Cell, Fold, Group, Note, Sentence, Table
from jaxmagic.words.runs import peak_parts_sentence, peak_sentence
from jaxmagic.words.units import format_bytes, shorten

MAX_ROWS = 12
MAX_SHAPES = 3
MAX_SHAPE_CHARS = 48  # a tuple's shape lists every element


def _rows(peak):
    total = peak.live_bytes or peak.peak_bytes or 1
    for share in peak.by_line[:MAX_ROWS]:
        shapes = [shorten(shape, MAX_SHAPE_CHARS) for shape in share.shapes[:MAX_SHAPES]]
        more = f" … +{len(share.shapes) - MAX_SHAPES}" if len(share.shapes) > MAX_SHAPES else ""
        source = share.source.text if share.source is not None else ""
        yield share, f"{share.bytes / total:.1%}", ", ".join(shapes) + more, ", ".join(share.kinds), source


def _more(peak) -> str:
    hidden = len(peak.by_line) - MAX_ROWS
    return f"… {hidden} more lines (the report's .live_at_peak holds every buffer)" if hidden > 0 else ""


def blocks(peak) -> tuple[Block, ...]:
    """The answer line, then the table by source line (folded in a notebook), what the peak is
    made of and how it compares with XLA's own account."""
    head = Sentence(peak_sentence(peak))
    if not peak.available:
        return (Group("jm-peak", (head,)),)
    total = peak.live_bytes or peak.peak_bytes or 1
    rows = tuple(
        (
            Cell(pct, "number"),
            Cell(format_bytes(share.bytes), "number"),
            Cell(bar=share.bytes / total),
            Cell(share.label, "strong"),
            Cell(kinds),
            Cell(shapes, "code"),
            Cell(source, "code"),
        )
        for share, pct, shapes, kinds, source in _rows(peak)
    )
    header = ("share", "bytes", "", "line", "kind", "shapes", "source")
    table = Table(header, rows, "jm-peak-lines", align=">>><<<<")
    shown = (table, *([Note(_more(peak))] if _more(peak) else []), Sentence(peak_parts_sentence(peak), "jm-muted"))
    summary = f"{len(peak.live_at_peak)} buffers on {len(peak.by_line)} lines"
    return (Group("jm-peak", (head, Fold(summary, shown, "jm-nested", title="live at the peak"))),)


def text(peak) -> str:
    """The peak as aligned plain text."""
    return blocks_text.text(blocks(peak))


def html(peak) -> str:
    """The peak as HTML: the answer line, then the table by source line, folded."""
    return blocks_html.html(blocks(peak))
