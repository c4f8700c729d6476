"""Sentences about where device time goes, by source line: the answer line (the hottest line, and
how well the whole program uses the chip), the headline, each line's use of the chip, a kernel
whose time several lines share by estimated cost, the chip's peaks, and a trace that cannot be read
per line. Facts come from ``jaxmagic.compiled.attribution`` and ``jaxmagic.compiled.roofline``.

>>> lines_words(["In [3] line 3", "In [3] line 4", "In [3] line 5"])
'In [3] lines 3–5'
>>> lines_words(["model.py:12", "model.py:14"])
'model.py lines 12 and 14'
>>> from jaxmagic.compiled.roofline import Usage
>>> rate_words(Usage(1.41e14, 6.4e11, 0.7, 0.78, "memory"))
('141 TFLOP/s (70%)', '640 GB/s (78%)', 'memory')
"""

from __future__ import annotations

import re
from typing import Sequence

from jaxmagic.compiled.attribution import Kernel, Profile
from jaxmagic.compiled.roofline import ENVIRONMENT, Peaks, Usage
from jaxmagic.words.units import format_rate, format_seconds

_CELL_LINE = re.compile(r"^(.*) line (\d+)$")
_FILE_LINE = re.compile(r"^(.*):(\d+)$")
RECORD_EXAMPLE = (
    "with jax.profiler.trace('trace'):  ...run your jitted steps...  then: python -m jaxmagic profile trace"
)


def _split(label: str) -> tuple[str, int] | None:
    found = _CELL_LINE.match(label) or _FILE_LINE.match(label)
    return (found.group(1), int(found.group(2))) if found else None


def lines_words(labels: Sequence[str]) -> str:
    """Several lines as few words: ``In [3] lines 3–5``, ``model.py lines 12 and 14``; labels of
    different files or cells listed whole."""
    split = [_split(label) for label in labels]
    places = {s[0] for s in split if s is not None}
    if len(labels) < 2 or None in split or len(places) != 1:
        return ", ".join(labels)
    numbers = sorted(s[1] for s in split if s is not None)
    where = places.pop()
    if numbers == list(range(numbers[0], numbers[-1] + 1)) and len(numbers) > 2:
        return f"{where} lines {numbers[0]}–{numbers[-1]}"
    listed = ", ".join(str(n) for n in numbers[:-1])
    return f"{where} lines {listed} and {numbers[-1]}"


def per(profile: Profile) -> str:
    """``per call``, or ``in the trace`` for the totals of a trace read from a file."""
    return "per call" if profile.scope == "call" else "in the trace"


def headline(profile: Profile) -> str:
    """``device time per call: 549 µs over 5 calls (wall 686 µs); 99.7% of it on your source lines``,
    or, for a trace, ``device time in the trace: 2.1 ms; 100.0% of it on source lines``; or why
    there is nothing compiled to profile."""
    if profile.nothing_compiled:
        return f"nothing compiled to profile: {profile.nothing_compiled}"
    if profile.scope != "call":
        return f"device time in the trace: {format_seconds(profile.device_seconds)}; {profile.attributed_share:.1%} of it on source lines"
    return (
        f"device time per call: {format_seconds(profile.device_seconds)} over {profile.calls} "
        f"call{'s' * (profile.calls != 1)} (wall {format_seconds(profile.wall_seconds)}); "
        f"{profile.attributed_share:.1%} of it on your source lines"
    )


def inflated_note(profile: Profile) -> str:
    """Where the profiler's own cost made the traced calls much slower than a call without it:
    the times are the traced calls', the shares between lines what to read; else ``""``."""
    if profile.scope != "call" or not profile.profiler_inflated or profile.unprofiled_seconds is None:
        return ""
    return (
        f"the profiler's own cost inflates these times: a call took {format_seconds(profile.wall_seconds)} "
        f"profiled and {format_seconds(profile.unprofiled_seconds)} without it (it traces each of many small "
        "kernels, as a loop runs them); read the shares between lines, not the times as a call's"
    )


def utilisation(profile: Profile) -> str:
    """How well the whole program uses the chip: ``the program runs at 70% of the chip's peak
    FLOP/s and 85% of its memory bandwidth (memory-bound)``; on a chip of no known peak, says so."""
    if profile.peaks is None:
        return f"no peak is known for {profile.device or 'this device'}, so no share of one is given"
    use = profile.total_usage()
    if use.flops_fraction is None or use.bytes_fraction is None:
        return ""
    bound = f" ({use.bound}-bound)" if use.bound else ""
    return (
        f"the program runs at {use.flops_fraction:.0%} of the chip's peak FLOP/s and "
        f"{use.bytes_fraction:.0%} of its memory bandwidth{bound}"
    )


def answer(profile: Profile, label: str, seconds: float, share: float, source: str) -> str:
    """The one line that answers where the time goes: ``In [3] line 2 takes 97.0% of the device
    time (1.34 ms per call): h = jnp.tanh(x @ w); the program runs at …``."""
    said = f"{label} takes {share:.1%} of the device time ({format_seconds(seconds)} {per(profile)})"
    said = f"{said}: {source}" if source else said
    used = utilisation(profile)
    return f"{said}; {used}" if used else said


def rate_words(use: Usage) -> tuple[str, str, str]:
    """A line's FLOP/s, bytes/s (each with its fraction of the peak, where one is known) and bound."""

    def rate(value: float, unit: str, fraction: float | None) -> str:
        shown = format_rate(value, unit)
        return f"{shown} ({fraction:.0%})" if fraction is not None else shown

    return (
        rate(use.flops_per_second, "FLOP/s", use.flops_fraction),
        rate(use.bytes_per_second, "B/s", use.bytes_fraction),
        use.bound,
    )


def peaks_note(profile: Profile) -> str:
    """Which peaks the fractions are of, and where they came from."""
    peaks: Peaks | None = profile.peaks
    if peaks is None:
        return (
            f"no peak is known for {profile.device or 'this device'}: FLOP/s and bytes/s are shown without a share "
            f"of one (set {ENVIRONMENT}=FLOPS,BYTES, e.g. 197e12,819e9, to give one)"
        )
    source = {
        "trace": "as the trace records them",
        "table": f"for {profile.device}, from jaxmagic's table of chips",
        ENVIRONMENT: f"from {ENVIRONMENT}",
    }.get(peaks.source, peaks.source)
    return (
        f"shares of the chip's peaks, {format_rate(peaks.flops_per_second, 'FLOP/s')} and "
        f"{format_rate(peaks.bytes_per_second, 'B/s')} of main memory, {source}; bound: which of the two "
        f"the line's work would exhaust first"
    )


def estimated_note(kernel: Kernel) -> str:
    """``one kernel for In [3] lines 3–5 (`fusion.2`), shared by estimated cost``."""
    return f"one kernel for {lines_words(sorted(kernel.lines, key=_order))} ({kernel.name}), shared by estimated cost"


def _order(label: str) -> tuple[str, int]:
    return _split(label) or (label, 0)


ESTIMATED_MARK = "≈"
ESTIMATED_LEGEND = (
    "≈: part of the line's time is its share of a kernel XLA fused it into with other lines, estimated "
    "from XLA's cost of each line's instructions (FLOPs, transcendentals, bytes) at the chip's peaks"
)


def no_hlo(programs: Sequence[str]) -> str:
    """The trace holds no HLO for these programs, so their kernels have no source line; how to record one that does."""
    named = ", ".join(programs)
    return (
        f"the trace holds no HLO program for {named}, so its kernels cannot be tied to source lines; "
        f"jax.profiler.trace records each program's HLO: {RECORD_EXAMPLE}"
    )


def no_kernels(path: str) -> str:
    """A trace in which no compiled kernel ran."""
    return (
        f"{path}: the trace holds no kernel of a compiled program (nothing jitted ran while it recorded); "
        f"{RECORD_EXAMPLE}"
    )
