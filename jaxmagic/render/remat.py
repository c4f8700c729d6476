"""What a gradient's backward pass keeps (``residuals``) and what each checkpoint policy trades
(``checkpoint_policies``), as blocks walked to text and HTML under ``--memory -t grad``. Pure
functions of the report."""

from __future__ import annotations

from jaxmagic.render import blocks_html, blocks_text
from jaxmagic.render.blocks import Block, Cell, Fold, Group, Note, Table
from jaxmagic.words.runs import policies_sentence, residuals_sentence
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


def _policy_rows(report):
    if not report.checkpoint_policies:
        return
    flops = report.cost.get("flops")
    yield "(as written)", format_bytes(report.peak_bytes), format_count(flops) if flops is not None else "–", ""
    for cost in report.checkpoint_policies:
        flops = format_count(cost.flops) if cost.flops is not None else "–"
        yield cost.policy, format_bytes(cost.peak_bytes), flops, cost.code


def blocks(report) -> tuple[Block, ...]:
    """The residuals by line and the policies' trade-off, each folded under its heading (nothing
    when the report is not a gradient's)."""
    folds: list[Block] = []
    if report.residuals is not None:
        rows = _residual_rows(report)
        table = Table(
            ("bytes", "line", "shapes", "source"),
            tuple(
                (Cell(format_bytes(b), "number"), Cell(label, "strong"), Cell(shapes, "code"), Cell(source, "code"))
                for label, b, shapes, source in rows[:MAX_ROWS]
            ),
            "jm-residuals",
            align="><<<",
        )
        shown: list[Block] = [table] if rows else []
        if len(rows) > MAX_ROWS:
            shown.append(Note(f"… {len(rows) - MAX_ROWS} more lines (the report's .residuals holds them all)"))
        folds.append(
            Fold("", tuple(shown), "jm-nested", title=residuals_sentence(report.residuals or []), in_text="both")
        )
    policies = list(_policy_rows(report))
    if policies:
        table = Table(
            ("policy", "peak", "FLOPs", "write"),
            tuple(
                (Cell(p, "code"), Cell(peak, "number"), Cell(flops, "number"), Cell(code, "code"))
                for p, peak, flops, code in policies
            ),
            "jm-policies",
            align="<>><",
        )
        summary = policies_sentence(report.checkpoint_policies)
        folds.append(Fold(summary, (table,), "jm-nested", title="checkpoint policies", in_text="both"))
    return (Group("jm-remat", tuple(folds)),) if folds else ()


def text(report) -> str:
    """The residuals by line and the policies' trade-off, as aligned text ('' when not a gradient)."""
    return blocks_text.text(blocks(report))


def html(report) -> str:
    """The same as folded HTML tables ('' when not a gradient)."""
    return blocks_html.html(blocks(report))
