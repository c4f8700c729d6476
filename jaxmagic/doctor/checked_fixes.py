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

import jaxmagic.doctor.clues as clues
from jaxmagic import _jax_private
from jaxmagic.doctor.clues import MISSING
from jaxmagic.doctor.fix_check import (
    ARGUMENTS,
    ELIDED,
    FAILED,
    FRAGMENT,
    NEW_PARAMETERS,
    NO_CALL,
    NOT_REACHED,
    STATEMENTS,
    UserCall,
    check,
)
from jaxmagic.tracing import callables
from jaxmagic.words import Part, Words, as_words, code, say

# ------------------------------------------------------------------------------------------------
# The user's call, read from an exception


def call_of_case(case) -> UserCall | None:
    """The call behind a ``Case``: its call site's namespace and call, and the arguments the jitted
    call received (read from JAX's frames, still on the traceback's stack)."""
    site, traced = _site_and_traced(case)
    frame = site or traced
    if frame is None:
        return None
    f_globals, f_locals = frame.frame.f_globals, frame.frame.f_locals
    local = {} if f_locals is f_globals else dict(f_locals)
    parsed = case.parsed(site) if site is not None else None
    node = clues.node_at(parsed.tree, site.span(), ast.Call) if parsed is not None else None
    args, kwargs = _running_arguments(traced)
    name = traced.function if traced is not None else None
    if node is None and case.fn is not None and args is None and traced is not None:
        args, kwargs = _frame_arguments(traced)
    home = traced.frame.f_globals if traced is not None else None
    return UserCall(f_globals, local, node, name, args, kwargs, case.fn, home, _function_of(traced))


def _site_and_traced(case) -> tuple[Any, Any]:
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


def _running_arguments(traced) -> tuple[tuple | None, dict | None]:
    """The arguments of the jitted call JAX is running for frame ``traced`` (``None``s: none)."""
    running = _jax_private.jit_call_in_progress(traced.frame) if traced is not None else None
    inner = callables.python_function(running.fun) if running is not None else None
    if inner is not None and inner.__code__ is traced.code:
        return running.args, running.kwargs
    return None, None


def _function_of(frame) -> Any:
    """The function object a frame runs, found among its globals by its code (``None`` if not there)."""
    if frame is None:
        return None
    value = frame.frame.f_globals.get(frame.function)
    inner = callables.python_function(value)
    return inner if inner is not None and inner.__code__ is frame.code else None


def _frame_arguments(frame) -> tuple[tuple | None, dict | None]:
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

_WHY_UNCHECKED = {
    NO_CALL: "jaxmagic does not know the arguments it was called with",
    STATEMENTS: "the fix changes statements that run, and jaxmagic only traces",
    ELIDED: "the fix is shown in part",
    NOT_REACHED: "the call runs the fixed code through an object or a helper that jaxmagic does not redefine",
    ARGUMENTS: "an argument of the call is an expression jaxmagic does not run again",
    NEW_PARAMETERS: "the fixed function takes arguments that the call does not pass yet",
    FRAGMENT: "it is a line to put in your function, not code that runs alone",
}


def _unchecked_label(label, why: str):
    """An alternative's label, saying that its code could not be checked (before its closing colon).

    >>> str(_unchecked_label("Or donate a copy:", "no call"))
    'Or donate a copy (not checked on your arguments: no call):'
    """
    parts = list(as_words(label).parts)
    colon = bool(parts) and parts[-1].kind == "text" and parts[-1].text.rstrip().endswith(":")
    if colon:
        parts[-1] = Part("text", parts[-1].text.rstrip()[:-1])
    parts.append(Part("text", f" (not checked on your arguments: {why})" + (":" if colon else ".")))
    return Words(tuple(parts))


def checked_diagnosis(diagnosis, call: UserCall | None):
    """``diagnosis`` with its fixes checked on ``call``: the lead fix ``checked`` and said so; a fix
    that fails the trace is not shown (the first alternative that passes leads instead, or the
    card says the rewrite failed); an alternative that fails is dropped.

    >>> from jaxmagic.doctor.diagnosis import Diagnosis
    >>> checked_diagnosis(Diagnosis("traced-shape", explanation="n is traced.", fix=""), None).checked
    False
    """
    if not diagnosis.fix and not any(snippet for _, snippet in diagnosis.alternatives):
        return diagnosis
    lead = check(diagnosis.fix, call, diagnosis.fix_call) if diagnosis.fix else None
    alternatives, outcomes = _kept_alternatives(diagnosis, call)
    shown = [
        (_unchecked_label(label, _WHY_UNCHECKED.get(outcome.reason, "")), snippet)
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
        return replace(
            diagnosis, checked=True, check_note=say("Checked on your arguments: the fixed code traces."), **fields
        )
    return replace(
        diagnosis,
        checked=False,
        check_note=say("Not checked on your arguments: {}.", _WHY_UNCHECKED.get(lead.reason, "")),
        **fields,
    )


def _kept_alternatives(diagnosis, call: UserCall | None) -> tuple[list, list]:
    """The alternatives whose code did not fail on ``call``, with what checking each found."""
    alternatives, outcomes = [], []
    for label, snippet in diagnosis.alternatives:
        outcome = check(snippet, call) if snippet else None
        if outcome is not None and outcome.outcome == FAILED:
            continue
        alternatives.append((label, snippet))
        outcomes.append(outcome)
    return alternatives, outcomes


def _without_failed_lead(diagnosis, lead, alternatives: list, outcomes: list, shown: list):
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
            check_note=say("Checked on your arguments: the fixed code traces."),
        )
    return replace(
        diagnosis,
        fix="",
        fix_note=say(
            "jaxmagic's rewrite of your code failed when traced on your arguments ({}), so it is not shown; "
            "the page on this pitfall lists the ways out.",
            code(lead.error),
        ),
        static_argnames=(),
        checked=False,
        check_note="",
        alternatives=tuple(shown),
    )
