"""``RecompileLog`` as blocks, walked to HTML and to text. Pure functions of the log.

The view starts with what to act on: the answer (how many compilations, the main cause), a
headline for each function that keeps compiling for the same cause, then per-function counts, then
one row per group of compilations of the same function and causes (time, function, call site,
causes with their fix, compile time). The live panel (``render.panel``) walks the same blocks.
Stable class names for tests and browsers: ``jm-recompile-log``, ``jm-recompile-row``
(``data-function``, ``data-kinds``), ``jm-cause jm-cause-<kind>``, ``jm-recompile-count``,
``jm-recompile-headline``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Iterable, Sequence

from jaxmagic.render import blocks_html, blocks_text, theme
from jaxmagic.render.blocks import (
    Block,
    CauseLine,
    CompilationRow,
    Compilations,
    Flags,
    Lead,
    Note,
    Occurrence,
    Only,
    Remark,
    Sentence,
    Tally,
)
from jaxmagic.render.theme import escape
from jaxmagic.words import code, names, say, units
from jaxmagic.words.recompiles import plain_fix_kind, shared_advice

UNWATCHED_NOTE = '("before" is the last call seen while watching; what compiled while nothing watched is not known)'
MAX_ROWS = 200  # rows shown; the log holds more, and says so


# ----------------------------------------------------------------------------------------------
# Shared pieces


def title(log):
    """``Compilations in this cell``: what the log watched (``Words``: a scope may name code)."""
    return say("Compilations in {}", log.scope) if log.scope else say("Compilations")


def scope(log):
    """What the log watched, after its answer: `` — in this cell`` (empty without a scope)."""
    return say(" — in {}", log.scope) if log.scope else ""


def empty_note(log) -> str:
    """What an empty log means."""
    watched = f" of {', '.join(log.functions)}" if log.functions else ""
    if getattr(log, "cleared_at", None) is not None:
        return f"Nothing compiled{watched} since the log was cleared at {clock(log.cleared_at)}."
    if log.watching:
        return f"Nothing compiled{watched} yet: every call so far hit JAX's caches (or ran eagerly)."
    return f"Nothing compiled{watched}: every call hit JAX's caches (or ran eagerly)."


def advice_shown(events: Sequence) -> list[set[str]]:
    """For each event, the advice sentences seen for the first time in the log (shown once)."""
    seen: set[str] = set()
    shown = []
    for event in events:
        fresh = set()
        for cause in event.causes:
            if cause.kind != "first_call" and cause.advice not in seen:
                seen.add(cause.advice)
                fresh.add(cause.advice)
        shown.append(fresh)
    return shown


def clock(seconds: float) -> str:
    """Wall-clock time of day of an event: ``14:03:27``."""
    return time.strftime("%H:%M:%S", time.localtime(seconds))


def visible(log, function: str | None = None) -> list:
    """The events a view shows: those of ``function`` (all when ``None``)."""
    from jaxmagic.recompiles import matches

    events = log.events
    if function:
        events = [e for e in events if matches(e.function, [function])]
    return events


# ----------------------------------------------------------------------------------------------
# Groups: the same function compiled again for the same causes is one row, ``×N``


@dataclass(frozen=True)
class Group:
    """Compilations of one function for the same causes (each cause's kind and argument), as
    ``(number, event)`` pairs, oldest first: one row of a view, ``×count``.

    >>> from jaxmagic.recompiles import RecompileEvent
    >>> from jaxmagic.recompiles.causes import Cause
    >>> calls = [RecompileEvent("step", None, None, 0.01, [Cause("shape", argument="x", before=f"f32[{n}]",
    ...          after=f"f32[{n + 1}]")]) for n in (1, 2, 3)]
    >>> [(g.latest.function, g.count, g.numbers) for g in grouped(calls)]
    [('step', 3, '1–3')]
    """

    numbered: tuple

    @property
    def count(self) -> int:
        return len(self.numbered)

    @property
    def first(self):
        return self.numbered[0][1]

    @property
    def latest(self):
        return self.numbered[-1][1]

    @property
    def numbers(self) -> str:
        """``7`` for one compilation, ``2–12`` for a group of consecutive ones, its runs where
        others came between (``2–3, 5–6``; past three runs, the first two and the latest: a range
        never counts a compilation that is not the group's).

        >>> def numbers(*ns):
        ...     return Group(tuple((n, None) for n in ns)).numbers
        >>> numbers(7), numbers(2, 3, 4), numbers(2, 3, 5, 6), numbers(2, 4, 6, 8, 10)
        ('7', '2–4', '2–3, 5–6', '2, 4, … 10')
        """
        runs: list[list[int]] = []
        for number, _ in self.numbered:
            if runs and number == runs[-1][1] + 1:
                runs[-1][1] = number
            else:
                runs.append([number, number])
        said = [str(a) if a == b else f"{a}–{b}" for a, b in runs]
        if len(said) > 3:
            said = [*said[:2], f"… {runs[-1][1]}"]
        return ", ".join(said)

    @property
    def unwatched_since_before(self) -> bool:
        """Whether any of the group's recompilations compares with a call seen before a stretch
        nothing watched (what compiled meanwhile is not known)."""
        return any(getattr(e, "unwatched_since_before", False) and e.is_recompile for _, e in self.numbered)

    @property
    def compile_s(self) -> float:
        return sum(event.compile_s for _, event in self.numbered)


def grouped(events: Sequence, *, first_number: int = 1) -> list[Group]:
    """The events as groups of the same function and the same causes, numbered from
    ``first_number``, in the order of each group's first compilation."""
    groups: dict[tuple, list] = {}
    for number, event in enumerate(events, start=first_number):
        key = (event.function, event.internal, tuple(cause.key for cause in event.causes))
        groups.setdefault(key, []).append((number, event))
    return [Group(tuple(numbered)) for numbered in groups.values()]


def main_cause(groups: Sequence[Group]) -> Group | None:
    """The group of recompilations that repeats most (the latest on a tie); ``None`` when every
    compilation was a first one."""
    again = [group for group in groups if group.latest.is_recompile]
    return max(again, key=lambda group: (group.count, group.numbered[-1][0]), default=None)


def cause_name(group: Group):
    """What a group's compilations have in common, said short, every argument that changed named:
    ``shape of `x` in `step```, ``shape of `x` and `y`, dtype of `z` in `step```."""
    function = code(group.latest.function)
    named: dict[str, list[str]] = {}  # a kind's label -> the arguments it changed, in order
    for cause in group.latest.causes:
        if cause.kind != "first_call":
            arguments = named.setdefault(cause.label, [])
            if cause.argument and cause.kind != "redefined_function" and cause.argument not in arguments:
                arguments.append(cause.argument)
    if not any(named.values()):
        return say("{} {}", ", ".join(named), function)
    parts = [
        say("{} of {}", label, names(arguments)) if arguments else say("{}", label)
        for label, arguments in named.items()
    ]
    said = parts[0]
    for part in parts[1:]:
        said = say("{}, {}", said, part)
    return say("{} in {}", said, function)


def answer(log):
    """The line that answers the view's question: how many compilations and the main cause
    (``Words``); the scope follows it (``title``).

    >>> from jaxmagic.recompiles import RecompileLog
    >>> str(answer(RecompileLog()))
    'no compilations'
    """
    if not log.total:
        return say("{}", log.summary)
    main = main_cause(grouped(log.events))
    if main is None:
        return say("{}; each a first compilation", log.summary)
    if main.count > 1:
        return say("{}; main cause: {} ×{}", log.summary, cause_name(main), main.count)
    # No cause repeats: the recompilations' causes, in the order they came (the first three).
    causes = [cause_name(group) for group in grouped(log.events) if group.latest.is_recompile]
    listed = causes[0]
    for cause in causes[1:3]:
        listed = say("{}, {}", listed, cause)
    more = say(" and {} more", len(causes) - 3) if len(causes) > 3 else ""
    return say("{}; {}: {}{}", log.summary, "cause" if len(causes) == 1 else "causes", listed, more)


# ----------------------------------------------------------------------------------------------
# The log, once, as blocks; then as text and as HTML


def blocks(log) -> tuple[Block, ...]:
    """The answer, headlines and counts (``head``), then a row per group (``rows``)."""
    if not log.total:
        return head(log)
    return head(log) + rows(log.events, total=log.total)


def head(log, *, selected: str | None = None, note: bool = True) -> tuple[Block, ...]:
    """What opens the view: the answer, with what was watched after it (and, with ``note``, what
    an empty log means), a headline for each function that keeps compiling for the same cause, the
    counts per function, most first (``selected``: the one a panel's filter shows)."""
    shown: list[Block] = [Lead(answer(log), scope(log), "jm-summary jm-answer", "jm-muted jm-scope")]
    if not log.total:
        return (*shown, Sentence(empty_note(log), "jm-muted")) if note else tuple(shown)
    seconds = log.compile_s_by_function
    counts = tuple(
        (name, count, units.format_seconds(seconds.get(name, 0.0)))
        for name, count in sorted(log.counts.items(), key=lambda item: -item[1])
    )
    shown.append(Flags(tuple(log.headlines), "jm-card jm-recompile-headline"))
    shown.append(Tally(counts, "jm-recompile-counts", "jm-recompile-count", selected or ""))
    return tuple(shown)


def rows(
    events: Sequence, *, total: int | None = None, newest_first: bool = False, max_rows: int = MAX_ROWS
) -> tuple[Block, ...]:
    """The compilations, one row per group of the same function and causes (``×N``, its first and
    latest compilation on demand), the last ``max_rows`` of them: groups in the order of their
    first compilation, or with the most recent one on top (``newest_first``)."""
    events = list(events)
    total = len(events) if total is None else total
    shown = events[-max_rows:]
    groups = grouped(shown, first_number=total - len(shown) + 1)
    fresh = advice_shown([group.latest for group in groups])
    made = [(group.numbered[-1][0], _row(group, advice)) for group, advice in zip(groups, fresh, strict=True)]
    if newest_first:
        made.sort(key=lambda row: -row[0])
    table: list[Block] = [Compilations(tuple(row for _, row in made), css="jm-recompile-table")]
    if total > len(shown):
        more = f"Showing the last {len(shown)} of {total:,} compilations; the log object holds the latest ones."
        table.append(Only("html", (Sentence(more, "jm-muted jm-recompile-more"),)))
        table.append(Only("text", (Note(f"  … {total - len(shown)} earlier compilations not shown"),)))
    return tuple(table)


def text(log, *, color: bool = False, shown: tuple[Block, ...] | None = None) -> str:
    """The log as terminal text (ANSI colours with ``color=True``): the answer line, then
    headlines, counts and one row per group of the same function and causes, ``×N``; ``shown``:
    its blocks, when already made.

    >>> from jaxmagic.recompiles import RecompileLog
    >>> print(text(RecompileLog(scope="this cell")))
    no compilations — in this cell
    Nothing compiled: every call hit JAX's caches (or ran eagerly).
    """
    return blocks_text.text(shown if shown is not None else blocks(log), color=color)


def html(log, *, shown: tuple[Block, ...] | None = None) -> str:
    """The log as self-contained HTML: headlines, counts and a table (no JavaScript); ``shown``:
    its blocks, when already made."""
    body = blocks_html.html(shown if shown is not None else blocks(log))
    return f'<div class="{theme.ROOT_CLASS} jm-recompile-log">{theme.style_tag()}{body}</div>'


def page(log) -> str:
    """The log as a standalone HTML document: what ``RecompileLog.save_html`` and
    ``%recompiles save FILE.html`` write (no JavaScript, nothing fetched from the network)."""
    heading = escape(f"{title(log)}: {log.summary}")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="generator" content="jaxmagic"><title>{heading}</title>'
        "<style>body{font-family:system-ui,sans-serif;margin:2em;}</style></head>"
        f"<body>{html(log)}</body></html>\n"
    )


def _row(group: Group, new_advice: set[str]) -> CompilationRow:
    event = group.latest
    site = event.call_site
    seconds = units.format_seconds(group.compile_s)
    timing = (
        f"trace {units.format_seconds(event.trace_s)} · lower {units.format_seconds(event.lower_s)} · "
        f"XLA {units.format_seconds(event.backend_s)}"
    )
    if group.count > 1:
        timing = f"{seconds} in all over {group.count} compilations; the latest: {timing}"
    cache = None
    if event.persistent_cache:
        cache = ("persistent cache", "served from the persistent compilation cache")
    elif event.persistent_cache is False:
        cache = ("not in persistent cache", persistent_miss(event))
    return CompilationRow(
        numbers=group.numbers,
        clock=clock(event.time),
        function=event.function,
        count=group.count,
        causes=tuple(_cause(cause) for cause in event.causes),
        seconds=seconds,
        site=_site(event),
        site_title=f"{site.file}:{site.line} in {site.function}\n{site.text}" if site else "",
        defined=f"defined at {event.defined_at.label}" if event.defined_at else "",
        kinds=" ".join(dict.fromkeys(event.kinds)),
        internal="(JAX internal)" if event.internal else "",
        occurrences=_occurrences(group),
        fold=f"×{group.count}: the first and the latest" if group.count > 1 else "",
        remarks=tuple(_remarks(group, new_advice)),
        raw=event.raw or "",
        raw_shown=bool(event.raw) and "unknown" in event.kinds,
        timing=timing,
        cache=cache,
        cache_hit=bool(event.persistent_cache),
    )


def _cause(cause) -> CauseLine:
    """A cause's line; its kind is not labelled where its sentence already begins with it
    (``shape of `x` changed``) or is a first compilation."""
    said = cause.kind == "first_call" or str(cause.message).startswith(cause.label + " ")
    label = "" if said else cause.label
    return CauseLine(cause.kind, label, cause.message, cause.argument or "", cause.detail or "")


def _occurrences(group: Group) -> tuple[Occurrence, ...]:
    """A group's first and latest compilations (none for a single one)."""
    if group.count == 1:
        return ()
    return tuple(
        Occurrence(label, number, clock(event.time), _site(event), tuple(cause.message for cause in event.causes))
        for label, (number, event) in (("first", group.numbered[0]), ("latest", group.numbered[-1]))
    )


def _remarks(group: Group, new_advice: set[str]) -> Iterable[Remark]:
    """What a row says under its causes: the program's difference, the unwatched stretch, fixes
    said for the first time in the view."""
    event = group.latest
    if getattr(event, "program_diff", None) and event.is_recompile:
        yield Remark(event.program_diff, "jm-muted jm-program-diff")  # its sentence names the program
    if group.unwatched_since_before:
        yield Remark(UNWATCHED_NOTE, "jm-muted jm-unwatched-before")
    shared = shared_advice(event.causes)  # one fix for several arguments told the same, not one each
    said = set()
    for cause in _unique_advice(event.causes):
        kind = plain_fix_kind(cause)
        if kind in shared:
            if kind not in said and any(c.advice in new_advice for c in event.causes if plain_fix_kind(c) == kind):
                yield Remark(shared[kind], "jm-advice", "→ ")
            said.add(kind)
            continue
        if cause.advice in new_advice:
            yield Remark(cause.advice, "jm-advice", "→ ")


def _unique_advice(causes) -> Iterable:
    seen = set()
    for cause in causes:
        if cause.advice not in seen:
            seen.add(cause.advice)
            yield cause


# The parts of JAX's persistent cache key (``cache_key.get``), as a reader names them.
_KEY_PARTS = {
    "computation": "the program (its StableHLO)",
    "jax_lib version": "jaxlib's version",
    "backend version": "the backend's version",
    "XLA flags": "the XLA flags",
    "compile_options": "the compile options (devices, donation, JAX's settings)",
    "accelerator_config": "the devices",
    "compression": "the cache's compression",
    "custom_hook": "the cache's custom hook",
}


def persistent_miss(event) -> str:
    """Why the persistent compilation cache missed, as far as the recorded keys tell.

    >>> from jaxmagic.recompiles import RecompileEvent
    >>> persistent_miss(RecompileEvent("step", None, None, 0.1, [], persistent_cache=False,
    ...                                persistent_key_parts=("computation",), persistent_recorded_at=0.0))[:62]
    'not in the persistent cache: the program (its StableHLO) chang'
    """
    parts = event.persistent_key_parts
    if parts is None:
        return "not in the persistent cache: no earlier key of it was recorded in this cache"
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(event.persistent_recorded_at or 0))
    if not parts:
        return (
            f"not in the persistent cache, with the same key as when last compiled ({when}): the entry was "
            "never written (JAX writes only compilations longer than jax_persistent_cache_min_compile_time_secs, "
            "1 s by default) or was evicted"
        )
    changed = " and ".join(str(_KEY_PARTS.get(p, p)) for p in parts)
    return f"not in the persistent cache: {changed} changed since it was last compiled into it ({when})"


def _site(event) -> str:
    return event.call_site.label if event.call_site else "?"
