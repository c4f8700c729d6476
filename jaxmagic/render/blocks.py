"""The form a report is turned into once, for both of its views: blocks, rows, code spans and places.

A renderer builds a tuple of blocks from its report (``blocks(report)``); ``blocks_text`` and
``blocks_html`` each walk any such tuple, so what a view says is decided in one place and only
the markup differs. Code arrives as spans made from Pygments' tokens, never as highlighted HTML
read back.

>>> (line,) = code_lines(["b:f32[3] = sin a"], "jaxpr")
>>> [(s.text, s.token, s.variable, s.binder) for s in line.spans if s.variable]
[('b', 'nv', 'b', True), ('a', 'nv', 'a', False)]
>>> line.text
'b:f32[3] = sin a'
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, NamedTuple, Union

from pygments.lexers import PythonLexer
from pygments.token import STANDARD_TYPES, Name, Punctuation

from jaxmagic.render.lexers import LEXERS

LANGUAGES = {**LEXERS, "python": PythonLexer}  # a language's lexer: jaxmagic's own, and the user's Python

# ----------------------------------------------------------------------------------------------
# code spans


class Span(NamedTuple):
    """A piece of code: its ``text``, Pygments' short class of its token (``nv``, ``kt``; empty
    for plain text), and for a jaxpr variable its name, whether it is bound here, its hover text.
    (A named tuple: a listing of 1,000 equations makes some 10,000 of them.)"""

    text: str
    token: str = ""
    variable: str = ""
    binder: bool = False
    title: str = ""


@dataclass(frozen=True)
class Code:
    """One line of code as spans."""

    spans: tuple[Span, ...] = ()

    @property
    def text(self) -> str:
        return "".join(span.text for span in self.spans)

    @property
    def variables(self) -> set[str]:
        return {span.variable for span in self.spans if span.variable}


@functools.cache  # a few dozen token types, asked for once per token of every listing
def token_class(ttype) -> str:
    """Pygments' short CSS class of a token type, as its HTML formatter names it.

    >>> from pygments.token import Keyword, Name
    >>> token_class(Keyword.Type), token_class(Name.Variable.Magic)
    ('kt', 'vm')
    """
    name, suffix = STANDARD_TYPES.get(ttype), ""
    while name is None:
        suffix = ttype[-1] + suffix
        ttype = ttype.parent
        name = STANDARD_TYPES.get(ttype)
    return name + suffix


class _Lexed:
    """Lines lexed together, in one pass, when the first of them is asked for its spans."""

    def __init__(self, texts: list[str], language: str, titles: dict[str, str]):
        self.texts, self.language, self.titles = texts, language, titles
        self._lines: list[Code] | None = None

    def line(self, index: int) -> Code:
        if self._lines is None:
            self._lines = _lexed_lines(self.texts, self.language, self.titles)
        return self._lines[index]


class _LexedCode(Code):
    """A line of ``code_lines``: its text at once, its spans when first asked (the text view
    needs none, so a listing shown as text is never lexed)."""

    _text: str
    _lexed: _Lexed
    _index: int

    def __init__(self, text: str, lexed: _Lexed, index: int):
        object.__setattr__(self, "_text", text)
        object.__setattr__(self, "_lexed", lexed)
        object.__setattr__(self, "_index", index)

    @property
    def spans(self) -> tuple[Span, ...]:  # pyright: ignore[reportIncompatibleVariableOverride]
        return self._lexed.line(self._index).spans

    @property
    def text(self) -> str:
        return self._text


def code_lines(texts: Iterable[str], language: str, titles: dict[str, str] | None = None) -> list[Code]:
    """Each of ``texts`` (one line each) as ``Code``, lexed in one pass by jaxmagic's lexer for
    ``language`` when the spans of one are first read. A jaxpr variable's span carries its name
    (letters only, as JAX names them), whether a ``:`` and a type follow (its binding), and its
    hover text from ``titles``."""
    texts = list(texts)
    lexed = _Lexed(texts, language, titles or {})
    return [_LexedCode(text, lexed, index) for index, text in enumerate(texts)]


def _lexed_lines(texts: list[str], language: str, titles: dict[str, str]) -> list[Code]:
    """Each of ``texts`` as spans, from one pass of the lexer over them all: a variable each (with
    whether a ``:`` follows it: its binding), and a run of tokens of one class as one."""
    lexer = LANGUAGES[language](stripnl=False, ensurenl=False)
    # unprocessed: Pygments' get_tokens would also turn a "\r" inside a line into a line's end
    tokens = [(ttype, value) for _, ttype, value in lexer.get_tokens_unprocessed("\n".join(texts))]
    lines: list[Code] = []
    spans: list[Span] = []
    run: list[str] = []
    run_class = ""
    last = len(tokens) - 1
    for i, (ttype, value) in enumerate(tokens):
        token = token_class(ttype)
        for k, part in enumerate(value.split("\n")) if "\n" in value else ((0, value),):
            if k:  # a line ends
                if run:
                    spans.append(Span("".join(run), run_class))
                    run = []
                lines.append(Code(tuple(spans)))
                spans = []
            if not part:
                continue
            if ttype is Name.Variable and part.isalpha() and part.isascii():
                if run:
                    spans.append(Span("".join(run), run_class))
                    run = []
                binds = i < last and tokens[i + 1][0] is Punctuation and tokens[i + 1][1] == ":"
                spans.append(Span(part, "nv", part, binds, titles.get(part, "")))
            elif run and token != run_class:
                spans.append(Span("".join(run), run_class))
                run = [part]
                run_class = token
            else:
                run.append(part)
                run_class = token
    if run:
        spans.append(Span("".join(run), run_class))
    lines.append(Code(tuple(spans)))
    return lines


# ----------------------------------------------------------------------------------------------
# the rows of a listing


@dataclass(frozen=True)
class Place:
    """The user's line that made a run of equations: its ``heading`` (``# In [2] line 3: ...``),
    how many equations it made (``count``), and for hover its ``location`` and call ``chain``."""

    heading: str
    count: str = ""
    location: str = ""
    chain: tuple[str, ...] = ()


@dataclass(frozen=True)
class CodeRow:
    """A line of the listing that is not an equation: a block's header or its closing line."""

    depth: int
    code: Code
    lead: str = ""


@dataclass(frozen=True)
class PlaceRow:
    depth: int
    place: Place


@dataclass(frozen=True)
class EquationRow:
    """An equation: its whole ``code`` (a notebook cuts it to its column's width), its primitive,
    the label of its source line, and with ``--values`` what it computed."""

    depth: int
    code: Code
    primitive: str
    label: str = ""
    value: str = ""
    nonfinite: bool = False


@dataclass(frozen=True)
class NoteRow:
    """A line about the listing itself: ``… 12 more equations``."""

    depth: int
    text: str


@dataclass(frozen=True)
class Nested:
    """A nested jaxpr (an inner jit, a branch, a loop body): folded in a notebook, indented in text."""

    depth: int
    title: str
    landmark: str
    count: str
    header: Code
    rows: tuple[Row, ...]


@dataclass(frozen=True)
class Repeat:
    """Further copies of the block just shown: ``what`` (``layer ×50, 6 equations each``), and the
    copies' rows (a notebook unfolds them; text leaves them out)."""

    depth: int
    what: str
    more: int
    rows: tuple[Row, ...]


Row = Union[CodeRow, PlaceRow, EquationRow, NoteRow, Nested, Repeat]


# ----------------------------------------------------------------------------------------------
# blocks


@dataclass(frozen=True)
class Listing:
    """A jaxpr as rows, with the primitives a notebook offers as filters."""

    rows: tuple[Row, ...]
    filters: tuple[str, ...] = ()

    def variables(self) -> set[str]:
        found: set[str] = set()
        stack = list(self.rows)
        while stack:
            row = stack.pop()
            if isinstance(row, (Nested, Repeat)):
                stack += row.rows
            if isinstance(row, Nested):
                found |= row.header.variables
            elif isinstance(row, (CodeRow, EquationRow)):
                found |= row.code.variables
        return found


@dataclass(frozen=True)
class LegendRow:
    """A top-level input or output: ``in`` or ``out``, its variable, what it stands for, its type."""

    kind: str
    variable: str
    stands_for: str
    type: str


@dataclass(frozen=True)
class Legend:
    rows: tuple[LegendRow, ...]


@dataclass(frozen=True)
class CodeBlock:
    """Module text (StableHLO, HLO) as lines of ``Code``, and a note on what was cut."""

    language: str
    lines: tuple[Code, ...]
    note: str = ""


@dataclass(frozen=True)
class KeyValues:
    """A two-column table under a heading: ``XLA estimate``, ``FLOPs  1,024``."""

    heading: str
    rows: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Hint:
    """One line of advice."""

    text: str


@dataclass(frozen=True)
class Fold:
    """Blocks a notebook shows folded under its ``title`` (bold) and ``summary``. A terminal
    cannot unfold: ``in_text`` says what text shows: the ``blocks`` in place, the ``heading``
    alone (a count of what is left out), or ``both``."""

    summary: str
    blocks: tuple[Block, ...]
    css: str = "jm-details"
    title: str = ""
    in_text: str = "blocks"


@dataclass(frozen=True)
class Kernel:
    """One of XLA's kernels: its ``name``, what it is (``fusion (kLoop)``), the user's ``lines``
    fused into it, a ``note`` when it fused several, their source text; its fused
    ``computation`` (HLO as ``Code``, shown on demand) and the kernels ``inner`` to it (a loop's)."""

    depth: int
    name: str
    what: str
    lines: str
    note: str = ""
    source: str = ""
    computation: tuple[Code, ...] = ()
    inner: tuple[Kernel, ...] = ()


@dataclass(frozen=True)
class Kernels:
    """XLA's kernels in the order it runs them, under a ``headline``; ``more``: those left out."""

    headline: str
    kernels: tuple[Kernel, ...]
    more: str = ""


@dataclass(frozen=True)
class Sentence:
    """A sentence the words layer wrote (``Words``, or a plain string); ``css`` its look; ``bold``
    for an answer line, bold in both views."""

    words: Any
    css: str = "jm-summary"
    bold: bool = False


@dataclass(frozen=True)
class Note:
    """A line about the view itself: ``… 3 more lines (the report's .live_at_peak holds them)``."""

    text: str


@dataclass(frozen=True)
class Cell:
    """A table cell: its text (a plain string, or ``Words`` from the words layer) and how it reads
    (``code``, ``strong``, ``number``); ``bar``: a share from 0 to 1 drawn as a bar (a notebook
    only); ``title``: more on hover (a notebook only)."""

    text: str = ""
    style: str = ""
    bar: float | None = None
    title: str = ""


@dataclass(frozen=True)
class Table:
    """Rows of cells under an optional header; ``align``: ``<`` or ``>`` per column in text."""

    header: tuple[str, ...] | None
    rows: tuple[tuple[Cell, ...], ...]
    css: str = ""
    align: str = ""


@dataclass(frozen=True)
class Bindings:
    """Names and their values: ``loss = 0.25`` in text, a two-column table in a notebook."""

    rows: tuple[tuple[str, str], ...]
    css: str = ""


@dataclass(frozen=True)
class Group:
    """Blocks that belong together (a notebook wraps them in one element of class ``css``)."""

    css: str
    blocks: tuple[Block, ...]


@dataclass(frozen=True)
class Prerendered:
    """A view whose renderer is not yet walked from blocks: its text and its HTML, made when asked."""

    text: Callable[[], str] = field(compare=False)
    html: Callable[[], str] = field(compare=False)


# ----------------------------------------------------------------------------------------------
# figures, lists and the view's own layout


@dataclass(frozen=True)
class Bar:
    """A measured value drawn as a bar against the ``largest`` of its column, with a whisker from
    ``low`` to ``high`` (the best and worst repeat); ``css`` picks its colour, ``label`` is read
    on hover. A notebook draws it in SVG, a terminal in block characters."""

    value: float
    largest: float
    low: float
    high: float
    label: str
    css: str = ""


@dataclass(frozen=True)
class Stacked:
    """Parts of one total laid end to end (``(name, value, label)``: ``name`` picks the colour),
    against the ``largest`` total of its column; ``label`` says the whole. A notebook only: a
    terminal has the numbers."""

    parts: tuple[tuple[str, float, str], ...]
    largest: float
    label: str


GridCell = Union[Cell, Bar, Stacked]


@dataclass(frozen=True)
class Grid:
    """A table whose cells may be figures: each row may carry a ``key`` (a notebook's
    ``data-<key_name>``, ``data-mode="jit"``), and its header may end with ``swatches``, the
    colour of each part of a ``Stacked`` (a notebook only). ``align``: ``<`` or ``>`` per column
    in text; a column of ``Stacked`` is left out of text."""

    header: tuple[str, ...]
    rows: tuple[tuple[GridCell, ...], ...]
    css: str = ""
    align: str = ""
    key_name: str = ""
    keys: tuple[str, ...] = ()
    swatches: tuple[str, ...] = ()
    row_css: tuple[str, ...] = ()  # a class per row (a notebook only)


@dataclass(frozen=True)
class Headline:
    """The answer line with a name set apart (bold in a notebook): ``before``, ``name``, ``after``."""

    before: str
    name: str
    after: str
    css: str = "jm-summary"


@dataclass(frozen=True)
class Items:
    """Sentences as a list: a notebook's ``<ul>`` of class ``css`` (each item of class
    ``item_css``, with ``data-<key_name>`` from ``keys``); in text a line each after ``lead``
    (``"! "``, ``"· "``), in the terminal ``style`` (``yellow``, ``faint``) when coloured."""

    items: tuple[Any, ...]
    css: str = ""
    lead: str = "· "
    style: str = ""
    item_css: str = ""
    key_name: str = ""
    keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class Sections:
    """Blocks read one after another: a blank line between them in text, nothing added in a notebook."""

    blocks: tuple[Block, ...]


@dataclass(frozen=True)
class Only:
    """Blocks one view shows and the other leaves out: ``medium`` is ``text`` or ``html`` (a
    notebook's answer table, whose numbers the terminal's fuller table already gives)."""

    medium: str
    blocks: tuple[Block, ...]


# ----------------------------------------------------------------------------------------------
# a card: a heading, sentences, code the user may copy, a footer


@dataclass(frozen=True)
class Heading:
    """A card's heading: its ``badge`` (``error``, ``warning``: the card's colour), ``title``, and
    ``tag`` (an id, set apart, of class ``tag_css``). Text leads with the ``speaker``
    (``jaxmagic doctor``; a notebook says it in the card's footer) and sets badge and title in
    the terminal ``style``."""

    badge: str
    title: str
    tag: str = ""
    speaker: str = ""
    style: tuple[str, ...] = ()
    tag_css: str = ""


@dataclass(frozen=True)
class Labelled:
    """A ``label`` (a place: ``In [4] line 3``) and the line of ``code`` it names (of class
    ``code_css``); ``title``: more on hover (a notebook only)."""

    label: str
    code: Code | None
    title: str = ""
    css: str = ""
    code_css: str = ""


@dataclass(frozen=True)
class Paragraph:
    """A sentence (``Words`` or a string) as a paragraph: a notebook's ``<tag>`` of class ``css``
    with ``data-`` attributes from ``data``; text wrapped, a place or a piece of code never broken
    across lines, in the terminal ``style`` when coloured."""

    words: Any
    css: str = ""
    tag: str = "div"
    style: str = ""
    data: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Snippet:
    """Code the user may copy (a fix): ``lines`` of ``Code`` in ``language`` (empty: plain text);
    a notebook's ``<pre>``, text indented under the sentence before it, coloured when asked."""

    language: str
    lines: tuple[Code, ...]


@dataclass(frozen=True)
class Section:
    """A part of a card of class ``css``: its ``title`` in bold, a ``note`` after it (of class
    ``note_css``; in text one paragraph with the title: ``Fix: mark n static.``), then ``blocks``."""

    css: str
    title: str
    note: Any
    blocks: tuple[Block, ...] = ()
    note_css: str = ""


@dataclass(frozen=True)
class Link:
    """A piece of a footer: its ``text``, an address (``href``: a terminal shows the address, a
    notebook the text as a link), and ``medium``: ``html`` for a notebook only, empty for both.
    ``path``: the text names a file (a notebook shows it as code, after ``lead``), no link."""

    text: str
    href: str = ""
    medium: str = ""
    path: bool = False
    lead: str = ""


@dataclass(frozen=True)
class Footer:
    """``Link``s joined by `` · `` in the terminal ``style``."""

    links: tuple[Link, ...]
    css: str = ""
    style: str = ""


@dataclass(frozen=True)
class Card:
    """A framed card of class ``css``: a notebook's box; in text its first block (the heading)
    and the rest indented under it."""

    css: str
    blocks: tuple[Block, ...]


# ----------------------------------------------------------------------------------------------
# a log of compilations: its answer, warnings, counts, and a row per group of compilations


@dataclass(frozen=True)
class Lead:
    """The answer line: ``words`` in bold, then ``after`` on the same line (a notebook's
    ``<span>`` of class ``after_css``), plain in text."""

    words: Any
    after: Any = ""
    css: str = "jm-summary"
    after_css: str = "jm-muted"


@dataclass(frozen=True)
class Flags:
    """Warnings, one a line: a notebook's ``<div>`` of class ``css`` each, after a ``⚠``; in text
    after ``! ``, yellow when coloured."""

    items: tuple[Any, ...]
    css: str = ""


@dataclass(frozen=True)
class Tally:
    """How many of each name, ``(name, count, note)``, in the order given: a notebook's chips
    (``data-function``, ``data-count``; the ``selected`` name marked ``jm-selected``); text says
    each ``note`` (its seconds) too: ``step ×5 (150 ms) · loss ×1 (30 ms)``."""

    counts: tuple[tuple[str, int, str], ...]
    css: str = ""
    item_css: str = ""
    selected: str = ""


@dataclass(frozen=True)
class CauseLine:
    """Why a row compiled: the cause's ``kind`` (a notebook's ``jm-cause-<kind>``), its ``label``
    (``shape``; empty for a first compilation), its ``message`` (``Words``), the ``argument`` it
    names and more on hover (``detail``)."""

    kind: str
    label: str
    message: Any
    argument: str = ""
    detail: str = ""


@dataclass(frozen=True)
class Occurrence:
    """One compilation of a row's group, said on one line after its ``label`` (``first``):
    ``#2 14:03:27 In [3] line 2: shape of `x` changed: …``."""

    label: str
    number: int
    clock: str
    site: str
    messages: tuple[Any, ...]


@dataclass(frozen=True)
class Remark:
    """A line under a row's causes: ``words`` after ``lead`` (``→ ``, ``program: ``), of class
    ``css`` in a notebook, in the terminal ``style`` (``faint``) when coloured."""

    words: Any
    css: str
    lead: str = ""
    style: str = "faint"


@dataclass(frozen=True)
class CompilationRow:
    """Compilations of one function for the same causes (``count`` of them, ``numbers``
    ``2–12``), as the latest of them: its time of day, call site (``site_title`` on hover), where
    the function is defined, its ``causes``, the group's ``occurrences`` (its first and latest:
    unfolded under ``fold`` in a notebook; text gives the first), ``remarks``, JAX's own words
    (``raw``: on hover, spelled out when ``raw_shown``), the compile time (``timing`` on hover)
    and the persistent cache (``cache``: what a notebook's badge says and what text says,
    ``cache_hit``: whether it served the program)."""

    numbers: str
    clock: str
    function: str
    count: int
    causes: tuple[CauseLine, ...]
    seconds: str
    site: str = "?"
    site_title: str = ""
    defined: str = ""
    kinds: str = ""
    internal: str = ""
    occurrences: tuple[Occurrence, ...] = ()
    fold: str = ""
    remarks: tuple[Remark, ...] = ()
    raw: str = ""
    raw_shown: bool = False
    timing: str = ""
    cache: tuple[str, str] | None = None
    cache_hit: bool = False


@dataclass(frozen=True)
class Compilations:
    """A table of compilations, a ``CompilationRow`` each, under ``header`` (a notebook only, its
    columns' ``align``: ``<`` left); text aligns each row's number, function, call site and time,
    its causes after them."""

    rows: tuple[CompilationRow, ...]
    header: tuple[str, ...] = ("#", "time", "function", "call site", "causes", "compile")
    align: str = ">><<<>"
    css: str = ""


Block = Union[
    Heading,
    Labelled,
    Paragraph,
    Snippet,
    Section,
    Footer,
    Card,
    Listing,
    Legend,
    CodeBlock,
    Kernels,
    KeyValues,
    Hint,
    Fold,
    Sentence,
    Note,
    Table,
    Bindings,
    Group,
    Prerendered,
    Grid,
    Headline,
    Items,
    Sections,
    Only,
    Lead,
    Flags,
    Tally,
    Compilations,
]
