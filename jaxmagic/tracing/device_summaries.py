"""When ``--values`` runs its summary programs on an accelerator: a few equations' outputs per
program, each program compiled ahead on worker threads while the equations run.

Each program launch costs a TPU's host about as much as one eager operation (~130 µs on a v5e),
so summarising every equation's outputs on its own made a warm run of a small MLP 3.4× its eager
call: ``Window`` gathers the outputs of several equations (``WINDOW_VALUES`` values, a list never
split) into one program. A first run compiles each distinct program, tens of milliseconds each
on a TPU, where eager code compiles each of its operations once too: ``Ahead`` compiles the
programs the jaxpr foretells, each list of types once per process, on worker threads, so the
calling thread compiles only the user's operations.

>>> import jax, jax.numpy as jnp
>>> from jaxmagic.tracing import value_program
>>> x = jnp.arange(20.0)
>>> window = Window(Ahead())
>>> first, second = window.add([x]), window.add([x, x])
>>> parts = window.fetched()
>>> found = value_program.unpacked(second.taken_from(parts), [x, x])
>>> int(found[1]["maximum"]), first.part == second.part
(19, True)
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import jax
import numpy as np

from jaxmagic import _jax_private
from jaxmagic.tracing import jitting, value_program

WINDOW_VALUES = 4  # values one summary program takes at least (the last one of a run may take fewer)

_COMPILED: set = set()  # the lists of types whose program is compiled, forgotten with JAX's caches
_FORGET_MARK = _jax_private.on_caches_cleared(_COMPILED.clear)
_PLANS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # jaxpr -> the programs its runs need
_WORKERS: list = []  # the one pool of threads that compiles summary programs ahead, once started


def grouped(lists: Iterable[list]) -> list[list]:
    """The values of each program that ``Window`` runs for ``lists`` added in this order.

    >>> grouped([[1], [2, 3], [4], [5]])
    [[1, 2, 3, 4], [5]]
    """
    groups, group = [], []
    for values in lists:
        group += values
        if len(group) >= WINDOW_VALUES:
            groups.append(group)
            group = []
    return groups + [group] if group else groups


@dataclass(eq=False)
class Slot:
    """Where the summaries of one list of values land: part ``part`` of what ``Window.fetched``
    returns, bytes ``start:end``."""

    part: int = -1
    start: int = 0
    end: int = 0

    def taken_from(self, parts: list) -> Any:
        """Its bytes of ``parts`` (what ``Window.fetched`` returned)."""
        return parts[self.part][self.start : self.end]


class Window:
    """Lists of values summarised together, one program per group (``grouped``); a list's
    values are held until its group is full (so at most ``WINDOW_VALUES`` more stay alive than
    eager code would keep)."""

    def __init__(self, ahead: Ahead):
        self.ahead = ahead
        self.waiting: list[tuple[Slot, list]] = []
        self.held = 0
        self.parts: list = []

    def add(self, values: list) -> Slot:
        slot = Slot()
        self.waiting.append((slot, list(values)))
        self.held += len(values)
        if self.held >= WINDOW_VALUES:
            self._flush()
        return slot

    def fetched(self) -> list:
        """Every group's packed summaries on the host, in the order the groups ran (``Slot.part``);
        the compilations not started that no group asked for (a branch not taken) are dropped."""
        self._flush()
        parts = self.ahead.fetched(self.parts)
        self.ahead.cancel()
        return parts

    def _flush(self) -> None:
        if not self.waiting:
            return
        values, start = [], 0
        for slot, held in self.waiting:
            slot.part, slot.start = len(self.parts), start
            start += value_program.packed_size(held)
            slot.end = start
            values += held
        self.parts.append(self.ahead.summarised(values))
        self.waiting, self.held = [], 0


def _types(values: Iterable) -> tuple:
    """What a summary program is compiled for: each value's shape, dtype and weak type (arrays or
    their abstract values alike)."""
    return tuple(
        (tuple(np.shape(v)), str(value_program.seen_dtype(v)), bool(getattr(v, "weak_type", False))) for v in values
    )


def _compile(program, typed: list, key: tuple) -> None:
    """Compile ``program`` for the types of ``typed`` into its cache (a worker's job)."""
    with jitting.own_work():
        shapes = [jax.ShapeDtypeStruct(t.shape, t.dtype, weak_type=bool(getattr(t, "weak_type", False))) for t in typed]
        program.trace(shapes).lower().compile()
    _COMPILED.add(key)


def _jobs(groups: list[list], joined: bool) -> list[tuple]:
    """``(program, typed, key)`` for each program a run of ``groups`` needs."""
    jobs = [(value_program.PACKED, typed, _types(typed)) for typed in groups]
    if joined and 0 < len(groups) <= value_program.MOST_CONCATENATED:
        parts = [jax.ShapeDtypeStruct((value_program.packed_size(typed),), np.uint8) for typed in groups]
        jobs.append((value_program.CONCATENATED, parts, ("joined", _types(parts))))
    return jobs


def _pool() -> concurrent.futures.ThreadPoolExecutor:
    if not _WORKERS:
        workers = max(1, min(8, (os.cpu_count() or 2) - 1))
        _WORKERS.append(concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="jaxmagic-summaries"))
    return _WORKERS[0]


class Ahead:
    """The summary programs of ``jobs`` (``(program, typed, key)``: see ``planned``) compiled on
    worker threads, each list of types once per process; ``summarised`` and ``fetched`` wait for
    their own program, then run it."""

    def __init__(self, jobs: Iterable[tuple] = ()):
        self.pending: dict[tuple, concurrent.futures.Future] = {}
        for program, typed, key in jobs:
            self._submit(program, typed, key)

    @classmethod
    def planned(cls, jaxpr, foresee: Callable[[], tuple[list[list], bool]]) -> Ahead:
        """An ``Ahead`` for a run of ``jaxpr``: the program of each group of values ``foresee()``
        gives and, where it says the order is exact, the one that joins the groups' packed
        summaries (``value_program.fetched``); worked out once per jaxpr (a warm run only checks
        what is compiled)."""
        jobs = _PLANS.get(jaxpr)
        if jobs is None:
            jobs = _PLANS[jaxpr] = _jobs(*foresee())
        return cls(jobs)

    def _submit(self, program, typed: list, key: tuple) -> None:
        if key not in _COMPILED and key not in self.pending:
            self.pending[key] = _pool().submit(_compile, program, list(typed), key)

    def summarised(self, values: list) -> Any:
        if self.pending:
            self._wait(_types(values))
        return value_program.summarised(values)

    def fetched(self, parts: list) -> list:
        if self.pending:
            self._wait(("joined", _types(parts)))
        return value_program.fetched(parts)

    def _wait(self, key: tuple) -> None:
        future = self.pending.pop(key, None)
        if future is not None:
            with contextlib.suppress(Exception):  # a program the worker could not compile is compiled here
                future.result()

    def cancel(self) -> None:
        """Drop the compilations not started yet that no summary asked for (a branch not taken)."""
        for future in self.pending.values():
            future.cancel()
        self.pending.clear()
