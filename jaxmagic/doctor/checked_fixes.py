"""The doctor's fixes checked before they are shown: the user's call read from an exception (the
call site and the arguments the jitted call received, on the traceback's stack) or from a call a
magic traced, each fix of a ``Diagnosis`` run on it and compared by value with the user's call
without jit (``fix_check.check``), in a thread of its own and within a time limit, and the
diagnosis said accordingly: the same values, what differs, or why it could not be checked; a
failing fix withdrawn.

>>> from jaxmagic.doctor.diagnosis import Diagnosis
>>> d = checked_diagnosis(Diagnosis("traced-shape", explanation="n is traced.", fix="x[:n]"), None)
>>> d.checked, str(d.check_note)
(False, 'Not checked on your arguments: jaxmagic does not know the arguments it was called with.')
"""

from __future__ import annotations

import ast
import inspect
import threading
from dataclasses import replace
from typing import Any

from jaxmagic import _jax_private
from jaxmagic.doctor.case import Case
from jaxmagic.doctor.clues import MISSING, UserFrame
from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.fix_check import (
    DIFFERS,
    FAILED,
    NO_CALL,
    OFF,
    SAME,
    TIME,
    UNCHECKED,
    FixCheck,
    Original,
    UserCall,
    check,
)
from jaxmagic.tracing import callables, jitting
from jaxmagic.words import doctor as words

# ------------------------------------------------------------------------------------------------
# The user's call, read from an exception


def call_of_case(case: Case) -> UserCall | None:
    """The call behind a ``Case``: its call site's namespace and call, and the arguments the jitted
    call received (read from JAX's frames, still on the traceback's stack)."""
    site, traced = _site_and_traced(case)
    frame = site or traced
    if frame is None:
        return None
    f_globals, f_locals = frame.frame.f_globals, frame.frame.f_locals
    local = {} if f_locals is f_globals else dict(f_locals)
    node = case.expression(site, ast.Call) if site is not None else None
    args, kwargs = _running_arguments(traced)
    name = traced.function if traced is not None else None
    if node is None and case.fn is not None and args is None and traced is not None:
        args, kwargs = _frame_arguments(traced)
    home = traced.frame.f_globals if traced is not None else None
    return UserCall(f_globals, local, node, name, args, kwargs, case.fn, home, _function_of(traced))


def _site_and_traced(case: Case) -> tuple[UserFrame | None, UserFrame | None]:
    """The user's frame that made the call (``None``: not known) and the frame of the function it
    called: the traced one, or with no trace the innermost of the user's functions."""
    frames = case.frames
    modules = [i for i, f in enumerate(frames) if f.function == "<module>"]
    frames = frames[modules[-1] :] if modules else frames  # from the cell (or script) that ran
    traced = case.traced_frame
    if traced is None and len(frames) > 1:
        traced = frames[-1]
    if traced is not None and traced in frames:
        return (frames[frames.index(traced) - 1] if frames.index(traced) > 0 else None), traced
    return (case.call_site if traced is not None else (frames[-1] if frames else None)), traced


def _running_arguments(traced: UserFrame | None) -> tuple[tuple | None, dict | None]:
    """The arguments of the jitted call JAX is running for frame ``traced`` (``None``s: none)."""
    running = _jax_private.jit_call_in_progress(traced.frame) if traced is not None else None
    if traced is None or running is None:
        return None, None
    inner = callables.python_function(running.fun)
    if inner is not None and inner.__code__ is traced.code:
        return running.args, running.kwargs
    return None, None


def _function_of(frame: UserFrame | None) -> Any:
    """The function object a frame runs, found among its globals by its code (``None`` if not there)."""
    if frame is None:
        return None
    value = frame.frame.f_globals.get(frame.function)
    inner = callables.python_function(value)
    return inner if inner is not None and inner.__code__ is frame.code else None


def _frame_arguments(frame: UserFrame) -> tuple[tuple | None, dict | None]:
    """The traced function's parameters as its frame holds them (tracers: their shapes and dtypes)."""
    code = frame.code
    if code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
        return None, None
    names = code.co_varnames[: code.co_argcount]
    values = [frame.frame.f_locals.get(n, MISSING) for n in names]
    if any(v is MISSING for v in values):
        return None, None
    kw = {
        n: frame.frame.f_locals[n]
        for n in code.co_varnames[code.co_argcount : code.co_argcount + code.co_kwonlyargcount]
    }
    return tuple(values), kw


def call_of_trace(call_or_fn: Any, function: Any) -> UserCall | None:
    """The call a trace-time warning is about: the function's globals and the arguments it was
    traced with (``None`` when only the function is known)."""
    args = getattr(call_or_fn, "args", None)
    if args is None or function is None:
        return None
    fn = callables.python_function(function)
    if fn is None:
        return None
    bound = getattr(callables.unwrap_jit(getattr(call_or_fn, "fn", call_or_fn)), "__self__", None)
    return UserCall(
        fn.__globals__,
        callee_name=fn.__name__,
        args=((bound,) if bound is not None else ()) + tuple(args),
        kwargs=dict(getattr(call_or_fn, "kwargs", {}) or {}),
        function=fn,
    )


# ------------------------------------------------------------------------------------------------
# A diagnosis whose fixes are checked

CHECK_SECONDS = 10.0  # past this, a card says its fix could not be checked instead of waiting


def checked_diagnosis(diagnosis: Diagnosis, call: UserCall | None, seconds: float | None = None) -> Diagnosis:
    """``diagnosis`` with its fixes checked by value on ``call`` (``fix_check``), within ``seconds``
    (``CHECK_SECONDS`` by default; ``0``: not checked): the lead fix said to give the same values,
    or what differs, or why it could not be checked. A fix that raises is not shown (the first
    alternative that gives the same values leads instead, or the card says the rewrite failed); a
    lead whose values differ gives way to an alternative whose values are the same.

    >>> from jaxmagic.doctor.diagnosis import Diagnosis
    >>> d = checked_diagnosis(Diagnosis("traced-shape", explanation="n is traced.", fix="x[:n]"), None)
    >>> d.checked, str(d.check_note)
    (False, 'Not checked on your arguments: jaxmagic does not know the arguments it was called with.')

    Every reason a fix may go unchecked is said in words:

    >>> from jaxmagic.doctor.fix_check import REASONS
    >>> all(words.why_unchecked(reason) for reason in REASONS)
    True
    """
    snippets = [diagnosis.fix] + [snippet for _, snippet in diagnosis.alternatives]
    if not any(snippets):
        return diagnosis
    seconds = CHECK_SECONDS if seconds is None else seconds
    done: list[FixCheck | None] = []
    original = Original(call) if call is not None else None

    def work() -> None:
        with jitting.own_work():
            for i, snippet in enumerate(snippets):
                done.append(check(snippet, call, diagnosis.fix_call if i == 0 else "", original) if snippet else None)

    if call is not None and seconds > 0:
        worker = threading.Thread(target=work, name="jaxmagic-fix-check", daemon=True)
        worker.start()
        worker.join(seconds)
    unchecked = NO_CALL if call is None else (OFF if seconds <= 0 else TIME)
    found = list(done) + [FixCheck(UNCHECKED, unchecked)] * (len(snippets) - len(done))
    return _said(diagnosis, [f if snippet else None for f, snippet in zip(found, snippets, strict=True)], seconds)


def _said(diagnosis: Diagnosis, found: list[FixCheck | None], seconds: float) -> Diagnosis:
    """The diagnosis with what checking found: failed alternatives dropped, the best fix leading."""
    kept = [
        (label, snippet, outcome)
        for (label, snippet), outcome in zip(diagnosis.alternatives, found[1:], strict=True)
        if outcome is None or outcome.outcome != FAILED
    ]
    lead = found[0]
    better = next((i for i, (_, _, o) in enumerate(kept) if o is not None and o.outcome == SAME), None)
    if lead is not None and lead.outcome != SAME and better is not None and (lead.outcome in (FAILED, DIFFERS)):
        label, snippet, outcome = kept.pop(better)
        others = [(words.fix_check_label(lb, o, seconds), sn) for lb, sn, o in kept]
        if lead.outcome == DIFFERS:
            others.insert(0, (words.fix_check_label(diagnosis.fix_note, lead, seconds), diagnosis.fix))
        return replace(diagnosis, fix=snippet, fix_note=words.leading(label), alternatives=tuple(others), static_argnames=(),
                       fix_call="", **(_lead(outcome, seconds) if outcome is not None else {}))  # fmt: skip
    shown = tuple((words.fix_check_label(label, outcome, seconds), snippet) for label, snippet, outcome in kept)
    if lead is None:
        return replace(diagnosis, alternatives=shown)
    if lead.outcome == FAILED:
        return replace(diagnosis, fix="", fix_note=words.rewrite_failed(lead.error), static_argnames=(),
                       checked=False, check_note="", check=lead, alternatives=shown)  # fmt: skip
    return replace(diagnosis, alternatives=shown, **_lead(lead, seconds))


def _lead(outcome: FixCheck, seconds: float) -> dict:
    return {"checked": outcome.ran, "check": outcome, "check_note": words.fix_checked(outcome, seconds)}
