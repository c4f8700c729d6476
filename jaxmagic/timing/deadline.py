"""A call that may run past the time it was given, stopped there: ``stop_after(seconds)`` raises
``Overran`` inside the block once it has run that long, the way Ctrl-C raises ``KeyboardInterrupt``,
but only where an error of the user's own could be raised: as the user's code (``sources.
is_users_code``) calls a function (JAX's, a library's, a builtin), or as a function of theirs is
called back (by JAX tracing it, by a library, by jaxmagic). The exception then comes out of a call
the user's code made, or was made to make, before that call runs; never from inside JAX, a library
or the standard library: one that lands in JAX's own work can leave its caches half written (a
Diffrax solve stopped while JAX lowered it compiled again at every later call, 0.4 s each instead of
0.3 ms, in the user's session). Nor anywhere cleaning up is under way: not while an exception is
being handled (an ``except``, a ``finally``), not in or into a ``__exit__`` or ``__del__``, not as a
generator starts or resumes (a ``contextmanager``'s closing half).

At the deadline a watcher thread wakes the main thread with a signal of the block's own
(``_thread.interrupt_main``). Its handler raises nothing: it turns on a profile function
(``sys.setprofile``: calls only, never lines, which Python may raise from outside the ``try`` that
holds them) that raises ``Overran`` at the next such call, and goes off. A block that runs the
user's Python (a function run operation by operation, as eager JAX code runs) stops within one
operation of the deadline; one inside a single call of a library's, or one long kernel of XLA's,
stops once that calls back into the user's code or returns to it. Nothing is watched before the
deadline: no call is slowed. Off the main thread, which no signal reaches, or under a profiler,
the block runs to its end. A stop the user's code swallows (``except BaseException``) is made again
every ``AGAIN_S`` until the block ends. A block that ends before its deadline is never touched, and
a deadline that fires just as the block ends is withdrawn, so nothing is raised anywhere else.

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

import _thread
import contextlib
import inspect
import signal
import sys
import threading
import types
from typing import Any

from jaxmagic.tracing.sources import is_users_code


class Overran(BaseException):
    """Raised inside a block that ran past its deadline (a ``BaseException``: the user's
    ``except Exception`` does not swallow it); what the stopped call had compiled by then, where
    the block that stopped it counted it (``stopwatch.first_call``)."""

    compilations: int = 0
    compile_s: float = 0.0


AGAIN_S = 0.05  # how often a stop is made again while the block runs on past its deadline
_NEVER_S = 1e6  # a deadline this far off never comes in a session: no timer (the OS cannot wait ~1e10 s)
# The signal that wakes the main thread: one no program of JAX's kind uses (Windows has no SIGUSR2).
_WAKE: signal.Signals | None = getattr(signal, "SIGUSR2", None) or getattr(signal, "SIGBREAK", None)


_CLEANUP = frozenset({"__exit__", "__aexit__", "__del__"})  # methods whose work a stop never cuts
_GENERATORS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


class _Stop:
    """One block's stop: asked for by the watcher thread, armed by the signal handler (in the main
    thread, between any two steps of its code), raised by the profile function (see the module)."""

    def __init__(self, wake: signal.Signals) -> None:
        self.wake = wake
        self.lock = threading.Lock()
        self.done = False  # the block has ended: no stop is asked for, or armed, again
        self.asked = False  # the watcher asked for a stop
        self.armed = False
        self.users: dict[types.CodeType, bool] = {}

    # -- the watcher thread --------------------------------------
    def ask(self) -> bool:
        """Ask the main thread for a stop; ``False`` once the block has ended."""
        with self.lock:
            if self.done:
                return False
            self.asked = True
            _thread.interrupt_main(self.wake)
            return True

    # -- the main thread -----------------------------------------
    def on_signal(self, signum: int, frame: types.FrameType | None, previous: Any) -> None:
        """Arm the stop, raising nothing here, wherever the main thread was."""
        if not self.asked:  # the signal came from outside: what it did before the block
            _forward(signum, frame, previous)
            return
        if not self.done and not self.armed:
            self.armed = True
            sys.setprofile(self.on_event)

    def on_event(self, frame: types.FrameType, event: str, arg: Any) -> None:
        """The profile function: ``Overran`` out of a call to or from the user's code."""
        if not self.armed or not _handling_nothing():
            return
        if event == "call":  # a Python function, about to run
            caller, callee, starts = frame.f_back, frame.f_code.co_name, self.is_users(frame)
            if frame.f_code.co_flags & _GENERATORS:
                return
        elif event == "c_call":  # a builtin, about to run
            caller, callee, starts = frame, getattr(arg, "__name__", ""), False
        else:
            return
        if caller is None or callee in _CLEANUP or caller.f_code.co_name in _CLEANUP:
            return
        if starts or self.is_users(caller):
            self.armed = False  # Python turns the profile function off as the exception leaves it
            raise Overran

    def is_users(self, frame: types.FrameType) -> bool:
        code = frame.f_code
        known = self.users.get(code)
        if known is None:
            known = self.users[code] = is_users_code(code, frame.f_globals.get("__name__"))
        return known

    def end(self) -> None:
        """Withdraw the stop: none asked for again, one asked for just now handled here."""
        with self.lock:
            self.done = True
            asked = self.asked
        if asked:
            _run_pending_signals()
        self.armed = False
        sys.setprofile(None)


def _handling_nothing() -> bool:
    """Whether no exception is being handled here: not an ``except`` or ``finally`` on its way out,
    whose cleaning up a stop would cut short."""
    return sys.exc_info()[1] is None


def _forward(signum: int, frame: types.FrameType | None, previous: Any) -> None:
    """What a signal from outside the block would have done without it."""
    if callable(previous):
        previous(signum, frame)
    elif previous == signal.SIG_DFL:
        signal.signal(signum, signal.SIG_DFL)
        signal.raise_signal(signum)


def _run_pending_signals() -> None:
    """Let the main thread run a signal handler whose signal has come but not yet been handled:
    CPython runs it between two steps of Python code, each pass of a loop being one."""
    for _ in range(1000):
        pass


def _can_stop(wake: signal.Signals) -> bool:
    return (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(wake) is not None  # None: a handler set outside Python, which we could not restore
        and sys.getprofile() is None  # a profiler's, which the stop would take the place of
    )


class _Deadline:
    """The block of ``stop_after``: its watcher thread and its stop."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.stop: _Stop | None = None
        self.previous: Any = None
        self.finished = threading.Event()
        self.watcher: threading.Thread | None = None

    def __enter__(self) -> None:
        wake = _WAKE
        if wake is None or not self.seconds < _NEVER_S or not _can_stop(wake):  # NaN included
            return
        stop = self.stop = _Stop(wake)
        self.previous = previous = signal.signal(wake, lambda signum, frame: stop.on_signal(signum, frame, previous))
        self.watcher = threading.Thread(target=self._watch, name="jaxmagic-deadline", daemon=True)
        self.watcher.start()

    def _watch(self) -> None:
        assert self.stop is not None
        if self.finished.wait(max(0.0, self.seconds)):
            return
        while self.stop.ask() and not self.finished.wait(AGAIN_S):
            pass

    def __exit__(self, *exc_info: object) -> None:
        if self.stop is None:
            return
        self.finished.set()
        self.stop.end()
        signal.signal(self.stop.wake, self.previous)
        assert self.watcher is not None
        self.watcher.join(1.0)  # gone before what follows runs: its waking up would weigh on that


def stop_after(seconds: float) -> contextlib.AbstractContextManager[None]:
    """A block that, if still running after ``seconds``, has ``Overran`` raised out of the next call
    to or from the user's code inside it (the frame holding the ``with`` included), and again
    every ``AGAIN_S`` while the user's code swallows it."""
    return _Deadline(seconds)
