"""``Diagnosis``: what went wrong, in which line of the user's code, and the change that fixes it.

Its title and severity are the registry's (``jaxmagic.doctor.registry``); its explanation, fix
note and labels are ``Words`` (plain strings that keep their text / code / place parts).

>>> from jaxmagic.words import say, code
>>> d = Diagnosis("traced-shape", explanation=say("{} sets a length.", code("n")), fix="x[:n]")
>>> d.explanation, d.severity
('`n` sets a length.', 'error')
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from jaxmagic.doctor.registry import DOCS, PITFALLS
from jaxmagic.report import Report
from jaxmagic.tracing.sources import SourceLine
from jaxmagic.words import as_words


@dataclass(eq=False)
class Diagnosis(Report):
    """What went wrong, in which line of the user's code, and the change that fixes it.

    ``pitfall`` is a stable id (``python-control-flow``, ...: see ``PITFALLS``), ``explanation``
    plain words naming the user's variable and line, ``fix`` a code snippet fitted to the case,
    ``where`` the user's ``SourceLine``. Also: ``title``, ``severity`` (``error`` / ``warning``,
    the pitfall's own), ``variable``, ``function`` (the traced function's name), ``error_type``
    (the original exception's class name), ``alternatives`` (``(label, code)`` pairs: other
    fixes), ``static_argnames`` (parameters the fix makes static), ``reference`` (JAX's page on
    the error), ``checked`` (the fix ran, jitted, on the user's own arguments before it was shown,
    and its values were compared with the user's code run without jit), ``check`` (what that
    found: ``check.outcome`` is ``same``, ``differs``, ``runs`` (the user's code fails without jit
    too) or ``unchecked``, with ``difference``, ``reason``...) and ``check_note`` (saying so in words); ``fix_call``, where the fix changes how
    the function is called, that call, written with the traced function's parameters. ``explanation``, ``fix_note``,
    ``check_note`` and each label are ``Words``: strings whose ``parts`` say which pieces are code
    and which a place.

    >>> d = Diagnosis("traced-shape", explanation="n sets a length.", fix="x[:n]")
    >>> d.title, d.severity, [p.kind for p in d.explanation.parts]
    ('A size or slice that depends on a traced value', 'error', ['text'])
    """

    pitfall: str
    explanation: str
    fix: str
    where: SourceLine | None = None
    variable: str | None = None
    function: str | None = None
    error_type: str | None = None
    fix_note: str = ""
    alternatives: tuple[tuple[str, str], ...] = ()
    static_argnames: tuple[str, ...] = ()
    reference: str | None = None
    title: str = ""
    severity: str = ""
    checked: bool = False  # the fix ran on the user's own arguments and its values were compared
    check_note: str = ""  # what checking the fix found, in words ("" where there is no fix)
    check: Any = None  # the fix check's facts (``fix_check.FixCheck``: outcome, difference, ...)
    fix_call: str = ""  # how the fixed code is called, where the fix changes it (``count(self.n)``)
    # a card of the same pitfall shown just before this one (after the same cell): this card names
    # it rather than say its explanation and its other fixes again (``said_once``)
    same_as: "Diagnosis | None" = None

    _renderer = "jaxmagic.render.diagnosis"  # a class attribute, not a field

    def __post_init__(self):
        known = PITFALLS.get(self.pitfall)
        if not self.title:
            self.title = known.title if known else self.pitfall
        if known is not None:
            self.severity = known.severity  # a pitfall is an error or a warning, always the same
        elif not self.severity:
            self.severity = "error"
        self.explanation = as_words(self.explanation)
        self.fix_note = as_words(self.fix_note)
        self.check_note = as_words(self.check_note)
        self.alternatives = tuple((as_words(label), code) for label, code in self.alternatives)

    @property
    def docs(self) -> str:
        """Where the pitfall is explained at length: ``docs/pitfalls.md#<pitfall>``."""
        return f"{DOCS}#{self.pitfall}"

    def __repr__(self) -> str:
        where = f" at {self.where.label}" if self.where is not None else ""
        return f"<Diagnosis {self.pitfall}{where}: {self.title}>"


def said_once(diagnoses: list[Diagnosis]) -> list[Diagnosis]:
    """Cards shown together (after one cell), each pitfall explained once: a later card of a
    pitfall already shown gets ``same_as``, the first of them.

    >>> cards = said_once([Diagnosis("print-side-effect", "", "", function=f) for f in "fgh"])
    >>> [(d.function, d.same_as and d.same_as.function) for d in cards]
    [('f', None), ('g', 'f'), ('h', 'f')]
    """
    first: dict[str, Diagnosis] = {}
    said = []
    for diagnosis in diagnoses:
        earlier = first.setdefault(diagnosis.pitfall, diagnosis)
        said.append(diagnosis if earlier is diagnosis else dataclasses.replace(diagnosis, same_as=earlier))
    return said
