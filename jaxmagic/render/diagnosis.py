"""``Diagnosis`` as blocks (a card), walked to HTML and to terminal text. Pure functions of the diagnosis.

The card says what went wrong (the pitfall), where (the user's line), why (the explanation: its
code parts shown as code, its places by their label), and the fix, highlighted as Python; other
fixes follow.
"""

from __future__ import annotations

import re

from jaxmagic.render import blocks_html, blocks_text, theme
from jaxmagic.render.blocks import (
    Block,
    Card,
    Code,
    Fold,
    Footer,
    Heading,
    Labelled,
    Link,
    Only,
    Paragraph,
    Section,
    Snippet,
    Span,
    code_lines,
)
from jaxmagic.render.theme import escape
from jaxmagic.words import doctor as doctor_words

_SEVERITY_COLOUR = {"error": "red", "warning": "yellow"}
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # the terminal's colours in a traceback (its text, not our HTML)


def _python(snippet: str) -> tuple[Code, ...]:
    return tuple(code_lines(snippet.split("\n"), "python"))


# ----------------------------------------------------------------------------------------------
# the diagnosis, once, as blocks; then as HTML and as text


def html(diagnosis, *, traceback: str | None = None, shown: tuple[Block, ...] | None = None) -> str:
    """The diagnosis as a self-contained HTML card (scoped CSS, no JavaScript). With ``traceback``
    (the full traceback as the terminal prints it, ANSI colours and all), the card ends with it,
    folded: the card comes first, the traceback a click away. ``shown``: its blocks, when already made.

    >>> from jaxmagic.doctor import Diagnosis
    >>> from jaxmagic.words import code, say
    >>> card = html(Diagnosis("traced-shape", explanation=say("{} is <traced>.", code("n")), fix="x[:n]"))
    >>> 'data-pitfall="traced-shape"' in card, "<code>n</code> is &lt;traced&gt;." in card
    (True, True)
    >>> folded = html(Diagnosis("traced-shape", explanation="n", fix=""), traceback="\x1b[31mIndexError\x1b[39m: <n>")
    >>> "<details" in folded, "IndexError: &lt;n&gt;" in folded
    (True, True)
    """
    body = blocks_html.html(shown if shown is not None else blocks(diagnosis, traceback=traceback))
    return (
        f'<div class="{theme.ROOT_CLASS} jm-diagnosis" data-pitfall="{escape(diagnosis.pitfall)}" '
        f'data-severity="{_severity(diagnosis)}">{theme.style_tag()}{body}</div>'
    )


def text(diagnosis, *, color: bool = False, shown: tuple[Block, ...] | None = None) -> str:
    """The diagnosis as terminal text (ANSI colours with ``color=True``); ``shown``: its blocks,
    when already made.

    >>> from jaxmagic.doctor import Diagnosis
    >>> from jaxmagic.words import code, say
    >>> print(text(Diagnosis("traced-shape", explanation=say("{} is traced.", code("n")), fix="x[:n]")))
    jaxmagic doctor · error: A size or slice that depends on a traced value [traced-shape]
      `n` is traced.
      Fix:
        x[:n]
      explained in docs/pitfalls.md#traced-shape
    """
    return blocks_text.text(shown if shown is not None else blocks(diagnosis), color=color)


def _severity(diagnosis) -> str:
    return "warning" if diagnosis.severity == "warning" else "error"


def blocks(diagnosis, *, traceback: str | None = None) -> tuple[Block, ...]:
    """The card: what went wrong (the pitfall), where (the user's line), why (the explanation), the
    fix and the other fixes, where to read more; with ``traceback``, the full traceback after it
    (a notebook only, folded)."""
    severity = _severity(diagnosis)
    colours = [_SEVERITY_COLOUR[diagnosis.severity]] if diagnosis.severity in _SEVERITY_COLOUR else []
    card: list[Block] = [
        Heading(
            severity,
            diagnosis.title,
            diagnosis.pitfall,
            "jaxmagic doctor",
            ("bold", *colours),
            "jm-muted jm-pitfall-id",
        )
    ]
    where = diagnosis.where
    if where is not None:
        title = f"{where.file}:{where.line}" + (f" in {where.function}" if where.function else "")
        line = _python(where.text)[0] if where.text else None
        card.append(Labelled(where.label, line, title, "jm-where", "jm-where-code"))
    earlier = diagnosis.same_as  # a card of the same pitfall just above: named, not said again
    explanation = diagnosis.explanation
    check_note, fix_note = diagnosis.check_note, diagnosis.fix_note
    if earlier is not None:
        explanation = doctor_words.same_as_above(earlier.function, earlier.where)
        if str(check_note) and str(check_note) == str(earlier.check_note):
            check_note = doctor_words.checked_as_above(earlier.function)
        if str(fix_note) == str(earlier.fix_note) and diagnosis.fix:
            fix_note = ""
    card.append(Paragraph(explanation, "jm-explanation", tag="p"))
    if diagnosis.fix or fix_note:  # a fix in words alone where no code would run as it stands
        fix: list[Block] = [Snippet("python", _python(diagnosis.fix))] if diagnosis.fix else []
        if check_note:
            checked = (("checked", str(diagnosis.checked).lower()),)
            fix.append(Paragraph(check_note, "jm-muted jm-checked", style="faint", data=checked))
        card.append(Section("jm-fix", "Fix", fix_note, tuple(fix), "jm-fix-note"))
    for label, snippet in diagnosis.alternatives if earlier is None else ():
        shown = (Snippet("python", _python(snippet)),) if snippet else ()
        card.append(Section("jm-alternative", "", label, shown))
    card.append(Footer(_footer(diagnosis), "jm-muted jm-footer", "faint"))
    if traceback:
        lines = tuple(Code((Span(line),)) for line in _ANSI.sub("", traceback).rstrip().split("\n"))
        folded = Fold("the full traceback", (Snippet("", lines),), css="jm-raw jm-traceback")
        card.append(Only("html", (folded,)))
    return (Card(f"jm-card jm-{severity}", tuple(card)),)


def _footer(diagnosis) -> tuple[Link, ...]:
    """The exception's class and who speaks (a notebook's footer; text says them first), where the
    pitfall is explained, and JAX's own page on it."""
    links = [Link(diagnosis.error_type, medium="html")] if diagnosis.error_type else []
    links += [Link("jaxmagic doctor", medium="html"), Link(diagnosis.docs, path=True, lead="explained in ")]
    if diagnosis.reference:
        links.append(Link("JAX docs", diagnosis.reference))
    return tuple(links)
