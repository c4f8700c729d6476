"""Sentences as structured parts: plain text, code (a name, an expression) and places (a line of the
user's code). The doctor writes its explanations with ``say``, the recompile watch its causes and
advice; renderers turn the parts into markup (``<code>``, a cell label) without reading any prose
back.

``Words`` is a ``str`` (the plain sentence, code in backticks, places by label), so every string
attribute of a ``Diagnosis`` stays a string; its ``parts`` keep the structure.

>>> from jaxmagic.tracing.sources import SourceLine
>>> line = SourceLine(file="<cell>", line=3, function="f", text="if n > 0:", cell="In [4]")
>>> w = say("{} is traced ({}).", code("n"), place(line))
>>> str(w)
'`n` is traced (In [4] line 3).'
>>> [p.kind for p in w.parts]
['code', 'text', 'place', 'text']
"""

from __future__ import annotations

import functools
import string
from dataclasses import dataclass
from typing import Any

from jaxmagic.tracing.sources import SourceLine

_FORMAT = string.Formatter()


@dataclass(frozen=True)
class Part:
    """One piece of a sentence: ``kind`` is ``text``, ``code`` or ``place``.

    >>> Part("code", "x[:n]").plain
    '`x[:n]`'
    """

    kind: str
    text: str
    place: SourceLine | None = None

    @property
    def plain(self) -> str:
        """The piece in plain text: code in backticks, a place by its label."""
        return f"`{self.text}`" if self.kind == "code" else self.text


class Words(str):
    """A sentence (a ``str``: its plain text) that also keeps its ``parts``.

    >>> Words((Part("text", "use "), Part("code", "jnp.where"))).parts[1].text
    'jnp.where'

    Copies and pickles keep the parts:

    >>> import copy, pickle
    >>> w = Words((Part("code", "n"), Part("text", " is static")))
    >>> copy.deepcopy(w).parts == pickle.loads(pickle.dumps(w)).parts == w.parts
    True
    """

    parts: tuple[Part, ...]

    def __new__(cls, parts=()):
        parts = tuple([p for p in parts if p.text])
        self = super().__new__(cls, "".join([p.plain for p in parts]))
        self.parts = parts
        return self

    def __getnewargs__(self):  # copies and pickles rebuild from the parts, not the plain text
        return (self.parts,)

    def __add__(self, other):
        return Words(self.parts + as_words(other).parts)

    def __radd__(self, other):
        return Words(as_words(other).parts + self.parts)


def code(text: Any) -> Part:
    """A piece of code in a sentence (a name, an expression).

    >>> code("use_relu")
    Part(kind='code', text='use_relu', place=None)
    """
    return Part("code", str(text))


def place(where: SourceLine | None) -> Part:
    """A line of the user's code in a sentence, shown by its label (``your code`` when unknown).

    >>> place(None).text
    'your code'
    """
    return Part("place", where.label, where) if where is not None else Part("text", "your code")


def as_words(value: Any) -> Words:
    """``value`` as ``Words``: kept if it already is, a ``Part`` alone, otherwise plain text.

    >>> as_words("plain").parts
    (Part(kind='text', text='plain', place=None),)
    """
    return value if isinstance(value, Words) else Words(_parts_of(value))


def _parts_of(value: Any) -> tuple[Part, ...]:
    """The parts ``value`` brings to a sentence (without making a sentence of it first)."""
    if isinstance(value, Words):
        return value.parts
    if isinstance(value, Part):
        return (value,)
    return (Part("text", "" if value is None else str(value)),)


@functools.lru_cache(maxsize=512)
def _slots(template: str) -> tuple[tuple[str, str | None], ...]:
    """A template's ``(literal text, slot name)`` pairs (``None``: no slot after the text), read once.

    >>> _slots("mark {} static")
    (('mark ', ''), (' static', None))
    """
    return tuple((literal, field) for literal, field, _, _ in _FORMAT.parse(template))


def say(template: str, *pieces: Any, **named: Any) -> Words:
    """A sentence from a template whose ``{}`` slots take ``code(...)``, ``place(...)``, other
    ``Words`` or plain values, in order; a named slot (``{arg}``) takes the keyword of that name
    (``{{`` and ``}}`` are literal braces).

    >>> str(say("mark {} static", code("n")))
    'mark `n` static'
    >>> str(say("fix the dtype of {arg} ({how})", arg=code("x"), how=code(".astype(jnp.float32)")))
    'fix the dtype of `x` (`.astype(jnp.float32)`)'
    """
    parts: list[Part] = []
    remaining = iter(pieces)
    for literal, field in _slots(template):
        if literal:
            parts.append(Part("text", literal))
        if field is not None:
            parts.extend(_parts_of(named[field] if field else next(remaining)))
    return Words(parts)


def names(items) -> Words:
    """Names as code, joined with "and".

    >>> str(names(["n", "mode", "k"]))
    '`n`, `mode` and `k`'
    """
    return joined([place(name) if isinstance(name, SourceLine) else code(name) for name in items])  # places: by labels


def joined(pieces) -> Words:
    """Pieces of sentences joined as a list is said.

    >>> str(joined([code("a"), say("axis {} of {}", "1", code("b"))]))
    '`a` and axis 1 of `b`'
    """
    pieces = list(pieces)
    parts: list[Part] = []
    for i, piece in enumerate(pieces):
        if i:
            parts.append(Part("text", " and " if i == len(pieces) - 1 else ", "))
        parts.extend(as_words(piece).parts)
    return Words(parts)


def tell(template: str, facts: dict[str, Any]) -> Words:
    """A sentence from a template whose named slots are filled from ``facts``: a ``SourceLine`` (or
    the slot ``{where}``) as a place, ``Words`` or a ``Part`` as they are, a slot written
    ``{name!s}`` as plain text, a list as names joined with "and", any other value as code. Text in
    backticks is code, slots in it included. The doctor's pitfalls keep their words as such templates.

    >>> w = tell("{call} ({where}) gets a Python {kind!s}: use `jnp.array({arg})`.", {"call": "f([1])", "kind": "list", "arg": "[1]"})
    >>> str(w), [p.kind for p in w.parts][-2:]
    ('`f([1])` (your code) gets a Python list: use `jnp.array([1])`.', ['code', 'text'])
    """
    parts: list[Part] = []
    for i, piece in enumerate(template.split("`")):
        if i % 2:
            parts.append(code(_FORMAT.vformat(piece, (), facts)))
            continue
        for literal, field, _, conversion in _FORMAT.parse(piece):
            if literal:
                parts.append(Part("text", literal))
            if field is None:
                continue
            value = facts.get(field)
            if field == "where" or isinstance(value, SourceLine):
                value = place(value)
            elif isinstance(value, (list, tuple)):
                value = names(value)
            elif conversion != "s" and not isinstance(value, (Words, Part)):
                value = code(value)
            parts.extend(as_words(value).parts)
    return Words(parts)
