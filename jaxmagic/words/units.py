"""Numbers and texts as a person reads them: seconds, bytes, counts, a long text cut short.
Engines and renderers share these.

>>> format_seconds(0.0000141), format_seconds(1.4801), format_bytes(2560), format_count(12345)
('14.1 µs', '1.48 s', '2.5 KiB', '12,345')
>>> shorten("a   long\\n  text", 8)
'a long …'
"""

from __future__ import annotations

import math


def format_seconds(seconds: float | None) -> str:
    """Seconds with a unit a person reads at a glance (ns, µs, ms, s)."""
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "–"
    if math.isinf(seconds):
        return "∞"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if abs(seconds) >= scale or unit == "ns":
            value = seconds / scale
            if unit == "s":
                return f"{value:.2f} s"
            return f"{value:.3g} {unit}"
    return f"{seconds} s"


def format_bytes(n: float) -> str:
    """Bytes as B, KiB, MiB, GiB."""
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{int(n)} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def format_count(n: float) -> str:
    """A large count with thousands separators (or SI suffix past a million)."""
    if n >= 1e9:
        return f"{n / 1e9:.2f} G"
    if n >= 1e6:
        return f"{n / 1e6:.2f} M"
    return f"{int(n):,}" if float(n).is_integer() else f"{n:,.1f}"


def format_rate(per_second: float, unit: str) -> str:
    """A rate with an SI prefix: ``format_rate(1.41e14, "FLOP/s")`` is ``141 TFLOP/s``.

    >>> format_rate(1.41e14, "FLOP/s"), format_rate(6.4e11, "B/s"), format_rate(0, "B/s")
    ('141 TFLOP/s', '640 GB/s', '0 B/s')
    """
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(per_second) >= scale:
            return f"{per_second / scale:.3g} {prefix}{unit}"
    return f"{per_second:.3g} {unit}"


def times(count: int) -> str:
    """How many times, in words: ``1 time``, ``3 times``, ``4,044 times``.

    >>> times(1), times(4044)
    ('1 time', '4,044 times')
    """
    return f"{count:,} time{'s' * (count != 1)}"


_BOUNDARIES = " ,;)]}"  # where a cut may end without splitting a word or a name


def shorten(text: object, limit: int) -> str:
    """``text`` (or any value, as ``str`` writes it) on one line (runs of spaces and line breaks made
    one space), cut to at most ``limit`` characters, an ellipsis last when anything was cut: after a
    space, comma or closing bracket where one lies in the last two fifths kept, else mid-word.

    >>> shorten("(x: f32[3], y: f32[4], z: f32[5])", 24)
    '(x: f32[3], y: f32[4], …'
    >>> shorten("a_very_long_identifier", 10)
    'a_very_lo…'
    """
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    kept = text[: limit - 2]
    boundary = max(kept.rfind(mark) for mark in _BOUNDARIES)
    if boundary >= 0.6 * limit:
        return kept[: boundary + 1].rstrip() + " …"
    return text[: limit - 1] + "…"
