"""``debug-print-fstring``: ``jax.debug.print(f"x = {x}")``. The f-string is formatted by Python
while JAX traces, when ``x`` is a tracer, so every call prints ``x = JitTracer(...)``; the values
must go to ``jax.debug.print`` as arguments, for it to format them when the compiled code runs.

>>> import jax
>>> def step(x):
...     jax.debug.print(f"x = {x}")
...     return x * 2
>>> from jaxmagic.doctor.traced_code import Traced
>>> (found,) = DEBUG_PRINT_FSTRING.notice(Traced([step], None, None, lambda filename: None))
>>> found.fix.splitlines()[1].strip()
'jax.debug.print("x = {}", x)'
"""

from __future__ import annotations

import ast

import jax

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.declared import Declared, Function, Rewritten


def _formats_values(node: ast.AST) -> bool:
    return isinstance(node, ast.JoinedStr) and any(isinstance(v, ast.FormattedValue) for v in node.values)


def _template_call(function: Function, call: ast.Call) -> str | None:
    """``jax.debug.print(f"x = {x}")`` as ``jax.debug.print("x = {}", x)`` (``None``: other arguments too)."""
    if call.args[1:] or call.keywords:
        return None
    shaped = ast.Call(func=ast.Name("print"), args=[call.args[0]], keywords=[])
    return rewrites.debug_print_call(shaped, function.parsed, "jax", callee=function.text(call.func))


def debug_print_fstring(function: Function) -> dict | None:
    """The function's ``jax.debug.print`` calls given an f-string with values in it, each rewritten."""
    calls = [
        call
        for call in clues.nodes_in(function.node, ast.Call)
        if call.args and _formats_values(call.args[0]) and function.resolve(call.func) is jax.debug.print
    ]
    if not calls:
        return None
    rewritten = [(call, _template_call(function, call)) for call in calls]
    value = next(iter(clues.names_in(calls[0].args[0])), None)
    shown = value or "the value"
    return {
        "at": calls[0],
        "fstring": calls[0].args[0],
        "value": value,
        "shown": shown,
        "prints": [p for p in rewritten if p[1]],
    }


DEBUG_PRINT_FSTRING = Declared(
    "debug-print-fstring",
    "An f-string given to jax.debug.print",
    debug_print_fstring,
    severity="warning",
    stage="trace",
    order=15,
    explanation="{fstring} ({where}) is formatted by Python while JAX traces {function}, when {shown} is a tracer "
    "with no value yet: the text is fixed then, so every call prints the tracer (`JitTracer(...)`), never the value.",
    rewrite=(Rewritten("prints"),),
    fallback='jax.debug.print("x = {{}}", x)',
    fix_note="Give `jax.debug.print` a template and the values as arguments: it formats them when the compiled code "
    "runs.",
    variable="value",
)
