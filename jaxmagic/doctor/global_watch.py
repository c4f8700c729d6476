"""The globals a jitted function read while JAX traced it, and which of them the user has since
bound to another value: the compiled code still holds the old one.

While watching, a ``jax.monitoring`` listener runs when JAX traces a ``jax.jit`` call (never on a
call that hits JAX's caches): it notes the numbers and arrays the user's function and its helpers
read as globals, with their values. Only a call traces for the code later calls reuse: ahead-of-time
``.trace`` / ``.lower`` (what ``%jaxpr`` and ``%jitcompare`` use) are left out. ``changed(namespace)`` (after each cell) compares each noted
global with what its name holds now: one dictionary lookup and an identity test per global, an
equality test for a number. A name found bound to another value is reported once, and only while
the user still holds the function (jitted, or plain: ``jax.jit(f)(x)`` written again reuses the
compiled code).

>>> import jax, jax.numpy as jnp
>>> rate = 0.5
>>> def scaled(x):
...     return x * rate
>>> step = jax.jit(scaled)
>>> watch = GlobalWatch()
>>> watch.traced(scaled)
>>> rate = 2.0
>>> [(s.read.name, s.read.value, s.now) for s in watch.changed({"step": step})]
[('rate', 0.5, 2.0)]
>>> watch.changed({"step": step})  # said once
[]
"""

from __future__ import annotations

import numbers
import sys
import threading
import types
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.registry as registry
from jaxmagic import _jax_private
from jaxmagic.doctor.traced_code import Load, array_leaves, global_loads, is_baked_value, user_functions
from jaxmagic.tracing import callables, libraries
from jaxmagic.tracing.sources import CellNamer

MAX_FUNCTIONS = 256  # traced functions whose globals are remembered


@dataclass(frozen=True)
class BakedRead:
    """A global a traced function read: its name, the value JAX compiled in, where it is read."""

    name: str
    value: Any
    load: Load


@dataclass(frozen=True)
class StaleGlobal:
    """A global bound to another value since ``function`` was traced: the compiled code keeps
    ``read.value``, the name now holds ``now``; ``jitted`` is the user's name for the jitted function."""

    function: types.FunctionType
    jitted: str
    read: BakedRead
    now: Any


@dataclass(frozen=True)
class CellEnd:
    """What the cell stage reads after a cell ran: the globals found changed since their jitted
    functions were traced, and how places are named."""

    changes: tuple[StaleGlobal, ...]
    cell_namer: CellNamer


def _baked(name: str, value: Any) -> bool:
    return is_baked_value(name, value) or array_leaves(value) is not None


def _same(old: Any, new: Any) -> bool:
    """The same value: the same object, or an equal number of the same type (``rate = 0.5`` again)."""
    if old is new:
        return True
    scalar = (numbers.Number, np.generic)
    if isinstance(old, scalar) and isinstance(new, scalar) and type(old) is type(new):
        try:
            return bool(old == new)
        except Exception:
            return False
    return False


class GlobalWatch:
    """The globals each traced function read, with their values at its latest trace."""

    def __init__(self):
        self._reads: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # function -> {name: BakedRead}
        self._said: dict[tuple[int, str], Any] = {}  # (function, name) -> the new value last reported
        self._lock = threading.Lock()

    def traced(self, fn: Any, args: tuple = ()) -> None:
        """Note the baked globals of ``fn`` (a function JAX is tracing) and of the helpers it calls."""
        functions = user_functions(fn)
        if not functions or not clues.is_user_file(functions[0].__code__.co_filename):
            return  # JAX's own jitted helpers (jnp functions) are not the user's to change
        reads: dict[str, BakedRead] = {}
        for function in functions:
            for load in global_loads(function):
                if load.name in reads or load.name not in function.__globals__:
                    continue
                value = function.__globals__[load.name]
                if _baked(load.name, value):
                    reads[load.name] = BakedRead(load.name, value, load)
        with self._lock:
            if reads:
                if len(self._reads) >= MAX_FUNCTIONS and functions[0] not in self._reads:
                    return
                self._reads[functions[0]] = reads
            else:
                self._reads.pop(functions[0], None)

    def changed(self, namespace: dict | None = None) -> list[StaleGlobal]:
        """The noted globals now bound to another value, for jitted functions the user still holds
        (as a global of their module, or in ``namespace``); each is reported once."""
        found = []
        with self._lock:
            items = list(self._reads.items())
        for function, reads in items:
            for read in reads.values():
                globals_ = read.load.function.__globals__
                now = globals_.get(read.name, read.value)
                if _same(read.value, now):
                    continue
                key = (id(function), read.name)
                if key in self._said and _same(self._said[key], now):
                    continue
                jitted = jitted_name(function, namespace)
                if jitted is None:
                    continue
                self._said[key] = now
                found.append(StaleGlobal(function, jitted, read, now))
        return found

    def clear(self) -> None:
        with self._lock:
            self._reads.clear()
            self._said.clear()


def jitted_name(function: types.FunctionType, namespace: dict | None) -> str | None:
    """The name the user calls ``function`` by, while they hold it: jitted (``@jax.jit def f``,
    ``step = jax.jit(f)``) or plain (``jax.jit(f)(x)`` written at each call reuses the compiled code)."""
    own = function.__globals__.get(function.__name__)
    candidates = [(function.__name__, own), *(namespace or {}).items()]
    for name, value in candidates:
        if value is None or name.startswith("_"):
            continue
        jitted = _jax_private.is_jitted(value) or libraries.recognise(value) is not None
        if jitted and callables.python_function(value) is function:
            return name
    return function.__name__ if own is function else None


WATCH = GlobalWatch()
# Each gets ``traced(fn)`` for every function JAX traces for a call, and ``clear()`` on ``stop``
# (``trace_watch`` adds its own).
WATCHERS: list = [WATCH]
_listening: list = []  # the registered listener, while watching


def _on_duration(event: str, duration_secs: float, **kwargs: str | int) -> None:
    if not _listening or event != _listening[1]:
        return
    frame = sys._getframe(1)
    try:
        call = _jax_private.jit_call_in_progress(frame)
        # a library's jit (eqx.filter_jit) traces a wrapper of its own: the user's function is behind it
        users = libraries.user_call_in_progress(call.fun, frame) if call is not None else None
    except Exception as exc:  # never into the user's trace
        registry.record_failure("watching globals", exc)
        call = users = None
    finally:
        del frame
    if call is None or not call.called:  # the user's call; not ``.trace`` / ``.lower`` (%jaxpr, %jitcompare)
        return
    fun, args = users or (call.fun, call.args)
    for watcher in list(WATCHERS):
        try:
            watcher.traced(fun, args)
        except Exception as exc:  # never into the user's trace
            registry.record_failure("watching globals", exc)


def start() -> None:
    """Start noting the globals of every function JAX traces for ``jax.jit`` (once, however often called)."""
    if _listening:
        return
    from jax import monitoring

    monitoring.register_event_duration_secs_listener(_on_duration)
    _listening[:] = [_on_duration, _jax_private.compile_event_names()["trace"]]


def stop() -> None:
    """Stop noting; what was noted is forgotten."""
    if not _listening:
        return
    _listening.clear()
    _jax_private.unregister_duration_listener(_on_duration)
    for watcher in list(WATCHERS):
        watcher.clear()


def is_watching() -> bool:
    """True between ``start()`` and ``stop()``.

    >>> is_watching() in (True, False)
    True
    """
    return bool(_listening)
