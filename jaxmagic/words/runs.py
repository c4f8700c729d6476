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


def blowup_sentence(first, blowup) -> Words:
    """Where a gradient's first NaN (or inf) came from: the user's forward operation and line, and
    the derivative that blew up there.

    >>> import numpy as np
    >>> from jaxmagic.tracing.blowups import DerivativeBlowup
    >>> from jaxmagic.tracing.values import EquationValue, summarise
    >>> from jaxmagic.tracing.sources import SourceLine
    >>> line = SourceLine("<cell>", 2, "f", "return jnp.linalg.norm(v)", cell="In [4]")
    >>> first = EquationValue((3,), "div", (summarise(np.float32(np.inf)),), "forward", (summarise(np.float32(0)),))
    >>> blowup = DerivativeBlowup("sqrt", 0.0, "inf", line, (2,), (3,), (9,), "0 · inf")
    >>> str(blowup_sentence(first, blowup))
    'the first inf comes from In [4] line 2: `return jnp.linalg.norm(v)`: the derivative of `sqrt` at 0 is inf; 0 · inf = nan'
    """
    kind = "NaN" if first.made_nan else "inf"
    where = say("{}: {}", place(blowup.source), code(blowup.source.text or blowup.forward)) if blowup.source else None
    head = (
        say("the first {} comes from {}: ", kind, where) if where is not None else say("the first {} comes from ", kind)
    )
    derivative = say("the derivative of {} at {} is {}", code(blowup.forward), number(blowup.at), blowup.derivative)
    if blowup.nan_from is None:
        return head + derivative
    return head + derivative + say("; {} = nan", blowup.nan_from)


# How each fix makes the derivative safe, in a few words (the code follows); {} is `where`.
_FIXES = {
    "double where": "a second {} inside, so that the derivative is taken where it is finite "
    "(JAX's FAQ: gradients contain NaN where using {})",
    "safe sqrt": "a square root that is 0 at 0 with a derivative of 0 there (the double {} of JAX's FAQ{})",
    "safe norm": "a norm that is 0 at 0 with a gradient of 0 there (the double {} of JAX's FAQ{})",
    "safe std": "the square root of the variance, 0 where it is 0, with a derivative of 0 there "
    "(the double {} of JAX's FAQ{})",
}


def gradient_fix_sentence(fix) -> Words:
    """The fix's note: what it does, and what was checked on the user's arguments.

    >>> from jaxmagic.tracing.derivative_fixes import GradientFix
    >>> print(gradient_fix_sentence(GradientFix("safe norm", "...", "f", "", "", True, True)))
    a norm that is 0 at 0 with a gradient of 0 there (the double `where` of JAX's FAQ): the same values on your arguments, and a finite gradient
    """
    template = _FIXES[fix.kind]
    second = code("where") if fix.kind == "double where" else ""
    return say(template, code("where"), second) + say(": the same values on your arguments, and a finite gradient")


def values_headline(run, n_shown: int, blowup=None) -> Words:
    """The answer line of ``--values``: where the first NaN or inf came from (in a gradient, the
    derivative that blew up: ``blowup``), or that all is finite.

    >>> from jaxmagic.tracing.values import ValueRun
    >>> str(values_headline(ValueRun(), 3))
    'every value is finite (3 equations evaluated on your arguments, one at a time)'
    """
    evaluated = (
        f"{units.format_count(n_shown)} equation{'s' * (n_shown != 1)} evaluated on your arguments, one at a time"
    )
    if run.first_nonfinite is not None and blowup is not None:
        return blowup_sentence(run.first_nonfinite, blowup)
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
    share = f"{top.bytes / (peak.live_bytes or peak.peak_bytes):.0%}"
    if top.label.startswith("argument "):
        return head + say("; {} held by the argument {}", share, code(top.label[len("argument ") :]))
    if top.label.startswith("captured constant `"):
        return head + say("; {} held by the captured constant {}", share, code(top.label.split("`")[1]))
    if top.source is not None and top.source.text:
        return head + say("; {} held by {}: {}", share, place(top.source), code(top.source.text))
    if top.source is not None:  # a line whose text is not at hand (a library's file that is gone)
        return head + say("; {} held by {}", share, place(top.source))
    return head + say("; {} held by buffers with no source line", share)


def _spaces(peak) -> str:
    """`` (33.6 MiB of the peak in memory space S(1))`` for the bytes outside the main memory."""
    other = [
        f"{units.format_bytes(n)} of the peak in memory space S({space})"
        for space, n in peak.by_space.items()
        if space and n
    ]
    return f" ({', '.join(other)})" if other else ""


def peak_parts_sentence(peak) -> Words:
    """What the peak is made of, from the compiled program: what is held for the whole call (the
    arguments, outputs and constants, each allocation in full) and the values in use at once at
    the step of the peak, with the memory spaces they are in; then how it compares with XLA's
    own account (its peak where the backend gives one, else what it reserves for the call).

    >>> from jaxmagic.compiled.peak_memory import PeakMemory, LiveBuffer
    >>> peak = PeakMemory(peak_bytes=3072, at="dot.1", totals={"arguments": 1024, "outputs": 1024, "temporaries": 1024},
    ...     live_at_peak=[LiveBuffer("x{}", 1024, "f32[256]", "argument", None, "argument x"),
    ...                   LiveBuffer("dot.1{}", 1024, "f32[256]", "output", None, "(no source line)"),
    ...                   LiveBuffer("sin{}", 1024, "f32[256]", "temporary", None, "(no source line)")])
    >>> str(peak_parts_sentence(peak))
    'made of 2.0 KiB held for the whole call (arguments 1.0 KiB, outputs 1.0 KiB) and 1.0 KiB of values in use at once when XLA runs `dot.1`; XLA reserves 3.0 KiB for the call (arguments 1.0 KiB, outputs 1.0 KiB, temporaries 1.0 KiB): all of it is in use at the peak'
    """
    held_parts = [
        f"{name} {units.format_bytes(peak.bytes_of(kind))}"
        for kind, name in (("argument", "arguments"), ("output", "outputs"), ("constant", "constants"))
        if peak.bytes_of(kind)
    ]
    held = peak.bytes_of("argument", "output", "constant")
    live = peak.bytes_of("temporary")
    head = say("made of {} held for the whole call", units.format_bytes(held))
    if held_parts:
        head = head + say(" ({})", ", ".join(held_parts))
    head = head + say(" and {} of values in use at once", units.format_bytes(live))
    if peak.at:
        head = head + say(" when XLA runs {}", code(peak.at))
    head = head + say("{}", _spaces(peak))
    return head + say("; ") + _against_xla(peak)


def _against_xla(peak) -> Words:
    xla = peak.xla_peak_bytes
    if xla:
        gap = (peak.live_bytes - xla) / xla
        if abs(gap) <= 0.05:
            close = say("within 5% of it")
        elif gap < 0:
            close = say(
                "{} below it: the rest is memory its buffer assignment shows no value in at that step", f"{-gap:.0%}"
            )
        else:
            close = say(
                "{} above it: its buffer assignment shows more in use at that step than its peak counts", f"{gap:.0%}"
            )
        return (
            say(
                "the peak is XLA's own (memory_analysis), {}; the buffers in use at it add up to {}, ",
                units.format_bytes(xla),
                units.format_bytes(peak.live_bytes),
            )
            + close
        )
    return reconcile_sentence(peak)


def reconcile_sentence(peak) -> Words:
    """How the peak compares with what XLA reserves for the call (``memory_analysis``), on a
    backend whose own peak leaves the temporaries out (the CPU)."""
    totals = peak.totals
    if not totals:
        return say("XLA gives no totals for this backend to compare the peak with")
    parts = ", ".join(
        f"{name} {units.format_bytes(totals[key])}"
        for key, name in (("arguments", "arguments"), ("outputs", "outputs"), ("temporaries", "temporaries"))
        if key in totals
    )
    if peak.constant_bytes:  # read from its buffer assignment: memory_analysis has no size for them
        parts += f", constants {units.format_bytes(peak.constant_bytes)}"
    aliased = (
        f", less {units.format_bytes(totals['aliased'])} shared by donated arguments" if totals.get("aliased") else ""
    )
    reserved, in_use = peak.reserved_bytes, peak.peak_bytes
    head = say("XLA reserves {} for the call ({}{})", units.format_bytes(reserved), parts, aliased)
    if in_use >= reserved:
        head = head + say(": all of it is in use at the peak")
    else:
        head = head + say(
            ": {} of it is in use at the peak, the other {} holds buffers in use at other times",
            units.format_bytes(in_use),
            units.format_bytes(reserved - in_use),
        )
    return head


def residuals_sentence(residuals) -> Words:
    """The heading of what a gradient's backward pass keeps, read from the compiled program.

    >>> from jaxmagic.compiled.remat import Residual
    >>> str(residuals_sentence([Residual(4096, "f32[32,32]", None, "argument w")]))
    'the backward pass keeps 4.0 KiB from the forward pass in 1 buffer (in use at once in the compiled gradient)'
    """
    total, count = sum(r.bytes for r in residuals), len(residuals)
    return say(
        "the backward pass keeps {} from the forward pass in {} buffer{} (in use at once in the compiled gradient)",
        units.format_bytes(total),
        count,
        "s" * (count != 1),
    )


def policies_sentence(costs) -> Words:
    """The summary of the checkpoint policies' table: each compiled; said when all come out alike.

    >>> from jaxmagic.compiled.remat import PolicyCost
    >>> str(policies_sentence([PolicyCost("a", 10, None, ""), PolicyCost("b", 10, None, "")]))
    'each compiled: peak and FLOPs of the whole gradient; every policy compiles to the same peak here'
    """
    head = say("each compiled: peak and FLOPs of the whole gradient")
    if len({c.peak_bytes for c in costs}) == 1 and len(costs) > 1:
        return head + say("; every policy compiles to the same peak here")
    return head
