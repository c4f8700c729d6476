"""``JaxprReport`` -> HTML and text: a ``JaxprView`` says how a report is shown (which stage, which
views beside the listing, how many equations); the functions here are pure functions of the view.

>>> import jax.numpy as jnp
>>> from jaxmagic.tracing.call import Call
>>> from jaxmagic.tracing.stages import trace
>>> report = trace(Call(jnp.sin, (jnp.ones(2),), {}))
>>> view = JaxprView(report, stage="hlo", show_cost=True)
>>> view
JaxprView(<JaxprReport sin: 1 equation · sin ×1 · (f32[2]) -> (f32[2])>, stage='hlo', show_cost=True)
>>> "bytes accessed" in view.to_text(), "bytes accessed" in report.to_text()
(True, False)

The jaxpr view is a listing: one line per equation, highlighted by jaxmagic's jaxpr lexer, the
user's source line beside it, nested jaxprs (inner jit, cond branches, loop bodies) collapsible
in HTML and indented in text. StableHLO and HLO views show the module text, highlighted.
"""

from __future__ import annotations

import dataclasses
import re

from jaxmagic.errors import UsageProblem
from jaxmagic.render import blocks_html, blocks_text, theme
from jaxmagic.render import collectives as collectives_view
from jaxmagic.render import compile_time as compile_time_view
from jaxmagic.render import hlo as hlo_view
from jaxmagic.render import peak_memory as peak_view
from jaxmagic.render import profile as profile_view
from jaxmagic.render import remat as remat_view
from jaxmagic.render import values as values_view
from jaxmagic.render.blocks import (
    Block,
    Code,
    CodeBlock,
    CodeRow,
    EquationRow,
    Fold,
    Hint,
    KeyValues,
    Legend,
    LegendRow,
    Listing,
    Nested,
    NoteRow,
    Place,
    PlaceRow,
    Prerendered,
    Repeat,
    code_lines,
)
from jaxmagic.render.theme import escape
from jaxmagic.report import Report
from jaxmagic.tracing.listing import Namer, Record, listing
from jaxmagic.tracing.stages import STAGES, JaxprReport
from jaxmagic.words import units
from jaxmagic.words.untrusted import value_text

DEFAULT_MAX_EQNS = 400

MAX_MODULE_LINES = 600
# The row above equations that no line of the user's code made (JAX's own work for a transform, a
# library's wrapper such as the scan nnx.scan makes)
NO_LINE_HEADING = "(no line of yours: made by JAX or a library)"
MAX_MODULE_CHARACTERS = 60_000  # of StableHLO / HLO text shown (10,000 parameters make very long lines)
MAX_LEGEND_ROWS = 32  # inputs, and outputs, named under the summary; the rest are counted


@dataclasses.dataclass(repr=False, eq=False)
class JaxprView(Report):
    """How a ``JaxprReport`` is shown: ``stage`` (``jaxpr``, ``stablehlo`` or ``hlo``),
    ``show_source`` (the user's line beside each equation), ``show_cost`` (XLA's estimate),
    ``max_eqns`` (equations listed; the report keeps them all), and the views beside the listing:
    ``show_values``, ``show_memory``, ``show_collectives``. What ``%jaxpr`` displays; it shows
    itself like a report (``to_text()``, ``to_html()``, rich in a notebook) and computes what it
    shows when first shown, or at once with ``prepare()``.
    """

    _renderer = "jaxmagic.render.jaxpr"

    report: JaxprReport
    stage: str = "jaxpr"
    show_source: bool = True
    show_cost: bool = False
    max_eqns: int = DEFAULT_MAX_EQNS
    show_values: bool = False
    show_memory: bool = False
    show_collectives: bool = False

    def __post_init__(self) -> None:
        if self.stage not in STAGES:
            raise UsageProblem(
                f"unknown stage {self.stage!r}; choose one of: {', '.join(STAGES)}.",
                example="%jaxpr --stage hlo f(x)",
            )

    @classmethod
    def default(cls, report: JaxprReport) -> "JaxprView":
        """What a report shows on its own: the view the user asked ``%jaxpr`` for (``asked_view``), or
        the jaxpr with source lines (at most ``DEFAULT_MAX_EQNS`` equations); and beside it what the
        report has computed since: the
        values (``value_run``), the peak memory (``peak``, ``residuals`` and
        ``checkpoint_policies``, as ``prepare(memory=True)`` computes them), the communication
        (``collectives``); and, as in any view, what compiling cost and the profile when it was
        traced with them. Showing it evaluates and compiles nothing new.

        >>> import jax.numpy as jnp
        >>> from jaxmagic.tracing.call import Call
        >>> from jaxmagic.tracing.stages import trace
        >>> report = trace(Call(jnp.sin, (jnp.ones(2),), {}))
        >>> JaxprView.default(report).show_values
        False
        >>> _ = report.values
        >>> JaxprView.default(report).show_values
        True
        """
        shown = report.asked_view if isinstance(report.asked_view, cls) else cls(report)
        return dataclasses.replace(
            shown,
            show_values=shown.show_values or report.computed("value_run"),
            show_memory=shown.show_memory
            or all(report.computed(name) for name in ("peak", "residuals", "checkpoint_policies")),
            show_collectives=shown.show_collectives or report.computed("collectives"),
        )

    def prepare(self) -> "JaxprView":
        """Compute now what this view shows (evaluating, lowering, compiling), so that a failure
        shows here rather than while the view is drawn."""
        self.report.prepare(
            values=self.show_values,
            memory=self.show_memory,
            collectives=self.show_collectives,
            stablehlo=self.stage == "stablehlo",
            compiled=self.stage == "hlo" or self.show_cost or self.report.trace_samples is not None,
        )
        return self

    def __repr__(self) -> str:
        changed = [
            f"{field.name}={getattr(self, field.name)!r}"
            for field in dataclasses.fields(self)
            if field.name != "report" and getattr(self, field.name) != field.default
        ]
        return f"JaxprView({', '.join([repr(self.report), *changed])})"


def as_view(shown: JaxprReport | JaxprView) -> JaxprView:
    """``shown`` itself when a view; a report's default view (``JaxprView.default``) otherwise."""
    return shown if isinstance(shown, JaxprView) else JaxprView.default(shown)


def _records(view: JaxprView, namer: Namer | None = None) -> list[Record]:
    report = view.report
    return list(
        listing(
            report.jaxpr,
            limit=view.max_eqns,
            with_source=view.show_source,
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


def _module_text(view: JaxprView) -> tuple[str, int]:
    """The StableHLO or HLO text, shortened to ``MAX_MODULE_LINES``; and how many lines were cut."""
    report = view.report
    text = report.stablehlo if view.stage == "stablehlo" else hlo_view.readable_hlo(report.hlo)
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
# the report, once, as blocks; then as text and as HTML


def text(report: JaxprReport | JaxprView, *, color: bool = False, shown: tuple[Block, ...] | None = None) -> str:
    """A view, or a report's default view, as terminal text (ANSI colours with ``color=True``);
    ``shown``: its blocks, when already made."""
    return blocks_text.text(shown if shown is not None else blocks(report), color=color)


def html(report: JaxprReport | JaxprView, *, shown: tuple[Block, ...] | None = None) -> str:
    """A view, or a report's default view, as self-contained HTML: scoped CSS, collapsible nested
    jaxprs; ``shown``: its blocks, when already made."""
    body = blocks_html.html(shown if shown is not None else blocks(report))
    return f'<div class="{theme.ROOT_CLASS} jm-jaxpr-report">{theme.style_tag()}{body}</div>'


def blocks(shown: JaxprReport | JaxprView) -> tuple[Block, ...]:
    """A view (or a report's default view) as blocks, in the order both walks show them: the
    summary, the views asked for (values, memory, communication, compile time, profile), the
    listing or the module, the costs."""
    view = as_view(shown)
    report = view.report
    out: list[Block] = [Prerendered(lambda: _summary_text(report), lambda: _summary_html(view))]
    out += _views(view)
    if view.stage == "jaxpr":
        namer = Namer()
        records = _records(view, namer)
        rows = legend(report, namer)
        body: list[Block] = [Legend(tuple(LegendRow(*row) for row in rows)), _listing(view, records, rows)]
        if report.profile is not None or view.show_memory:  # that view answers; the listing follows, folded
            n = report.n_eqns
            summary = f"the listing · {units.format_count(n)} equation{'s' * (n != 1)}"
            body = [Fold(summary, tuple(body), css="jm-details jm-listing-fold")]
        out += body
    else:
        module, cut = _module_text(view)
        note = f"… {cut} more lines (the report's .{view.stage} holds them all)" if cut else ""
        module_block = CodeBlock(view.stage, tuple(code_lines(module.split("\n"), view.stage)), note)
        if view.stage == "hlo":
            out += hlo_view.blocks(report)
            out += [Fold("the whole module", (module_block,), css="jm-nested")]
        else:
            out.append(module_block)
    if view.show_cost:
        out.append(KeyValues("XLA estimate", tuple(_cost_rows(report))))
    return tuple(out)


def _summary_text(report) -> str:
    static = static_text(report)
    return report.summary + (f" · {static}" if static else "")


def _views(view: JaxprView) -> list[Block]:
    """The views asked for, between the summary and the listing, in the order they answer: what
    the values were, the memory, the communication, what compiling cost, where the time goes."""
    report = view.report
    views: list[Block] = []
    if view.show_values:
        views += values_view.blocks(report)
    if view.show_memory:
        views += peak_view.blocks(report.peak)
        views += remat_view.blocks(report)
    if view.show_collectives:
        views += collectives_view.blocks(report.collectives, report.profile)
    hint = compile_time_view.unrolled_hint(report) if view.stage == "jaxpr" else ""
    if report.trace_samples is not None:
        views += compile_time_view.blocks(report)
    elif hint:
        views.append(Hint(hint))
    if report.profile is not None:
        views += profile_view.blocks(report.profile)
    return views


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


def _summary_html(view: JaxprView) -> str:
    report = view.report
    counts = ", ".join(f"{escape(name)}&nbsp;×{count}" for name, count in report.top_primitives())
    ins = escape(types_text(report.in_types) or "()")
    outs = escape(types_text(report.out_types) or "()")
    stage = "" if view.stage == "jaxpr" else f' · <span class="jm-muted">{escape(view.stage)}</span>'
    static = static_text(report)
    static_html = f' · <span class="jm-static"><code>{escape(static)}</code></span>' if static else ""
    return (
        f'<div class="jm-summary"><b class="jm-name">{escape(report.name)}</b>: '
        f'<span class="jm-count">{report.n_eqns} equation{"s" * (report.n_eqns != 1)}</span>'
        f"{' · ' + counts if counts else ''} · <code>({ins}) → ({outs})</code>{static_html}{stage}</div>"
    )


def static_text(report) -> str:
    """The static arguments jit traced with: ``n = 3 (static), mode = 'fast' (static)``. An object
    Python shows only by its address is named as the user wrote it (``self = sc``), or by its class.

    >>> from types import SimpleNamespace
    >>> class Scaler: ...
    >>> static_text(SimpleNamespace(static_arguments=[("self", Scaler()), ("n", 3)], receiver="sc"))
    'self = sc (static), n = 3 (static)'
    >>> static_text(SimpleNamespace(static_arguments=[("config", Scaler())], receiver=None))
    'config = a Scaler object (static)'
    """
    receiver = getattr(report, "receiver", None)

    def shown(position: int, value) -> str:
        text = value_text(value, 10_000)
        if not _ADDRESS_REPR.search(text):
            return units.shorten(text, 40)
        return receiver if position == 0 and receiver else f"a {type(value).__name__} object"

    return ", ".join(
        f"{name} = {shown(i, value)} (static)"
        for i, (name, value) in enumerate(getattr(report, "static_arguments", []))
    )


_ADDRESS_REPR = re.compile(r" (?:object )?at 0x[0-9a-fA-F]+>")


FILTER_PRIMITIVES = 6  # the most frequent primitives offered as filters
FILTER_FROM = 10  # equations from which a listing offers them


def _made_by(record: Record) -> tuple[str, ...]:
    """An equation's call chain, outermost first, for its hover text."""
    return tuple(f"{line.label} in {line.function}: {line.text}" for line in record.traceback())


def _listing(view: JaxprView, records: list[Record], legend_rows) -> Listing:
    """The listing's records as rows: nested jaxprs and repeated blocks as rows holding theirs."""
    report = view.report
    filtered = report.n_eqns >= FILTER_FROM and len(report.primitive_counts) > 1
    filters = tuple(name for name, _ in report.top_primitives(FILTER_PRIMITIVES)) if filtered else ()
    titles = {var: f"{kind}: {name} ({kind_type})" for kind, var, name, kind_type in legend_rows}
    codes = [r.text for r in records if r.kind in ("open", "eqn", "close")]
    values = values_view.equation_values(report) if view.show_values else {}
    rows = _Rows(iter(code_lines(codes, "jaxpr", titles)), values)
    for r in records:
        getattr(rows, r.kind)(r)
    return Listing(tuple(rows.stack[0]), filters)


class _Rows:
    """Records to rows, one method per record kind: each nested jaxpr and repeated block gathers
    its rows until its end, then becomes one row of the block around it."""

    def __init__(self, lines, values: dict):
        self.lines, self.values = lines, values
        self.stack: list[list] = [[]]  # the rows of each block still open, the outermost first
        self.opened: list[tuple[Record, Code | None]] = []  # each open block's record and header

    def open(self, r: Record) -> None:
        if r.depth == 0:
            self.stack[-1].append(CodeRow(0, next(self.lines)))
            return
        self.opened.append((r, next(self.lines)))
        self.stack.append([])

    def repeat(self, r: Record) -> None:
        self.opened.append((r, None))
        self.stack.append([])

    def eqn(self, r: Record) -> None:
        if r.opens_group:
            heading, count = group_heading(r)
            place = f"{r.source.file}:{r.source.line}" if r.source is not None else ""
            self.stack[-1].append(PlaceRow(r.depth, Place(heading, count, place, _made_by(r))))
        shown, first = self.values.get(r.path, ("", False))
        label = r.source.label if r.source is not None else ""
        self.stack[-1].append(EquationRow(r.depth, next(self.lines), r.primitive, label, shown, first))

    def more(self, r: Record) -> None:
        self.stack[-1].append(NoteRow(r.depth, r.text))

    def close(self, r: Record) -> None:
        self.stack[-1].append(CodeRow(r.depth, next(self.lines), lead="  "))
        if r.depth > 0:
            self.repeat_end(r)

    def repeat_end(self, r: Record) -> None:
        """Ends the innermost open block: its rows become one ``Nested`` or ``Repeat`` row."""
        rows = tuple(self.stack.pop())
        record, header = self.opened.pop()
        if record.kind == "repeat":
            self.stack[-1].append(Repeat(record.depth, repeat_text(record), record.times - 1, rows))
        else:
            assert header is not None  # a nested block opens with its header line
            n = f"{record.n_eqns} equation{'s' * (record.n_eqns != 1)}"
            self.stack[-1].append(Nested(record.depth, record.title, landmark_text(record.landmark), n, header, rows))
