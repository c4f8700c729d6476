"""Text from outside jaxmagic (names from a file or from the user's code) made safe to show on a
terminal or in a CI log. The one home for it: every text view passes through ``safe_text``.

A terminal acts on escape sequences, a CI log on lines that start a workflow command
(``::error::…``, ``::set-output …``, ``##[…]``), and a newline inside a name forges a line of the
report. So a name shows its control characters escaped (``\\x1b``, ``\\n``), as do lone surrogates,
line separators and the marks that turn text right to left; a line never starts a workflow
command.

>>> one_line("step\\n::error::pwned\\x1b[31m")
'step\\\\n::error::pwned\\\\x1b[31m'
>>> print(safe_text("::set-output name=x::1\\n  ::error::x"))
\\x3a:set-output name=x::1
  \\x3a:error::x
"""

from __future__ import annotations

import re

# Characters a terminal or a log viewer may act on: C0 and C1 controls, DEL, lone surrogates, the
# line and paragraph separators, and the marks that reorder text (bidirectional overrides).
_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_ACTIVE = re.compile(f"[\x00-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029{_BIDI}]")
_ACTIVE_BUT_NEWLINE = re.compile(f"[\x00-\x09\x0b-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029{_BIDI}]")
_ACTIVE_BUT_LAYOUT = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029{_BIDI}]")
# The colours jaxmagic itself paints (Select Graphic Rendition): kept where colour was asked for.
_COLOUR = re.compile(r"\x1b\[[0-9;]*m")
# What a CI runner reads as a command when a line (after leading blanks) starts with it.
_COMMAND_START = re.compile(r"^((?:\s|\x1b\[[0-9;]*m)*)(::|##\[)", re.MULTILINE)
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
LONGEST_NAME = 300  # characters of one name shown; the rest is said as a count


def _escaped(match: re.Match) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    point = ord(char)
    return f"\\x{point:02x}" if point < 0x100 else f"\\u{point:04x}"


def one_line(text: object) -> str:
    """``text`` as one line of plain characters: every control character, lone surrogate, line
    separator and bidirectional mark shown escaped (``\\n``, ``\\x1b``, ``\\u202e``).

    >>> one_line("a\\tb\\u202ec")
    'a\\\\tb\\\\u202ec'
    """
    return _ACTIVE.sub(_escaped, str(text))


def for_markup(text: object) -> str:
    """``text`` for a page (before HTML escaping): line breaks and tabs kept, every other active
    character shown escaped, so that a page never holds a lone surrogate (which no file encodes).

    >>> for_markup("a\\tb\\n\\ud800")
    'a\\tb\\n\\\\ud800'
    """
    return _ACTIVE_BUT_LAYOUT.sub(_escaped, str(text))


def value_text(value: object, longest: int | None = None) -> str:
    """A user's value as ``repr`` writes it (cut after ``longest`` characters), or, where its
    ``__repr__`` fails, what it is: a view never fails on a value it shows.

    >>> class Secretive:
    ...     def __repr__(self):
    ...         raise RuntimeError("no")
    >>> value_text(Secretive()), value_text("abc", 2)
    ('<a Secretive object; its repr failed>', "'a")
    """
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - any failure of the user's __repr__
        text = f"<a {type(value).__qualname__} object; its repr failed>"
    if not isinstance(text, str):
        text = f"<a {type(value).__qualname__} object>"
    return text if longest is None else text[:longest]


def shown_name(text: object, longest: int = LONGEST_NAME) -> str:
    """A name from a file or from user code as a view shows it: one line (``one_line``), cut
    after ``longest`` characters with the rest counted.

    >>> shown_name("x" * 12, longest=5)
    'xxxxx… (7 more characters)'
    """
    line = one_line(text)
    if len(line) <= longest:
        return line
    return f"{line[:longest]}… ({len(line) - longest:,} more characters)"


def safe_text(text: str, *, colour: bool = False) -> str:
    """A whole view's text as it may reach a terminal or a CI log: line breaks kept, every other
    control character escaped (jaxmagic's own colours kept when ``colour``), no line starting a
    workflow command (its first character is shown escaped). Idempotent.

    >>> safe_text("ok\\x07\\n##[warning]x")
    'ok\\\\x07\\n\\\\x23#[warning]x'
    """
    if colour:
        pieces = _COLOUR.split(text)
        kept = _COLOUR.findall(text)
        text = "".join(
            _ACTIVE_BUT_NEWLINE.sub(_escaped, piece) + (kept[i] if i < len(kept) else "")
            for i, piece in enumerate(pieces)
        )
    else:
        text = _ACTIVE_BUT_NEWLINE.sub(_escaped, text)
    return _COMMAND_START.sub(_defused, text)


def _defused(match: re.Match) -> str:
    start = match.group(2)
    return f"{match.group(1)}\\x{ord(start[0]):02x}{start[1:]}"
