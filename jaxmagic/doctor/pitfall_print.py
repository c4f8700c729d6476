"""``print`` in a jitted function: ``print-side-effect`` (it runs only while JAX traces, a warning)
and ``formatted-tracer`` (a format spec on a traced value, which raises).

>>> from jaxmagic.doctor.registry import PITFALLS
>>> PITFALLS["print-side-effect"].severity, PITFALLS["formatted-tracer"].severity
('warning', 'error')
"""

from __future__ import annotations

import ast
import builtins
import re
import types
from dataclasses import dataclass

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.case import Case, function_source
from jaxmagic.doctor.clues import Span
from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.registry import describes, pitfall
from jaxmagic.doctor.traced_code import Traced, function_node, global_loads, with_edits
from jaxmagic.tracing import sources
from jaxmagic.words import code, place, say

# How a printed tracer reads: ``JitTracer(float32[])`` (newer JAX), ``JitTracer<float32[]>``
# (JAX 0.8.1), ``Traced<float32[]>with<DynamicJaxprTrace>`` (older traces).
_TRACER_TEXT = re.compile(r"(?:\w*Tracer(?:\([^)]*\)|<[^>]*>)|Traced<[^>]*>(?:with<\w+>)?)")


def _literal_pieces(call: ast.Call | None) -> list[str]:
    """The constant text a ``print`` call writes (its string literals and f-string constants)."""
    if call is None:
        return []
    pieces = []
    for arg in call.args:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            pieces.append(arg.value)
        elif isinstance(arg, ast.JoinedStr):
            pieces += [str(part.value) for part in arg.values if isinstance(part, ast.Constant)]
    return [p.strip() for p in pieces if p.strip()]


def _printed_by(call: ast.Call | None, printed_lines: list[str], calls: int) -> str | None:
    """The line of output (one showing a tracer) that this ``print`` call wrote, if it can be told:
    the first whose text holds the call's literal pieces in order; for a call with no literal text,
    the only printed line when the function has one ``print``."""
    pieces = _literal_pieces(call)
    if not pieces:
        return printed_lines[0] if calls == 1 and len(printed_lines) == 1 else None
    for line in printed_lines:
        at = 0
        for piece in pieces:
            at = line.find(piece, at)
            if at < 0:
                break
            at += len(piece)
        else:
            return line
    return None


@dataclass(frozen=True)
class Prints:
    """What ``print_side_effects`` found in one function: its source and each ``print`` call with
    the place its ``print`` is loaded (``None`` for the call where the source is unknown)."""

    function: types.FunctionType
    located: tuple | None
    calls: tuple


@pitfall("print-side-effect", "print runs only while JAX traces", "warning", stage="trace", order=10)
def print_side_effects(traced: Traced) -> list[Prints]:
    """``print-side-effect``: the ``print`` calls of each function (one warning per function, its
    fix rewriting every ``print`` in it).

    What tracing printed is quoted for the ``print`` that wrote it, when it shows a tracer.

    >>> def f(x):
    ...     print("x is", x)
    ...     return x
    >>> traced = Traced([f], None, "x is JitTracer(float32[2])", lambda filename: None)
    >>> (found,) = describe_prints(traced, print_side_effects(traced))
    >>> found.fix.splitlines()[1].strip()
    'jax.debug.print("x is {}", x)'
    """
    found = []
    for function in traced.functions:
        if function.__globals__.get("print", builtins.print) is not builtins.print:
            continue  # ``print`` means something else here (e.g. jax.debug.print imported as print)
        loads = [load for load in global_loads(function) if load.name == "print"]
        if not loads:
            continue
        located = function_node(function)
        calls = []
        for load in loads:
            call = _print_call_at(located, load.line) if located else None
            if call is None or not any(call is c for c, _ in calls):
                calls.append((call, load))
        found.append(Prints(function, located, tuple(calls)))
    return found


@describes("print-side-effect")
def describe_prints(traced: Traced, found: list[Prints]) -> list[Diagnosis]:
    """One warning per function, quoting what each print wrote; the fix rewrites every print."""
    diagnoses = []
    printed_text = traced.printed_text or ""
    printed_lines = [line.strip() for line in printed_text.splitlines() if _TRACER_TEXT.search(line)]
    for prints in found:
        function, located, calls = prints.function, prints.located, list(prints.calls)
        jn = rewrites.jax_names(function.__globals__)
        edits = []
        for call, _ in calls:
            replacement = rewrites.debug_print_call(call, located[0], jn.jax) if call is not None else None
            if replacement:
                edits.append(rewrites.Edit(Span.of(call), replacement))
        fix = (with_edits(located, edits) if edits else None) or ""  # no source: the fix in words
        name = function.__name__
        first_call, first_load = calls[0]
        where = sources.source_line(
            function.__code__.co_filename, first_load.line, first_load.code.co_name, traced.cell_namer
        )
        others = [
            sources.source_line(function.__code__.co_filename, load.line, load.code.co_name, traced.cell_namer)
            for _, load in calls[1:]
        ]
        at = (
            say("{}", place(where))
            if not others
            else say(
                "{}" + ", {}" * (len(others) - 1) + " and {}",
                place(where),
                *[place(o) for o in others[:-1]],
                place(others[-1]),
            )
        )
        explanation = say(
            "{} in {} ({}) is plain Python: it runs while JAX traces {} (the first call for each new input shape "
            "or dtype), not each time the compiled code runs.",
            code("print"),
            code(name),
            at,
            code(name),
        )
        quoted = next(
            ((call, line) for call, _ in calls if (line := _printed_by(call, printed_lines, len(calls)))), None
        )
        if quoted is not None:
            explanation += say(
                " What it printed, {}, is a tracer: a stand-in for your values, which do not exist yet at that point.",
                code(quoted[1]),
            )
        elif printed_lines:
            explanation += " What it printed were tracers, stand-ins for values that do not exist yet."
        else:
            explanation += say(" Any traced value it prints is a stand-in (a tracer), not a number.")
        diagnoses.append(
            Diagnosis(
                "print-side-effect",
                explanation=explanation,
                fix=fix,
                fix_note=say(
                    "{} runs inside the compiled code, on every call, with the real values.",
                    code(f"{jn.jax}.debug.print"),
                ),
                where=where,
                variable=_printed_name(first_call),
                function=name,
                alternatives=(
                    (
                        "Or print outside, on the result the jitted function returns:",
                        f"result = {name}(...)\nprint(result)",
                    ),
                ),
            )
        )
    return diagnoses


def _print_call_at(located, line: int) -> ast.Call | None:
    parsed, node = located
    for call in clues.nodes_in(node, ast.Call):
        if isinstance(call.func, ast.Name) and call.func.id == "print" and call.lineno <= line <= call.end_lineno:
            return call
    return None


def _printed_name(call: ast.Call | None) -> str | None:
    if call is None:
        return None
    for arg in call.args:
        names = clues.names_in(arg)
        if names:
            return names[0]
    return None


@dataclass(frozen=True)
class FormattedTracer:
    """What ``formatted_print`` found: the f-string, the call it is in, whether that is ``print``,
    and the traced name it formats."""

    joined: ast.JoinedStr
    call: ast.Call
    is_print: bool
    variable: str | None


@pitfall(
    "formatted-tracer",
    "A traced value formatted as a number (print, logging)",
    "error",
    order=80,
    messages=("unsupported format string passed to",),
)
def formatted_print(case: Case) -> FormattedTracer | None:
    """``print(f"{loss:.3f}")`` (or a logging call) inside a jitted function: a traced value
    cannot be formatted as a number, and the call would run only while tracing anyway.

    >>> import jax, jax.numpy as jnp
    >>> def show(x):
    ...     print(f"sum {x.sum():.2f}")
    ...     return x
    >>> try:
    ...     jax.jit(show)(jnp.ones(2))
    ... except TypeError as exc:
    ...     case = Case(exc, None, lambda filename: None)
    >>> found = describe_formatted_print(case, formatted_print(case))
    >>> found.fix.splitlines()[1].strip()
    'jax.debug.print("sum {:.2f}", x.sum())'
    """
    if not (isinstance(case.exc, TypeError) and case.says("formatted-tracer") and "Tracer" in case.message):
        return None
    frame = case.innermost
    parsed = case.parsed(frame) if frame is not None else None
    node = case.expression(frame) if parsed is not None else None
    if node is None:
        return None
    joined = node if isinstance(node, ast.JoinedStr) else clues.enclosing(parsed.tree, node, ast.JoinedStr)
    call = node if isinstance(node, ast.Call) else clues.enclosing(parsed.tree, node, ast.Call)
    if joined is None or call is None:
        return None
    is_print = isinstance(call.func, ast.Name) and call.func.id == "print"
    variable = next((n for n in clues.names_in(joined) if clues.is_tracer(frame.lookup(n))), None)
    return FormattedTracer(joined, call, is_print, variable)


@describes("formatted-tracer")
def describe_formatted_print(case: Case, found: FormattedTracer) -> Diagnosis | None:
    """The call rewritten as ``jax.debug.print`` with the same format, in words and as code."""
    frame = case.innermost
    parsed = case.parsed(frame)
    jn = case.names(frame)
    shaped = found.call if found.is_print else ast.Call(func=ast.Name("print"), args=[found.joined], keywords=[])
    replacement = rewrites.debug_print_call(shaped, parsed, jn.jax)
    if replacement is None:
        return None
    fname = case.function_name or frame.function
    where = case.where(frame)
    written = "print" if found.is_print else ast.unparse(found.call.func)
    alternatives = (
        ()
        if found.is_print
        else ((say("To keep {}, call it outside the jitted function, on the values it returns.", code(written)), ""),)
    )
    return case.diagnosis(
        "formatted-tracer",
        explanation=say(
            "{} in {} ({}) runs while JAX traces {}, when {} is a tracer, a stand-in with no value yet, so it "
            "cannot be formatted as a number. (Plain Python like this would run only at trace time anyway, not on "
            "each call.)",
            code(written),
            code(fname),
            place(where),
            code(fname),
            code(found.variable or "the value"),
        ),
        fix=function_source(case, frame, [rewrites.Edit(Span.of(found.call), replacement)]) or replacement,
        fix_note=say(
            "{} formats the real value, inside the compiled code, on every call.", code(f"{jn.jax}.debug.print")
        ),
        alternatives=alternatives,
        where=where,
        variable=found.variable,
    )
