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
from typing import Iterable, Sequence

from jaxmagic.render import terminal, theme
from jaxmagic.render.theme import escape
from jaxmagic.render.words import words_html
from jaxmagic.words import say, units

UNWATCHED_NOTE = '("before" is the last call seen while watching; what compiled while nothing watched is not known)'
MAX_ROWS = 200  # rows shown; the log holds more, and says so


# ----------------------------------------------------------------------------------------------
# Shared pieces


def title(log):
    """``Compilations in this cell``: what the log watched (``Words``: a scope may name code)."""
    return say("Compilations in {}", log.scope) if log.scope else say("Compilations")


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
# Text


def text(log, *, color: bool = False) -> str:
    """The log as terminal text (ANSI colours with ``color=True``)."""
    paint = functools.partial(terminal.paint, color=color)
    lines = [f"{paint(title(log), 'bold')}: {log.summary}"]
    if log.total == 0:
        lines.append(empty_note(log))
        return "\n".join(lines)
    for headline in log.headlines:
        lines.append(paint(f"! {headline}", "yellow"))
    seconds = log.compile_s_by_function
    lines.append(
        "  "
        + " · ".join(
            f"{name} ×{count} ({units.format_seconds(seconds.get(name, 0.0))})" for name, count in log.counts.items()
        )
    )
    events = log.events[-MAX_ROWS:]
    fresh = advice_shown(events)
    first = log.total - len(events) + 1
    site_width = max((len(_site(e)) for e in events), default=9)
    name_width = max((len(e.function) for e in events), default=8)
    number_width = len(str(first + len(events)))
    for number, (event, new_advice) in enumerate(zip(events, fresh, strict=False), start=first):
        number_text = f"  {str(number).rjust(number_width)}  "
        rest = f"  {_site(event).ljust(site_width)}  {_ms(event).rjust(9)}"
        head = number_text + paint(event.function.ljust(name_width), "bold") + rest
        indent = " " * (len(number_text) + name_width + len(rest) + 2)
        for i, cause in enumerate(event.causes):
            body = cause.message if cause.kind == "first_call" else f"{cause.label}: {cause.message}"
            lines.append(f"{head}  {body}" if i == 0 else f"{indent}{body}")
        if event.program_diff and event.is_recompile:
            lines.append(indent + paint(f"program: {event.program_diff}", "faint"))
        if getattr(event, "unwatched_since_before", False) and event.is_recompile:
            lines.append(indent + paint(UNWATCHED_NOTE, "faint"))
        for advice in (c.advice for c in event.causes if c.advice in new_advice):
            lines.append(indent + paint(f"→ {advice}", "faint"))
        if event.raw and any(c.kind == "unknown" for c in event.causes):
            lines.extend(indent + paint(f"| {line}", "faint") for line in event.raw.splitlines())
        if event.persistent_cache:
            lines.append(indent + paint("(served from the persistent compilation cache)", "cyan"))
        elif event.persistent_cache is False:
            lines.append(indent + paint(f"({persistent_miss(event)})", "faint"))
    if log.total > len(events):
        lines.append(f"  … {log.total - len(events)} earlier compilations not shown")
    return "\n".join(lines)


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
    changed = " and ".join(_KEY_PARTS.get(p, p) for p in parts)
    return f"not in the persistent cache: {changed} changed since it was last compiled into it ({when})"


def _site(event) -> str:
    return event.call_site.label if event.call_site else "?"


def _ms(event) -> str:
    return units.format_seconds(event.compile_s)


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
    """The first line: what was watched and how many compilations it saw."""
    note = "" if log.total else f' <span class="jm-muted">{escape(empty_note(log))}</span>'
    return f'<div class="jm-summary"><b>{words_html(title(log))}</b>: {escape(log.summary)}{note}</div>'


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
    """The table of compilations: number, time, function, call site, causes (and fixes), compile time."""
    events = list(events)
    total = len(events) if total is None else total
    shown = events[-max_rows:]
    fresh = advice_shown(shown)
    first = total - len(shown) + 1
    rows = [
        _row(number, event, advice)
        for number, (event, advice) in enumerate(zip(shown, fresh, strict=False), start=first)
    ]
    if newest_first:
        rows.reverse()
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
    return f'<table class="jm-table jm-recompile-table">{head}{"".join(rows)}</table>{more}'


def _row(number: int, event, new_advice: set[str]) -> str:
    kinds = " ".join(dict.fromkeys(event.kinds))
    site = event.call_site
    site_title = escape(f"{site.file}:{site.line} in {site.function}\n{site.text}") if site else ""
    site_text = escape(site.label) if site else "?"
    defined = escape(f"defined at {event.defined_at.label}") if event.defined_at else ""
    causes = "".join(_cause_html(cause) for cause in event.causes)
    if getattr(event, "unwatched_since_before", False) and event.is_recompile:
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
    return (
        f'<tr class="jm-recompile-row" data-function="{escape(event.function)}" data-kinds="{escape(kinds)}">'
        f'<td class="jm-n">{number}</td>'
        f'<td class="jm-time">{clock(event.time)}</td>'
        f'<td class="jm-fn" title="{defined}"><code>{escape(event.function)}</code>{internal}</td>'
        f'<td class="jm-site" title="{site_title}">{site_text}</td>'
        f'<td class="jm-causes"{raw_title}>{causes}{advice}{raw}</td>'
        f'<td class="jm-ms" title="{timing}">{escape(units.format_seconds(event.compile_s))}{badge}</td>'
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
