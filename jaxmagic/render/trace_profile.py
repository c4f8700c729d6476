"""A ``TraceProfile`` (``python -m jaxmagic profile TRACE``) as blocks walked to text and HTML: the
profile view of ``%jaxpr --profile`` over the whole trace, then what the trace could not say (its
programs without HLO, and how to record them). Pure functions of the report."""

from __future__ import annotations

import html as html_escaping

from jaxmagic.render import blocks_html, blocks_text
from jaxmagic.render import profile as profile_view
from jaxmagic.render.blocks import Block, Note
from jaxmagic.words import profile as words


def blocks(report) -> tuple[Block, ...]:
    shown = profile_view.blocks(report.profile)
    if report.programs_without_hlo:
        shown += (Note(words.no_hlo(report.programs_without_hlo)),)
    return shown


def text(report, *, color: bool = False, shown: tuple[Block, ...] | None = None) -> str:
    """The view as aligned plain text, answer first."""
    return blocks_text.text(shown if shown is not None else blocks(report), color=color)


def html(report, *, shown: tuple[Block, ...] | None = None) -> str:
    """The view as HTML (no JavaScript)."""
    return blocks_html.html(shown if shown is not None else blocks(report))


def page(report) -> str:
    """A standalone HTML page (no script, nothing fetched) of the view."""
    title = f"jaxmagic profile of {', '.join(report.files)}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="generator" content="jaxmagic"><title>{html_escaping.escape(title)}</title>'
        "<style>body{font-family:system-ui,sans-serif;margin:2em;}</style></head>"
        f"<body>{html(report)}</body></html>\n"
    )
