"""``RecompileLog`` -> HTML table and text. Pure functions of the log.

The view starts with what to act on: a headline for each function that keeps compiling for the
same cause, then per-function counts, then one row per compilation (time, function, call site,
causes with their fix, compile time). The live panel (``render.panel``) is built from the same
pieces. Stable class names for tests and browsers: ``jm-recompile-log``, ``jm-recompile-row``
(``data-function``, ``data-kinds``), ``jm-cause jm-cause-<kind>``, ``jm-recompile-count``,
``jm-recompile-headline``.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Iterable, NamedTuple, Sequence

from jaxmagic.render import terminal, theme
from jaxmagic.render.theme import escape
from jaxmagic.render.words import words_html
from jaxmagic.words import code, say, units

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
        """``7`` for one compilation, ``2–12`` for a group (first and latest)."""
        first, latest = self.numbered[0][0], self.numbered[-1][0]
        return str(first) if first == latest else f"{first}–{latest}"

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
    """What a group's compilations have in common, said short: ``shape of `x` in `step```."""
    cause = next(c for c in group.latest.causes if c.kind != "first_call")
    if cause.argument and cause.kind != "redefined_function":
        return say("{} of {} in {}", cause.label, code(cause.argument), code(group.latest.function))
    return say("{} {}", cause.label, code(group.latest.function))


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


def occurrence(number: int, event, *, html: bool = False) -> str:
    """One compilation of a group, on one line: ``#2 14:03:27 In [3] line 2: shape of `x` changed: …``
    (as HTML with ``html=True``)."""
    if html:
        causes = "; ".join(words_html(cause.message) for cause in event.causes)
        return f"#{number} {clock(event.time)} {escape(_site(event))}: {causes}"
    causes = "; ".join(cause.message for cause in event.causes)
    return f"#{number} {clock(event.time)} {_site(event)}: {causes}"


# ----------------------------------------------------------------------------------------------
# Text


def text(log, *, color: bool = False) -> str:
    """The log as terminal text (ANSI colours with ``color=True``): the answer line, then
    headlines, counts and one row per group of the same function and causes, ``×N``."""
    paint = functools.partial(terminal.paint, color=color)
    lines = [f"{paint(str(answer(log)), 'bold')}{scope(log)}"]
    if log.total == 0:
        lines.append(empty_note(log))
        return "\n".join(lines)
    lines.extend(paint(f"! {headline}", "yellow") for headline in log.headlines)
    lines.append(_counts_text(log))
    events = log.events[-MAX_ROWS:]
    groups = grouped(events, first_number=log.total - len(events) + 1)
    columns = _columns(groups)
    for group, new_advice in zip(groups, advice_shown([g.latest for g in groups]), strict=False):
        lines.extend(_group_lines(group, new_advice, columns, paint))
    if log.total > len(events):
        lines.append(f"  … {log.total - len(events)} earlier compilations not shown")
    return "\n".join(lines)


def _counts_text(log) -> str:
    seconds = log.compile_s_by_function
    counts = (f"{name} ×{n} ({units.format_seconds(seconds.get(name, 0.0))})" for name, n in log.counts.items())
    return "  " + " · ".join(counts)


class _Columns(NamedTuple):
    """The widths of the text rows' columns: numbers, function (with ``×N``), call site."""

    number: int
    name: int
    site: int


def _columns(groups: Sequence[Group]) -> _Columns:
    return _Columns(
        number=max((len(g.numbers) for g in groups), default=1),
        name=max((len(_name_text(g)) for g in groups), default=8),
        site=max((len(_site(g.latest)) for g in groups), default=9),
    )


def _name_text(group: Group) -> str:
    return group.latest.function + (f" ×{group.count}" if group.count > 1 else "")


def _group_lines(group: Group, new_advice: set[str], columns: _Columns, paint) -> list[str]:
    event = group.latest
    number_text = f"  {group.numbers.rjust(columns.number)}  "
    rest = f"  {_site(event).ljust(columns.site)}  {units.format_seconds(group.compile_s).rjust(9)}"
    head = number_text + paint(_name_text(group).ljust(columns.name), "bold") + rest
    indent = " " * (len(number_text) + columns.name + len(rest) + 2)
    lines = []
    for i, cause in enumerate(event.causes):
        body = cause.message if cause.kind == "first_call" else f"{cause.label}: {cause.message}"
        lines.append(f"{head}  {body}" if i == 0 else f"{indent}{body}")
    if group.count > 1:
        lines.append(indent + paint(f"first {occurrence(*group.numbered[0])}", "faint"))
    return lines + [indent + note for note in _notes(group, new_advice, paint)]


def _notes(group: Group, new_advice: set[str], paint) -> list[str]:
    """What a text row says under its causes: the program's difference, fixes said for the first
    time, JAX's own words where jaxmagic could not tell, the persistent cache."""
    event, notes = group.latest, []
    if event.program_diff and event.is_recompile:
        notes.append(paint(f"program: {event.program_diff}", "faint"))
    if group.unwatched_since_before:
        notes.append(paint(UNWATCHED_NOTE, "faint"))
    notes.extend(paint(f"→ {c.advice}", "faint") for c in event.causes if c.advice in new_advice)
    if event.raw and any(c.kind == "unknown" for c in event.causes):
        notes.extend(paint(f"| {line}", "faint") for line in event.raw.splitlines())
    if event.persistent_cache:
        notes.append(paint("(served from the persistent compilation cache)", "cyan"))
    elif event.persistent_cache is False:
        notes.append(paint(f"({persistent_miss(event)})", "faint"))
    return notes


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


# ----------------------------------------------------------------------------------------------
# HTML


def html(log) -> str:
    """The log as self-contained HTML: headlines, counts and a table (no JavaScript)."""
    body = [summary_html(log), headlines_html(log), counts_html(log)]
    if log.total:
        body.append(table_html(log.events, total=log.total))
    return f'<div class="{theme.ROOT_CLASS} jm-recompile-log">{theme.style_tag()}{"".join(body)}</div>'


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


def summary_html(log) -> str:
    """The first line, the answer: how many compilations and the main cause, then what was watched."""
    note = "" if log.total else f' <span class="jm-muted">{escape(empty_note(log))}</span>'
    where = f'<span class="jm-muted jm-scope">{words_html(scope(log))}</span>'
    return f'<div class="jm-summary jm-answer"><b>{words_html(answer(log))}</b>{where}{note}</div>'


def headlines_html(log) -> str:
    """One warning card per function that keeps compiling for the same cause."""
    return "".join(f'<div class="jm-card jm-recompile-headline">⚠ {words_html(h)}</div>' for h in log.headlines)


def counts_html(log, *, selected: str | None = None) -> str:
    """Per-function compilation counts, most first."""
    if not log.total:
        return ""
    chips = []
    for name, count in sorted(log.counts.items(), key=lambda item: -item[1]):
        current = " jm-selected" if selected == name else ""
        chips.append(
            f'<span class="jm-recompile-count{current}" data-function="{escape(name)}" data-count="{count}">'
            f"<code>{escape(name)}</code> ×{count}</span>"
        )
    return f'<div class="jm-recompile-counts">{"".join(chips)}</div>'


def table_html(
    events: Sequence, *, total: int | None = None, newest_first: bool = False, max_rows: int = MAX_ROWS
) -> str:
    """The table of compilations, one row per group of the same function and causes (``×N``, its
    first and latest compilation on demand): numbers, time, function, call site, causes (and
    fixes), compile time. Groups in the order of their first compilation, or with the most recent
    one on top (``newest_first``)."""
    events = list(events)
    total = len(events) if total is None else total
    shown = events[-max_rows:]
    groups = grouped(shown, first_number=total - len(shown) + 1)
    fresh = advice_shown([group.latest for group in groups])
    rows = [(group.numbered[-1][0], _row(group, advice)) for group, advice in zip(groups, fresh, strict=False)]
    if newest_first:
        rows.sort(key=lambda row: -row[0])
    more = ""
    if total > len(shown):
        more = (
            f'<div class="jm-muted jm-recompile-more">Showing the last {len(shown)} of {total:,} compilations; '
            f"the log object holds the latest ones.</div>"
        )
    head = (
        '<tr><th>#</th><th>time</th><th class="jm-left">function</th><th class="jm-left">call site</th>'
        '<th class="jm-left">causes</th><th>compile</th></tr>'
    )
    return f'<table class="jm-table jm-recompile-table">{head}{"".join(row for _, row in rows)}</table>{more}'


def _occurrences_html(group: Group) -> str:
    """A group's first and latest compilations, folded: ``×11: the first and the latest``."""
    if group.count == 1:
        return ""
    return (
        f'<details class="jm-recompile-occurrences"><summary class="jm-muted">×{group.count}: '
        "the first and the latest</summary>"
        f'<div class="jm-first">{occurrence(*group.numbered[0], html=True)}</div>'
        f'<div class="jm-latest">{occurrence(*group.numbered[-1], html=True)}</div></details>'
    )


def _row(group: Group, new_advice: set[str]) -> str:
    event = group.latest
    kinds = " ".join(dict.fromkeys(event.kinds))
    site = event.call_site
    site_title = escape(f"{site.file}:{site.line} in {site.function}\n{site.text}") if site else ""
    site_text = escape(site.label) if site else "?"
    defined = escape(f"defined at {event.defined_at.label}") if event.defined_at else ""
    causes = "".join(_cause_html(cause) for cause in event.causes) + _occurrences_html(group)
    if group.unwatched_since_before:
        causes += f'<div class="jm-muted jm-unwatched-before">{escape(UNWATCHED_NOTE)}</div>'
    if getattr(event, "program_diff", None) and event.is_recompile:
        causes += f'<div class="jm-muted jm-program-diff">{escape(event.program_diff)}</div>'
    advice = "".join(
        f'<div class="jm-advice">→ {words_html(c.advice)}</div>'
        for c in _unique_advice(event.causes)
        if c.advice in new_advice
    )
    raw, raw_title = "", ""
    if event.raw:
        # JAX's own words: spelled out where jaxmagic could not tell, on hover elsewhere.
        raw_title = f' title="{escape("JAX: " + event.raw)}"'
        if "unknown" in event.kinds:
            raw = (
                f'<details class="jm-raw"><summary>JAX\'s explanation</summary>'
                f'<pre class="jm-block">{escape(event.raw)}</pre></details>'
            )
    timing = escape(
        f"trace {units.format_seconds(event.trace_s)} · lower {units.format_seconds(event.lower_s)} · "
        f"XLA {units.format_seconds(event.backend_s)}"
    )
    badge = ""
    if event.persistent_cache:
        badge = '<div class="jm-persistent-hit">persistent cache</div>'
    elif event.persistent_cache is False:
        badge = f'<div class="jm-muted jm-persistent-miss" title="{escape(persistent_miss(event))}">not in persistent cache</div>'
    internal = ' <span class="jm-muted">(JAX internal)</span>' if event.internal else ""
    # ×N stays beside the name: a no-break space between them
    times = f'&nbsp;<span class="jm-recompile-times">×{group.count}</span>' if group.count > 1 else ""
    seconds = units.format_seconds(group.compile_s)
    if group.count > 1:
        timing = escape(f"{seconds} in all over {group.count} compilations; the latest: ") + timing
    return (
        f'<tr class="jm-recompile-row" data-function="{escape(event.function)}" data-kinds="{escape(kinds)}" '
        f'data-count="{group.count}">'
        f'<td class="jm-n" style="white-space:nowrap">{group.numbers}</td>'
        f'<td class="jm-time">{clock(event.time)}</td>'
        f'<td class="jm-fn" title="{defined}"><code>{escape(event.function)}</code>{times}{internal}</td>'
        f'<td class="jm-site" title="{site_title}">{site_text}</td>'
        f'<td class="jm-causes"{raw_title}>{causes}{advice}{raw}</td>'
        f'<td class="jm-ms" title="{timing}">{escape(seconds)}{badge}</td>'
        "</tr>"
    )


def _unique_advice(causes) -> Iterable:
    seen = set()
    for cause in causes:
        if cause.advice not in seen:
            seen.add(cause.advice)
            yield cause


def _cause_html(cause) -> str:
    argument = f' data-argument="{escape(cause.argument)}"' if cause.argument else ""
    detail = f' title="{escape(cause.detail)}"' if cause.detail else ""
    label = "" if cause.kind == "first_call" else f'<span class="jm-kind">{escape(cause.label)}</span> '
    return f'<div class="jm-cause jm-cause-{escape(cause.kind)}"{argument}{detail}>{label}{words_html(cause.message)}</div>'
