"""Why a jitted function compiled: one ``Cause`` per difference, as facts.

A ``Cause`` names the user's parameter (``x``, ``n``, ``params['w']``), what it was before and
what it is now, and which particular case of its kind it is (``reason``, with the values that
case names in ``facts``). Its sentence (``message``) and its one sentence of advice (``advice``,
taken from the tutorial chapters: pad or bucket shapes, fix the dtype, pass an array instead of a
Python scalar, define the function once outside the loop, hoist ``jax.jit`` out of the loop) are
written from those facts by the words layer (``jaxmagic.words.recompiles``) when first read.

>>> cause = Cause("shape", argument="x", before="f32[3]", after="f32[4]")
>>> cause.message
'shape of `x` changed: f32[3] → f32[4]'
>>> cause.advice.startswith("Keep the shape of `x` fixed")
True
"""

from __future__ import annotations

import functools
from dataclasses import KW_ONLY, dataclass
from typing import Any

CAUSE_KINDS = (
    "first_call",
    "shape",
    "dtype",
    "weak_type",
    "static_value",
    "pytree_structure",
    "sharding",
    "device",
    "config",
    "redefined_function",
    "jit_options",
    "caches_cleared",
    "unknown",
)

# The ``detail`` of a cause whose new value is an object alike to the old one, built again.
BUILT_AGAIN = "built again"


@dataclass(frozen=True)
class Cause:
    """One difference against the nearest earlier compilation of the same function.

    ``kind`` is one of ``CAUSE_KINDS``; ``argument`` names the parameter (``x``, ``params['w']``),
    the JAX option or the function concerned; ``before`` / ``after`` are short texts
    (``f32[3]`` / ``f32[4]``, ``2`` / ``3``). ``detail`` adds what a table has no room for
    (``axis 0: 3 → 4``); a shape cause also holds it as facts: ``axes`` (``((0, 3, 4),)``) or
    ``ranks`` (``(1, 2)``). ``reason`` names the particular case of the kind (``passing_style``,
    ``built_again``; ``None``: the kind itself) and ``facts`` the values it rests on, as
    ``(name, value)`` pairs; ``unwatched`` marks a cause found against a compilation made while
    nothing watched. ``message`` says it in a sentence and ``advice`` says what to do.

    >>> Cause("static_value", argument="n", before="2", after="3").message
    'static argument `n` changed: 2 → 3'
    """

    kind: str
    argument: str | None = None
    before: str | None = None
    after: str | None = None
    _: KW_ONLY  # the facts below are given by name
    detail: str | None = None
    axes: tuple = ()  # a shape cause's changed axes as facts: ((axis, before, after), ...)
    ranks: tuple | None = None  # a shape cause whose rank changed: (before, after)
    reason: str | None = None
    facts: tuple[tuple[str, Any], ...] = ()
    unwatched: bool = False

    def __post_init__(self):
        if self.kind not in CAUSE_KINDS:
            raise ValueError(f"unknown cause kind {self.kind!r}; expected one of {', '.join(CAUSE_KINDS)}")

    @functools.cached_property
    def message(self) -> str:
        """The cause in one sentence (``Words``: a ``str`` that keeps which parts are code)."""
        from jaxmagic.words.recompiles import message

        return message(self)

    @functools.cached_property
    def advice(self) -> str:
        """What to do about it, in one sentence."""
        from jaxmagic.words.recompiles import advice

        return advice(self)

    @property
    def label(self) -> str:
        """The kind as a reader says it: ``weak type``, ``re-defined function``."""
        from jaxmagic.words.recompiles import label

        return label(self.kind)

    @property
    def key(self) -> tuple[str, str | None]:
        """What makes two causes "the same cause" for repeated compilations: kind and argument."""
        return self.kind, self.argument

    def __str__(self) -> str:
        return self.message


def shape_change(old: tuple | list | None, new: tuple | list | None) -> tuple[tuple, tuple | None]:
    """``(axes, ranks)`` of a shape change: the changed axes as ``(axis, before, after)`` when the
    rank is the same, else the ranks ``(before, after)``.

    >>> shape_change((3, 2), (4, 2)), shape_change((3,), (3, 1))
    ((((0, 3, 4),), None), ((), (1, 2)))
    """
    if old is None or new is None:
        return (), None
    if len(old) != len(new):
        return (), (len(old), len(new))
    return tuple((i, a, b) for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b), None


def shape_change_text(axes: tuple, ranks: tuple | None) -> str | None:
    """``axis 0: 3 → 4`` or ``rank 1 → 2``: the words for ``shape_change``'s facts.

    >>> shape_change_text(((0, 3, 4), (2, 5, 6)), None), shape_change_text((), (1, 2))
    ('axis 0: 3 → 4, axis 2: 5 → 6', 'rank 1 → 2')
    """
    if ranks is not None:
        return f"rank {ranks[0]} → {ranks[1]}"
    return ", ".join(f"axis {i}: {a} → {b}" for i, a, b in axes) or None
