"""A pitfall as a declaration. ``Declared`` says what the pitfall recognises (the exception JAX
raises, the fragments of its message, and a small ``recognise`` function that picks the facts out
of the user's failing line), which shared rewrite fixes it (``Replace``) and its words: templates
with named slots, filled from the facts by the words layer (``words.tell``). Declaring one
registers it (``registry.PITFALLS``).

The shared steps are done here, once: find the user's line (the innermost frame of the user's
code), name the values (each syntax node of the facts as the user wrote it; ``{jnp}``, ``{jax}``
and ``{lax}`` as the user imported them; ``{where}`` the line), apply the rewrite to the user's
function, and make the ``Diagnosis``.

>>> import jax.numpy as jnp
>>> from jaxmagic.doctor.case import Case
>>> def reset(x):
...     x[0] = 0.0
...     return x
>>> try:
...     reset(jnp.ones(3))
... except TypeError as exc:
...     found = PITFALLS["in-place-update"].run(Case(exc, None, lambda filename: None))
>>> found.fix.splitlines()[1].strip(), found.variable
('x = x.at[0].set(0.0)', 'x')
"""

from __future__ import annotations

import ast
import dataclasses
import string
from dataclasses import dataclass, field
from typing import Any, Callable, overload

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.case import Case, function_source
from jaxmagic.doctor.clues import NodeT, ParsedSource, Span, UserFrame, end_of, start_of
from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.global_watch import CellEnd, StaleGlobal
from jaxmagic.doctor.registry import PITFALLS, Written, pitfall
from jaxmagic.doctor.traced_code import (
    SourcedFunction,
    Traced,
    as_parameters,
    globals_of,
    parameter_edit,
    with_edits,
    with_source,
)
from jaxmagic.tracing import sources
from jaxmagic.tracing.sources import CellNamer, SourceLine
from jaxmagic.words import Words, tell


class Reading:
    """What every recogniser reads its facts from: source it can quote, and the user's names for JAX."""

    parsed: ParsedSource

    def text(self, node: ast.AST) -> str:
        """``node`` as the user wrote it."""
        return clues.source_of(self.parsed, node)

    @property
    def jax_names(self) -> rewrites.JaxNames:
        """How the user spells ``jax``, ``jax.numpy``, ``jax.lax`` and ``jax.jit`` here."""
        raise NotImplementedError

    def where(self, facts: dict[str, Any]) -> SourceLine | None:
        raise NotImplementedError

    def fix(self, edits: list[rewrites.Edit], shown: str) -> str | None:
        """The fixed code, ``edits`` applied to what the reading holds (``shown``: see ``Line.fix``)."""
        raise NotImplementedError

    def diagnosis(self, pitfall_id: str, **fields: Any) -> Diagnosis:
        raise NotImplementedError

    def named(self, facts: dict[str, Any]) -> dict[str, Any]:
        """The facts as the words and the rewrite use them: a node (or the first of several) as
        its source text, with the user's names for JAX and the place."""
        jn = self.jax_names
        named: dict[str, Any] = {"jax": jn.jax, "jnp": jn.jnp, "lax": jn.lax, "where": self.where(facts)}
        for key, value in facts.items():
            first = value[0] if isinstance(value, (tuple, list)) and value else value
            named[key] = self.text(first) if isinstance(first, ast.AST) else value
        return named


@dataclass(frozen=True)
class Line(Reading):
    """The user's failing line, as an error recogniser reads it: the case, its innermost user
    frame, and the syntax there."""

    case: Case
    frame: UserFrame
    parsed: ParsedSource

    @property
    def message(self) -> str:
        return self.case.message

    @overload
    def expression(self) -> ast.expr | None: ...
    @overload
    def expression(self, kind: type[NodeT] | tuple[type[NodeT], ...]) -> NodeT | None: ...
    def expression(self, kind: Any = ast.expr) -> Any:
        """The innermost expression of ``kind`` the line was evaluating (``ast.Call``: the call)."""
        return self.case.expression(self.frame, kind)

    def statement(self) -> ast.stmt | None:
        return self.case.statement(self.frame)

    @property
    def jax_names(self) -> rewrites.JaxNames:
        return self.case.names(self.frame)

    def where(self, facts: dict[str, Any]) -> SourceLine | None:
        return self.case.where(self.frame)

    def fix(self, edits: list[rewrites.Edit], shown: str) -> str | None:
        """The user's function with ``edits`` applied; the failing statement alone where ``shown``
        is ``"statement"`` (or ``"enclosing"`` at the top level of a cell)."""
        statement = self.statement()
        alone = shown == "statement" or (shown == "enclosing" and self.frame.function == "<module>")
        if alone and statement is not None:
            return rewrites.definition_with_edits(self.parsed.lines, statement, edits)  # a ``def``: with its decorators
        return function_source(self.case, self.frame, edits) or (None if shown == "enclosing" else edits[0].text)

    def diagnosis(self, pitfall_id: str, **fields) -> Diagnosis:
        return self.case.diagnosis(pitfall_id, **fields)


def user_function(line: Line) -> ast.AST:
    """The syntax of the function the failing line runs in (of its module or cell at the top level)."""
    found = clues.function_of_code(line.frame.code)
    return found[1] if found else line.parsed.tree


@dataclass(frozen=True)
class Function(Reading):
    """A function that traced fine, as a trace recogniser reads it: its source (``node``), how it
    looks up names, and where it was traced from. Its facts name the node ``at`` where it warns."""

    traced: Traced
    sourced: SourcedFunction
    parsed: ParsedSource

    @property
    def node(self) -> ast.AST:
        return self.sourced.node

    @property
    def name(self) -> str:
        return self.sourced.function.__name__

    def lookup(self, name: str) -> Any:
        return self.sourced.lookup(name)

    def resolve(self, node: ast.AST) -> Any:
        """The value of a name or dotted name the function reads (``MISSING`` when unknown)."""
        return clues.resolve(node, self.sourced.lookup)

    @property
    def jax_names(self) -> rewrites.JaxNames:
        return rewrites.jax_names(globals_of(self.sourced.function))

    def where(self, facts: dict[str, Any]) -> SourceLine | None:
        return sources.source_line(self.parsed.file, facts["at"].lineno, self.name, self.traced.cell_namer)

    def named(self, facts: dict[str, Any]) -> dict[str, Any]:
        return {"function": self.name, **super().named(facts)}

    def fix(self, edits: list[rewrites.Edit], shown: str) -> str | None:
        return with_edits(self.sourced.located, edits)

    def diagnosis(self, pitfall_id: str, **fields) -> Diagnosis:
        fields.setdefault("function", self.name)
        return Diagnosis(pitfall_id, **fields)


@dataclass(frozen=True)
class Changed(Reading):
    """A global found changed after a cell ran, as a cell recogniser reads it (``global_watch``):
    the function that read it, and where."""

    stale: StaleGlobal
    cell_namer: CellNamer
    parsed: ParsedSource | None = None

    @property
    def jax_names(self) -> rewrites.JaxNames:
        return rewrites.jax_names(globals_of(self.stale.read.load.function))

    def where(self, facts: dict[str, Any]) -> SourceLine | None:
        load = self.stale.read.load
        return sources.source_line(load.function.__code__.co_filename, load.line, load.code.co_name, self.cell_namer)

    def fix(self, edits: list[rewrites.Edit], shown: str) -> str | None:
        return None  # its fixes are whole functions (``AsParameters``)

    def diagnosis(self, pitfall_id: str, **fields) -> Diagnosis:
        return Diagnosis(pitfall_id, **fields)


class Whole:
    """A shared rewrite that writes the whole fixed code (its ``whole``), with no edits of the line."""

    def edits(self, reading: Reading, facts: dict[str, Any], named: dict[str, Any]) -> list[rewrites.Edit]:
        return []


@dataclass(frozen=True)
class AsParameters(Whole):
    """A shared rewrite: the function the fact ``function`` holds, with the globals the fact
    ``names`` lists added as its last parameters, and how to call it (``traced_code.as_parameters``).

    >>> AsParameters("reader", "name").names
    'name'
    """

    function: str
    names: str

    def whole(self, facts: dict[str, Any]) -> str | None:
        names = facts[self.names]
        return as_parameters(facts[self.function], [names] if isinstance(names, str) else list(names))


@dataclass(frozen=True)
class Replace:
    """A shared rewrite: the node the fact ``target`` holds (or each of several; none: nothing)
    replaced by ``text``, a template filled with the named facts and the node's own parts
    (``{left}`` and ``{right}`` of ``a / b``).

    >>> Replace("size", "{left} // {right}").text
    '{left} // {right}'
    """

    target: str
    text: str

    def edits(self, line: Reading, facts: dict[str, Any], named: dict[str, Any]) -> list[rewrites.Edit]:
        found = facts.get(self.target)
        return [
            rewrites.Edit(Span.of(node), self.text.format(**{**_parts(line, node), **named}))
            for node in (found if isinstance(found, (tuple, list)) else () if found is None else (found,))
        ]


@dataclass(frozen=True)
class AddKeyword:
    """A shared rewrite: ``text`` (a keyword argument, a template) added at the end of the call the
    fact ``target`` holds.

    >>> AddKeyword("grad", "has_aux=True").text
    'has_aux=True'
    """

    target: str
    text: str

    def edits(self, line: Reading, facts: dict[str, Any], named: dict[str, Any]) -> list[rewrites.Edit]:
        return [rewrites.keyword_edit(facts[self.target], self.text.format(**named))]


def _parts(line: Reading, node: ast.AST) -> dict[str, str]:
    return {name: line.text(part) for name, part in ast.iter_fields(node) if hasattr(part, "end_col_offset")}


@dataclass(frozen=True)
class Rewritten:
    """A shared rewrite for text only the recogniser can write: the fact ``target`` holds
    ``(node, new text)`` pairs.

    >>> Rewritten("prints").target
    'prints'
    """

    target: str

    def edits(self, line: Reading, facts: dict[str, Any], named: dict[str, Any]) -> list[rewrites.Edit]:
        return [rewrites.Edit(Span.of(node), text) for node, text in facts.get(self.target, ())]


@dataclass(frozen=True)
class Given(Whole):
    """A shared rewrite whose whole fixed code the recogniser already has from a shared helper
    (``method_rewrites.method_calling_jitted_function``, say): the fact ``target`` holds it.

    >>> Given("fixed").target
    'fixed'
    """

    target: str

    def whole(self, facts: dict[str, Any]) -> str | None:
        return facts.get(self.target)


@dataclass(frozen=True)
class InsertBefore:
    """A shared rewrite: ``text`` (a template; a line of its own) put before the statement the fact
    ``target`` holds, at its indent.

    >>> InsertBefore("loop", "values = jnp.asarray(list(batches))").text
    'values = jnp.asarray(list(batches))'
    """

    target: str
    text: str

    def edits(self, line: Reading, facts: dict[str, Any], named: dict[str, Any]) -> list[rewrites.Edit]:
        statement = facts.get(self.target)
        if statement is None:
            return []
        return [rewrites.Edit(start_of(statement), self.text.format(**named) + "\n")]


@dataclass(frozen=True)
class Declared:
    """One pitfall the doctor recognises, declared as data (see the module).

    ``recognise`` answers the facts (a dict: syntax nodes and values, by name) or ``None``: from
    the failing ``Line`` of an exception (``stage="error"``), or from each ``Function`` that traced
    fine (``stage="trace"``; its facts name the node ``at`` where it warns, a list of facts: one
    warning each). ``explanation``,
    ``fix_note``, ``fallback`` (the fix where the rewrite cannot be shown) and the
    ``alternatives`` (label, code) are templates over the named facts; ``rewrite`` the shared
    rewrites that make the fix, shown as ``shown`` says; ``kinds`` other words and rewrites for
    the facts whose ``kind`` names them. ``variable`` and ``function`` name the facts that are the
    user's value and function (``function``: by default the traced function's name). ``raised``
    is the exception JAX raises; where ``says`` is true, its message must hold one of ``messages``.
    ``pieces`` are named parts of sentences, used as slots of the templates (see ``filled_pieces``);
    ``reference`` a page on the trap (for a trace or cell pitfall: an error's comes from its message).
    """

    id: str
    title: str
    recognise: Callable[[Any], dict[str, Any] | list[dict[str, Any]] | None]
    explanation: str
    fix_note: str = ""
    rewrite: tuple = ()
    shown: str = "function"
    fallback: str = ""
    alternatives: tuple[tuple[str, str], ...] = ()
    kinds: dict[str, dict[str, Any]] = field(default_factory=dict)
    severity: str = "error"
    stage: str = "error"
    raised: type[BaseException] | tuple[type[BaseException], ...] = Exception
    messages: tuple[str | Written, ...] = ()
    says: bool = True
    order: int = 100
    variable: str | None = None
    function: str | None = None
    static: str | None = None
    pieces: dict[str, str | tuple[str, str]] = field(default_factory=dict)
    reference: str | None = None

    def __post_init__(self):
        run = {"error": self.diagnose, "trace": self.notice, "cell": self.after_cell}[self.stage]
        pitfall(self.id, self.title, self.severity, order=self.order, stage=self.stage, messages=self.messages)(run)

    def diagnose(self, case: Case) -> Diagnosis | None:
        """The diagnosis of ``case`` when it is this pitfall, else ``None``."""
        if not isinstance(case.exc, self.raised) or (self.says and self.messages and not case.says(self.id)):
            return None
        frame = case.innermost
        parsed = case.parsed(frame) if frame is not None else None
        if frame is None or parsed is None:
            return None
        line = Line(case, frame, parsed)
        facts = self.recognise(line)
        return self.describe(line, facts) if isinstance(facts, dict) else None

    def notice(self, traced: Traced) -> list[Diagnosis]:
        """One warning for each traced function (with its source known) where it is this pitfall."""
        return self._warnings(Function(traced, sourced, sourced.parsed) for sourced in with_source(traced.functions))

    def after_cell(self, cell: CellEnd) -> list[Diagnosis]:
        """One warning for each global changed since a jitted function read it, where it is this pitfall."""
        return self._warnings(Changed(stale, cell.cell_namer) for stale in cell.changes)

    def _warnings(self, readings) -> list[Diagnosis]:
        """The warnings of the facts ``recognise`` finds in each reading (one, or a list: one each)."""
        found = []
        for reading in readings:
            facts = self.recognise(reading)
            found += [self.describe(reading, each) for each in ([facts] if isinstance(facts, dict) else facts or ())]
        return found

    def describe(self, reading: Reading, facts: dict[str, Any]) -> Diagnosis:
        """The words, the fix and the place, from the facts ``recognise`` found."""
        kind = facts.get("kind")
        told = self.kinds.get(kind, {}) if isinstance(kind, str) else {}
        explanation, fix_note, rewrite, alternatives = (
            told.get(name, getattr(self, name)) for name in ("explanation", "fix_note", "rewrite", "alternatives")
        )
        named = reading.named(facts)
        named.update(filled_pieces(self.pieces, named))
        edits = [edit for each in rewrite for edit in each.edits(reading, facts, named)]
        whole = next((each.whole(facts) for each in rewrite if hasattr(each, "whole")), None)
        chosen = {"function": named[self.function]} if self.function else {}
        if self.static and facts.get(self.static):
            chosen["static_argnames"] = tuple(facts[self.static])
        if self.reference:
            chosen["reference"] = self.reference
        return self._diagnosis(
            reading,
            named,
            explanation=tell(explanation, named),
            fix=whole or (reading.fix(edits, self.shown) if edits else None) or self.fallback.format(**named),
            fix_note=tell(fix_note, named),
            alternatives=tuple(_alternative(label, fixed.format(**named), named) for label, fixed in alternatives),
            **chosen,
        )

    def _diagnosis(self, reading: Reading, named: dict[str, Any], **fields: Any) -> Diagnosis:
        """The diagnosis ``reading`` makes of ``fields``, at its place, naming the user's value."""
        variable = named.get(self.variable) if self.variable else None
        return reading.diagnosis(self.id, where=named["where"], variable=variable, **fields)


__all__ = [
    "PITFALLS",
    "AddKeyword",
    "AsParameters",
    "Changed",
    "Declared",
    "Function",
    "HandedBack",
    "InsertBefore",
    "Line",
    "Replace",
    "Rewritten",
    "WithFields",
    "edited",
    "end_of",
    "joined",
    "start_of",
    "user_function",
]


def filled_pieces(pieces: dict[str, str | tuple[str, str]], named: dict[str, Any]) -> dict[str, Any]:
    """Each piece of a sentence (a template, or ``(template, otherwise)``) filled from ``named`` where
    every fact its template names is known (neither ``None`` nor empty), else ``otherwise`` (or nothing).

    >>> pieces = {"how": " (`{option}`)", "what": ("{parameter}", "A static argument")}
    >>> {name: str(words) for name, words in filled_pieces(pieces, {"option": None, "parameter": "n"}).items()}
    {'how': '', 'what': '`n`'}
    """
    filled = {}
    for name, piece in pieces.items():
        template, otherwise = (piece, "") if isinstance(piece, str) else piece
        slots = [slot for _, slot, _, _ in _TEMPLATE.parse(template) if slot]
        known = all(_known(named.get(slot)) for slot in slots)
        filled[name] = tell(template if known else otherwise, named)
    return filled


_TEMPLATE = string.Formatter()


def _known(value: Any) -> bool:
    return value is not None and not (isinstance(value, (str, list, tuple)) and not value)


@dataclass(frozen=True)
class AddParameters:
    """A shared rewrite: ``names`` (a template) added as the last parameters of the function
    definition the fact ``target`` holds (none where it has defaults, ``*args``, keyword-only
    parameters or ``**kwargs``: ``traced_code.parameter_edit``).

    >>> AddParameters("definition", "key").names
    'key'
    """

    target: str
    names: str

    def edits(self, reading: Reading, facts: dict[str, Any], named: dict[str, Any]) -> list[rewrites.Edit]:
        node = facts.get(self.target)
        added = parameter_edit(reading.parsed, node, [self.names.format(**named)]) if node is not None else None
        return [added] if added is not None else []


@dataclass(frozen=True)
class AddStatic:
    """A shared rewrite: the parameters the fact ``names`` lists made static in the ``jax.jit`` the
    fact ``target`` holds (a ``rewrites.JitUse``: the user's decorator), ``jit`` as the user spells it.

    >>> AddStatic("decorator", "settings").names
    'settings'
    """

    target: str
    names: str

    def edits(self, reading: Reading, facts: dict[str, Any], named: dict[str, Any]) -> list[rewrites.Edit]:
        use, names = facts.get(self.target), facts.get(self.names)
        if use is None or not names:
            return []
        return [rewrites.add_static_edit(use, list(names), reading.parsed.lines, reading.jax_names.jit)]


def joined(pieces, between: str = ", ") -> Words:
    """Pieces of words (each told from a template, or ``Words`` already) as one slot's value, one
    after the other with ``between``: their code and places kept.

    >>> str(joined([tell("{name} ({value!s})", {"name": n, "value": v}) for n, v in [("a", 1), ("b", 2)]]))
    '`a` (1), `b` (2)'
    """
    together = Words()
    for i, piece in enumerate(pieces):
        together = together + between + piece if i else together + piece
    return together


@dataclass(frozen=True)
class WithFields(Declared):
    """A declaration whose facts also give the diagnosis's ``fix_call`` (the fact of that name,
    where not empty): how the fixed code is called.

    >>> WithFields.FIELDS
    ('fix_call',)
    """

    FIELDS = ("fix_call",)

    def describe(self, reading: Reading, facts: dict[str, Any]) -> Diagnosis:
        found = super().describe(reading, facts)
        return dataclasses.replace(found, **{name: facts[name] for name in self.FIELDS if facts.get(name)})


def edited(lines, node: ast.expr | ast.stmt, *edits: rewrites.Edit) -> str:
    """The lines of ``node`` (a statement, say) with ``edits`` applied, dedented.

    >>> statement = ast.parse("y = f(x)").body[0]
    >>> edited(["y = f(x)"], statement, rewrites.Edit(end_of(statement), "", comment="kept"))
    'y = f(x)  # kept'
    """
    return rewrites.definition_with_edits(lines, node, edits)


@dataclass(frozen=True)
class HandedBack(Whole):
    """A shared rewrite for a traced value kept outside its function: the function the fact
    ``located`` holds (``(parsed, node)``) returns the value the fact ``name`` names as well; the
    statement at the span the fact ``store`` holds goes (none: ``name`` leaves the ``global``
    statement), and a comment says how the caller keeps it.

    >>> HandedBack().name
    'name'
    """

    located: str = "located"
    name: str = "name"
    store: str = "store"
    caller: str = "caller"  # the fact holding how the caller calls it, where not ``f(...)``

    def whole(self, facts: dict[str, Any]) -> str | None:
        parsed, node = facts[self.located]
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        name, store = facts[self.name], facts.get(self.store)
        edits = rewrites.ungloballed(node, name) if store is None else [rewrites.Edit(store, "")]
        read = store is None and name in clues.names_in(node)  # a global it reads too: passed in as well
        at = None if read else rewrites.returned_at(node, name)
        if at is not None:  # it hands the value back already: the store goes, the caller keeps the result
            fixed, kept = (
                rewrites.definition_with_edits(parsed.lines, node, edits),
                rewrites.kept_by_caller(node, name, at),
            )
            return f"{fixed}\n\n# the caller keeps what it returns:  {kept} = {facts.get(self.caller) or node.name + '(...)'}"
        edits += rewrites.handed_back(parsed, node, name) + [
            e for e in [parameter_edit(parsed, node, [name]) if read else None] if e
        ]
        fixed = rewrites.definition_with_edits(parsed.lines, node, edits)
        call = facts.get(self.caller) or f"{node.name}({'..., ' + name if read else '...'})"
        return f"{fixed}\n\n# the caller keeps it:  {rewrites.returned_before(node)}{name} = {call}"


def _alternative(label: str, code: str, named: dict[str, Any]) -> tuple[Any, str]:
    """An alternative's words and code; words announcing code that is not there end as a sentence.

    >>> _alternative("Or pass it as an argument:", "", {})
    ('Or pass it as an argument.', '')
    """
    if not code.strip() and label.rstrip().endswith(":"):
        label = label.rstrip()[:-1] + "."
    return tell(label, named), code
