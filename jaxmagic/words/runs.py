"""Sentences about what a run computed (``--values``) and what it held in memory (``--memory``).

>>> import numpy as np
>>> from jaxmagic.tracing.values import EquationValue, summarise
>>> from jaxmagic.tracing.sources import SourceLine
>>> line = SourceLine("<cell>", 7, "f", "y = jnp.log(x)", cell="In [3]")
>>> first = EquationValue((0,), "log", (summarise(np.array([np.nan, 0.0])),), inputs=(summarise(np.array([-1.0, 1.0])),), source=line)
>>> str(first_nonfinite_sentence(first))
'the first NaN comes from In [3] line 7: `y = jnp.log(x)`, log of a value ≤ 0 (its input runs from -1 to 1)'
"""

from __future__ import annotations

from jaxmagic.words import Words, code, place, say, units

# Primitive -> (the condition that makes it non-finite, as words; a test on the operand's range).
_DOMAINS = {
    "log": ("log of a value ≤ 0", lambda lo, hi: lo <= 0),
    "log1p": ("log1p of a value ≤ -1", lambda lo, hi: lo <= -1),
    "sqrt": ("square root of a value < 0", lambda lo, hi: lo < 0),
    "rsqrt": ("1/√ of a value ≤ 0", lambda lo, hi: lo <= 0),
    "acos": ("arccos of a value outside [-1, 1]", lambda lo, hi: lo < -1 or hi > 1),
    "asin": ("arcsin of a value outside [-1, 1]", lambda lo, hi: lo < -1 or hi > 1),
    "atanh": ("atanh of a value outside (-1, 1)", lambda lo, hi: lo <= -1 or hi >= 1),
}


def number(x) -> str:
    """A value short enough for a sentence: ``0.25``, ``-1``, ``1.2e+06``.

    >>> number(-1.0), number(0.123456), number(1234567.0)
    ('-1', '0.1235', '1.235e+06')
    """
    if x is None:
        return "–"
    return f"{x:.4g}"


def first_nonfinite_sentence(first) -> Words:
    """Where the first NaN (or inf) came from, and what its operands held. Where no line of the
    user's made that equation (JAX's own code, or a library's), it is named by its operation alone.

    >>> import numpy as np
    >>> from jaxmagic.tracing.values import EquationValue, summarise
    >>> made = EquationValue((0,), "custom_linear_solve", (summarise(np.array([np.nan])),), inputs=())
    >>> str(first_nonfinite_sentence(made))
    'the first NaN comes from `custom_linear_solve`, which no line of yours wrote (JAX or a library made it)'
    """
    kind = "NaN" if first.made_nan else "inf"
    if first.source is None:
        head = say(
            "the first {} comes from {}, which no line of yours wrote (JAX or a library made it)",
            kind,
            code(first.primitive),
        )
        has_operands = any(s.minimum is not None for s in first.inputs)
        return head + _cause(first) if has_operands else head
    text = first.source.text or first.primitive
    head = say("the first {} comes from {}: {}", kind, place(first.source), code(text))
    return head + _cause(first)


def _cause(first) -> Words:
    operands = [s for s in first.inputs if s.minimum is not None]
    if first.primitive == "div" and len(first.inputs) == 2:
        divisor = first.inputs[1]
        if divisor.minimum is not None and divisor.minimum <= 0 <= divisor.maximum:
            return say(
                ", a division by a value that can be 0 (the divisor runs from {} to {})",
                number(divisor.minimum),
                number(divisor.maximum),
            )
    if not operands:
        return say(", {}", first.primitive)
    lo, hi = operands[0].minimum, operands[0].maximum
    domain = _DOMAINS.get(first.primitive)
    ranges = say("its input runs from {} to {}", number(lo), number(hi))
    if domain is not None and domain[1](lo, hi):
        return say(", {} ({})", domain[0], ranges)
    if len(operands) > 1:
        ranges = say(
            "its inputs run {}",
            "; ".join(f"from {number(s.minimum)} to {number(s.maximum)}" for s in operands),
        )
    return say(", {} of values too large or too small ({})", first.primitive, ranges)


def values_headline(run, n_shown: int) -> Words:
    """The answer line of ``--values``: where the first NaN or inf came from, or that all is finite.

    >>> from jaxmagic.tracing.values import ValueRun
    >>> str(values_headline(ValueRun(), 3))
    'every value is finite (3 equations evaluated on your arguments, one at a time)'
    """
    evaluated = (
        f"{units.format_count(n_shown)} equation{'s' * (n_shown != 1)} evaluated on your arguments, one at a time"
    )
    if run.first_nonfinite is not None:
        return first_nonfinite_sentence(run.first_nonfinite)
    nonfinite_inputs = sum(1 for s in run.inputs if not s.finite)
    if nonfinite_inputs:
        return say(
            "{} of the arguments already hold{} a NaN or an inf ({})",
            nonfinite_inputs,
            "s" * (nonfinite_inputs == 1),
            evaluated,
        )
    return say("every value is finite ({})", evaluated)


def peak_sentence(peak) -> Words:
    """The answer line of ``--memory``: the peak, when it happens, and the line holding most of it."""
    if not peak.available:
        return say(
            "XLA wrote no buffer assignment for this program (it came from a compilation cache): "
            "only its totals are known"
        )
    when = f" at the {peak.phase} pass" if peak.phase else ""
    head = say("peak {}{}", units.format_bytes(peak.peak_bytes), when)
    if not peak.by_line or not peak.peak_bytes:
        return head
    top = peak.by_line[0]
    share = f"{top.bytes / peak.peak_bytes:.0%}"
    if top.source is not None:
        return head + say("; {} held by {}: {}", share, place(top.source), code(top.source.text or top.label))
    if top.label.startswith("argument "):
        return head + say("; {} held by the argument {}", share, code(top.label[len("argument ") :]))
    return head + say("; {} held by buffers with no source line", share)


def reconcile_sentence(peak) -> Words:
    """How the peak compares with XLA's own totals (``memory_analysis``), the difference said."""
    totals = peak.totals
    if not totals:
        return say("XLA gives no totals for this backend to compare the peak with")
    parts = ", ".join(
        f"{name} {units.format_bytes(totals[key])}"
        for key, name in (("arguments", "arguments"), ("outputs", "outputs"), ("temporaries", "temporaries"))
        if key in totals
    )
    aliased = (
        f", less {units.format_bytes(totals['aliased'])} shared by donated arguments" if totals.get("aliased") else ""
    )
    reserved, live = peak.reserved_bytes, peak.peak_bytes
    head = say("XLA reserves {} for the call ({}{})", units.format_bytes(reserved), parts, aliased)
    if reserved == live:
        return head + say("; all of it is live at the peak")
    if reserved > live:
        return head + say(
            "; {} of it is live at the peak, and the other {} holds buffers that are live at other times",
            units.format_bytes(live),
            units.format_bytes(reserved - live),
        )
    return head + say(
        "; the buffers live at the peak add up to {} more ({}: constants and loop bookkeeping, which XLA's "
        "totals count apart)",
        units.format_bytes(live - reserved),
        units.format_bytes(live),
    )
