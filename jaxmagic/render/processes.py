"""A ``ProcessComparison`` as sentences and blocks, walked to text, HTML and a standalone page. Pure functions of it.

The first line answers "did every process compile the same programs?"; then one line per
process that compiled differently: the function, the process, what it compiled that the others
did not, why, and where it was called.

>>> from jaxmagic.recompiles.processes import Disagreement, ProcessComparison
>>> found = ProcessComparison(["process 0 of 2", "process 1 of 2"], 1, [Disagreement(
...     "count", "step", "process 1 of 2", {"process 0 of 2": 1, "process 1 of 2": 2}, "(x: f32[5])",
...     ({"kind": "shape", "argument": "x", "before": "f32[4]", "after": "f32[5]"},), "train.py:9", None)])
>>> print(text(found, color=False).splitlines()[0])
Processes compiled differently: `step` on process 1 of 2 (a hang waits where one process compiles alone)
"""

from __future__ import annotations

from jaxmagic.recompiles.causes import Cause
from jaxmagic.recompiles.processes import Disagreement, ProcessComparison
from jaxmagic.render import blocks_text
from jaxmagic.render.blocks import Block, Items, Note, Sentence
from jaxmagic.words import Words, code, say, units
from jaxmagic.words.untrusted import shown_name

MAX_ROWS = 200  # disagreements shown; the comparison holds every one
MAX_NAMED = 20  # processes named in one sentence before "and N more"


def _because(found: Disagreement) -> Words:
    causes = list(dict.fromkeys(Cause(**c).message for c in found.causes if c.get("kind") != "first_call"))
    more = f"; {len(causes) - 3:,} more" if len(causes) > 3 else ""
    return say(": {}", shown_name("; ".join(causes[:3]) + more)) if causes else say("")


def disagreement_words(found: Disagreement) -> Words:
    """One process's difference: ``step on process 1: compiled 2 times, the others 1 time...``."""
    mine = found.counts[found.process]
    others = sorted({n for p, n in found.counts.items() if p != found.process})
    usual = " or ".join(units.times(n) for n in others[:4]) + (" or other counts" if len(others) > 4 else "")
    where = say(" at {}", shown_name(found.call_site, 120)) if found.call_site else say("")
    function, process = code(shown_name(found.function)), shown_name(found.process)
    if found.signature is None:
        return say(
            "{} on {}: compiled {}, other processes {} (missing {})",
            function,
            process,
            units.times(mine),
            usual,
            code(shown_name(found.usual_signature or "?")),
        )
    what = "compiled only here" if found.kind == "only_some" else f"compiled {units.times(mine)}, others {usual}"
    instead = say(" instead of {}", code(shown_name(found.usual_signature))) if found.usual_signature else say("")
    return say(
        "{} on {}: {}; extra {}{}{}{}",
        function,
        process,
        what,
        code(shown_name(found.signature)),
        instead,
        where,
        _because(found),
    )


def answer(found: ProcessComparison) -> Words:
    """The first line: which function and process disagree first, or that all processes agree."""
    if not found.disagreements:
        return say(
            "All {} processes compiled the same programs ({} functions)",
            f"{len(found.processes):,}",
            f"{found.functions:,}",
        )
    first = found.disagreements[0]
    return say(
        "Processes compiled differently: {} on {} (a hang waits where one process compiles alone)",
        code(shown_name(first.function)),
        shown_name(first.process),
    )


def text(found: ProcessComparison, *, color: bool = True, shown: tuple[Block, ...] | None = None) -> str:
    """The comparison as terminal text: the answer, then one line per disagreement (capped);
    ``shown``: its blocks, when already made."""
    return blocks_text.text(shown if shown is not None else blocks(found), color=color)


def html(found: ProcessComparison, *, shown: tuple[Block, ...] | None = None) -> str:
    """The comparison as an HTML fragment: the answer first, then each disagreement; ``shown``: its
    blocks, when already made."""
    from jaxmagic.render import blocks_html, theme  # a page's needs: not loaded for the text on a terminal

    body = blocks_html.html(shown if shown is not None else blocks(found))
    return f'<div class="{theme.ROOT_CLASS} jm-processes">{theme.style_tag()}{body}</div>'


def blocks(found: ProcessComparison) -> tuple[Block, ...]:
    """The answer, one line per disagreement (capped at ``MAX_ROWS``: the comparison holds every
    one), and the processes compared."""
    shown_ones = found.disagreements[:MAX_ROWS]
    out: list[Block] = [Sentence(answer(found), "jm-summary jm-processes-answer", bold=True)]
    if shown_ones:
        words = tuple(disagreement_words(d) for d in shown_ones)
        kinds = tuple(d.kind for d in shown_ones)
        out.append(Items(words, lead="  ", item_css="jm-process-disagreement", key_name="kind", keys=kinds))
    if len(found.disagreements) > MAX_ROWS:
        out.append(Note(f"… and {len(found.disagreements) - MAX_ROWS:,} more"))
    for claim, paths in found.same_claims[:MAX_NAMED]:
        out.append(Sentence(f"{named(paths)} all say they are {shown_name(claim, 80)}", "jm-muted"))
    out.append(Sentence(f"Compared: {named(found.processes)}", "jm-muted"))
    return tuple(out)


def named(names: list[str]) -> str:
    """Names joined, at most ``MAX_NAMED`` of them, then how many more.

    >>> named(["a", "b\\n"]), named([str(n) for n in range(25)]).endswith("and 5 more")
    ('a, b\\\\n', True)
    """
    shown = ", ".join(shown_name(n, 160) for n in names[:MAX_NAMED])
    return shown + (f" and {len(names) - MAX_NAMED:,} more" if len(names) > MAX_NAMED else "")


def page(found: ProcessComparison) -> str:
    """A standalone HTML page (no script, nothing fetched) of the comparison."""
    from jaxmagic.render.theme import escape

    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="generator" content="jaxmagic"><title>{escape(str(answer(found)))}</title>'
        "<style>body{font-family:system-ui,sans-serif;margin:2em;}</style></head>"
        f"<body>{html(found)}</body></html>\n"
    )
