"""What a gradient's backward pass keeps (``residuals``) and what each checkpoint policy trades
(``checkpoint_policies``), as text and HTML under ``--memory -t grad``. Pure functions of the report."""

from __future__ import annotations

from jaxmagic.render.terminal import table
from jaxmagic.render.theme import escape
from jaxmagic.words.units import format_bytes, format_count

MAX_ROWS = 12


def _residual_rows(report):
    by_label: dict[str, list] = {}
    for residual in report.residuals or ():
        by_label.setdefault(residual.label, []).append(residual)
    rows = sorted(by_label.items(), key=lambda item: -sum(r.bytes for r in item[1]))
    return [
        (
            label,
            sum(r.bytes for r in kept),
            ", ".join(r.shape for r in kept[:3]) + (" …" if len(kept) > 3 else ""),
            kept[0].source.text if kept[0].source is not None else "",
        )
        for label, kept in rows
    ]


def _headline(report) -> str:
    total = sum(r.bytes for r in report.residuals or ())
    count = len(report.residuals or ())
    return f"the backward pass keeps {format_bytes(total)} from the forward pass in {count} value{'s' * (count != 1)}"


def _policy_rows(report):
    if not report.checkpoint_policies:
        return
    flops = report.cost.get("flops")
    yield "(as written)", format_bytes(report.peak_bytes), format_count(flops) if flops is not None else "–", ""
    for cost in report.checkpoint_policies:
        flops = format_count(cost.flops) if cost.flops is not None else "–"
        yield cost.policy, format_bytes(cost.peak_bytes), flops, cost.code


def text(report) -> str:
    """The residuals by line and the policies' trade-off, as aligned text ('' when not a gradient)."""
    parts = []
    rows = _residual_rows(report)
    if report.residuals is not None:
        parts.append(_headline(report))
        if rows:
            parts.append(
                table(
                    ["bytes", "line", "shapes", "source"],
                    [[format_bytes(b), label, shapes, source] for label, b, shapes, source in rows[:MAX_ROWS]],
                    align="><<<",
                )
            )
        if len(rows) > MAX_ROWS:
            parts.append(f"… {len(rows) - MAX_ROWS} more lines (the report's .residuals holds them all)")
    policies = list(_policy_rows(report))
    if policies:
        parts.append("checkpoint policies, each compiled (peak and FLOPs of the whole gradient):")
        parts.append(table(["policy", "peak", "FLOPs", "write"], [list(p) for p in policies], align="<>><"))
    return "\n".join(parts)


def html(report) -> str:
    """The same as folded HTML tables ('' when not a gradient)."""
    parts = []
    if report.residuals is not None:
        cells = "".join(
            f'<tr><td class="jm-num">{escape(format_bytes(b))}</td><td><b>{escape(label)}</b></td>'
            f"<td><code>{escape(shapes)}</code></td><td><code>{escape(source)}</code></td></tr>"
            for label, b, shapes, source in _residual_rows(report)[:MAX_ROWS]
        )
        parts.append(
            f'<details class="jm-nested"><summary><b>{escape(_headline(report))}</b></summary>'
            f'<table class="jm-table jm-residuals"><tr><th>bytes</th><th>line</th><th>shapes</th><th>source</th></tr>'
            f"{cells}</table></details>"
        )
    policies = list(_policy_rows(report))
    if policies:
        cells = "".join(
            f'<tr><td><code>{escape(p)}</code></td><td class="jm-num">{escape(peak)}</td>'
            f'<td class="jm-num">{escape(flops)}</td><td><code>{escape(code)}</code></td></tr>'
            for p, peak, flops, code in policies
        )
        parts.append(
            '<details class="jm-nested"><summary><b>checkpoint policies</b> · each compiled: peak and FLOPs'
            f'</summary><table class="jm-table jm-policies"><tr><th>policy</th><th>peak</th><th>FLOPs</th>'
            f"<th>write</th></tr>{cells}</table></details>"
        )
    return f'<div class="jm-remat">{"".join(parts)}</div>' if parts else ""
