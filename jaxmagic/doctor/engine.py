"""The doctor's entry points: ``diagnose`` runs the registry's error recognisers on an exception,
in their declared order, ``observe_trace`` its trace recognisers on a function that traced fine,
and ``observe_cell`` its cell recognisers after a cell ran. Every ``pitfall_*`` module of this
package is loaded first: its declarations fill the registry.

None of them raises: a recogniser that fails is logged and counted (``registry.internal_errors``), and
the others still run.

>>> diagnose(ZeroDivisionError("division by zero")) is None
True
"""

from __future__ import annotations

import functools
import importlib
import os
import pkgutil
from typing import Any, Callable

import jaxmagic.doctor.global_watch as global_watch
import jaxmagic.doctor.registry as registry
from jaxmagic.doctor.case import Case
from jaxmagic.doctor.checked_fixes import call_of_case, call_of_trace, checked_diagnosis
from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.traced_code import Traced, user_functions
from jaxmagic.errors import UserCodeError
from jaxmagic.tracing import callables
from jaxmagic.tracing.sources import CellNamer, no_cells

PACKAGE = "jaxmagic.doctor"
PREFIX = "pitfall_"


def load_pitfalls() -> list[str]:
    """Import every ``pitfall_*`` module of the doctor (once): the names of the modules.

    >>> "jaxmagic.doctor.pitfall_shapes" in load_pitfalls()
    True
    """
    here = [os.path.dirname(__file__)]
    names = sorted(f"{PACKAGE}.{m.name}" for m in pkgutil.iter_modules(here) if m.name.startswith(PREFIX))
    for name in names:
        importlib.import_module(name)
    return names


_cell_namer: CellNamer = no_cells


def use_cell_namer(namer: CellNamer | None) -> None:
    """How diagnoses name notebook cells (``In [4] line 3``) when no namer is passed.

    The IPython layer sets it when the extension loads and resets it on unload.

    >>> use_cell_namer(lambda filename: "In [7]" if filename == "<cell-7>" else None)
    >>> use_cell_namer(None)  # back to plain file names
    """
    global _cell_namer
    _cell_namer = namer or no_cells


def _run(pitfall: registry.Pitfall, argument: Any) -> Any:
    try:
        return pitfall.run(argument)
    except Exception as exc:  # a recogniser broken by new JAX wording or odd code: say so, go on
        registry.record_failure(pitfall.id, exc)
        return None


def recognise(
    exception: BaseException, fn: Callable | None, cell_namer: CellNamer, check_seconds: float | None = None
) -> Diagnosis | None:
    """Try every error recogniser on the exception (and on the one it was raised from); the fix of
    what is found is checked by value for at most ``check_seconds`` (``checked_diagnosis``).

    >>> recognise(KeyError("k"), None, lambda filename: None) is None
    True
    """
    if isinstance(exception, UserCodeError):
        exception = exception.original
    seen = set()
    for candidate in (exception, exception.__cause__):
        if candidate is None or id(candidate) in seen:
            continue
        seen.add(id(candidate))
        try:
            case = Case(candidate, fn, cell_namer)
        except Exception as exc:
            registry.record_failure("reading the exception", exc)
            return None
        for pitfall in registry.in_order("error"):
            found = _run(pitfall, case)
            if found is not None:
                return _checked(found, functools.partial(call_of_case, case), check_seconds)
    return None


def _checked(found: Diagnosis, read_call: Callable, seconds: float | None = None) -> Diagnosis:
    """``found`` with its fixes checked on the user's arguments (``fix_check``); as it is, unchecked,
    when reading the call fails."""
    try:
        return checked_diagnosis(found, read_call(), seconds)
    except Exception as exc:
        registry.record_failure("checking the fix", exc)
        return found


def diagnose(
    exception: BaseException,
    fn: Callable | None = None,
    *,
    cell_namer: CellNamer | None = None,
    check_seconds: float | None = None,
) -> Diagnosis | None:
    """The ``Diagnosis`` of a JIT trap behind ``exception``, or ``None`` if it is not one.

    ``fn`` is the function that was called (a jitted function, or the plain function a tool
    jitted), where known. Its fix is checked by value on the call's own arguments for at most
    ``check_seconds`` (10 s by default; ``0``: not checked, and the card says so). Never raises: a
    recogniser that fails is logged and counted.

    >>> import jax, jax.numpy as jnp
    >>> def first(x, n):
    ...     return x[:n]
    >>> try:
    ...     jax.jit(first)(jnp.ones(3), 2)
    ... except IndexError as exc:
    ...     found = diagnose(exc)
    >>> found.pitfall, found.variable
    ('traced-shape', 'n')
    >>> try:
    ...     jax.jit(first)(jnp.ones(3), 2)
    ... except IndexError as exc:
    ...     found = diagnose(exc, check_seconds=0)
    >>> found.checked
    False
    """
    return recognise(exception, fn, cell_namer or _cell_namer, check_seconds)


def observe_trace(
    call_or_fn: Any,
    closed_jaxpr: Any = None,
    printed_text: str | None = None,
    *,
    cell_namer: CellNamer | None = None,
) -> list[Diagnosis]:
    """Warnings about a function that traced fine: ``print`` that runs only while tracing,
    globals baked in as constants, NumPy functions that happened to work on traced values.

    ``call_or_fn`` is a ``Call`` (whose arguments' own methods are read too: a model's
    ``__call__``) or the function; ``closed_jaxpr`` what JAX traced it into;
    ``printed_text`` what it printed while JAX traced it (``None``: not watched).

    >>> import jax, jax.numpy as jnp
    >>> scale = 3.0
    >>> def f(x):
    ...     return x * scale
    >>> [d.pitfall for d in observe_trace(f, jax.make_jaxpr(f)(jnp.ones(2)))]
    ['baked-global']
    """
    fn = getattr(call_or_fn, "function", None) or call_or_fn
    bound = getattr(callables.unwrap_jit(getattr(call_or_fn, "fn", call_or_fn)), "__self__", None)
    arguments = [
        *([bound] if bound is not None else []),
        *getattr(call_or_fn, "args", ()),
        *getattr(call_or_fn, "kwargs", {}).values(),
    ]
    try:
        functions = user_functions(fn, arguments)
    except Exception as exc:
        registry.record_failure("reading the traced function", exc)
        return []
    traced = Traced(functions, closed_jaxpr, printed_text, cell_namer or _cell_namer, tuple(arguments))
    found: list[Diagnosis] = []
    for pitfall in registry.in_order("trace"):
        found += _run(pitfall, traced) or []
    return [_checked(d, lambda: call_of_trace(call_or_fn, fn)) for d in found]


def observe_cell(namespace: dict | None = None, *, cell_namer: CellNamer | None = None) -> list[Diagnosis]:
    """Warnings after a cell ran: globals that jitted functions read, bound to another value
    since JAX compiled them (noted while ``global_watch`` watches: see ``global_watch.start``).

    ``namespace`` is where the user holds their jitted functions (the notebook's namespace).

    >>> observe_cell({})
    []
    """
    try:
        changes = global_watch.WATCH.changed(namespace)
    except Exception as exc:
        registry.record_failure("reading changed globals", exc)
        return []
    if not changes:
        return []
    cell = global_watch.CellEnd(tuple(changes), cell_namer or _cell_namer)
    found: list[Diagnosis] = []
    for pitfall in registry.in_order("cell"):
        found += _run(pitfall, cell) or []
    return [_checked(d, lambda: None) for d in found]  # no call to trace: said so on the card


load_pitfalls()  # the registry is full as soon as the doctor is imported
