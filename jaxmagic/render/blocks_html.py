"""Any view's blocks (``jaxmagic.render.blocks``) as HTML: scoped CSS, folds as ``<details>``.

A listing becomes a viewer in plain HTML and CSS, so that it works wherever the output is shown
(exported notebooks included): hovering a variable lights its definition and uses, a filter shows
one primitive's equations. Element ids are hashes of what they scope (``jaxmagic.render.ids``).

>>> from jaxmagic.render.blocks import Hint, code_lines
>>> html((Hint("a <hint>"),))
'<div class="jm-hint">a &lt;hint&gt;</div>'
>>> code(code_lines(["b:f32[] = sin a"], "jaxpr")[0])[:47]
'<span class="jm-tnv jm-def" data-v="b">b</span>'
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from jaxmagic.render import theme
from jaxmagic.render.blocks import (
    Bar,
    Bindings,
    Block,
    Card,
    CauseLine,
    Cell,
    Code,
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
    Kernel,
    Kernels,
    KeyValues,
    Labelled,
    Lead,
    Legend,
    LegendRow,
    Listing,
    Nested,
    Note,
    NoteRow,
    Occurrence,
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
from jaxmagic.render.ids import ContentIds
from jaxmagic.render.theme import TOKEN_PREFIX, escape
from jaxmagic.render.words import words_html

MAX_HIGHLIGHTED_VARIABLES = 1200  # past this, no hover highlight (its style would outweigh the listing)
LEGEND_ROWS = 6  # inputs, then outputs, shown before the legend folds the rest
BAR_WIDTH = 180  # px, the longest bar
BAR_HEIGHT = 14
JAXPR_DOCS = "https://docs.jax.dev/en/latest/jaxpr.html"
# How to use the viewer, until this listing's variables are hovered or a block is unfolded (the
# stylesheet then hides it); the link stays.
VIEWER_HINT = (
    '<div class="jm-muted jm-viewer-hint"><span class="jm-usage-hint">hover a variable to see its uses; '
    f'click ▸ to unfold · </span><a href="{JAXPR_DOCS}" target="_blank" rel="noopener">how to read a jaxpr</a></div>'
)


def html(blocks: Iterable[Block], ids: ContentIds | None = None) -> str:
    """The blocks one after another; ``ids`` gives the output's element ids (one per output)."""
    ids = ids if ids is not None else ContentIds()
    return "".join(_block(block, ids) for block in blocks)


def code(line: Code) -> str:
    """A line of code as spans with jaxmagic's token classes; a variable marked by name
    (``data-v``), its binding as ``jm-def``, with its hover text."""
    out = []
    for span in line.spans:
        text = escape(span.text)
        if span.variable:
            kind = f"{TOKEN_PREFIX}{span.token}{' jm-def' if span.binder else ''}"
            title = f' title="{escape(span.title)}"' if span.title else ""
            out.append(f'<span class="{kind}" data-v="{escape(span.variable)}"{title}>{text}</span>')
        elif span.token and span.token != "w":
            out.append(f'<span class="{TOKEN_PREFIX}{span.token}">{text}</span>')
        else:
            out.append(text)
    return "".join(out)


def _block(block: Block, ids: ContentIds) -> str:
    return _WALKS[type(block)](block, ids)


def _code_block(block: CodeBlock, ids: ContentIds) -> str:
    lines = "\n".join(code(line) for line in block.lines)
    note = f'<div class="jm-more">{escape(block.note)}</div>' if block.note else ""
    return f'<pre class="jm-block jm-{escape(block.language)}">{lines}\n</pre>{note}'


def _kernels(block: Kernels, ids: ContentIds) -> str:
    """A row per kernel; a fusion's computation and a loop's kernels open on click."""
    listed = "".join(_kernel(k) for k in block.kernels)
    more = f'<div class="jm-more">{escape(block.more)}</div>' if block.more else ""
    return f'<div class="jm-kernels"><div class="jm-muted">{escape(block.headline)}</div>{listed}{more}</div>'


def _kernel(kernel: Kernel) -> str:
    note = f' <span class="jm-muted">· {escape(kernel.note)}</span>' if kernel.note else ""
    head = (
        f'<code class="jm-kernel">{escape(kernel.name)}</code> <span class="jm-muted">{escape(kernel.what)}</span>'
        f" ← <b>{escape(kernel.lines)}</b>{note}"
    )
    if kernel.source:
        head += f' <code class="jm-kernel-source">{escape(kernel.source)}</code>'
    body = ""
    if kernel.computation:
        body = f'<pre class="jm-block jm-hlo">{"".join(code(line) + chr(10) for line in kernel.computation)}</pre>'
    body += "".join(_kernel(k) for k in kernel.inner)
    if not body:
        return f'<div class="jm-l"{_pad(2 * kernel.depth)}>{head}</div>'
    return f'<details class="jm-nested"><summary{_pad(2 * kernel.depth)}>{head}</summary>{body}</details>'


def _key_values(block: KeyValues, ids: ContentIds) -> str:
    rows = "".join(f"<tr><td>{escape(k)}</td><td>{escape(v)}</td></tr>" for k, v in block.rows)
    return f'<table class="jm-table jm-cost"><tr><th>{escape(block.heading)}</th><th></th></tr>{rows}</table>'


def _bindings(block: Bindings, ids: ContentIds) -> str:
    rows = "".join(
        f"<tr><td><code>{escape(name)}</code></td><td><code>{escape(value)}</code></td></tr>"
        for name, value in block.rows
    )
    return f'<table class="jm-table {escape(block.css)}">{rows}</table>'


# A text cell's alignment, inline: JupyterLab right-aligns an output's cells, and drops the
# stylesheet that says otherwise from an untrusted notebook.
LEFT = ' style="text-align:left"'

_WALKS: dict[type, Callable[[Any, ContentIds], str]] = {}  # filled below, once every walk is defined


def _summary(fold: Fold) -> str:
    if not fold.title:
        return f'<summary class="jm-muted">{escape(fold.summary)}</summary>'
    rest = f" · {escape(fold.summary)}" if fold.summary else ""
    return f"<summary><b>{escape(fold.title)}</b>{rest}</summary>"


def _cell(cell: Cell, align: str = "") -> str:
    if cell.bar is not None:
        width = max(cell.bar * 100, 0.5)
        return f'<td class="jm-barcell"><span class="jm-line-bar" style="width:{width:.1f}%"></span></td>'
    number = ' class="jm-num"' if cell.style == "number" else ""
    title = f' title="{escape(cell.title)}"' if cell.title else ""
    shown = words_html(cell.text)
    if cell.text and cell.style == "code":
        shown = f"<code>{_breakable(escape(cell.text))}</code>"
    elif cell.text and cell.style == "strong":
        shown = f"<b>{escape(cell.text)}</b>"
    return f"<td{number}{_aligned(align)}{title}>{shown}</td>"


# Where a long piece of code in a table may break: after these (<wbr> adds no character).
_BREAKS = (".", ",", "(", "=")


def _breakable(escaped: str) -> str:
    """Escaped code with a break opportunity after each dot, comma, bracket and ``=``: a table's
    column of code then wraps inside the output's width rather than running past it.

    >>> _breakable("jax.checkpoint(f)")
    'jax.<wbr>checkpoint(<wbr>f)'
    """
    for mark in _BREAKS:
        escaped = escaped.replace(mark, mark + "<wbr>")
    return escaped


_ALIGNED = {"<": LEFT, ">": ' style="text-align:right"'}


def _aligned(align: str) -> str:
    """A column's alignment (``<`` or ``>``; empty: none said), inline: JupyterLab right-aligns an
    output's cells and drops the stylesheet that says otherwise from an untrusted notebook."""
    return _ALIGNED.get(align, "")


def _table(block: Table) -> str:
    align = block.align
    header = (
        "<tr>"
        + "".join(f"<th{_aligned(align[i : i + 1])}>{escape(h)}</th>" for i, h in enumerate(block.header))
        + "</tr>"
        if block.header
        else ""
    )
    rows = "".join(
        "<tr>" + "".join(_cell(cell, align[i : i + 1]) for i, cell in enumerate(row)) + "</tr>" for row in block.rows
    )
    return f'<table class="jm-table {escape(block.css)}">{header}{rows}</table>'


# ----------------------------------------------------------------------------------------------
# the listing


# A listing's height at most, in em of its code font (about 20 rows); longer, it scrolls, so that the
# view's first screen holds what follows it. Inline: an untrusted notebook keeps it.
LISTING_MAX_EM = 30


def _listing(listing: Listing, ids: ContentIds) -> str:
    rows = "".join(_rows(listing.rows))
    listing_id = ids.new("\n".join([rows, *listing.filters]))
    return (
        f"{_viewer_style(listing_id, listing.variables(), listing.filters)}"
        f'<div class="jm-viewer" id="{listing_id}">{VIEWER_HINT}{_filter_bar(listing_id, listing.filters)}'
        f'<pre class="jm-listing jm-code" style="max-height:{LISTING_MAX_EM}em;overflow:auto">{rows}</pre></div>'
    )


def _viewer_style(listing_id: str, variables: set[str], primitives: Iterable[str]) -> str:
    """The listing's own rules, scoped to it: hovering a variable lights its definition and every
    use; a checked primitive filter shows only that primitive's equations (plain CSS ``:has``:
    no script, so it works wherever the HTML is shown, exported notebooks included)."""
    scope = f"#{listing_id}"
    rules = []
    if len(variables) <= MAX_HIGHLIGHTED_VARIABLES:
        rules += [
            f'{scope}:has([data-v="{v}"]:hover) [data-v="{v}"]{{background:var(--jm-highlight);border-radius:2px}}'
            for v in sorted(variables)
        ]
    for i, primitive in enumerate(primitives):
        rules.append(
            f'{scope}:has(#{listing_id}-f{i}:checked) .jm-eqn:not([data-primitive="{escape(primitive)}"]),'
            f"{scope}:has(#{listing_id}-f{i}:checked) .jm-srcrow{{display:none}}"
        )
        rules.append(f"{scope}:has(#{listing_id}-f{i}:checked) .jm-eqn::after{{content:attr(data-src)}}")
    return f"<style>{''.join(rules)}</style>"


def _filter_bar(listing_id: str, primitives: tuple[str, ...]) -> str:
    """Radio buttons: all equations, or only those of one of the most frequent primitives."""
    if not primitives:
        return ""
    options = [("all", "all equations", True)] + [(f"f{i}", p, False) for i, p in enumerate(primitives)]
    buttons = "".join(
        f'<label><input type="radio" name="{listing_id}-filter" id="{listing_id}-{key}"'
        f"{' checked' if checked else ''}> {escape(label)}</label>"
        for key, label, checked in options
    )
    return f'<div class="jm-filter"><span class="jm-muted">show:</span>{buttons}</div>'


def _pad(depth: int) -> str:
    """An indent of ``depth`` characters of a monospace font, in ``em`` (an untrusted notebook's
    sanitizer drops ``ch`` units from inline styles, and keeps ``em``)."""
    return f' style="padding-left:{depth * theme.MONOSPACE_EM:g}em"'


def _rows(rows: Iterable[Row]) -> Iterable[str]:
    for row in rows:
        if isinstance(row, EquationRow):
            yield _equation(row)
        elif isinstance(row, PlaceRow):
            place = row.place
            title = escape("made by:\n" + "\n".join(place.chain) if place.chain else place.location)
            yield (
                f'<div class="jm-l jm-srcrow"{_pad(2 * row.depth + 1)}><span class="jm-src" title="{title}">'
                f'{escape(place.heading)}</span>{theme.plain_only("  · ")}<span class="jm-muted">{escape(place.count)}</span></div>'
            )
        elif isinstance(row, CodeRow):
            yield f'<div class="jm-l"{_pad(2 * row.depth)}><span class="jm-code">{escape(row.lead)}{code(row.code)}</span></div>'
        elif isinstance(row, NoteRow):
            yield f'<div class="jm-more"{_pad(2 * row.depth)}>{escape(row.text)}</div>'
        elif isinstance(row, Nested):
            landmark = f' <span class="jm-landmark">({escape(row.landmark)})</span>' if row.landmark else ""
            yield (
                f'<details class="jm-nested"><summary{_pad(2 * row.depth)}>'
                f"<b>{escape(row.title)}</b>{landmark} · {escape(row.count)} "
                f'<span class="jm-muted" title="{escape(row.header.text)}">{code(row.header)}</span></summary>'
            )
            yield from _rows(row.rows)
            yield "</details>"
        elif isinstance(row, Repeat):
            yield (
                f'<details class="jm-nested jm-repeat"><summary{_pad(2 * row.depth)}><b>{escape(row.what)}</b> '
                f'<span class="jm-muted">· {row.more} more copies of the block above</span></summary>'
            )
            yield from _rows(row.rows)
            yield "</details>"


def _equation(row: EquationRow) -> str:
    whole = row.code.text  # cut by the stylesheet to the column's width, whole on hover
    title = f' title="{escape(whole)}"' if len(whole) > theme.CODE_COLUMN else ""
    where = f' data-src="  # {escape(row.label)}"' if row.label else ""
    value = ""
    if row.value:
        value = f'<span class="jm-value{" jm-nonfinite" if row.nonfinite else ""}">⇒ {escape(row.value)}</span>'
    return (
        f'<div class="jm-l jm-eqn" data-primitive="{escape(row.primitive)}"{where}{_pad(2 * row.depth + 1)}{title}>'
        f'<span class="jm-code">{code(row.code)}</span>{value}</div>'
    )


# ----------------------------------------------------------------------------------------------
# the legend


def _legend(rows: tuple[LegendRow, ...]) -> str:
    """Which argument each input variable is, and what each output is, as the user writes it;
    past ``LEGEND_ROWS`` inputs or outputs, the rest folded with their count."""
    if not rows:
        return ""
    header = (
        '<tr><th class="jm-left"></th><th class="jm-left">variable</th><th class="jm-left">stands for</th>'
        '<th class="jm-left">type</th></tr>'
    )

    def cells(chosen) -> str:
        return "".join(
            f'<tr title="{escape(r.stands_for)}: {escape(r.type)}"><td class="jm-muted">{escape(r.kind)}</td>'
            f'<td><code class="jm-var">{escape(r.variable)}</code></td><td><code>{escape(r.stands_for)}</code></td>'
            f'<td class="jm-muted"><code>{escape(r.type)}</code></td></tr>'
            for r in chosen
        )

    shown, folded = [], []
    for kind in ("in", "out"):
        of_kind = [row for row in rows if row.kind == kind]
        shown += of_kind[:LEGEND_ROWS]
        folded += of_kind[LEGEND_ROWS:]
    table_ = f'<table class="jm-table jm-legend">{header}{cells(shown)}</table>'
    if not folded:
        return table_
    kinds = " and ".join(
        f"{sum(r.kind == k for r in folded)} more {k}puts" for k in ("in", "out") if any(r.kind == k for r in folded)
    )
    return (
        f'{table_}<details class="jm-details jm-legend-more"><summary class="jm-muted">{escape(kinds)}</summary>'
        f'<table class="jm-table jm-legend">{header}{cells(folded)}</table></details>'
    )


_WALKS.update(
    {
        Listing: _listing,
        Legend: lambda b, ids: _legend(b.rows),
        CodeBlock: _code_block,
        Kernels: _kernels,
        KeyValues: _key_values,
        Hint: lambda b, ids: f'<div class="jm-hint">{escape(b.text)}</div>',
        Fold: lambda b, ids: f'<details class="{escape(b.css)}">{_summary(b)}{html(b.blocks, ids)}</details>',
        Group: lambda b, ids: f'<div class="{escape(b.css)}">{html(b.blocks, ids)}</div>',
        Sentence: lambda b, ids: f'<div class="{escape(b.css)}">{_bold(words_html(b.words), b.bold)}</div>',
        Note: lambda b, ids: f'<div class="jm-more">{escape(b.text)}</div>',
        Table: lambda b, ids: _table(b),
        Bindings: _bindings,
        Prerendered: lambda b, ids: b.html(),
        Grid: lambda b, ids: _grid(b),
        Headline: lambda b, ids: (
            f'<div class="{escape(b.css)}">{escape(b.before)}<b class="jm-name">{escape(b.name)}</b>{escape(b.after)}</div>'
        ),
        Items: lambda b, ids: _items(b),
        Sections: lambda b, ids: html(b.blocks, ids),
        Only: lambda b, ids: html(b.blocks, ids) if b.medium == "html" else "",
        Heading: lambda b, ids: _heading(b),
        Labelled: lambda b, ids: _labelled(b),
        Paragraph: lambda b, ids: _paragraph(b),
        Snippet: lambda b, ids: _snippet(b),
        Section: lambda b, ids: _section(b, ids),
        Footer: lambda b, ids: _footer(b),
        Card: lambda b, ids: f'<div class="{escape(b.css)}">{html(b.blocks, ids)}</div>',
    }
)


# ----------------------------------------------------------------------------------------------
# a card


def _bold(html: str, bold: bool) -> str:
    return f"<b>{html}</b>" if bold else html


def _class(css: str) -> str:
    return f' class="{escape(css)}"' if css else ""


def _heading(block: Heading) -> str:
    badge = escape(block.badge)
    tag = f"{theme.plain_only(' ·')} <span{_class(block.tag_css)}>{escape(block.tag)}</span>" if block.tag else ""
    # the badge's words in capitals in the markup, not only by the stylesheet (gone when untrusted)
    return f'<h4><span class="jm-badge jm-{badge}">{badge.upper()}</span> {escape(block.title)}{tag}</h4>'


def _labelled(block: Labelled) -> str:
    title = f' title="{escape(block.title)}"' if block.title else ""
    shown = f" <code{_class(block.code_css)}>{code(block.code)}</code>" if block.code and block.code.text else ""
    return f'<div{_class(block.css)}{title}><span class="jm-muted">{escape(block.label)}</span>{shown}</div>'


def _paragraph(block: Paragraph) -> str:
    tag = escape(block.tag)
    data = "".join(_key(name, value) for name, value in block.data)
    return f"<{tag}{_class(block.css)}{data}>{words_html(block.words)}</{tag}>"


def _snippet(block: Snippet) -> str:
    language = f" jm-{escape(block.language)}" if block.language else ""
    return f'<pre class="jm-block{language}">{chr(10).join(code(line) for line in block.lines)}</pre>'


def _section(block: Section, ids: ContentIds) -> str:
    title = f"<b>{escape(block.title)}</b>" if block.title else ""
    note = f"<div{_class(block.note_css)}>{words_html(block.note)}</div>" if str(block.note) else ""
    return f"<div{_class(block.css)}>{title}{note}{html(block.blocks, ids)}</div>"


def _footer(block: Footer) -> str:
    links = [
        f'<a href="{escape(link.href)}" target="_blank" rel="noopener">{escape(link.text)}</a>'
        if link.href
        else f"{escape(link.lead)}<code>{escape(link.text)}</code>"
        if link.path
        else escape(link.text)
        for link in block.links
    ]
    return f"<div{_class(block.css)}>{' · '.join(links)}</div>"


# ----------------------------------------------------------------------------------------------
# figures and lists


def _items(block: Items) -> str:
    css = f' class="{escape(block.item_css)}"' if block.item_css else ""
    keys = block.keys or ("",) * len(block.items)
    items = "".join(
        f"<li{css}{_key(block.key_name, key)}>{words_html(item)}</li>"
        for item, key in zip(block.items, keys, strict=True)
    )
    return f'<ul class="{escape(block.css)}">{items}</ul>' if block.css else f"<ul>{items}</ul>"


def _key(name: str, value: str) -> str:
    return f' data-{escape(name)}="{escape(value)}"' if name else ""


def _grid(block: Grid) -> str:
    swatches = " ".join(
        f'<span class="jm-key"><svg width="10" height="10"><rect class="jm-bar jm-bar-{escape(name)}" width="10" '
        f'height="10"/></svg> {escape(name)}</span>'
        for name in block.swatches
    )
    align = block.align  # a column past its declaration: "" (the stylesheet decides)
    header = "".join(f"<th{_aligned(align[i : i + 1])}>{escape(h)}</th>" for i, h in enumerate(block.header))
    header += f"<th>{swatches}</th>" if swatches else ""
    keys = block.keys or ("",) * len(block.rows)
    classes = block.row_css or ("",) * len(block.rows)
    rows = "".join(
        f"<tr{_class(css)}{_key(block.key_name, key)}>{''.join(_grid_cell(c, align[i : i + 1]) for i, c in enumerate(row))}</tr>"
        for row, key, css in zip(block.rows, keys, classes, strict=True)
    )
    css = f"jm-table {block.css}" if block.css else "jm-table"
    return f'<table class="{escape(css)}"><tr>{header}</tr>{rows}</table>'


def _grid_cell(cell, align: str = "") -> str:
    if isinstance(cell, Bar):
        return f"<td>{bar_svg(cell)}</td>"
    if isinstance(cell, Stacked):
        return f"<td>{stacked_svg(cell)}</td>"
    return _cell(cell, align)


def _scale(value: float, largest: float) -> float:
    return 0.0 if largest <= 0 else max(1.0, BAR_WIDTH * value / largest)


def bar_svg(bar: Bar) -> str:
    """A bar ``BAR_WIDTH`` px long for its column's largest, a whisker across it from low to high."""
    width, low, high = (_scale(v, bar.largest) for v in (bar.value, bar.low, bar.high))
    middle = BAR_HEIGHT / 2
    label = escape(bar.label)
    return (
        f'<svg class="jm-bars" width="{BAR_WIDTH + 4}" height="{BAR_HEIGHT}" role="img" aria-label="{label}">'
        f"<title>{label}</title>"
        f'<rect class="jm-bar {escape(bar.css)}" x="0" y="2" width="{width:.1f}" height="{BAR_HEIGHT - 4}"/>'
        f'<line class="jm-whisker" x1="{low:.1f}" x2="{high:.1f}" y1="{middle}" y2="{middle}"/>'
        f'<line class="jm-whisker" x1="{low:.1f}" x2="{low:.1f}" y1="{middle - 3}" y2="{middle + 3}"/>'
        f'<line class="jm-whisker" x1="{high:.1f}" x2="{high:.1f}" y1="{middle - 3}" y2="{middle + 3}"/>'
        "</svg>"
    )


def stacked_svg(stacked: Stacked) -> str:
    """The parts end to end, ``BAR_WIDTH`` px for the column's largest total; a part of nothing is left out."""
    x = 0.0
    pieces = []
    for name, value, label in stacked.parts:
        width = 0.0 if stacked.largest <= 0 else BAR_WIDTH * value / stacked.largest
        if width <= 0:
            continue
        pieces.append(
            f'<rect class="jm-bar jm-bar-{escape(name)}" x="{x:.1f}" y="2" width="{width:.1f}" '
            f'height="{BAR_HEIGHT - 4}"><title>{escape(label)}</title></rect>'
        )
        x += width
    total = escape(stacked.label)
    return (
        f'<svg class="jm-bars" width="{BAR_WIDTH + 4}" height="{BAR_HEIGHT}" role="img" aria-label="{total}">'
        f"<title>{total}</title>{''.join(pieces)}</svg>"
    )


# ----------------------------------------------------------------------------------------------
# a log of compilations


def _lead(block: Lead) -> str:
    after = f"<span{_class(block.after_css)}>{words_html(block.after)}</span>" if str(block.after) else ""
    return f"<div{_class(block.css)}><b>{words_html(block.words)}</b>{after}</div>"


def _tally(block: Tally) -> str:
    if not block.counts:
        return ""
    chips = "".join(
        f'<span class="{escape(block.item_css)}{" jm-selected" if name == block.selected else ""}" '
        f'data-function="{escape(name)}" data-count="{count}"><code>{escape(name)}</code> ×{count}</span>'
        for name, count, _ in block.counts
    )
    return f"<div{_class(block.css)}>{chips}</div>"


def _compilations(block: Compilations) -> str:
    head = "".join(
        f"<th{_class('jm-left' if side == '<' else '')}>{escape(label)}</th>"
        for label, side in zip(block.header, block.align, strict=True)
    )
    rows = "".join(_compilation(row) for row in block.rows)
    return f'<table class="jm-table {escape(block.css)}"><tr>{head}</tr>{rows}</table>'


def _occurrence(occurrence: Occurrence) -> str:
    causes = "; ".join(words_html(message) for message in occurrence.messages)
    return f"#{occurrence.number} {escape(occurrence.clock)} {escape(occurrence.site)}: {causes}"


def _compilation_causes(row: CompilationRow) -> str:
    """The causes, the group's first and latest compilations (folded), remarks, JAX's own words."""
    shown = "".join(_cause(cause) for cause in row.causes)
    if row.occurrences:
        shown += (
            f'<details class="jm-recompile-occurrences"><summary class="jm-muted">{escape(row.fold)}</summary>'
            + "".join(f'<div class="jm-{escape(o.label)}">{_occurrence(o)}</div>' for o in row.occurrences)
            + "</details>"
        )
    shown += "".join(f"<div{_class(r.css)}>{escape(r.lead)}{words_html(r.words)}</div>" for r in row.remarks)
    if row.raw_shown:
        shown += (
            '<details class="jm-raw"><summary>JAX\'s explanation</summary>'
            f'<pre class="jm-block">{escape(row.raw)}</pre></details>'
        )
    return shown


def _compilation(row: CompilationRow) -> str:
    raw_title = f' title="{escape("JAX: " + row.raw)}"' if row.raw else ""  # JAX's own words, on hover
    internal = f' <span class="jm-muted">{escape(row.internal)}</span>' if row.internal else ""
    # ×N stays beside the name: a no-break space between them
    times = f'&nbsp;<span class="jm-recompile-times">×{row.count}</span>' if row.count > 1 else ""
    badge = ""
    if row.cache is not None and row.cache_hit:
        badge = f'<div class="jm-persistent-hit">{escape(row.cache[0])}</div>'
    elif row.cache is not None:
        badge = f'<div class="jm-muted jm-persistent-miss" title="{escape(row.cache[1])}">{escape(row.cache[0])}</div>'
    return (
        f'<tr class="jm-recompile-row" data-function="{escape(row.function)}" data-kinds="{escape(row.kinds)}" '
        f'data-count="{row.count}">'
        f'<td class="jm-n" style="white-space:nowrap">{escape(row.numbers)}</td>'
        f'<td class="jm-time">{escape(row.clock)}</td>'
        f'<td class="jm-fn"{LEFT} title="{escape(row.defined)}"><code>{escape(row.function)}</code>{times}{internal}</td>'
        f'<td class="jm-site"{LEFT} title="{escape(row.site_title)}">{escape(row.site)}</td>'
        f'<td class="jm-causes"{LEFT}{raw_title}>{_compilation_causes(row)}</td>'
        f'<td class="jm-ms" title="{escape(row.timing)}">{escape(row.seconds)}{badge}</td>'
        "</tr>"
    )


def _cause(cause: CauseLine) -> str:
    argument = f' data-argument="{escape(cause.argument)}"' if cause.argument else ""
    detail = f' title="{escape(cause.detail)}"' if cause.detail else ""
    label = f'<span class="jm-kind">{escape(cause.label)}</span>{theme.plain_only(": ")} ' if cause.label else ""
    return f'<div class="jm-cause jm-cause-{escape(cause.kind)}"{argument}{detail}>{label}{words_html(cause.message)}</div>'


_WALKS.update(
    {
        Lead: lambda b, ids: _lead(b),
        Flags: lambda b, ids: "".join(f"<div{_class(b.css)}>⚠ {words_html(item)}</div>" for item in b.items),
        Tally: lambda b, ids: _tally(b),
        Compilations: lambda b, ids: _compilations(b),
    }
)
