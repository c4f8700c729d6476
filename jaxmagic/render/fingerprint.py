"""A ``FingerprintDiff`` as sentences and blocks, walked to text, HTML and a standalone page. Pure functions of the diff.

The first line answers the question ("did this change what XLA compiles, beyond the budgets?");
then one line per function that changed (``train_step: +1 all-gather from train.py:42; peak
memory +31%; 2 compilations instead of 1: shape of `batch` changed``), then the changes in detail,
the budget breaches first, rows capped.

>>> from jaxmagic.recompiles.fingerprint_diff import Budgets, Change, FingerprintDiff
>>> found = FingerprintDiff([Change("collectives", "step", 0, 1, "train.py:42", "y = x @ w", "(x: f32[8])",
...                                 "all-gather", breach=True)], [], Budgets(), functions=1)
>>> print(text(found, color=False).splitlines()[0])
1 budget broken: `step` +1 all-gather from train.py:42
"""

from __future__ import annotations

from jaxmagic.recompiles.causes import Cause
from jaxmagic.recompiles.fingerprint_diff import Change, FingerprintDiff
from jaxmagic.render import blocks_text
from jaxmagic.render.blocks import Block, Cell, Fold, Grid, Group, Items, Note, Paragraph, Sections, Sentence
from jaxmagic.words import Words, code, say, units
from jaxmagic.words.untrusted import shown_name

MAX_ROWS = 200  # detail rows shown; the diff holds every change
MAX_FUNCTIONS = 100  # one-line summaries of changed functions shown, the largest changes first
MAX_NOTES = 20  # versions that differ, functions cut: shown before "and N more"


def _signed(number: float) -> str:
    return f"+{number:g}" if number > 0 else f"{number:g}"


def _percent(change: Change) -> str:
    growth = change.growth
    return f"{growth * 100:+.0f}%" if growth is not None else "new"


def change_words(change: Change) -> Words:
    """One change in a few words: ``+1 all-gather from train.py:42``, ``peak memory +31%``."""
    if change.kind == "compilations":
        causes = [Cause(**cause).message for cause in (change.detail or []) if cause.get("kind") != "first_call"]
        listed = list(dict.fromkeys(causes))
        because = say(
            ": {}", shown_name("; ".join(listed[:3]) + (f"; {len(listed) - 3:,} more" if len(listed) > 3 else ""))
        )
        because = because if causes else ""
        return say("{} compilations instead of {}{}", change.after, change.before, because)
    if change.kind == "new_function":
        return say("new: compiled {}", units.times(change.after))
    if change.kind == "removed_function":
        return say("no longer compiled (was compiled {})", units.times(change.before))
    if change.kind == "signature":
        return say("compiled for {} instead of {}", code(shown_name(change.after)), code(shown_name(change.before)))
    if change.kind == "collectives":
        return say("{} {} from {}", _signed(change.after - change.before), shown_name(change.detail), _where(change))
    if change.kind == "memory":
        return say(
            "peak memory {} ({} → {})",
            _percent(change),
            units.format_bytes(change.before),
            units.format_bytes(change.after),
        )
    if change.kind == "flops":
        return say(
            "FLOPs {} ({} → {})", _percent(change), units.format_count(change.before), units.format_count(change.after)
        )
    if change.kind == "ops":
        return say("{} ops from {}", _signed(change.after - change.before), _where(change))
    return say("{} jaxpr equations ({} → {})", _signed(change.after - change.before), change.before, change.after)


def _where(change: Change) -> str:
    return shown_name(change.line or "?", 120)


def function_lines(found: FingerprintDiff) -> list[Words]:
    """One line per changed function (at most ``MAX_FUNCTIONS``, then how many more): its changes,
    budget breaches first, most telling first."""
    by_function: dict[str, list[Change]] = {}
    for change in found.changes:
        by_function.setdefault(change.function, []).append(change)
    lines = []
    for function, changes in list(by_function.items())[:MAX_FUNCTIONS]:
        shown = [c for c in changes if c.kind != "ops"] or changes  # per-line op counts only when alone
        parts = [change_words(c) for c in shown[:4]]
        more = len(shown) - len(parts)
        joined = say("{}", parts[0])
        for part in parts[1:]:
            joined = say("{}; {}", joined, part)
        if more > 0:
            joined = say("{}; {} more", joined, more)
        lines.append(say("{}: {}", code(shown_name(function)), joined))
    if len(by_function) > MAX_FUNCTIONS:
        lines.append(say("… and {} more functions changed", f"{len(by_function) - MAX_FUNCTIONS:,}"))
    return lines


def answer(found: FingerprintDiff) -> Words:
    """The first line: the budgets broken (with the first breach said), or that nothing broke them."""
    breaches = found.breaches
    if breaches:
        first = breaches[0]
        count = f"{len(breaches):,} budget{'s' if len(breaches) != 1 else ''} broken"
        return say("{}: {} {}", count, code(shown_name(first.function)), change_words(first))
    if not found.changes:
        plural = "s" if found.functions != 1 else ""
        return say("No change to what XLA compiled for {} function{}", found.functions, plural)
    changed = len({c.function for c in found.changes})
    return say("Within the budgets: {} of {} functions changed", f"{changed:,}", f"{found.functions:,}")


def environment_words(found: FingerprintDiff) -> list[Words]:
    """What the two runs ran on, where it differs: their programs are then not compared as facts."""
    shown = [
        say("{} differs: {} → {}", shown_name(what, 60), shown_name(before, 120), shown_name(after, 120))
        for what, before, after in found.environment[:MAX_NOTES]
    ]
    more = len(found.environment) - MAX_NOTES
    return shown + ([say("… and {} more", f"{more:,}")] if more > 0 else [])


def cut_words(found: FingerprintDiff) -> list[Words]:
    """The functions a file says it did not keep every compilation of: compared by their count,
    their programs as far as kept."""
    shown = [
        say(
            "{} in the {} file: only the last {} of {} compilations were kept; the count is compared, the programs as far as kept",
            code(shown_name(function)),
            side,
            f"{total - cut:,}",
            f"{total:,}",
        )
        for side, function, cut, total in found.cut[:MAX_NOTES]
    ]
    more = len(found.cut) - MAX_NOTES
    return shown + ([say("… and {} more functions cut", f"{more:,}")] if more > 0 else [])


def text(found: FingerprintDiff, *, color: bool = True, shown: tuple[Block, ...] | None = None) -> str:
    """The diff as terminal text: the answer, versions that differ, one line per function, details;
    ``shown``: its blocks, when already made."""
    return blocks_text.text(shown if shown is not None else blocks(found), color=color)


def html(found: FingerprintDiff, *, shown: tuple[Block, ...] | None = None) -> str:
    """The diff as an HTML fragment: the answer first, then each function's line, then the details
    (folded); ``shown``: its blocks, when already made."""
    from jaxmagic.render import blocks_html, theme  # a page's needs: not loaded for the text on a terminal

    body = blocks_html.html(shown if shown is not None else blocks(found))
    return f'<div class="{theme.ROOT_CLASS} jm-fingerprint-diff">{theme.style_tag()}{body}</div>'


def blocks(found: FingerprintDiff) -> tuple[Block, ...]:
    """The answer, the versions or backends that differ, one line per changed function, compile
    time, then every change (capped; folded in a notebook)."""
    head: list[Block] = [Sentence(answer(found), "jm-summary jm-fingerprint-answer", bold=True)]
    if found.environment:
        head.append(Sentence(ACROSS_ENVIRONMENTS, "jm-muted"))
        head.append(Items(tuple(environment_words(found)), "jm-muted", lead="  "))
    if found.cut:
        head.append(Items(tuple(cut_words(found)), "jm-muted", lead="! "))
    lines = tuple(function_lines(found))
    if lines:
        head.append(Items(lines, lead="  ", item_css="jm-fingerprint-function"))
    timing = compile_time_line(found)
    if timing:
        head.append(Paragraph(timing, "jm-muted jm-compile-time", style="faint"))
    shown: list[Block] = [Group("jm-fingerprint-head", tuple(head))]
    if found.changes:
        shown.append(Fold(f"{len(found.changes)} changes", _details(found)))
    return (Sections(tuple(shown)),)


ACROSS_ENVIRONMENTS = "Compared across versions or backends: only the compilations are held to the budgets."


def _details(found: FingerprintDiff) -> tuple[Block, ...]:
    """Every change, budget breaches marked, capped at ``MAX_ROWS`` (the diff holds them all)."""
    changes = found.changes[:MAX_ROWS]
    rows = tuple(
        (
            Cell("✗" if c.breach else "·"),
            Cell(shown_name(c.function), "code"),
            Cell(change_words(c)),
            Cell(_line_cell(c)),
        )
        for c in changes
    )
    row_css = tuple("jm-fingerprint-change" + (" jm-breach" if c.breach else "") for c in changes)
    keys = tuple(c.kind for c in changes)
    table = Grid(("", "function", "change", "line"), rows, key_name="kind", keys=keys, row_css=row_css)
    more = len(found.changes) - MAX_ROWS
    return (table, *([Note(f"… and {more:,} more changes")] if more > 0 else []))


def _line_cell(change: Change) -> str:
    if not change.line:
        return ""
    if not change.line_text:
        return shown_name(change.line, 120)
    return f"{shown_name(change.line, 120)}: {shown_name(change.line_text, 160)}"


def compile_time_line(found: FingerprintDiff) -> str:
    """Compile time, before → after, for the functions whose time moved most (a ratio: compile time
    is noisy, so it is said, never held to a budget)."""
    ratios = sorted(
        ((after / before, name, before, after) for name, (before, after) in found.compile_seconds.items()),
        key=lambda item: -abs(item[0] - 1),
    )
    if not ratios:
        return ""
    shown = ", ".join(
        f"{shown_name(name, 120)} {ratio:.2g}× ({units.format_seconds(before)} → {units.format_seconds(after)})"
        for ratio, name, before, after in ratios[:3]
    )
    return f"compile time (noisy, not held to a budget): {shown}"


def page(found: FingerprintDiff) -> str:
    """A standalone HTML page (no script, nothing fetched) of the diff."""
    from jaxmagic.render.theme import escape

    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="generator" content="jaxmagic"><title>{escape(str(answer(found)))}</title>'
        "<style>body{font-family:system-ui,sans-serif;margin:2em;}</style></head>"
        f"<body>{html(found)}</body></html>\n"
    )
