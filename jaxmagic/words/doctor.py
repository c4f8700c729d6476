"""The doctor's shared sentences: the labels of the fixes several pitfalls share (a static
argument, a static field, jaxmagic's ``-s`` option), and what checking a fix on the user's
arguments found. Each function takes the facts and writes one sentence; the pitfalls' own words
are templates in their declarations.

>>> str(mark_static(["n"], "the slice then has a fixed size."))
'Mark `n` static: the slice then has a fixed size.'
>>> str(not_checked("no-call"))
'Not checked on your arguments: jaxmagic does not know the arguments it was called with.'
"""

from __future__ import annotations

from typing import Any, Sequence

from jaxmagic.words.sentences import Part, Words, as_words, code, names, say

# Why a fix could not be checked, by the reason the doctor's fix check gives
# (``jaxmagic.doctor.fix_check``: ``NO_CALL``, ``STATEMENTS``...).
_WHY_UNCHECKED = {
    "no-call": "jaxmagic does not know the arguments it was called with",
    "statements": "the fix changes statements that run, and jaxmagic only traces",
    "elided": "the fix is shown in part",
    "not-reached": "the call runs the fixed code through an object or a helper that jaxmagic does not redefine",
    "arguments": "an argument of the call is an expression jaxmagic does not run again",
    "new-parameters": "the fixed function takes arguments that the call does not pass yet",
    "fragment": "it is a line to put in your function, not code that runs alone",
}


def why_unchecked(reason: str | None) -> str:
    """Why a fix could not be checked, for the fix check's ``reason`` (empty for one it does not name).

    >>> why_unchecked("elided"), why_unchecked(None)
    ('the fix is shown in part', '')
    """
    return _WHY_UNCHECKED.get(reason or "", "")


def checked() -> Words:
    """The note of a fix that traced on the user's arguments.

    >>> str(checked())
    'Checked on your arguments: the fixed code traces.'
    """
    return say("Checked on your arguments: the fixed code traces.")


def not_checked(reason: str | None) -> Words:
    """The note of a fix that could not be checked, for the fix check's ``reason``."""
    return say("Not checked on your arguments: {}.", why_unchecked(reason))


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

    >>> str(rewrite_failed("TypeError: bad"))[:61]
    'not shown: traced on your arguments, it still fails (`TypeErr'
    """
    return say(
        "not shown: traced on your arguments, it still fails ({}); check that they are what the function "
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


def mark_static(parameters: Sequence[str], why: Any) -> Words:
    """The label of the fix marking ``parameters`` static in ``jax.jit`` (or ``nnx.jit``): ``why``
    says what that gives."""
    return say("Mark {} static: {}", names(parameters), why)


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
    "checked",
    "magic_static_option",
    "mark_static",
    "not_checked",
    "pass_python_value",
    "rewrite_failed",
    "static_field",
    "unchecked_label",
    "why_unchecked",
]
