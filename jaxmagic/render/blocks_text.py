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

import textwrap
from typing import Any, Callable, Iterable

from pygments import highlight
from pygments.formatters import Terminal256Formatter

from jaxmagic.render.blocks import (
    LANGUAGES,
    Bar,
    Bindings,
    Block,
    Card,
    CodeBlock,
    CodeRow,
    CompilationRow,
    Compilations,
    EquationRow,
    Flags,
    Fold,
    Footer,
    Grid,
    Group,
    Heading,
    Headline,
    Hint,
    Items,
    Kernels,
    KeyValues,
    Labelled,
    Lead,
    Legend,
    Listing,
    Nested,
    Note,
    NoteRow,
    Only,
    Paragraph,
    PlaceRow,
    Prerendered,
    Repeat,
    Row,
    Section,
    Sections,
    Sentence,
    Snippet,
    Stacked,
    Table,
    Tally,
)
from jaxmagic.render.terminal import paint, table
from jaxmagic.words import as_words
from jaxmagic.words.untrusted import one_line, safe_text

INDENT = "    "
BAR_WIDTH = 24  # characters, the longest bar
WRAP = 96  # characters, a paragraph's width


def text(blocks: Iterable[Block], *, color: bool = False) -> str:
    """The blocks one after another, a line break between them (empty ones left out), safe for a
    terminal or a CI log: what is one line in a block (a name, a cell, a sentence) stays one line,
    with its control characters shown escaped (``jaxmagic.words.untrusted``).

    >>> print(text((Hint("::error::x"), Note("a\\nb"))))
    \\x3a:error::x
    a\\nb
    """
    return safe_text(_joined(blocks, color), colour=color)


def _joined(blocks: Iterable[Block], color: bool) -> str:
    return "\n".join(part for part in (_block(b, color) for b in blocks) if part)


def _coloured(body: str, language: str, color: bool) -> str:
    if not color:
        return body
    return highlight(body, LANGUAGES[language](), Terminal256Formatter(style="default")).rstrip("\n")


def _block(block: Block, color: bool) -> str:
    return _WALKS[type(block)](block, color)


def _fold(fold: Fold, color: bool) -> str:
    heading = " · ".join(part for part in (fold.title, fold.summary) if part)
    shown = (Hint(heading),) if fold.in_text in ("heading", "both") else ()
    shown += fold.blocks if fold.in_text in ("blocks", "both") else ()
    return _joined(shown, color)


def _kernels(block: Kernels, color: bool) -> str:
    """One row per kernel, a loop's kernels indented under it."""
    rows = []

    def add(kernels):
        for k in kernels:
            rows.append([INDENT * k.depth + k.name, k.what, f"← {k.lines}", k.source])
            add(k.inner)

    add(block.kernels)
    return "\n".join([block.headline, table(None, rows), *([block.more] if block.more else [])])


def _code_block(block: CodeBlock, color: bool) -> str:
    body = _coloured("\n".join(line.text for line in block.lines), block.language, color)
    return body + (f"\n{block.note}" if block.note else "")


def _legend(block: Legend, color: bool) -> str:
    return table(None, [[f"{r.kind}:", r.variable, r.stands_for, r.type] for r in block.rows]) if block.rows else ""


def _key_values(block: KeyValues, color: bool) -> str:
    width = max((len(key) for key, _ in block.rows), default=0)
    return "\n".join(f"{key.ljust(width)}  {value}" for key, value in block.rows)


_WALKS: dict[type, Callable[[Any, bool], str]] = {
    Listing: lambda b, color: _coloured("\n".join(_rows(b.rows)), "jaxpr", color),
    CodeBlock: _code_block,
    Kernels: _kernels,
    Legend: _legend,
    KeyValues: _key_values,
    Hint: lambda b, color: one_line(b.text),
    Fold: _fold,
    Group: lambda b, color: _joined(b.blocks, color),
    Sentence: lambda b, color: paint(one_line(b.words), "bold", color=color) if b.bold else one_line(b.words),
    Note: lambda b, color: one_line(b.text),
    Table: lambda b, color: _table(b),
    Bindings: lambda b, color: "\n".join(f"  {one_line(name)} = {one_line(value)}" for name, value in b.rows),
    Prerendered: lambda b, color: b.text(),
    Grid: lambda b, color: _grid(b),
    Headline: lambda b, color: one_line(f"{b.before}{b.name}{b.after}"),
    Items: lambda b, color: "\n".join(
        paint(f"{b.lead}{one_line(item)}", *filter(None, [b.style]), color=color) for item in b.items
    ),
    Sections: lambda b, color: "\n\n".join(part for part in (_block(inner, color) for inner in b.blocks) if part),
    Only: lambda b, color: _joined(b.blocks, color) if b.medium == "text" else "",
    Heading: lambda b, color: _heading(b, color),
    Labelled: lambda b, color: _labelled(b, color),
    Paragraph: lambda b, color: paint(wrap(b.words), *filter(None, [b.style]), color=color) if str(b.words) else "",
    Snippet: lambda b, color: _indented(_coloured("\n".join(line.text for line in b.lines), b.language, color)),
    Section: lambda b, color: _section(b, color),
    Footer: lambda b, color: paint(
        " · ".join(link.href or link.lead + link.text for link in b.links if not link.medium),
        *filter(None, [b.style]),
        color=color,
    ),
    Card: lambda b, color: "\n".join(
        [*([_block(b.blocks[0], color)] if b.blocks else []), _indented(_joined(b.blocks[1:], color))]
    ).rstrip("\n"),
}


def wrap(words, width: int = WRAP, lead: str = "") -> str:
    """A sentence wrapped for the terminal after ``lead``: code in backticks; a place or a piece of
    code never broken across lines.

    >>> from jaxmagic.words import code, say
    >>> print(wrap(say("use {} here", code("jax.lax.fori_loop")), width=12, lead="Fix: "))
    Fix: use
    `jax.lax.fori_loop`
    here
    """
    kept = [lead]
    for part in as_words(words).parts:
        shown = one_line(part.plain)
        kept.append(shown.replace(" ", "\u00a0") if part.kind in ("code", "place") else shown)
    wrapped = textwrap.wrap("".join(kept), width=width, break_long_words=False, break_on_hyphens=False)
    return "\n".join(wrapped).replace("\u00a0", " ")


def _indented(body: str, prefix: str = "  ") -> str:
    return "\n".join(prefix + line if line else line for line in body.splitlines())


def _heading(block: Heading, color: bool) -> str:
    speaker = f"{block.speaker} · " if block.speaker else ""
    tag = f" [{block.tag}]" if block.tag else ""
    return f"{speaker}{paint(f'{block.badge}: {block.title}', *block.style, color=color)}{tag}"


def _labelled(block: Labelled, color: bool) -> str:
    label = paint(block.label, "faint", color=color)
    return f"{label}: {block.code.text}" if block.code is not None and block.code.text else label


def _section(block: Section, color: bool) -> str:
    """The title and the note as one paragraph (the title in bold), then the blocks."""
    title = f"{block.title}:" if block.title else ""
    head = wrap(block.note, lead=f"{title} " if str(block.note) and title else title)
    if title:
        before, _, after = head.partition(title)
        head = before + paint(title, "bold", color=color) + after
    return "\n".join(part for part in (head, _joined(block.blocks, color)) if part)


def bar(value: float, largest: float, width: int = BAR_WIDTH) -> str:
    """``value`` as a bar of block characters, ``width`` long for the ``largest``, eighths at its end.

    >>> bar(1.0, 1.0, 4), bar(0.5, 1.0, 4), bar(0.3, 1.0, 4)
    ('████', '██', '█▎')
    """
    if largest <= 0:
        return ""
    eighths = round(width * 8 * value / largest)
    full, part = divmod(max(1, eighths), 8)
    return "█" * full + ("" if not part else " ▏▎▍▌▋▊▉"[part])


def _grid_cell(cell) -> str:
    if isinstance(cell, Bar):
        return bar(cell.value, cell.largest)
    return one_line(cell.text)


def _grid(block: Grid) -> str:
    """Aligned columns; a column of ``Stacked`` parts is left out (a terminal has the numbers)."""
    rows = [[_grid_cell(cell) for cell in row if not isinstance(cell, Stacked)] for row in block.rows]
    return table(block.header, rows, align=block.align)


def _table(block: Table) -> str:
    """Aligned columns; a column of bars is left out (a terminal has the numbers)."""
    kept = [i for i in range(len(block.rows[0]) if block.rows else 0) if any(r[i].bar is None for r in block.rows)]
    if block.rows and len(kept) < len(block.rows[0]):
        header = [block.header[i] for i in kept] if block.header else None
        align = "".join(block.align[i] for i in kept if i < len(block.align))
        return table(header, [[one_line(row[i].text) for i in kept] for row in block.rows], align=align)
    return table(block.header, [[one_line(cell.text) for cell in row] for row in block.rows], align=block.align)


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


# ----------------------------------------------------------------------------------------------
# a log of compilations


def _tally(block: Tally, color: bool) -> str:
    counts = (
        f"{one_line(name)} ×{count}" + (f" ({one_line(note)})" if note else "") for name, count, note in block.counts
    )
    return "  " + " · ".join(counts) if block.counts else ""


def _row_name(row: CompilationRow) -> str:
    return one_line(row.function) + (f" ×{row.count}" if row.count > 1 else "")


def _compilations(block: Compilations, color: bool) -> str:
    """A row's number, function (``×N``), call site and time aligned in columns, its first cause
    after them and what else it says indented under it."""
    number = max((len(row.numbers) for row in block.rows), default=1)
    name = max((len(_row_name(row)) for row in block.rows), default=8)
    site = max((len(one_line(row.site)) for row in block.rows), default=9)
    lines = []
    for row in block.rows:
        number_text = f"  {row.numbers.rjust(number)}  "
        rest = f"  {one_line(row.site).ljust(site)}  {row.seconds.rjust(9)}"
        head = number_text + paint(_row_name(row).ljust(name), "bold", color=color) + rest
        indent = " " * (len(number_text) + name + len(rest) + 2)
        bodies = [one_line(f"{c.label}: {c.message}" if c.label else c.message) for c in row.causes]
        lines.append(f"{head}  {bodies[0]}" if bodies else head)
        lines += [indent + body for body in bodies[1:]]
        under = [paint(_occurrence(o), "faint", color=color) for o in row.occurrences[:1]]  # the row is the latest
        under += [paint(f"{r.lead}{one_line(r.words)}", *filter(None, [r.style]), color=color) for r in row.remarks]
        if row.raw_shown:
            under += [paint(f"| {line}", "faint", color=color) for line in row.raw.splitlines()]
        if row.cache is not None:
            under.append(paint(f"({row.cache[1]})", "cyan" if row.cache_hit else "faint", color=color))
        lines += [indent + line for line in under]
    return "\n".join(lines)


def _occurrence(occurrence) -> str:
    causes = "; ".join(str(message) for message in occurrence.messages)
    return one_line(f"{occurrence.label} #{occurrence.number} {occurrence.clock} {occurrence.site}: {causes}")


_WALKS.update(
    {
        Lead: lambda b, color: paint(one_line(b.words), "bold", color=color) + one_line(b.after),
        Flags: lambda b, color: "\n".join(paint(f"! {one_line(item)}", "yellow", color=color) for item in b.items),
        Tally: _tally,
        Compilations: _compilations,
    }
)
