"""XLA's optimized HLO as kernels: each fusion (or single instruction) in the order XLA runs it,
with the user's source lines fused into it, and its fused computation on demand; an asynchronous
start/done pair as one row that names what it overlaps; a custom call by what it runs; as blocks
walked to text and HTML. Pure functions of the report; the whole module stays in ``report.hlo``."""

from __future__ import annotations

import re

from jaxmagic.compiled.hlo_kernels import KernelGroup, kernel_groups
from jaxmagic.compiled.hlo_sources import STACK_TABLES
from jaxmagic.render import blocks_html, blocks_text
from jaxmagic.render.blocks import Block, Kernel, Kernels, code_lines
from jaxmagic.words import kernels as words

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
    """``XLA fused In [3] line 2, In [3] line 3 into one kernel`` for a kernel of several lines;
    for an asynchronous pair, where it starts and ends and what it overlaps."""
    if group.is_async:
        return words.overlap_note(group.name, group.done, group.overlaps)
    return words.fused_lines_note(group.lines)


def source_text(group: KernelGroup) -> str:
    """The source text of the kernel's lines, ``; ``-joined: ``h = jnp.tanh(x @ w); return h.sum()``."""
    return "; ".join(text for text in group.sources if text)


def _describe(group: KernelGroup) -> str:
    return words.kind_words(group.opcode, group.kind, group.custom_call, group.is_async)


def _count(found: list[KernelGroup]) -> int:
    return sum(1 + _count(list(g.inner)) for g in found)


def headline(found: list[KernelGroup]) -> str:
    return words.headline(_count(found))


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
            name = f"{g.name} … {g.done}" if g.is_async else g.name
            out.append(
                Kernel(depth, name, _describe(g), lines, fused_lines_note(g), source_text(g), computation, inner)
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
