"""A call that may run past the time it was given, stopped there: ``stop_after(seconds)`` raises
``Overran`` inside the block once it has run that long, the way Ctrl-C raises ``KeyboardInterrupt``.

The exception is delivered to this thread by CPython between two steps of Python code: a call that
spends its time in Python (a loop, a function run operation by operation, as eager JAX code does)
stops within one operation of the deadline; one long kernel of XLA's finishes first. One delivered
while a finalizer runs is lost (Python reports it as "Exception ignored"): it is made again every
``AGAIN_S`` until the block stops. A block that
ends before its deadline is never touched, and a deadline that fires just as the block ends is
withdrawn, so nothing is raised anywhere else.

>>> import time
>>> try:
...     with stop_after(0.05):
...         while True:
...             time.sleep(0.001)
... except Overran:
...     print("stopped")
stopped
>>> with stop_after(5.0):
...     done = sum(range(10))
>>> done
45
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
from typing import Iterator


class Overran(BaseException):
    """Raised inside a block that ran past its deadline (a ``BaseException``: the user's
    ``except Exception`` does not swallow it)."""


def _raise_in(thread_id: int, exception: type[BaseException]) -> None:
    """Make ``exception`` pending in the thread ``thread_id``.

    Never called to withdraw one (``NULL``): CPython then leaves its interpreter signalled that an
    exception is pending, and every thread pays for it at each step after (JAX's profiler, started
    later, waits forever on it). A deadline that fired too late is taken where it lands instead."""
    set_async = ctypes.pythonapi.PyThreadState_SetAsyncExc
    set_async(ctypes.c_ulong(thread_id), ctypes.py_object(exception))


def _take_pending() -> None:
    """Let CPython deliver the ``Overran`` pending in this thread, here, and swallow it."""
    try:
        for _ in range(_PATIENCE):  # each step back in a loop lets CPython deliver it
            pass
    except Overran:
        return


_PATIENCE = 10_000_000
AGAIN_S = 0.05  # how often a stop is made again while the block runs on past its deadline
_NEVER_S = 1e6  # a deadline this far off never comes in a session: no timer (the OS cannot wait ~1e10 s)


@contextlib.contextmanager
def stop_after(seconds: float) -> Iterator[None]:
    """Run the block; if it is still running after ``seconds``, raise ``Overran`` inside it, and
    again every ``AGAIN_S`` while it runs on: one that lands in a finalizer (a ``__del__``, a
    weakref callback) is reported by Python as "Exception ignored" and lost."""
    thread_id = threading.get_ident()
    lock = threading.Lock()
    state = {"done": False, "fired": False}
    finished = threading.Event()
    delivered = False

    def fire() -> bool:
        with lock:
            if not state["done"]:
                state["fired"] = True
                _raise_in(thread_id, Overran)
            return not state["done"]

    def watch() -> None:
        if finished.wait(max(0.0, seconds)):
            return
        while fire() and not finished.wait(AGAIN_S):
            pass

    if not seconds < _NEVER_S:  # NaN included
        yield
        return
    watcher = threading.Thread(target=watch, name="jaxmagic-deadline", daemon=True)
    try:
        watcher.start()  # inside: a deadline that fires at once is taken below all the same
        yield
    except Overran:
        with lock:  # no other stop is made once this one is on its way out
            state["done"] = delivered = True
        raise
    finally:
        with lock:
            state["done"] = True
            pending = state["fired"] and not delivered
        finished.set()
        if pending:  # fired as the block ended (or lost in a finalizer): maybe still on its way here
            _take_pending()
        watcher.join(1.0)  # gone before what follows runs: its waking up would weigh on that
