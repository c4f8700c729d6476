"""Any view's blocks (``jaxmagic.render.blocks``) as terminal text, ANSI colours on request.

A terminal cannot unfold: folds are shown in place, a nested jaxpr indented under its header, and
a repeated block's further copies left out with their count.

>>> from jaxmagic.render.blocks import Hint, KeyValues
>>> print(text((Hint("one line of advice"), KeyValues("XLA estimate", (("FLOPs", "12"), ("bytes", "48 B"))))))
one line of advice
FLOPs  12
bytes  48 B
"""

from __future__ import annotations

from typing import Iterable

from pygments import highlight
from pygments.formatters import Terminal256Formatter

from jaxmagic.render.blocks import (
    Block,
    CodeBlock,
    CodeRow,
    EquationRow,
    Fold,
    Hint,
    KeyValues,
    Legend,
    Listing,
    Nested,
    NoteRow,
    PlaceRow,
    Prerendered,
    Repeat,
    Row,
)
from jaxmagic.render.lexers import LEXERS
from jaxmagic.render.terminal import table

INDENT = "    "


def text(blocks: Iterable[Block], *, color: bool = False) -> str:
    """The blocks one after another, a line break between them (empty ones left out)."""
    return "\n".join(part for part in (_block(b, color) for b in blocks) if part)


def _coloured(body: str, language: str, color: bool) -> str:
    if not color:
        return body
    return highlight(body, LEXERS[language](), Terminal256Formatter(style="default")).rstrip("\n")


def _block(block: Block, color: bool) -> str:
    if isinstance(block, Listing):
        return _coloured("\n".join(_rows(block.rows)), "jaxpr", color)
    if isinstance(block, CodeBlock):
        body = "\n".join(line.text for line in block.lines)
        return _coloured(body, block.language, color) + (f"\n{block.note}" if block.note else "")
    if isinstance(block, Legend):
        if not block.rows:
            return ""
        return table(None, [[f"{r.kind}:", r.variable, r.stands_for, r.type] for r in block.rows])
    if isinstance(block, KeyValues):
        width = max((len(key) for key, _ in block.rows), default=0)
        return "\n".join(f"{key.ljust(width)}  {value}" for key, value in block.rows)
    if isinstance(block, Hint):
        return block.text
    if isinstance(block, Fold):
        return text(block.blocks, color=color)
    if isinstance(block, Prerendered):
        return block.text()
    raise TypeError(f"not a block: {block!r}")


def _rows(rows: Iterable[Row]) -> Iterable[str]:
    for row in rows:
        pad = INDENT * (2 * row.depth)
        if isinstance(row, EquationRow):
            value = f"   ⇒ {row.value}{'   ◀ first NaN/inf' if row.nonfinite else ''}" if row.value else ""
            yield f"{pad}{INDENT}{row.code.text}{value}"
        elif isinstance(row, PlaceRow):
            count = f"  · {row.place.count}" if row.place.count else ""
            yield f"{pad}{INDENT}{row.place.heading}{count}"
        elif isinstance(row, CodeRow):
            yield f"{pad}{row.lead}{row.code.text}"
        elif isinstance(row, NoteRow):
            yield f"{pad}{INDENT}{row.text}"
        elif isinstance(row, Nested):
            yield f"{pad}▸ {row.title}{f' ({row.landmark})' if row.landmark else ''}: {row.header.text}"
            yield from _rows(row.rows)
        elif isinstance(row, Repeat):
            yield f"{pad}{INDENT}⋯ {row.what}: {row.more} more copies left out"
