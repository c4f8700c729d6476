"""The user's jitted functions JAX traced for a call in an ordinary cell, with the arguments of that
call, for the trace-time pitfalls that a plain cell shows no sign of: a ``print`` that ran once,
while JAX traced, and showed tracers (``print-side-effect``); a method that changed its object
while traced, once (``state-mutation``: the object then stops changing, ``1 1 1``); ``self`` marked
static and hashed by identity (``static-self``: a changed attribute is not seen); a global assigned
while traced (``stored-tracer``), a global key split so (``global-key``: the same numbers on every
call). After the cell the doctor says so, once per function, each fix checked on the call's own
arguments.

While watching, ``global_watch``'s ``jax.monitoring`` listener (it runs when JAX traces a
``jax.jit`` call: never on a call that hits JAX's caches, nor for ahead-of-time ``.trace`` /
``.lower``, which ``%jaxpr`` uses and warns about itself) hands ``WATCH`` each traced function and
its arguments.

>>> import jax, jax.numpy as jnp
>>> def step(x):
...     print("x is", x)
...     return x * 2
>>> watch = TraceWatch()
>>> watch.traced(step, (jnp.ones(2),))
>>> [d.pitfall for d in watch.warnings(lambda filename: None)]
['print-side-effect']
>>> watch.traced(step, (jnp.ones(2),)); watch.warnings(lambda filename: None)  # said once
[]
"""

from __future__ import annotations

import threading
import types
import weakref
from typing import Any

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.global_watch as global_watch
import jaxmagic.doctor.registry as registry
from jaxmagic.doctor.checked_fixes import call_of_trace, checked_diagnosis
from jaxmagic.doctor.traced_code import Traced, user_functions
from jaxmagic.tracing.sources import CellNamer

IN_CELLS = (
    "print-side-effect",
    "max-traces-outside",
    "state-mutation",
    "static-self",
    "global-key",
    "stored-tracer",
)  # what a cell shows no sign of
MAX_PENDING = 64  # functions noted in one cell


class TraceWatch:
    """The user's jitted functions traced since the last cell ended, with their call's arguments."""

    def __init__(self):
        # the traced function -> (its helpers, weakly; the arguments), newest last: held only while
        # the user's code holds the function, so that noting it keeps nothing of theirs alive
        self._pending: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._said: weakref.WeakSet = weakref.WeakSet()
        self._lock = threading.Lock()

    def traced(self, fn: Any, args: tuple = ()) -> None:
        """Note ``fn`` (a function JAX traced for a call of the user's code) and its arguments."""
        functions = user_functions(fn)
        if not functions or not clues.is_user_file(functions[0].__code__.co_filename) or functions[0] in self._said:
            return
        with self._lock:
            if len(self._pending) < MAX_PENDING and functions[0] not in self._pending:
                self._pending[functions[0]] = ([weakref.ref(f) for f in functions[1:]], tuple(args))

    def take(self) -> list:
        """The noted functions (those still alive, each with its helpers) and arguments, forgotten."""
        with self._lock:
            pending, self._pending = list(self._pending.items()), weakref.WeakKeyDictionary()
        return [
            ([function, *(h for h in (ref() for ref in helpers) if h is not None)], args)
            for function, (helpers, args) in pending
        ]

    def warnings(self, cell_namer: CellNamer) -> list:
        """The warnings of ``IN_CELLS`` for the functions noted since the last call, their fixes
        checked on the call's arguments; each function is warned about once."""
        found = []
        for functions, args in self.take():
            self._said.add(functions[0])
            traced = Traced(functions, None, None, cell_namer, args)
            for pitfall in (registry.PITFALLS[name] for name in IN_CELLS if name in registry.PITFALLS):
                try:
                    found += [_checked(d, functions[0], args) for d in pitfall.run(traced) or []]
                except Exception as exc:  # never into the user's cell
                    registry.record_failure(pitfall.id, exc)
        return found

    def clear(self) -> None:
        with self._lock:
            self._pending = weakref.WeakKeyDictionary()
        self._said = weakref.WeakSet()


def _checked(found, function, args: tuple):
    return checked_diagnosis(found, call_of_trace(types.SimpleNamespace(args=args, kwargs={}, fn=function), function))


WATCH = TraceWatch()


def start() -> None:
    """Start noting the functions JAX traces: ``global_watch``'s listener tells ``WATCH`` of each
    function JAX traces for a call (once, however often called)."""
    if WATCH not in global_watch.WATCHERS:
        global_watch.WATCHERS.append(WATCH)
    global_watch.start()


def stop() -> None:
    """Stop noting; what was noted is forgotten (``global_watch`` keeps listening for its own)."""
    if WATCH in global_watch.WATCHERS:
        global_watch.WATCHERS.remove(WATCH)
    WATCH.clear()
