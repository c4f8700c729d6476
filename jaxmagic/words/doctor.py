"""The doctor's shared sentences: the labels of the fixes several pitfalls share (a static
argument, a static field, jaxmagic's ``-s`` option), and what checking a fix on the user's
arguments found. Each function takes the facts and writes one sentence; the pitfalls' own words
are templates in their declarations.

>>> str(mark_static(["n"], "the slice then has a fixed size."))
'Mark `n` static: the slice then has a fixed size.'
>>> str(fix_checked(type("Found", (), {"outcome": "unchecked", "reason": "no-call", "generated": ""})))
'Not checked on your arguments: jaxmagic does not know the arguments it was called with.'
"""

from __future__ import annotations

from typing import Any, Sequence

from jaxmagic.words.sentences import Part, Words, as_words, code, joined, names, place, say

# Why a fix could not be checked, by the reason the doctor's fix check gives
# (``jaxmagic.doctor.fix_check``: ``NO_CALL``, ``STATEMENTS``...).
_WHY_UNCHECKED = {
    "no-call": "jaxmagic does not know the arguments it was called with",
    "statements": "the fix changes statements that run, and jaxmagic runs only definitions and one call",
    "elided": "the fix is shown in part",
    "not-reached": "the call runs the fixed code through an object or a helper that jaxmagic does not redefine",
    "arguments": "an argument of the call is an expression jaxmagic does not run again",
    "new-parameters": "the fixed function takes arguments that the call does not pass yet",
    "fragment": "it is a line to put in your function, not code that runs alone",
    "time": "checking took longer than the doctor waits",
    "off": "checking was turned off",
}
# Why generated arguments were used too, by the fix check's ``generated``.
_GENERATED = {
    "zeros": "yours hold zeros, which can hide a difference (a padding of zeros, say)",
    "repeated": "yours hold one value repeated, which can hide a difference (a mask that keeps all or nothing)",
    "shapes": "jaxmagic knows only the shapes of yours",
}


def why_unchecked(reason: str | None) -> str:
    """Why a fix could not be checked, for the fix check's ``reason`` (empty for one it does not name).

    >>> why_unchecked("elided"), why_unchecked(None)
    ('the fix is shown in part', '')
    """
    return _WHY_UNCHECKED.get(reason or "", "")


def fix_checked(found: Any, seconds: float = 0.0) -> Words:
    """What checking a fix by value found (``found``: a ``FixCheck`` of the doctor's fix check), as
    the note under it; ``seconds``: how long the doctor waited.

    >>> from jaxmagic.doctor.fix_check import FixCheck
    >>> print(fix_checked(FixCheck("same")))
    Checked on your arguments: jitted, the fix gives the same values as your code without jit.
    >>> print(fix_checked(FixCheck("same", generated="zeros", extra=1)))
    Checked on your arguments: jitted, the fix gives the same values as your code without jit, and hands 1 more value back after them; the same on generated arguments of the same shapes, since yours hold zeros, which can hide a difference (a padding of zeros, say).
    >>> print(fix_checked(FixCheck("unchecked", "time"), 10))
    Not checked on your arguments: checking took longer than the doctor waits (10 s).
    """
    outcome, generated = found.outcome, _GENERATED.get(found.generated, "")
    yours = checked_on(found)
    on = "on generated arguments of your shapes" if found.generated == "shapes" else yours
    if outcome == "unchecked":
        waited = f" ({seconds:g} s)" if found.reason == "time" and seconds else ""
        return say("Not checked on your arguments: {}{}.", why_unchecked(found.reason), waited)
    if outcome == "runs" and not found.error:
        return say("Checked {}: the fix runs.", yours)
    if outcome == "runs":
        return say("Checked {}: the fix runs; your code fails without jit too ({}), so there are "
                   "no values to compare.", yours, code(found.error))  # fmt: skip
    if outcome == "same":
        more = (
            f", and hands {found.extra} more value{'s' if found.extra > 1 else ''} back after them"
            if found.extra
            else ""
        )
        also = (
            f"; the same on generated arguments of the same shapes, since {generated}"
            if generated and found.generated != "shapes"
            else ""
        )
        head = f"Checked {yours}" if found.generated != "shapes" else f"Checked {on} ({generated})"
        return say("{}: jitted, the fix gives the same values as your code without jit{}{}.", head, more, also)
    small = found.original and found.fixed and found.difference.kind != "value"
    values = say(" (your code: {}; the fix: {})", code(found.original), code(found.fixed)) if small else ""
    where = f"on generated arguments of the same shapes ({generated})" if found.generated else on
    return say("Checked {}: jitted, the fix does not give the values of your code without jit: {}{}.", where,
               difference(found.difference), values)  # fmt: skip


def checked_on(found: Any) -> str:
    """What a fix was checked on: the user's arguments, or, for code that takes none (a cell's
    top level), the user's code run as it stands.

    >>> from jaxmagic.doctor.fix_check import FixCheck
    >>> checked_on(FixCheck("same")), checked_on(FixCheck("same", arguments=False))
    ('on your arguments', 'by running your code')
    """
    return "on your arguments" if getattr(found, "arguments", True) else "by running your code"


def difference(found: Any) -> Words:
    """Where a fix's values differ from the user's code's (``found``: the fix check's ``Difference``).

    >>> from jaxmagic.doctor.fix_check import Difference
    >>> print(difference(Difference("[0]", "shape", "(3,)", "(4,)")))
    at `[0]` it has shape (4,) where your code's has (3,)
    >>> print(difference(Difference("", "value", "10.0", "15.0")))
    it gives 15.0 where your code gives 10.0
    """
    at = say("at {} ", code(found.where)) if found.where else ""
    if found.kind == "structure":
        return say("{}it returns {} values where your code returns {}", at, found.fixed, found.original)
    if found.kind == "state":
        return say("it leaves {} at {} where your code makes it {}", code(found.where), found.fixed, found.original)
    if found.kind == "shape":
        return say("{}it has shape {} where your code's has {}", at, found.fixed, found.original)
    index = f"at index {found.index} " if found.index else ""
    return say("{}{}it gives {} where your code gives {}", at, index, found.fixed, found.original)


def leading(label: Any) -> Words:
    """An alternative's label as the lead fix's note, once it leads: without its "Or".

    >>> str(leading("Or make it a list again:"))
    'Make it a list again:'
    """
    parts = list(as_words(label).parts)
    if parts and parts[0].kind == "text" and parts[0].text.startswith(("Or ", "or ")):
        rest = parts[0].text[3:]
        parts[0] = Part("text", rest[:1].upper() + rest[1:])
    return Words(tuple(parts))


def fix_check_label(label: Any, found: Any, seconds: float = 0.0) -> Words:
    """An alternative's label followed by what checking it found, in short (its closing colon kept).

    >>> from jaxmagic.doctor.fix_check import FixCheck
    >>> str(fix_check_label("Or donate a copy:", FixCheck("same")))
    'Or donate a copy. Checked on your arguments: the same values as your code without jit:'
    """
    if found is None:
        return as_words(label)
    if found.outcome == "unchecked":
        return unchecked_label(label, found.reason)
    said = {"same": say("the same values as your code without jit"), "runs": say("it runs")}
    said["differs"] = difference(found.difference) if found.difference else say("")
    parts = list(as_words(label).parts)
    ending = parts[-1].text.rstrip() if parts and parts[-1].kind == "text" else ""
    if ending.endswith((":", ".")):
        parts[-1] = Part("text", ending[:-1])
    close = ":" if ending.endswith(":") else "."
    return Words(tuple(parts)) + f". Checked {checked_on(found)}: " + said[found.outcome] + close


def unchecked_label(label: Any, reason: str | None) -> Words:
    """An alternative's label, saying that its code could not be checked (before its closing colon).

    >>> str(unchecked_label("Or donate a copy:", "no-call"))
    'Or donate a copy (not checked on your arguments: jaxmagic does not know the arguments it was called with):'
    >>> str(unchecked_label("Or donate a copy", "elided"))
    'Or donate a copy (not checked on your arguments: the fix is shown in part).'
    """
    parts = list(as_words(label).parts)
    colon = bool(parts) and parts[-1].kind == "text" and parts[-1].text.rstrip().endswith(":")
    if colon:
        parts[-1] = Part("text", parts[-1].text.rstrip()[:-1])
    parts.append(Part("text", f" (not checked on your arguments: {why_unchecked(reason)})" + (":" if colon else ".")))
    return Words(tuple(parts))


def rewrite_failed(error: str) -> Words:
    """The note where the doctor's rewrite failed when traced on the user's arguments (``error``:
    what the trace raised, in short).

    >>> str(rewrite_failed("TypeError: bad"))[:62]
    'not shown: run on your arguments, it still fails (`TypeError: '
    """
    return say(
        "not shown: run on your arguments, it still fails ({}); check that they are what the function "
        "expects, and see the page on this pitfall for the ways out.",
        code(error),
    )


def static_field(fields: Sequence[str], class_name: str) -> Words:
    """The label of the fix declaring ``fields`` static in the Equinox module ``class_name``.

    >>> str(static_field(["n"], "Model"))[:45]
    'Declare `n` a static field of `Model`: JAX th'
    """
    return say(
        "Declare {} a static field of {}: JAX then sees a plain Python value, not a traced leaf (rebuild the "
        "model after redefining the class).",
        names(fields),
        code(class_name),
    )


def mapped_axes(mapped: Sequence[tuple[int, str, int | None]]) -> Words:
    """The axes a ``jax.vmap`` maps, each of an argument as written, with its size.

    >>> str(mapped_axes([(0, "X", 10), (1, "U", 2)]))
    'axis 0 of `X` (10) and axis 1 of `U` (2)'
    """
    return joined([say("axis {} of {} ({})", str(axis), code(text), str(size)) for axis, text, size in mapped])


def moved_axes(moved: Sequence[tuple[int | None, str]]) -> Words:
    """Arguments as written, each mapped over another axis (or not mapped: ``None``).

    >>> str(moved_axes([(0, "U"), (None, "w")]))
    '`U` over its axis 0 and `w` not at all'
    """
    return joined(
        [
            say("{} over its axis {}", code(t), str(a)) if a is not None else say("{} not at all", code(t))
            for a, t in moved
        ]
    )


def mark_static(parameters: Sequence[str], why: Any) -> Words:
    """The label of the fix marking ``parameters`` static in ``jax.jit`` (or ``nnx.jit``): ``why``
    says what that gives."""
    return say("Mark {} static: {}", names(parameters), why)


def mark_positions_static(positions: Sequence[int], jitted: str, written: Sequence[str], why: Any) -> Words:
    """The label of the fix marking the call's ``positions`` static (``static_argnums``) where
    ``jitted`` is made: its arguments reach the code by place, not by a name of the jitted function.

    >>> str(mark_positions_static([2], "apply_jit", ["False"], "it is then a plain bool."))
    'Mark argument 2 of `apply_jit` (`False`) static with `static_argnums`: the jitted function takes it by its place, not by a name `static_argnames` could give; it is then a plain bool.'
    """
    places = say(", ".join(["{}"] * len(positions)), *[str(p) for p in positions])
    return say(
        "Mark {} {} of {} ({}) static with {}: the jitted function takes {} by {} place, not by a name {} could "
        "give; {}",
        "argument" if len(positions) == 1 else "arguments",
        places,
        code(jitted),
        names(written),
        code("static_argnums"),
        "it" if len(positions) == 1 else "them",
        "its" if len(positions) == 1 else "their",
        code("static_argnames"),
        why,
    )


def pass_python_value(parameters: Sequence[str], why: Any) -> Words:
    """The label of the fix passing ``parameters`` as plain Python values to an ``eqx.filter_jit``
    function, which keeps every non-array argument static.

    >>> str(pass_python_value(["n"], "the slice has a fixed size."))[:50]
    'Pass `n` as a plain Python value, not an array: `e'
    """
    return say(
        "Pass {} as a plain Python value, not an array: {} keeps every non-array argument static, so {}",
        names(parameters),
        code("eqx.filter_jit"),
        why,
    )


def magic_static_option(parameters: Sequence[str], function_name: str | None) -> Words:
    """The hint that jaxmagic's magics mark ``parameters`` static for one call (``-s``).

    >>> str(magic_static_option(["n", "k"], "first"))
    "In jaxmagic's magics, `-s n,k` marks `n` and `k` static for that one call, e.g. `%jaxpr -s n,k first(...)`."
    """
    spec = ",".join(parameters)
    return say(
        "In jaxmagic's magics, {} marks {} static for that one call, e.g. {}.",
        code(f"-s {spec}"),
        names(parameters),
        code(f"%jaxpr -s {spec} {function_name or 'f'}(...)"),
    )


__all__ = [
    "fix_check_label",
    "difference",
    "fix_checked",
    "magic_static_option",
    "mark_static",
    "pass_python_value",
    "rewrite_failed",
    "static_field",
    "unchecked_label",
    "why_unchecked",
]


def same_as_above(function: str | None, where: Any) -> Words:
    """In place of the explanation, on a card of a pitfall whose card for ``function`` (at ``where``,
    a ``SourceLine``) was shown just above it.

    >>> str(same_as_above("f", None)), str(same_as_above(None, None))
    ('The same trap as in `f`: the card above says why.', 'The same trap as above: that card says why.')
    """
    if function is None and where is None:
        return say("The same trap as above: that card says why.")
    if where is None:
        return say("The same trap as in {}: the card above says why.", code(function))
    if function is None:
        return say("The same trap as at {}: the card above says why.", place(where))
    return say("The same trap as in {} ({}): the card above says why.", code(function), place(where))


def checked_as_above(function: str | None) -> Words:
    """Under a fix whose check found, in the same words, what the card above found for its own.

    >>> str(checked_as_above("f"))
    'Checked on your arguments as the fix for `f` was, with the same result.'
    """
    if function is None:
        return say("Checked on your arguments as the fix above was, with the same result.")
    return say("Checked on your arguments as the fix for {} was, with the same result.", code(function))
