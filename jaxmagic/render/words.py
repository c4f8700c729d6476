"""``Words`` -> HTML: code parts as ``<code>``, places by their label (file and line on hover),
everything else escaped. Engines write sentences as ``Words``; every renderer shows them here.

>>> from jaxmagic.words import code, say
>>> words_html(say("mark {} static, not {}", code("n"), "<x>"))
'mark <code>n</code> static, not &lt;x&gt;'

A plain string is plain text: its backticks stay as they are.

>>> words_html("a `b`")
'a `b`'
"""

from __future__ import annotations

from jaxmagic.render.theme import escape
from jaxmagic.words import as_words


def words_html(words) -> str:
    """A sentence as HTML (see the module's docstring)."""
    out = []
    for part in as_words(words).parts:
        if part.kind == "code":
            out.append(f"<code>{escape(part.text)}</code>")
        elif part.kind == "place" and part.place is not None:
            where = escape(f"{part.place.file}:{part.place.line}")
            out.append(f'<span class="jm-place" title="{where}">{escape(part.text)}</span>')
        else:
            out.append(escape(part.text))
    return "".join(out)
