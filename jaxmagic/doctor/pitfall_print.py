"""``print-side-effect``: ``print`` in a jitted function runs only while JAX traces it (a warning,
one per function, its fix rewriting every ``print`` in it as ``jax.debug.print``). What tracing
printed is quoted for the ``print`` that wrote it, when it shows a tracer.

>>> from jaxmagic.doctor.traced_code import Traced
>>> def f(x):
...     print("x is", x)
...     return x
>>> (found,) = PRINT_SIDE_EFFECT.notice(Traced([f], None, "x is JitTracer(float32[2])", lambda filename: None))
>>> found.fix.splitlines()[1].strip(), found.severity
('jax.debug.print("x is {}", x)', 'warning')
"""

from __future__ import annotations

import ast
import builtins
import re
from typing import Any

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.global_watch as global_watch
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.declared import Declared, Function, Rewritten
from jaxmagic.tracing import callables

# How a printed tracer reads: ``JitTracer(float32[])`` (newer JAX), ``JitTracer<float32[]>``
# (JAX 0.8.1), ``Traced<float32[]>with<DynamicJaxprTrace>`` (older traces).
_TRACER_TEXT = re.compile(r"(?:\w*Tracer(?:\([^)]*\)|<[^>]*>)|Traced<[^>]*>(?:with<\w+>)?)")


def print_calls(node: ast.AST, lookup) -> list[ast.Call]:
    """The calls of the builtin ``print`` in a function's source (none where ``print`` is another
    function there, such as ``jax.debug.print`` imported as ``print``), in order."""
    if lookup("print") is not builtins.print:
        return []
    return clues.in_order(c for c in clues.nodes_in(node, ast.Call) if _is_print(c.func))


def _is_print(func: ast.AST) -> bool:
    return isinstance(func, ast.Name) and func.id == "print"


def _literal_pieces(call: ast.Call) -> list[str]:
    """The constant text a ``print`` call writes (its string literals and f-string constants)."""
    pieces = []
    for arg in call.args:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            pieces.append(arg.value)
        elif isinstance(arg, ast.JoinedStr):
            pieces += [str(part.value) for part in arg.values if isinstance(part, ast.Constant)]
    return [p.strip() for p in pieces if p.strip()]


def _printed_by(call: ast.Call, printed_lines: list[str], calls: int) -> str | None:
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


def print_side_effect(function: Function) -> dict[str, Any] | None:
    """The function's ``print`` calls, each rewritten, and what the first one that can be told printed."""
    calls = print_calls(function.node, function.lookup)
    if not calls:
        return None
    printed = function.traced.printed_text or ""
    lines = [line.strip() for line in printed.splitlines() if _TRACER_TEXT.search(line)]
    quoted = next((line for call in calls if (line := _printed_by(call, lines, len(calls)))), None)
    rewritten = [(c, rewrites.debug_print_call(c, function.parsed, function.jax_names.jax)) for c in calls]
    return {"at": calls[0], "places": [function.where({"at": call}) for call in calls],
            "output": quoted, "kind": "quoted" if quoted else "tracers" if lines else "",
            "value": next((names[0] for arg in calls[0].args if (names := clues.names_in(arg))), None),
            "prints": [(call, text) for call, text in rewritten if text],
            "caller": _called_as(function)}  # fmt: skip


def _called_as(function: Function) -> str:
    """The name the user calls the traced function by (a jitted module's: ``fast``), else its own."""
    plain = callables.python_function(function.sourced.function)
    return (global_watch.jitted_name(plain, plain.__globals__) if plain is not None else None) or function.name


_RUNS = (
    "`print` in {function} ({places}) is plain Python: it runs while JAX traces {function} (the first call for each "
    "new input shape or dtype), not each time the compiled code runs."
)

PRINT_SIDE_EFFECT = Declared(
    "print-side-effect",
    "print runs only while JAX traces",
    print_side_effect,
    severity="warning",
    stage="trace",
    order=10,
    explanation=_RUNS + " Any traced value it prints is a stand-in (a tracer), not a number.",
    kinds={
        "quoted": {
            "explanation": _RUNS + " What it printed, {output}, is a tracer: a stand-in for your values, which do not "
            "exist yet at that point."
        },
        "tracers": {
            "explanation": _RUNS + " What it printed were tracers, stand-ins for values that do not exist yet."
        },
    },
    rewrite=(Rewritten("prints"),),
    fix_note="`{jax}.debug.print` runs inside the compiled code, on every call, with the real values.",
    alternatives=(
        ("Or print outside, on the result the jitted function returns:", "result = {caller}(...)\nprint(result)"),
    ),
    variable="value",
)
