"""Jitted functions that call ``print``, noted when JAX traces one for a call in an ordinary cell:
the ``print`` ran once, while JAX traced, and showed tracers instead of numbers. After the cell the
doctor says so (``print-side-effect``, with ``jax.debug.print`` as the fix), once per function.

While watching, ``global_watch``'s ``jax.monitoring`` listener (it runs when JAX traces a
``jax.jit`` call: never on a call that hits JAX's caches, nor for ahead-of-time ``.trace`` /
``.lower``, which ``%jaxpr`` uses and warns about itself) hands ``WATCH`` each traced function: it
reads which global names the function and its helpers load, nothing else.

>>> import jax, jax.numpy as jnp
>>> def step(x):
...     print("x is", x)
...     return x * 2
>>> watch = PrintWatch()
>>> watch.traced(step)
>>> [d.pitfall for d in watch.warnings(lambda filename: None)]
['print-side-effect']
>>> watch.traced(step); watch.warnings(lambda filename: None)  # said once
[]
"""

from __future__ import annotations

import builtins
import threading
import weakref
from typing import Any

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.global_watch as global_watch
import jaxmagic.doctor.registry as registry
from jaxmagic.doctor.traced_code import Traced, global_loads, user_functions
from jaxmagic.tracing.sources import CellNamer

PITFALL = "print-side-effect"
MAX_PENDING = 64  # functions noted in one cell


def _calls_print(function) -> bool:
    """True where ``function`` loads the builtin ``print`` (not a ``print`` the user rebound)."""
    if function.__globals__.get("print", builtins.print) is not builtins.print:
        return False
    return any(load.name == "print" for load in global_loads(function))


class PrintWatch:
    """The user's jitted functions traced since the last cell ended whose code calls ``print``."""

    def __init__(self):
        self._pending: list = []  # (the traced function, its helpers), newest last
        self._said: weakref.WeakSet = weakref.WeakSet()
        self._lock = threading.Lock()

    def traced(self, fn: Any) -> None:
        """Note ``fn`` (a function JAX traced for a call) if it or a helper calls ``print``."""
        functions = user_functions(fn)
        if not functions or not clues.is_user_file(functions[0].__code__.co_filename):
            return
        if functions[0] in self._said or not any(_calls_print(f) for f in functions):
            return
        with self._lock:
            if len(self._pending) < MAX_PENDING and all(f[0] is not functions[0] for f in self._pending):
                self._pending.append(functions)

    def take(self) -> list:
        """The noted functions (each a list: the traced function, then its helpers), forgotten."""
        with self._lock:
            pending, self._pending = self._pending, []
        return pending

    def warnings(self, cell_namer: CellNamer) -> list:
        """The ``print-side-effect`` warnings for the functions noted since the last call; each
        function is warned about once."""
        pitfall = registry.PITFALLS.get(PITFALL)
        found = []
        for functions in self.take():
            self._said.add(functions[0])
            if pitfall is None:
                continue
            try:
                found += pitfall.run(Traced(functions, None, None, cell_namer)) or []
            except Exception as exc:  # never into the user's cell
                registry.record_failure(PITFALL, exc)
        return found

    def clear(self) -> None:
        with self._lock:
            self._pending.clear()
        self._said = weakref.WeakSet()


WATCH = PrintWatch()


def start() -> None:
    """Start noting jitted functions that call ``print``: ``global_watch``'s listener tells
    ``WATCH`` of each function JAX traces for a call (once, however often called)."""
    if WATCH not in global_watch.WATCHERS:
        global_watch.WATCHERS.append(WATCH)
    global_watch.start()


def stop() -> None:
    """Stop noting; what was noted is forgotten (``global_watch`` keeps listening for its own)."""
    if WATCH in global_watch.WATCHERS:
        global_watch.WATCHERS.remove(WATCH)
    WATCH.clear()
