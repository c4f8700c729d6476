"""XLA's optimized HLO as kernels: each fusion (or single instruction) in the order XLA runs it,
with the user's source lines fused into it, and its fused computation on demand. Pure functions
of the report; the whole module stays in ``report.hlo``."""

from __future__ import annotations

import re

from pygments import highlight

from jaxmagic.compiled.hlo_sources import STACK_TABLES, KernelGroup, kernel_groups
from jaxmagic.render import theme
from jaxmagic.render.lexers import LEXERS
from jaxmagic.render.terminal import table
from jaxmagic.render.theme import escape

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
    return kernel_groups(report.hlo, report.cell_namer)


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


def text(report) -> str:
    """The kernel view as plain text: one row per kernel, loop bodies indented."""
    found = groups(report)
    rows = []

    def add(items, depth):
        for g in items:
            if len(rows) < MAX_KERNEL_ROWS:
                where = "← " + (", ".join(g.lines) or "no source line")
                rows.append(["    " * depth + g.name, _describe(g), where, source_text(g)])
                add(list(g.inner), depth + 1)

    add(found, 0)
    parts = [headline(found), table(None, rows)]
    if _count(found) > len(rows):
        parts.append(f"… {_count(found) - len(rows)} more kernels")
    return "\n".join([*parts, "(the report's .hlo holds the whole module)"])


def html(report) -> str:
    """The kernel view as HTML: a row per kernel; a fusion's computation opens on click."""
    found = groups(report)
    formatter = theme.html_formatter()

    shown = [0]

    def items(found_groups, depth) -> str:
        out = []
        for g in found_groups:
            if shown[0] >= MAX_KERNEL_ROWS:
                break
            shown[0] += 1
            where = escape(", ".join(g.lines) or "no source line")
            note = fused_lines_note(g)
            note_html = f' <span class="jm-muted">· {escape(note)}</span>' if note else ""
            head = (
                f'<code class="jm-kernel">{escape(g.name)}</code> <span class="jm-muted">'
                f"{escape(_describe(g))}</span> ← <b>{where}</b>{note_html}"
            )
            if source_text(g):
                head += f' <code class="jm-kernel-source">{escape(source_text(g))}</code>'

            body = ""
            if g.called:
                called = readable_hlo(g.called)
                body = f'<pre class="jm-block jm-hlo">{highlight(called, LEXERS["hlo"](), formatter)}</pre>'
            if g.inner:
                body += items(list(g.inner), depth + 1)
            pad = f' style="padding-left:{2 * depth}ch"'
            if body:
                out.append(f'<details class="jm-nested"><summary{pad}>{head}</summary>{body}</details>')
            else:
                out.append(f'<div class="jm-l"{pad}>{head}</div>')
        return "".join(out)

    listed = items(found, 0)
    hidden = _count(found) - shown[0]
    more = (
        f'<div class="jm-more">… {hidden} more kernels (the report\'s .hlo holds them all)</div>' if hidden > 0 else ""
    )
    return f'<div class="jm-kernels"><div class="jm-muted">{escape(headline(found))}</div>{listed}{more}</div>'
