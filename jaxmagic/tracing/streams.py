"""Standing in for ``sys.stdout`` for one thread only: what other threads print still reaches the
screen, untouched, while a magic counts or copies what the user's call prints.

``sys.stdout`` is one object for the whole process, so swapping it (as ``contextlib.redirect_stdout``
does) also catches a background thread that happens to print meanwhile: its lines would be
hidden, or taken for the timed function's. Threads that Python did not start (a runtime's
callback threads, where ``jax.debug.print`` may run) count as the calling thread's.

>>> import io
>>> copy = io.StringIO()
>>> with this_thread_writes_to(copy):
...     print("mine")
>>> copy.getvalue()
'mine\\n'
"""

from __future__ import annotations

import contextlib
import sys
import threading
from typing import Iterator, Protocol, TextIO


class TextSink(Protocol):
    """What printing needs of a stream: ``write`` (``flush`` is called where the stream has one)."""

    def write(self, text: str, /) -> int: ...


class ThreadRouter:
    """A ``sys.stdout`` that sends the owner thread's writes to ``target`` and every other
    thread's to ``others`` (the stream that was there before); the rest is ``others``'s.

    >>> import io
    >>> mine, theirs = io.StringIO(), io.StringIO()
    >>> router = ThreadRouter(mine, theirs)
    >>> _ = router.write("a")
    >>> worker = threading.Thread(target=router.write, args=("b",))
    >>> worker.start(); worker.join()
    >>> mine.getvalue(), theirs.getvalue()
    ('a', 'b')
    """

    def __init__(self, target: TextSink, others: TextIO, owner: int | None = None):
        self._target, self._others = target, others
        self._owner = threading.get_ident() if owner is None else owner

    def _stream(self) -> TextSink:
        current = threading.current_thread()
        if current.ident == self._owner or isinstance(current, threading._DummyThread):
            return self._target
        return self._others

    def write(self, text: str) -> int:
        return self._stream().write(text)

    def flush(self) -> None:
        flush = getattr(self._stream(), "flush", None)
        if flush is not None:
            flush()

    def __getattr__(self, name):  # encoding, isatty, fileno... of the real stream
        return getattr(self._others, name)


@contextlib.contextmanager
def this_thread_writes_to(target: TextSink) -> Iterator[TextSink]:
    """Inside the block, what this thread prints goes to ``target``; other threads print as before."""
    previous = sys.stdout
    sys.stdout = ThreadRouter(target, previous)
    try:
        yield target
    finally:
        sys.stdout = previous
