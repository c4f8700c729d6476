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
        self._open = True

    def close(self) -> None:
        """From now on every thread's writes go to ``others``: a router left in place (another
        stream was set over it meanwhile, and will set it back) only passes them on."""
        self._open = False

    def _stream(self) -> TextSink:
        current = threading.current_thread()
        if self._open and (current.ident == self._owner or isinstance(current, threading._DummyThread)):
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
    """Inside the block, what this thread prints goes to ``target``; other threads print as before.
    On the way out, ``sys.stdout`` is set back only where it is still this block's router: a block
    that ends late in its own thread (a check given up on) never undoes a stream set meanwhile
    (a notebook's capture, a doctest's), and its router then only passes writes on.

    >>> import io
    >>> late, other, before = io.StringIO(), io.StringIO(), sys.stdout
    >>> block = this_thread_writes_to(late)
    >>> _ = block.__enter__()
    >>> sys.stdout = other  # set by someone else while the block runs
    >>> _ = block.__exit__(None, None, None)
    >>> kept, sys.stdout = sys.stdout is other, before
    >>> kept
    True
    """
    previous = sys.stdout
    router = ThreadRouter(target, previous)
    sys.stdout = router
    try:
        yield target
    finally:
        router.close()
        if sys.stdout is router:
            sys.stdout = previous
