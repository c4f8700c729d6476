"""``Diagnosis`` -> HTML card and terminal text. Pure functions of the diagnosis.

The card says what went wrong (the pitfall), where (the user's line), why (the explanation: its
code parts shown as code, its places by their label), and the fix, highlighted as Python; other
fixes follow.
"""

from __future__ import annotations

import re
import textwrap

from pygments import highlight
from pygments.formatters import Terminal256Formatter
from pygments.lexers import PythonLexer

from jaxmagic.render import theme
from jaxmagic.render.terminal import paint
from jaxmagic.render.theme import escape
from jaxmagic.render.words import words_html
from jaxmagic.words import as_words

_SEVERITY_COLOUR = {"error": "red", "warning": "yellow"}
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _python_html(code: str) -> str:
    return highlight(code, PythonLexer(), theme.html_formatter()).rstrip("\n")


def _heading(diagnosis) -> str:
    kind = "warning" if diagnosis.severity == "warning" else "error"
    return f"{kind}: {diagnosis.title}"


# ----------------------------------------------------------------------------------------------
# HTML


def html(diagnosis, *, traceback: str | None = None) -> str:
    """The diagnosis as a self-contained HTML card (scoped CSS, no JavaScript). With ``traceback``
    (the full traceback as the terminal prints it, ANSI colours and all), the card ends with it,
    folded: the card comes first, the traceback a click away.

    >>> from jaxmagic.doctor import Diagnosis
    >>> from jaxmagic.words import code, say
    >>> card = html(Diagnosis("traced-shape", explanation=say("{} is <traced>.", code("n")), fix="x[:n]"))
    >>> 'data-pitfall="traced-shape"' in card, "<code>n</code> is &lt;traced&gt;." in card
    (True, True)
    >>> folded = html(Diagnosis("traced-shape", explanation="n", fix=""), traceback="\x1b[31mIndexError\x1b[39m: <n>")
    >>> "<details" in folded, "IndexError: &lt;n&gt;" in folded
    (True, True)
    """
    severity = "warning" if diagnosis.severity == "warning" else "error"
    parts = [
        f'<div class="{theme.ROOT_CLASS} jm-diagnosis" data-pitfall="{escape(diagnosis.pitfall)}" data-severity="{severity}">',
        theme.style_tag(),
        f'<div class="jm-card jm-{severity}">',
        f'<h4><span class="jm-badge jm-{severity}">{severity}</span> {escape(diagnosis.title)} '
        f'<span class="jm-muted jm-pitfall-id">{escape(diagnosis.pitfall)}</span></h4>',
    ]
    where = diagnosis.where
    if where is not None:
        title = escape(f"{where.file}:{where.line}" + (f" in {where.function}" if where.function else ""))
        code = f' <code class="jm-where-code">{_python_html(where.text)}</code>' if where.text else ""
        parts.append(
            f'<div class="jm-where" title="{title}"><span class="jm-muted">{escape(where.label)}</span>{code}</div>'
        )
    parts.append(f'<p class="jm-explanation">{words_html(diagnosis.explanation)}</p>')
    if diagnosis.fix or diagnosis.fix_note:  # a fix in words alone where no code would run as it stands
        note = f'<div class="jm-fix-note">{words_html(diagnosis.fix_note)}</div>' if diagnosis.fix_note else ""
        block = f'<pre class="jm-block jm-python">{_python_html(diagnosis.fix)}</pre>' if diagnosis.fix else ""
        checked = (
            f'<div class="jm-muted jm-checked" data-checked="{str(diagnosis.checked).lower()}">'
            f"{words_html(diagnosis.check_note)}</div>"
            if diagnosis.check_note
            else ""
        )
        parts.append(f'<div class="jm-fix"><b>Fix</b>{note}{block}{checked}</div>')
    for label, code in diagnosis.alternatives:
        block = f'<pre class="jm-block jm-python">{_python_html(code)}</pre>' if code else ""
        parts.append(f'<div class="jm-alternative"><div>{words_html(label)}</div>{block}</div>')
    footer = [f"jaxmagic doctor · {escape(diagnosis.docs)}"]
    if diagnosis.error_type:
        footer.insert(0, escape(diagnosis.error_type))
    if diagnosis.reference:
        footer.append(f'<a href="{escape(diagnosis.reference)}" target="_blank" rel="noopener">JAX docs</a>')
    parts.append(f'<div class="jm-muted jm-footer">{" · ".join(footer)}</div>')
    if traceback:
        parts.append(
            '<details class="jm-raw jm-traceback"><summary>the full traceback</summary>'
            f'<pre class="jm-block">{escape(_ANSI.sub("", traceback).rstrip())}</pre></details>'
        )
    parts.append("</div></div>")
    return "".join(parts)


# ----------------------------------------------------------------------------------------------
# text


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line if line else line for line in text.splitlines())


def text(diagnosis, *, color: bool = False) -> str:
    """The diagnosis as terminal text (ANSI colours with ``color=True``).

    >>> from jaxmagic.doctor import Diagnosis
    >>> from jaxmagic.words import code, say
    >>> print(text(Diagnosis("traced-shape", explanation=say("{} is traced.", code("n")), fix="x[:n]")))
    jaxmagic doctor · error: A size or slice that depends on a traced value [traced-shape]
      `n` is traced.
      Fix:
        x[:n]
      docs/pitfalls.md#traced-shape
    """

    def code(snippet: str) -> str:
        if color:
            snippet = highlight(snippet, PythonLexer(), Terminal256Formatter(style="default")).rstrip("\n")
        return _indent(snippet)

    def dim(words: str) -> str:
        return paint(words, "faint", color=color)

    colours = [_SEVERITY_COLOUR[diagnosis.severity]] if diagnosis.severity in _SEVERITY_COLOUR else []
    heading = paint(_heading(diagnosis), "bold", *colours, color=color)
    lines = [f"jaxmagic doctor · {heading} [{diagnosis.pitfall}]"]
    if diagnosis.where is not None:
        where = diagnosis.where
        lines.append(f"  {dim(where.label)}: {where.text}" if where.text else f"  {dim(where.label)}")
    lines.append(_indent(_wrap(diagnosis.explanation), "  "))
    if diagnosis.fix or diagnosis.fix_note:
        note = _wrap("Fix: " + diagnosis.fix_note if diagnosis.fix_note else "Fix:")
        head, _, rest = note.partition("Fix:")
        lines.append(_indent(head + paint("Fix:", "bold", color=color) + rest, "  "))
        if diagnosis.fix:
            lines.append(code(diagnosis.fix))
        if diagnosis.check_note:
            lines.append(_indent(dim(_wrap(diagnosis.check_note)), "  "))
    for label, snippet in diagnosis.alternatives:
        lines.append(_indent(_wrap(label), "  "))
        if snippet:
            lines.append(code(snippet))
    footer = [diagnosis.docs]
    if diagnosis.reference:
        footer.append(diagnosis.reference)
    lines.append(dim("  " + " · ".join(footer)))
    return "\n".join(lines)


def _wrap(words, width: int = 96) -> str:
    """A sentence wrapped for the terminal: code in backticks; a place or a piece of code never
    broken across lines."""
    kept = []
    for part in as_words(words).parts:
        shown = part.plain
        kept.append(shown.replace(" ", "\u00a0") if part.kind in ("code", "place") else shown)
    wrapped = textwrap.wrap("".join(kept), width=width, break_long_words=False, break_on_hyphens=False)
    return "\n".join(wrapped).replace("\u00a0", " ")
