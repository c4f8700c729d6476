"""A ``Profile`` as blocks walked to text and HTML, answer first: the line that takes the most
device time and its share, with how well the whole program uses the chip; then the hottest lines,
each with its FLOP/s and bytes/s against the chip's peaks and what bounds it; the rest and the
kernels folded with their counts (the many kernels one line made, as a Python loop unrolled at
trace time makes them, as one row); a kernel whose time several lines share by estimated cost
marked and named. Pure functions of the profile."""

from __future__ import annotations

from jaxmagic.render import blocks_html, blocks_text
from jaxmagic.render.blocks import Block, Cell, Fold, Group, Note, Sentence, Table
from jaxmagic.words import profile as words
from jaxmagic.words.units import format_seconds

MAX_KERNELS = 12
MAX_ESTIMATED = 3  # kernels shared by estimated cost named under the table
TOP_LINES = 5  # lines shown before the fold
UNROLLED_FROM = 4  # kernels of one line from which they are shown as one row


def headline(profile) -> str:
    """``device time per call: 549 µs over 5 calls (wall 686 µs); 99.7% of it on your source lines``,
    or why there is nothing compiled to profile."""
    return words.headline(profile)


def answer(profile) -> str:
    """The one line that answers where the time goes: ``In [3] line 2 takes 97.0% of the device
    time (1.34 ms per call): h = jnp.tanh(x @ w)``, with the whole program's use of the chip; the
    headline when no line was seen."""
    rows = list(_line_rows(profile))
    if not rows:
        return headline(profile)
    label, seconds, share, source, _ = rows[0]
    return words.answer(profile, label, seconds, share, source)


def _line_rows(profile):
    total = profile.device_seconds or 1.0
    for label, seconds in profile.line_times.items():
        kernels = [k.name for k in profile.kernels if label in k.lines]
        yield label, seconds, seconds / total, profile.texts.get(label, ""), kernels


def _estimated_lines(profile) -> set[str]:
    return {label for kernel in profile.estimated_kernels() for label in kernel.lines}


def _kernel_rows(profile) -> list[tuple[str, float, str]]:
    """(kernel, or ``N kernels`` for the many one line (or no line) made; seconds per call; its lines), hottest first."""
    rows = []
    for lines, kernels in profile.kernel_groups():
        where = ", ".join(lines) or "no source line"
        if len(kernels) >= UNROLLED_FROM:
            rows.append((f"{len(kernels)} kernels", sum(k.seconds for k in kernels), where))
        else:
            rows += [(k.name, k.seconds, where) for k in kernels]
    return sorted(rows, key=lambda row: -row[1])


def _unrolled_note(profile) -> str:
    """``; 50 of them from In [1] line 10``, for the line that made the most kernels, when it made
    ``UNROLLED_FROM`` or more (a Python loop unrolled at trace time makes one per pass; so can a
    line's forward and backward passes: which, the listing's equation counts say)."""
    groups = [(lines, ks) for lines, ks in profile.kernel_groups() if lines and len(ks) >= UNROLLED_FROM]
    if not groups:
        return ""
    lines, kernels = max(groups, key=lambda group: len(group[1]))
    return f"; {len(kernels)} of them from {', '.join(lines)}"


def blocks(profile) -> tuple[Block, ...]:
    """The profile answer first: the hottest lines with a bar each and their use of the chip, the
    kernels shared by estimated cost named, the rest and the kernels folded with their counts."""
    if profile.nothing_compiled:
        return (Group("jm-profile", (Sentence(headline(profile)),)),)
    rows = list(_line_rows(profile))
    if not rows:
        return (Group("jm-profile", (Sentence(headline(profile)), Note("(the profiler saw no kernel of this call)"))),)
    estimated = _estimated_lines(profile)
    shown: list[Block] = [Sentence(answer(profile), "jm-summary jm-answer"), Sentence(headline(profile), "jm-muted")]
    if inflated := words.inflated_note(profile):
        shown.append(Note(f"⚠ {inflated}"))
    shown.append(_lines_table(profile, rows[:TOP_LINES], estimated))
    if len(rows) > TOP_LINES:
        rest = sum(share for _, _, share, _, _ in rows[TOP_LINES:])
        summary = f"… {len(rows) - TOP_LINES} more lines · {rest:.1%} of the time (the report's .line_times)"
        shown.append(Fold(summary, (_lines_table(profile, rows[TOP_LINES:], estimated),), in_text="heading"))
    shared = profile.estimated_kernels()
    if shared:
        notes = [words.estimated_note(k) for k in shared[:MAX_ESTIMATED]]
        if len(shared) > MAX_ESTIMATED:
            notes.append(f"and {len(shared) - MAX_ESTIMATED} more")
        shown.append(Note(f"{words.ESTIMATED_MARK} {'; '.join(notes)}"))
    shown.append(Note(words.peaks_note(profile)))
    shown.append(_kernels_fold(profile))
    return (Group("jm-profile", tuple(shown)),)


def _kernels_fold(profile) -> Fold:
    kernel_rows = _kernel_rows(profile)
    kernels: list[Block] = [
        Table(
            ("kernel", f"time {words.per(profile).replace('per ', '/ ')}", "source lines fused into it"),
            tuple(
                (Cell(name, "code"), Cell(format_seconds(seconds), "number"), Cell(where))
                for name, seconds, where in kernel_rows[:MAX_KERNELS]
            ),
            "jm-kernels",
            align="<><",
        )
    ]
    if len(kernel_rows) > MAX_KERNELS:
        kernels.append(Note(f"… {len(kernel_rows) - MAX_KERNELS} more kernels (the report's .kernels holds them all)"))
    summary = f"kernels · {len(profile.kernels)} (fusions), hottest first{_unrolled_note(profile)}"
    return Fold(summary, tuple(kernels), in_text="both")


def _lines_table(profile, rows, estimated: set[str]) -> Table:
    def usage_cells(label: str) -> tuple[Cell, Cell, Cell]:
        if label not in profile.line_work:
            return Cell("", "number"), Cell("", "number"), Cell("")
        flops, moved, bound = words.rate_words(profile.usage(label))
        return Cell(flops, "number"), Cell(moved, "number"), Cell(bound)

    return Table(
        (
            "share",
            f"time {words.per(profile).replace('per ', '/ ')}",
            "",
            "line",
            "FLOP/s",
            "bytes/s",
            "bound",
            "source",
        ),
        tuple(
            (
                Cell(
                    f"{words.ESTIMATED_MARK * (label in estimated)}{share:.1%}",
                    "number",
                    title=words.ESTIMATED_LEGEND if label in estimated else "",
                ),
                Cell(format_seconds(seconds), "number"),
                Cell(bar=share),
                Cell(label, "strong", title=", ".join(kernels) or "no kernel"),
                *usage_cells(label),
                Cell(source, "code"),
            )
            for label, seconds, share, source, kernels in rows
        ),
        "jm-lines",
        align=">>><>><<",
    )


def text(profile) -> str:
    """The profile as aligned plain text, answer first."""
    return blocks_text.text(blocks(profile))


def html(profile) -> str:
    """The profile as HTML, answer first: the hottest lines with a bar each, the rest and the
    kernels folded (no JavaScript)."""
    return blocks_html.html(blocks(profile))
