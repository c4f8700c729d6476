"""The doctor's fixes checked before they are shown: the user's call read from an exception (the
call site and the arguments the jitted call received, on the traceback's stack) or from a call a
magic traced, each fix of a ``Diagnosis`` traced on it (``fix_check.check``), and the diagnosis
said accordingly: ``checked``, or why not, a failing fix withdrawn.

>>> from jaxmagic.doctor.diagnosis import Diagnosis
>>> d = checked_diagnosis(Diagnosis("traced-shape", explanation="n is traced.", fix="x[:n]"), None)
>>> d.checked, str(d.check_note)
(False, 'Not checked on your arguments: jaxmagic does not know the arguments it was called with.')
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import replace
from typing import Any

from jaxmagic import _jax_private
from jaxmagic.doctor.case import Case
from jaxmagic.doctor.clues import MISSING, UserFrame
from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.fix_check import (
    ARGUMENTS,
    ELIDED,
    FAILED,
    FRAGMENT,
    NEW_PARAMETERS,
    NO_CALL,
    NOT_REACHED,
    STATEMENTS,
    FixCheck,
    UserCall,
    check,
)
from jaxmagic.tracing import callables
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

# Why a fix could not be checked: the words layer says each of these (``words.doctor.why_unchecked``).
UNCHECKED_REASONS = (NO_CALL, STATEMENTS, ELIDED, NOT_REACHED, ARGUMENTS, NEW_PARAMETERS, FRAGMENT)


def checked_diagnosis(diagnosis: Diagnosis, call: UserCall | None) -> Diagnosis:
    """``diagnosis`` with its fixes checked on ``call``: the lead fix ``checked`` and said so; a fix
    that fails the trace is not shown (the first alternative that passes leads instead, or the
    card says the rewrite failed); an alternative that fails is dropped.

    >>> from jaxmagic.doctor.diagnosis import Diagnosis
    >>> checked_diagnosis(Diagnosis("traced-shape", explanation="n is traced.", fix=""), None).checked
    False

    Every reason a fix may go unchecked is said in words:

    >>> all(words.why_unchecked(reason) for reason in UNCHECKED_REASONS)
    True
    """
    if not diagnosis.fix and not any(snippet for _, snippet in diagnosis.alternatives):
        return diagnosis
    lead = check(diagnosis.fix, call, diagnosis.fix_call) if diagnosis.fix else None
    alternatives, outcomes = _kept_alternatives(diagnosis, call)
    shown = [
        (words.unchecked_label(label, outcome.reason), snippet)
        if outcome is not None and not outcome.passed
        else (label, snippet)
        for (label, snippet), outcome in zip(alternatives, outcomes, strict=True)
    ]
    fields: dict = {"alternatives": tuple(shown)}
    if lead is None:
        return replace(diagnosis, **fields)
    if lead.outcome == FAILED:
        return _without_failed_lead(diagnosis, lead, alternatives, outcomes, shown)
    if lead.passed:
        return replace(diagnosis, checked=True, check_note=words.checked(), **fields)
    return replace(diagnosis, checked=False, check_note=words.not_checked(lead.reason), **fields)


def _kept_alternatives(diagnosis: Diagnosis, call: UserCall | None) -> tuple[list, list]:
    """The alternatives whose code did not fail on ``call``, with what checking each found."""
    alternatives, outcomes = [], []
    for label, snippet in diagnosis.alternatives:
        outcome = check(snippet, call) if snippet else None
        if outcome is not None and outcome.outcome == FAILED:
            continue
        alternatives.append((label, snippet))
        outcomes.append(outcome)
    return alternatives, outcomes


def _without_failed_lead(
    diagnosis: Diagnosis, lead: FixCheck, alternatives: list, outcomes: list, shown: list
) -> Diagnosis:
    """The lead fix failed the trace: the first alternative that passed leads instead, or the card
    says the rewrite failed."""
    promoted = next((i for i, o in enumerate(outcomes) if o is not None and o.passed), None)
    if promoted is not None:
        label, snippet = alternatives[promoted]
        return replace(
            diagnosis,
            fix=snippet,
            fix_note=label,
            alternatives=tuple(a for i, a in enumerate(shown) if i != promoted),
            static_argnames=(),
            checked=True,
            check_note=words.checked(),
        )
    return replace(
        diagnosis,
        fix="",
        fix_note=words.rewrite_failed(lead.error),
        static_argnames=(),
        checked=False,
        check_note="",
        alternatives=tuple(shown),
    )
