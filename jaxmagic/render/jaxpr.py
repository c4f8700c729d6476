"""``JaxprReport`` -> HTML and text. Pure functions of the report.

The jaxpr view is a listing: one line per equation, highlighted by jaxmagic's jaxpr lexer, the
user's source line beside it, nested jaxprs (inner jit, cond branches, loop bodies) collapsible
in HTML and indented in text. StableHLO and HLO views show the module text, highlighted.
"""

from __future__ import annotations

import re
from typing import Iterable

from pygments import highlight
from pygments.formatters import Terminal256Formatter

from jaxmagic.render import collectives as collectives_view
from jaxmagic.render import compile_time as compile_time_view
from jaxmagic.render import hlo as hlo_view
from jaxmagic.render import peak_memory as peak_view
from jaxmagic.render import profile as profile_view
from jaxmagic.render import remat as remat_view
from jaxmagic.render import theme
from jaxmagic.render import values as values_view
from jaxmagic.render.ids import ContentIds
from jaxmagic.render.lexers import LEXERS
from jaxmagic.render.terminal import table
from jaxmagic.render.theme import escape
from jaxmagic.tracing.listing import Namer, Record, listing
from jaxmagic.words import units

MAX_MODULE_LINES = 600
# The row above equations that no line of the user's code made (JAX's own work for a transform, a
# library's wrapper such as the scan nnx.scan makes)
NO_LINE_HEADING = "(no line of yours: made by JAX or a library)"
MAX_MODULE_CHARACTERS = 60_000  # of StableHLO / HLO text shown (10,000 parameters make very long lines)
MAX_LEGEND_ROWS = 32  # inputs, and outputs, named under the summary; the rest are counted
INDENT = "    "


def _records(report, namer: Namer | None = None) -> list[Record]:
    return list(
        listing(
            report.jaxpr,
            limit=report.max_eqns,
            with_source=report.show_source,
            cell_namer=report.cell_namer,
            title=report.name,
            namer=namer,
        )
    )


def legend(report, namer: Namer) -> list[tuple[str, str, str, str]]:
    """(``in`` or ``out``, the variable's name in the listing, what it stands for, its type), for
    the top-level inputs and outputs, as far as the report names them."""
    inner = report.jaxpr.jaxpr
    rows = []
    for kind, variables, names in (
        ("in", inner.invars, report.input_names),
        ("out", inner.outvars, report.output_names),
    ):
        if len(names) != len(variables):
            continue
        for var, name in zip(variables[:MAX_LEGEND_ROWS], names, strict=False):
            rows.append((kind, namer(var), _shortened(name), str(var.aval.str_short(short_dtypes=True))))
        if len(variables) > MAX_LEGEND_ROWS:
            more = len(variables) - MAX_LEGEND_ROWS
            held = "input_names" if kind == "in" else "output_names"
            rows.append((kind, "…", f"{more} more (the report's .{held} holds them all)", ""))
    return rows


MAX_NAME_CHARACTERS = 200  # of one input's or output's name (a dict key can be any string)


def _shortened(name: str) -> str:
    """``name``, cut with a count past ``MAX_NAME_CHARACTERS``.

    >>> _shortened("k" * 250)[-26:]
    'kkkk… (50 more characters)'
    """
    if len(name) <= MAX_NAME_CHARACTERS:
        return name
    return f"{name[:MAX_NAME_CHARACTERS]}… ({len(name) - MAX_NAME_CHARACTERS} more characters)"


def group_heading(record: Record) -> tuple[str, str]:
    """The row above a run of equations one source line made: ``# In [2] line 3: y = jnp.sin(x)
    [forward]``, and how many equations the run holds (nested ones included).

    >>> from jaxmagic.tracing.listing import Record
    >>> from jaxmagic.tracing.sources import SourceLine
    >>> line = SourceLine("<cell>", 3, "f", "y = jnp.sin(x)", cell="In [2]")
    >>> group_heading(Record("eqn", 0, source=line, derivative="forward", opens_group=True, group_eqns=2))
    ('# In [2] line 3: y = jnp.sin(x) [forward]', '2 equations')
    >>> group_heading(Record("eqn", 0, opens_group=True, group_eqns=8))
    ('# (no line of yours: made by JAX or a library)', '8 equations')
    """
    where = [w for w in (record.derivative, record.scope) if w]
    tag = f" [{' · '.join(where)}]" if where else ""
    n = record.group_eqns
    source = record.source if record.source is not None else NO_LINE_HEADING
    return f"# {source}{tag}", f"{units.format_count(n)} equation{'s' * (n != 1)}" if n else ""


def _module_text(report) -> tuple[str, int]:
    """The StableHLO or HLO text, shortened to ``MAX_MODULE_LINES``; and how many lines were cut."""
    text = report.stablehlo if report.stage == "stablehlo" else hlo_view.readable_hlo(report.hlo)
    lines = text.rstrip("\n").splitlines()
    kept, size = [], 0
    for line in lines[:MAX_MODULE_LINES]:
        if len(line) > MAX_MODULE_CHARACTERS // 8:
            line = line[: MAX_MODULE_CHARACTERS // 8] + f" … ({len(line) - MAX_MODULE_CHARACTERS // 8} more characters)"
        size += len(line) + 1
        if size > MAX_MODULE_CHARACTERS:
            break
        kept.append(line)
    return "\n".join(kept), len(lines) - len(kept)


def _cost_rows(report) -> list[tuple[str, str]]:
    cost, memory = report.cost, report.memory
    rows = []
    for key, label in (
        ("flops", "FLOPs"),
        ("transcendentals", "transcendentals"),
        ("bytes accessed", "bytes accessed"),
    ):
        if key in cost:
            value = cost[key]
            rows.append((label, units.format_bytes(value) if key == "bytes accessed" else units.format_count(value)))
    for key, label in (
        ("arguments", "arguments"),
        ("outputs", "outputs"),
        ("aliased", "aliased (donated)"),
        ("temporaries", "temporaries"),
        ("code", "generated code"),
    ):
        if key in memory:
            rows.append((f"memory: {label}", units.format_bytes(memory[key])))
    return rows


# ----------------------------------------------------------------------------------------------
# text


def text(report, *, color: bool = False) -> str:
    """The report as terminal text (ANSI colours with ``color=True``)."""
    parts = [report.summary + (f" · {static_text(report)}" if static_text(report) else "")]
    namer = Namer()
    values = values_view.equation_values(report) if report.show_values else None
    if report.stage == "jaxpr":
        body = "\n".join(_text_lines(_records(report, namer), values))
        rows = legend(report, namer)
        if rows:
            parts.append(table(None, [[f"{kind}:", var, name, kind_type] for kind, var, name, kind_type in rows]))
        lexer = LEXERS["jaxpr"]()
    else:
        body, cut = _module_text(report)
        if cut:
            body += f"\n… {cut} more lines (the report's .{report.stage} holds them all)"
        lexer = LEXERS[report.stage]()
    if color:
        body = highlight(body, lexer, Terminal256Formatter(style="default")).rstrip("\n")
    if report.stage == "hlo":
        parts.append(hlo_view.text(report))
    parts.append(body)
    if report.show_cost:
        rows = _cost_rows(report)
        width = max(len(k) for k, _ in rows) if rows else 0
        parts.append("\n".join(f"{k.ljust(width)}  {v}" for k, v in rows))
    parts[1:1] = _views_text(report)
    return "\n".join(parts)


def _views_text(report) -> list[str]:
    """The views asked for, between the summary and the listing, in the order they answer: what
    the values were, the memory, the communication, what compiling cost, where the time goes."""
    views = []
    if report.show_values:
        views.append(values_view.text(report))
    if report.show_memory:
        views += [t for t in (peak_view.text(report.peak), remat_view.text(report)) if t]
    if report.show_collectives:
        views.append(collectives_view.text(report.collectives, report.profile))
    hint = compile_time_view.unrolled_hint(report) if report.stage == "jaxpr" else ""
    if report.trace_samples is not None:
        views.append(compile_time_view.text(report))
    elif hint:
        views.append(hint)
    if report.profile is not None:
        views.append(profile_view.text(report.profile))
    return views


def _views_html(report) -> str:
    """The same views as ``_views_text``, in the same order, as HTML."""
    views = []
    if report.show_values:
        views.append(values_view.html(report))
    if report.show_memory:
        views += [peak_view.html(report.peak), remat_view.html(report)]
    if report.show_collectives:
        views.append(collectives_view.html(report.collectives, report.profile))
    hint = compile_time_view.unrolled_hint(report) if report.stage == "jaxpr" else ""
    if report.trace_samples is not None:
        views.append(compile_time_view.html(report))
    elif hint:
        views.append(f'<div class="jm-hint">{escape(hint)}</div>')
    if report.profile is not None:
        views.append(profile_view.html(report.profile))
    return "".join(views)


def landmark_text(mark) -> str:
    """Words for a nested block's ``Landmark``: ``runs when true``, ``loop body: 1 carried, 1 per step``.

    >>> from jaxmagic.tracing.listing import Landmark
    >>> landmark_text(Landmark("branch", index=1, cases=2)), landmark_text(Landmark("loop_body", carried=2, per_step=1))
    ('runs when true', 'loop body: 2 carried, 1 per-step slice')
    """
    if mark is None:
        return ""
    if mark.kind == "branch":
        named = f": {mark.name}" if mark.name and mark.name != "<lambda>" else ""
        if mark.cases == 2:
            return ("runs when true" if mark.index == 1 else "runs when false") + named
        return f"case {mark.index}{named}"
    if mark.kind == "loop_body":
        parts = [f"{mark.carried} carried"]
        if mark.per_step:
            parts.append(f"{mark.per_step} per-step slice{'s' * (mark.per_step != 1)}")
        return "loop body: " + ", ".join(parts)
    if mark.kind == "loop_condition":
        return "loop condition"
    if mark.kind == "call" and mark.name:
        return f"calls {mark.name}"
    return ""


def repeat_text(record: Record) -> str:
    """The row standing for a block's further copies: ``layer ×50, 6 equations each``.

    >>> from jaxmagic.tracing.sources import SourceLine
    >>> line = SourceLine("<cell>", 3, "f", "x = jnp.tanh(x)", cell="In [2]")
    >>> repeat_text(Record("repeat", 0, n_eqns=2, hidden=98, times=50, source=line))
    'In [2] line 3 ×50, 2 equations each'
    """
    what = record.title or (record.source.label if record.source is not None else "this block")
    return f"{what} ×{record.times}, {record.n_eqns} equation{'s' * (record.n_eqns != 1)} each"


def _landmark_html(mark) -> str:
    text = landmark_text(mark)
    return f' <span class="jm-landmark">({escape(text)})</span>' if text else ""


def _text_lines(records: Iterable[Record], values: dict | None = None) -> Iterable[str]:
    folded = None  # depth of the repeat being left out (a terminal cannot unfold it)
    for r in records:
        pad = INDENT * (2 * r.depth)
        if folded is not None:
            if r.kind == "repeat_end" and r.depth == folded:
                folded = None
            continue
        if r.kind == "repeat":
            folded = r.depth
            yield f"{pad}{INDENT}⋯ {repeat_text(r)}: {r.times - 1} more copies left out"
        elif r.kind == "open":
            if r.depth == 0:
                yield r.text
            else:
                mark = landmark_text(r.landmark)
                yield f"{pad}▸ {r.title}{f' ({mark})' if mark else ''}: {r.text}"
        elif r.kind == "eqn":
            if r.opens_group:
                heading, count = group_heading(r)
                yield f"{pad}{INDENT}{heading}" + (f"  · {count}" if count else "")
            shown, first = (values or {}).get(r.path, ("", False))
            value = f"   ⇒ {shown}{'   ◀ first NaN/inf' if first else ''}" if shown else ""
            yield f"{pad}{INDENT}{r.text}{value}"  # whole: a terminal has no hover
        elif r.kind == "more":
            yield f"{pad}{INDENT}{r.text}"
        elif r.kind == "close":
            yield f"{pad}  {r.text}"


# ----------------------------------------------------------------------------------------------
# HTML


def html(report) -> str:
    """The report as self-contained HTML: scoped CSS, no JavaScript, collapsible nested jaxprs."""
    summary = _summary_html(report)
    if report.stage == "jaxpr":
        namer = Namer()
        filtered = report.n_eqns >= FILTER_FROM and len(report.primitive_counts) > 1
        primitives = [name for name, _ in report.top_primitives(FILTER_PRIMITIVES)] if filtered else []
        records = _records(report, namer)
        rows = legend(report, namer)
        names = {var: f"{kind}: {name} ({kind_type})" for kind, var, name, kind_type in rows}
        values = values_view.equation_values(report) if report.show_values else None
        body = _legend_html(rows) + _listing_html(records, primitives, names, values)
    else:
        module, cut = _module_text(report)
        highlighted = highlight(module, LEXERS[report.stage](), theme.html_formatter())
        more = (
            f'<div class="jm-more">… {cut} more lines (the report\'s .{escape(report.stage)} holds them all)</div>'
            if cut
            else ""
        )
        body = f'<pre class="jm-block jm-{escape(report.stage)}">{highlighted}</pre>{more}'
        if report.stage == "hlo":
            body = (
                f'{hlo_view.html(report)}<details class="jm-nested"><summary><b>the whole module</b>'
                f"</summary>{body}</details>"
            )
    cost = _cost_html(report) if report.show_cost else ""
    profiled = _views_html(report)
    if report.profile is not None and report.stage == "jaxpr":  # the profile answers; the listing follows, folded
        n = report.n_eqns
        body = (
            f'<details class="jm-details jm-listing-fold"><summary class="jm-muted">the listing · '
            f"{units.format_count(n)} equation{'s' * (n != 1)}</summary>{body}</details>"
        )
    return f'<div class="{theme.ROOT_CLASS} jm-jaxpr-report">{theme.style_tag()}{summary}{profiled}{body}{cost}</div>'


LEGEND_ROWS = 6  # inputs, then outputs, shown before the legend folds the rest


def _legend_html(rows) -> str:
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
            f'<tr title="{escape(name)}: {escape(kind_type)}"><td class="jm-muted">{escape(kind)}</td>'
            f'<td><code class="jm-var">{escape(var)}</code></td><td><code>{escape(name)}</code></td>'
            f'<td class="jm-muted"><code>{escape(kind_type)}</code></td></tr>'
            for kind, var, name, kind_type in chosen
        )

    shown, folded = [], []
    for kind in ("in", "out"):
        of_kind = [row for row in rows if row[0] == kind]
        shown += of_kind[:LEGEND_ROWS]
        folded += of_kind[LEGEND_ROWS:]
    table_ = f'<table class="jm-table jm-legend">{header}{cells(shown)}</table>'
    if not folded:
        return table_
    kinds = " and ".join(
        f"{sum(r[0] == k for r in folded)} more {k}puts" for k in ("in", "out") if any(r[0] == k for r in folded)
    )
    return (
        f'{table_}<details class="jm-details jm-legend-more"><summary class="jm-muted">{escape(kinds)}</summary>'
        f'<table class="jm-table jm-legend">{header}{cells(folded)}</table></details>'
    )


def types_text(types) -> str:
    """Types joined with commas, a run of equal ones (or of equal groups of up to four, as a
    list of layers gives) as one with its count.

    >>> types_text(["f32[16,16]"] * 50 + ["f32[4,16]"])
    'f32[16,16] ×50, f32[4,16]'
    >>> types_text(["f32[32]", "f32[32,32]"] * 3 + ["f32[8]"])
    '(f32[32], f32[32,32]) ×3, f32[8]'
    """
    types, parts, i = list(types), [], 0
    while i < len(types):
        best_period, best_times = 1, 1
        for period in range(1, 5):
            block = types[i : i + period]
            times = 1
            while types[i + times * period : i + (times + 1) * period] == block:
                times += 1
            if times > 1 and period * times > best_period * best_times:
                best_period, best_times = period, times
        block = types[i : i + best_period]
        one = block[0] if best_period == 1 else f"({', '.join(block)})"
        parts.append(one if best_times == 1 else f"{one} ×{best_times}")
        i += best_period * best_times
    return ", ".join(parts)


def _summary_html(report) -> str:
    counts = ", ".join(f"{escape(name)}&nbsp;×{count}" for name, count in report.top_primitives())
    ins = escape(types_text(report.in_types) or "()")
    outs = escape(types_text(report.out_types) or "()")
    stage = "" if report.stage == "jaxpr" else f' · <span class="jm-muted">{escape(report.stage)}</span>'
    static = static_text(report)
    static_html = f' · <span class="jm-static"><code>{escape(static)}</code></span>' if static else ""
    return (
        f'<div class="jm-summary"><b class="jm-name">{escape(report.name)}</b>: '
        f'<span class="jm-count">{report.n_eqns} equation{"s" * (report.n_eqns != 1)}</span>'
        f"{' · ' + counts if counts else ''} · <code>({ins}) → ({outs})</code>{static_html}{stage}</div>"
    )


def static_text(report) -> str:
    """The static arguments jit traced with: ``n = 3 (static), mode = 'fast' (static)``."""
    return ", ".join(
        f"{name} = {units.shorten(repr(value), 40)} (static)" for name, value in getattr(report, "static_arguments", [])
    )


# A variable as Pygments' jaxpr lexer writes it; a binder is followed by ``:`` and its type.
_VARIABLE = re.compile(r'<span class="jm-tnv">([A-Za-z]+)</span>(<span class="jm-tp">:</span>)?')
MAX_HIGHLIGHTED_VARIABLES = 1200  # past this, no hover highlight (its style would outweigh the listing)
FILTER_PRIMITIVES = 6  # the most frequent primitives offered as filters
FILTER_FROM = 10  # equations from which a listing offers them


def _linked(code: str, names: dict[str, str]) -> str:
    """Highlighted code with each variable marked by name (``data-v``), its binder as ``jm-def``,
    so the listing's stylesheet can light up a variable's definition and uses together; an input
    or output says on hover what it stands for (``names``: variable -> ``params['w1']``)."""

    def mark(found: re.Match) -> str:
        name, binder = found.group(1), found.group(2)
        kind = "jm-tnv jm-def" if binder else "jm-tnv"
        title = f' title="{escape(names[name])}"' if name in names else ""
        return f'<span class="{kind}" data-v="{name}"{title}>{name}</span>{binder or ""}'

    return _VARIABLE.sub(mark, code)


def _viewer_style(listing_id: str, variables: set[str], primitives: list[str]) -> str:
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
            f'{scope}:has(#{listing_id}-f{i}:checked) .jm-eqn:not([data-primitive="{primitive}"]),'
            f"{scope}:has(#{listing_id}-f{i}:checked) .jm-srcrow{{display:none}}"
        )
        rules.append(f"{scope}:has(#{listing_id}-f{i}:checked) .jm-eqn::after{{content:attr(data-src)}}")
    return f"<style>{''.join(rules)}</style>"


def _filter_bar(listing_id: str, primitives: list[str]) -> str:
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


JAXPR_DOCS = "https://docs.jax.dev/en/latest/jaxpr.html"
VIEWER_HINT = (
    '<div class="jm-muted jm-viewer-hint">hover a variable to see its uses; click ▸ to unfold · '
    f'<a href="{JAXPR_DOCS}" target="_blank" rel="noopener">how to read a jaxpr</a></div>'
)


def _made_by(record: Record) -> str:
    """An equation's call chain, outermost first, for its hover text."""
    return "\n".join(f"{line.label} in {line.function}: {line.text}" for line in record.traceback())


def _listing_html(
    records: list[Record],
    primitives: list[str] | None = None,
    names: dict | None = None,
    values: dict | None = None,
    ids: ContentIds | None = None,
) -> str:
    codes = [r.short_text() if r.kind == "eqn" else r.text for r in records if r.kind in ("open", "eqn", "close")]
    listing_id = (ids or ContentIds()).new("\n".join([*codes, *(primitives or [])]))
    highlighted = highlight("\n".join(codes), LEXERS["jaxpr"](), theme.html_formatter()).split("\n")
    highlighted = [_linked(code, names or {}) for code in highlighted]
    variables = {name for code in highlighted for name in re.findall(r'data-v="([A-Za-z]+)"', code)}
    primitives = (primitives or [])[:FILTER_PRIMITIVES]
    lines = iter(highlighted)
    out = [
        _viewer_style(listing_id, variables, primitives),
        f'<div class="jm-viewer" id="{listing_id}">',
        VIEWER_HINT,
        _filter_bar(listing_id, primitives),
        '<div class="jm-listing jm-code">',
    ]
    for r in records:
        pad = f' style="padding-left:{2 * r.depth + (1 if r.kind == "eqn" else 0)}ch"'
        if r.kind == "open":
            code = next(lines)
            if r.depth == 0:
                out.append(f'<div class="jm-l"{pad}><span class="jm-code">{code}</span></div>')
            else:
                n = f"{r.n_eqns} equation{'s' * (r.n_eqns != 1)}"
                out.append(
                    f'<details class="jm-nested"><summary style="padding-left:{2 * r.depth}ch">'
                    f'<b>{escape(r.title)}</b>{_landmark_html(r.landmark)} · {n} <span class="jm-muted">{code}</span></summary>'
                )
        elif r.kind == "eqn":
            code = next(lines)
            if r.opens_group:
                chain = _made_by(r)  # the calls that made this run of equations, on hover
                place = f"{r.source.file}:{r.source.line}" if r.source is not None else ""
                title = escape(f"made by:\n{chain}" if chain else place)
                heading, count = group_heading(r)
                out.append(
                    f'<div class="jm-l jm-srcrow"{pad}><span class="jm-src" title="{title}">{escape(heading)}</span>'
                    f'<span class="jm-muted">{escape(count)}</span></div>'
                )
            title = f' title="{escape(r.text)}"' if r.short_text() != r.text else ""  # whole on hover
            where = f' data-src="  # {escape(r.source.label)}"' if r.source is not None else ""
            shown, first = (values or {}).get(r.path, ("", False))
            value = (
                f'<span class="jm-value{" jm-nonfinite" if first else ""}">⇒ {escape(shown)}</span>' if shown else ""
            )
            out.append(
                f'<div class="jm-l jm-eqn" data-primitive="{escape(r.primitive)}"{where}{pad}{title}>'
                f'<span class="jm-code">{code}</span>{value}</div>'
            )
        elif r.kind == "repeat":
            out.append(
                f'<details class="jm-nested jm-repeat"><summary{pad}><b>{escape(repeat_text(r))}</b> '
                f'<span class="jm-muted">· {r.times - 1} more copies of the block above</span></summary>'
            )
        elif r.kind == "repeat_end":
            out.append("</details>")
        elif r.kind == "more":
            out.append(f'<div class="jm-more"{pad}>{escape(r.text)}</div>')
        elif r.kind == "close":
            code = next(lines)
            out.append(f'<div class="jm-l"{pad}><span class="jm-code">  {code}</span></div>')
            if r.depth > 0:
                out.append("</details>")
    out.append("</div></div>")
    return "".join(out)


def _cost_html(report) -> str:
    rows = "".join(f"<tr><td>{escape(k)}</td><td>{escape(v)}</td></tr>" for k, v in _cost_rows(report))
    return f'<table class="jm-table jm-cost"><tr><th>XLA estimate</th><th></th></tr>{rows}</table>'
