"""``--values`` as blocks (walked to text and HTML): each equation's value beside it, the answer line (the first NaN
or inf, and where it came from) first. Pure functions of the report.

>>> import numpy as np
>>> from jaxmagic.tracing.values import summarise
>>> value_text(summarise(np.array([1.0, 2.5])))
'[1 2.5]'
>>> value_text(summarise(np.arange(100.0, dtype=np.float32).reshape(10, 10)))
'float32[10,10] min 0 · mean 49.5 · max 99'
"""

from __future__ import annotations

import numpy as np

from jaxmagic.render import blocks_html, blocks_text
from jaxmagic.render.blocks import Bindings, Block, Group, Section, Sentence, Snippet, code_lines
from jaxmagic.words.runs import gradient_fix_sentence, number, values_headline

MAX_VALUE_CHARS = 60
MAX_OUTPUTS = 4  # values shown beside one equation; the report keeps them all


def value_text(summary) -> str:
    """One ``Summary`` in a few words: the value itself when small, else shape and min / mean / max."""
    flags = []
    if summary.nans:
        flags.append(f"{summary.nans} NaN")
    if summary.infs:
        flags.append(f"{summary.infs} inf")
    flagged = f" ({', '.join(flags)})" if flags else ""
    if summary.value is not None:
        shown = _small(summary.value)
        if len(shown) <= MAX_VALUE_CHARS:
            return shown
    shape = f"{summary.dtype}[{','.join(map(str, summary.shape))}]"
    if summary.minimum is None:
        return shape + flagged
    return (
        f"{shape} min {number(summary.minimum)} · mean {number(summary.mean)} · max {number(summary.maximum)}" + flagged
    )


def _small(value) -> str:
    array = np.asarray(value)
    if array.ndim == 0:
        item = array.item()
        return number(item) if isinstance(item, float) else str(item)
    flat = " ".join(number(x) if isinstance(x, float) else str(x) for x in array.ravel().tolist())
    return f"[{flat}]" if array.ndim == 1 else f"{array.dtype}{list(array.shape)} [{flat}]"


def equation_values(report) -> dict[tuple, tuple[str, bool]]:
    """Listing path -> (the equation's value in words, whether it is the first NaN or inf)."""
    run = report.value_run
    first = run.first_nonfinite.path if run.first_nonfinite is not None else None
    return {value.path: (_outputs_text(value.outputs), value.path == first) for value in run.equations}


def _outputs_text(outputs) -> str:
    shown = ", ".join(value_text(s) for s in outputs[:MAX_OUTPUTS])
    return shown + (f", … {len(outputs) - MAX_OUTPUTS} more" if len(outputs) > MAX_OUTPUTS else "")


def _headline(report):
    return values_headline(report.value_run, len(report.value_run.equations), report.derivative_blowup)


def headline(report) -> str:
    return str(_headline(report))


def _results(report) -> list[tuple[str, str]]:
    run = report.value_run
    names = (
        report.output_names
        if len(report.output_names) == len(run.outputs)
        else [f"output {i}" for i in range(len(run.outputs))]
    )
    return [(name, value_text(s)) for name, s in zip(names, run.output_summaries, strict=True)][:12]


def blocks(report) -> tuple[Block, ...]:
    """The answer line (flagged when a value is not finite), then the call's results by name."""
    flagged = " jm-nonfinite" if report.value_run.first_nonfinite is not None else ""
    head = Sentence(_headline(report), "jm-summary" + flagged)
    parts: list[Block] = [head]
    fix = report.gradient_fix
    if fix is not None:
        snippet = Snippet("python", tuple(code_lines(fix.code.rstrip("\n").split("\n"), "python")))
        parts.append(Section("jm-fix", "Fix", gradient_fix_sentence(fix), (snippet,), "jm-fix-note"))
    parts.append(Bindings(tuple(_results(report)), "jm-results"))
    return (Group("jm-values", tuple(parts)),)


def text(report) -> str:
    """The answer line and the results, for the top of the text view."""
    return blocks_text.text(blocks(report))


def html(report) -> str:
    """The answer line and the results, for the top of the HTML view."""
    return blocks_html.html(blocks(report))
