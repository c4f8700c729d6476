"""A fix chosen from several ways out, in order: ``Chosen`` is a declaration whose ways out
(``Offer``: a rewrite or a template; ``Static``: the argument made static where the user jits;
``StaticField``: an Equinox field made static; ``MagicHint``: the magics' ``-s`` option) are tried
in order; the first that applies is the fix and the rest its alternatives. The pitfalls with
several fixes (``python-control-flow``, ``traced-shape``, ``scalar-conversion``) declare this way.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.case import Case, magic_hint, static_choice, static_field_choice
from jaxmagic.doctor.clues import ParsedSource
from jaxmagic.doctor.declared import Declared, Line, Reading
from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.words import Words, tell


@dataclass(frozen=True)
class Offer:
    """A way out (``Chosen``): ``label`` (a template) with the code the fact ``fact`` holds: edits
    of the user's function (a ``rewrites.Edit`` or a list of them) or the whole code (a string),
    shown in the slot ``{fixed}`` of ``code`` (a template) where given; without a fact, ``code``
    alone. Left out where the fact is missing or empty; where ``otherwise`` is true, offered only
    when no way out before it was.

    >>> Offer("Keep it traced:", "edits").fact
    'edits'
    """

    label: str
    fact: str | None = None
    code: str = ""
    otherwise: bool = False

    def offer(self, line: Line, facts: dict[str, Any], named: dict[str, Any]) -> tuple[Words, str] | None:
        found = facts.get(self.fact) if self.fact else True
        if not found:
            return None
        found = [found] if isinstance(found, rewrites.Edit) else found
        written = line.fix(found, "function") if isinstance(found, list) else found
        fixed = self.code.format(**{**named, "fixed": written}) if self.code else written
        return tell(self.label, named), fixed if isinstance(fixed, str) else ""


@dataclass(frozen=True)
class Static:
    """A way out: the parameters the fact ``names`` lists marked static where the user jits the
    function (``case.static_choice``), ``why`` (a template) saying what that changes, after
    ``lead``. Chosen first, it names them the diagnosis's ``static_argnames``.

    >>> Static("static_names", "it is then a plain int.").names
    'static_names'
    """

    names: str
    why: str
    lead: str = ""

    def offer(self, line: Line, facts: dict[str, Any], named: dict[str, Any]) -> tuple[Words, str] | None:
        names: list[str] = list(facts.get(self.names) or ())
        found = static_choice(line.case, names, tell(self.why, named)) if names else None
        return (Words(tell(self.lead, named).parts + found[0].parts), found[1]) if found else None


@dataclass(frozen=True)
class StaticField:
    """A way out: the Equinox fields the node the fact ``node`` holds reads, declared static
    (``case.static_field_choice``).

    >>> StaticField("test").node
    'test'
    """

    node: str

    def offer(self, line: Line, facts: dict[str, Any], named: dict[str, Any]) -> tuple[Words, str] | None:
        return static_field_choice(line.case, line.frame, facts.get(self.node))


@dataclass(frozen=True)
class StaticPlaces:
    """A way out: the call's arguments the fact ``placed`` holds (a ``static_positions.Placed``)
    marked static by their place where the user jits a library's function, ``why`` (a template)
    saying what that changes.

    >>> StaticPlaces("placed", "it is then a plain bool.").placed
    'placed'
    """

    placed: str
    why: str

    def offer(self, line: Line, facts: dict[str, Any], named: dict[str, Any]) -> tuple[Words, str] | None:
        found = facts.get(self.placed)
        return (found.label(tell(self.why, named)), found.fixed) if found is not None else None


@dataclass(frozen=True)
class MagicHint:
    """A way out where a jaxmagic magic traced the function: its ``-s`` option for the parameters
    the fact ``names`` lists (``case.magic_hint``).

    >>> MagicHint("static_names").names
    'static_names'
    """

    names: str

    def offer(self, line: Line, facts: dict[str, Any], named: dict[str, Any]) -> tuple[Words, str] | None:
        found = magic_hint(line.case, list(facts.get(self.names) or ()))
        return found[0] if found else None


@dataclass(frozen=True)
class Chosen(Declared):
    """A pitfall of the user's failing line whose fix is the first way out ``choices`` offers
    (``Offer``, ``Static``, ``StaticField``, ``MagicHint``), the others its alternatives (a kind
    of ``kinds`` may give its own ``choices``). Each of ``phrases`` fills the slot of its name with
    the template the fact of that name picks, told (in order) before the rest of the words.

    >>> from jaxmagic.doctor.registry import PITFALLS
    >>> isinstance(PITFALLS["python-control-flow"].recognise.__self__, Chosen)
    True
    """

    choices: tuple = ()
    phrases: dict[str, dict[Any, str]] = field(default_factory=dict)
    sourceless: bool = False  # recognise code run from a string too (its line read as an empty source)

    def diagnose(self, case: Case) -> Diagnosis | None:
        frame = case.innermost
        if frame is None or not self.sourceless or case.parsed(frame) is not None:
            return super().diagnose(case)
        line = Line(case, frame, ParsedSource(frame.file, (), ast.Module(body=[], type_ignores=[])))
        facts = self.recognise(line) if isinstance(case.exc, self.raised) else None
        return self.describe(line, facts) if isinstance(facts, dict) else None

    def describe(self, reading: Reading, facts: dict[str, Any]) -> Diagnosis:
        assert isinstance(reading, Line)  # the choices read the case and its frame
        told = self.kinds.get(str(facts.get("kind")), {})
        named = reading.named(facts)
        for slot, templates in self.phrases.items():
            named[slot] = tell(templates.get(facts.get(slot), ""), named)
        offered: list[tuple[Any, tuple[Words, str]]] = []
        for choice in told.get("choices", self.choices):
            found = None if getattr(choice, "otherwise", False) and offered else choice.offer(reading, facts, named)
            offered += [(choice, found)] if found else []
        first, (note, fix) = offered[0] if offered else (None, (Words(), ""))
        return self._diagnosis(
            reading,
            named,
            explanation=tell(told.get("explanation", self.explanation), named),
            fix=fix,
            fix_note=note,
            alternatives=tuple(found for _, found in offered[1:]),
            static_argnames=tuple(facts[first.names]) if isinstance(first, Static) else (),
        )
