"""XLA's optimized HLO as kernels: each fusion (or single instruction) in the order XLA runs it,
with the user's source lines fused into it, and its fused computation on demand; as blocks walked
to text and HTML. Pure functions of the report; the whole module stays in ``report.hlo``."""

from __future__ import annotations

import re

from jaxmagic.compiled.hlo_sources import STACK_TABLES, KernelGroup, kernel_groups
from jaxmagic.render import blocks_html, blocks_text
from jaxmagic.render.blocks import Block, Kernel, Kernels, code_lines

_STACK_FRAME_ID = re.compile(r" stack_frame_id=\d+")


MAX_KERNEL_ROWS = 100  # kernels listed; the rest are counted


def readable_hlo(text: str) -> str:
    """HLO without XLA's stack-frame tables (Python call stacks, a reader's noise) and frame ids.

    >>> readable_hlo('HloModule m\\n\\nFileNames\\n1 "a.py"\\n\\nENTRY %main {\\n  ROOT %x = f32[] add(), metadata={op_name="add" stack_frame_id=3}\\n}')
    'HloModule m\\n\\nENTRY %main {\\n  ROOT %x = f32[] add(), metadata={op_name="add"}\\n}'
    """
    kept, skipping = [], False
    for line in text.splitlines():
        if line.strip() in STACK_TABLES:
            skipping = True
            continue
        if skipping:
            if line.strip():
                continue
            skipping = False
            continue
        kept.append(_STACK_FRAME_ID.sub("", line))
    return "\n".join(kept)


def groups(report) -> list[KernelGroup]:
    return kernel_groups(report.hlo, report.cell_namer, report.jaxpr)


def fused_lines_note(group: KernelGroup) -> str:
    """``XLA fused In [3] line 2, In [3] line 3 into one kernel`` for a kernel of several lines."""
    return f"XLA fused {', '.join(group.lines)} into one kernel" if len(group.lines) > 1 else ""


def source_text(group: KernelGroup) -> str:
    """The source text of the kernel's lines, ``; ``-joined: ``h = jnp.tanh(x @ w); return h.sum()``."""
    return "; ".join(text for text in group.sources if text)


def _describe(group: KernelGroup) -> str:
    return f"{group.opcode} ({group.kind})" if group.kind else group.opcode


def _count(found: list[KernelGroup]) -> int:
    return sum(1 + _count(list(g.inner)) for g in found)


def headline(found: list[KernelGroup]) -> str:
    return (
        f"XLA's optimized HLO: {_count(found)} kernel{'s' * (_count(found) != 1)} (fusions and single "
        f"instructions) in the order XLA runs them, each with the source lines fused into it"
    )


def blocks(report) -> tuple[Block, ...]:
    """The kernel view: one row per kernel (``MAX_KERNEL_ROWS`` at most, the rest counted), a
    loop's kernels under it, each fusion's computation as highlighted code."""
    found = groups(report)
    shown = [0]

    def kernels(items, depth) -> tuple[Kernel, ...]:
        out = []
        for g in items:
            if shown[0] >= MAX_KERNEL_ROWS:
                break
            shown[0] += 1
            computation = tuple(code_lines(readable_hlo(g.called).split("\n"), "hlo")) if g.called else ()
            lines = ", ".join(g.lines) or "no source line"
            inner = kernels(list(g.inner), depth + 1)
            out.append(
                Kernel(depth, g.name, _describe(g), lines, fused_lines_note(g), source_text(g), computation, inner)
            )
        return tuple(out)

    listed = kernels(found, 0)
    hidden = _count(found) - shown[0]
    more = f"… {hidden} more kernels (the report's .hlo holds them all)" if hidden > 0 else ""
    return (Kernels(headline(found), listed, more),)


def text(report) -> str:
    """The kernel view as plain text: one row per kernel, loop bodies indented."""
    return blocks_text.text(blocks(report))


def html(report) -> str:
    """The kernel view as HTML: a row per kernel; a fusion's computation opens on click."""
    return blocks_html.html(blocks(report))
