"""Copying what a function prints while JAX traces it (what ``print-side-effect`` quotes), still
letting it through to the screen.

>>> with watch_prints() as printed:
...     print("tracing")
tracing
>>> printed.text
'tracing\\n'
"""

from __future__ import annotations

import contextlib
import io
import sys
from typing import Iterator

from jaxmagic.tracing import streams


class PrintedText:
    """What was printed inside a ``watch_prints()`` block (it still reached the screen).

    >>> PrintedText().text
    ''
    """

    def __init__(self):
        self._buffer = io.StringIO()

    @property
    def text(self) -> str:
        return self._buffer.getvalue()


class _Tee:
    """Writes to the real stream and to a copy; everything else is the real stream's (encoding...)."""

    def __init__(self, target, copy: io.StringIO):
        self._target, self._copy = target, copy

    def write(self, text):
        self._copy.write(text)
        return self._target.write(text)

    def flush(self):
        flush = getattr(self._target, "flush", None)
        if flush is not None:
            flush()

    def __getattr__(self, name):  # encoding, isatty, fileno... of the real stream
        return getattr(self._target, name)


@contextlib.contextmanager
def watch_prints() -> Iterator[PrintedText]:
    """Copy what is printed to ``sys.stdout`` inside the block, still letting it through.

    >>> with watch_prints() as printed:
    ...     print("tracing")
    tracing
    >>> printed.text
    'tracing\\n'
    """
    printed = PrintedText()
    # Only this thread's lines are copied: a background thread printing meanwhile is not the call's.
    with streams.this_thread_writes_to(_Tee(sys.stdout, printed._buffer)):
        yield printed
