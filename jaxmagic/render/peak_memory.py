"""``--memory`` as text and HTML: the peak and the source lines holding it, largest first, with
the sum reconciled with XLA's own totals. The answer line first, the table folded, rows capped.
Pure functions of the report's ``peak``."""

from __future__ import annotations

from jaxmagic.render.terminal import table
from jaxmagic.render.theme import escape
from jaxmagic.render.words import words_html
from jaxmagic.words.runs import peak_sentence, reconcile_sentence
from jaxmagic.words.units import format_bytes

MAX_ROWS = 12
MAX_SHAPES = 3


def _rows(peak):
    total = peak.peak_bytes or 1
    for share in peak.by_line[:MAX_ROWS]:
        shapes = share.shapes[:MAX_SHAPES]
        more = f" … +{len(share.shapes) - MAX_SHAPES}" if len(share.shapes) > MAX_SHAPES else ""
        source = share.source.text if share.source is not None else ""
        yield share, f"{share.bytes / total:.1%}", ", ".join(shapes) + more, ", ".join(share.kinds), source


def _more(peak) -> str:
    hidden = len(peak.by_line) - MAX_ROWS
    return f"… {hidden} more lines (the report's .live_at_peak holds every buffer)" if hidden > 0 else ""


def text(peak) -> str:
    """The peak as aligned plain text."""
    lines = [str(peak_sentence(peak))]
    if not peak.available:
        return lines[0]
    lines.append(
        table(
            ["share", "bytes", "line", "kind", "shapes", "source"],
            [
                [pct, format_bytes(share.bytes), share.label, kinds, shapes, source]
                for share, pct, shapes, kinds, source in _rows(peak)
            ],
            align=">><<<<",
        )
    )
    if _more(peak):
        lines.append(_more(peak))
    lines.append(str(reconcile_sentence(peak)))
    return "\n".join(lines)


def html(peak) -> str:
    """The peak as HTML: the answer line, then the table by source line, folded."""
    head = f'<div class="jm-summary">{words_html(peak_sentence(peak))}</div>'
    if not peak.available:
        return f'<div class="jm-peak">{head}</div>'
    rows = []
    for share, pct, shapes, kinds, source in _rows(peak):
        bar = f'<span class="jm-line-bar" style="width:{max(share.bytes / (peak.peak_bytes or 1) * 100, 0.5):.1f}%"></span>'
        rows.append(
            f'<tr><td class="jm-num">{pct}</td><td class="jm-num">{escape(format_bytes(share.bytes))}</td>'
            f'<td class="jm-barcell">{bar}</td><td><b>{escape(share.label)}</b></td><td>{escape(kinds)}</td>'
            f"<td><code>{escape(shapes)}</code></td><td>{f'<code>{escape(source)}</code>' if source else ''}</td></tr>"
        )
    more = f'<div class="jm-more">{escape(_more(peak))}</div>' if _more(peak) else ""
    return (
        f'<div class="jm-peak">{head}<details class="jm-nested"><summary><b>live at the peak</b> · '
        f"{len(peak.live_at_peak)} buffers on {len(peak.by_line)} lines</summary>"
        f'<table class="jm-table jm-peak-lines"><tr><th>share</th><th>bytes</th><th></th><th>line</th><th>kind</th>'
        f"<th>shapes</th><th>source</th></tr>{''.join(rows)}</table>{more}"
        f'<div class="jm-muted">{words_html(reconcile_sentence(peak))}</div></details></div>'
    )
