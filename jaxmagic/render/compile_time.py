"""What a call's compilation costs, by phase and by source line: tracing, lowering and XLA's
compile; where tracing spent its time (sampled) and how many equations each line made, as blocks
walked to text and HTML. Pure functions of a ``JaxprReport``."""

from __future__ import annotations

from jaxmagic.doctor import loop_cost
from jaxmagic.render import blocks_html, blocks_text
from jaxmagic.render.blocks import Block, Cell, Group, Hint, Note, Sentence, Snippet, Table, code_lines
from jaxmagic.words import compile_time as compile_time_words
from jaxmagic.words.units import format_count, format_seconds

MAX_LINES = 12


def phases(report) -> str:
    """``tracing 12.3 ms · lowering 4.1 ms · XLA compile 30.2 ms``"""
    parts = [
        ("tracing", report.trace_seconds),
        ("lowering", report.lower_seconds),
        ("XLA compile", report.compile_seconds),
    ]
    return " · ".join(f"{name} {format_seconds(seconds)}" for name, seconds in parts if seconds is not None)


def _rows(report):
    """(label, tracing seconds or None, equations, source text), the slowest to trace first, then
    the lines with the most equations."""
    counts = report.line_counts
    traced = report.trace_line_seconds or {}
    texts = {line.label: line.text for line in report.source_lines.values()}
    texts.update(report.trace_line_texts or {})
    labels = list(dict.fromkeys([*traced, *counts]))
    return [(label, traced.get(label), counts.get(label, 0), texts.get(label, "")) for label in labels]


def unrolled_hint(report) -> str:
    """A hint when one line made most of the equations: a Python loop unrolled at trace time."""
    line = loop_cost.unrolled_line(report)
    if line is None:
        return ""
    counts = report.line_counts
    return compile_time_words.unrolled(line.label, counts[line.label], sum(counts.values()))


def loop_alternative(report) -> list[Block]:
    """That loop as ``lax.fori_loop``, measured: a sentence, and the rewrite where its values agree."""
    found = report.loop_alternative
    if found is None:
        return []
    where = found.where.label if found.where is not None else f"line {found.loop_line}"
    said: list[Block] = [Hint(compile_time_words.fori_measured(found, where))]
    if found.check == "same":
        said.append(Snippet("python", tuple(code_lines(found.code.splitlines(), "python"))))
    return said


def sampling_note(report) -> str:
    """Why the tracing column is empty, when the samples could not split the time by line."""
    samples = report.trace_samples
    if samples is None or samples.reliable:
        return ""
    return (
        f"Tracing was sampled only {format_count(samples.total)} times, unevenly: native code held the "
        f"interpreter for up to {format_seconds(samples.longest)} at a time, so tracing time is not split "
        f"by line here. The equation counts stand; another run may be sampled more evenly."
    )


def blocks(report) -> tuple[Block, ...]:
    """The phases, then the lines by tracing time and equations (capped, the rest counted), then
    what to make of them."""
    rows = _rows(report)
    table = Table(
        ("tracing (sampled)", "equations", "line", "source"),
        tuple(
            (
                Cell(format_seconds(seconds) if seconds is not None else "–", "number"),
                Cell(format_count(count), "number"),
                Cell(label, "strong"),
                Cell(source, "code"),
            )
            for label, seconds, count, source in rows[:MAX_LINES]
        ),
        "jm-compile-lines",
        align=">><<",
    )
    shown: list[Block] = [Sentence(f"compile time: {phases(report)}"), table]
    if len(rows) > MAX_LINES:
        shown.append(Note(f"… {len(rows) - MAX_LINES} more lines"))
    shown += [Hint(words) for words in (sampling_note(report), unrolled_hint(report)) if words]
    shown += loop_alternative(report)
    return (Group("jm-compile-time", tuple(shown)),)


def text(report) -> str:
    """Compile time as aligned text."""
    return blocks_text.text(blocks(report))


def html(report) -> str:
    """Compile time as HTML."""
    return blocks_html.html(blocks(report))
