"""``debug-print-fstring``: ``jax.debug.print(f"x = {x}")``. The f-string is formatted by Python
while JAX traces, when ``x`` is a tracer, so every call prints ``x = JitTracer(...)``; the values
must go to ``jax.debug.print`` as arguments, for it to format them when the compiled code runs.

>>> import jax
>>> def step(x):
...     jax.debug.print(f"x = {x}")
...     return x * 2
>>> traced = Traced([step], None, None, lambda filename: None)
>>> (found,) = describe(traced, debug_print_fstring(traced))
>>> found.fix.splitlines()[1].strip()
'jax.debug.print("x = {}", x)'
"""

from __future__ import annotations

import ast
import types
from dataclasses import dataclass

import jax

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.clues import Span
from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.registry import describes, pitfall
from jaxmagic.doctor.traced_code import Traced, with_edits, with_source
from jaxmagic.tracing import sources
from jaxmagic.words import code, place, say


def _formats_values(node: ast.AST) -> bool:
    return isinstance(node, ast.JoinedStr) and any(isinstance(v, ast.FormattedValue) for v in node.values)


@dataclass(frozen=True)
class FStringPrints:
    """What ``debug_print_fstring`` found in one function: its ``jax.debug.print`` calls given an f-string."""

    function: types.FunctionType
    located: tuple
    calls: tuple[ast.Call, ...]


@pitfall("debug-print-fstring", "An f-string given to jax.debug.print", "warning", stage="trace", order=15)
def debug_print_fstring(traced: Traced) -> list[FStringPrints]:
    """One warning per function whose ``jax.debug.print`` calls take an f-string with values in it."""
    found = []
    for sourced in with_source(traced.functions):
        function, located, lookup = sourced.function, sourced.located, sourced.lookup
        parsed, node = located
        calls = [
            call
            for call in clues.nodes_in(node, ast.Call)
            if call.args and _formats_values(call.args[0]) and clues.resolve(call.func, lookup) is jax.debug.print
        ]
        if calls:
            found.append(FStringPrints(function, located, tuple(calls)))
    return found


@describes("debug-print-fstring")
def describe(traced: Traced, found: list[FStringPrints]) -> list[Diagnosis]:
    """Each f-string turned into a template with the values as arguments."""
    diagnoses = []
    for prints in found:
        function, located, calls = prints.function, prints.located, prints.calls
        parsed, _ = located
        edits = []
        for call in calls:
            shaped = ast.Call(func=ast.Name("print"), args=[call.args[0]], keywords=[])
            rewritten = rewrites.debug_print_call(shaped, parsed, "jax", callee=clues.source_of(parsed, call.func))
            extra = [clues.source_of(parsed, a) for a in call.args[1:]] + [
                f"{k.arg}={clues.source_of(parsed, k.value)}" for k in call.keywords
            ]
            if rewritten is not None and not extra:
                edits.append(rewrites.Edit(Span.of(call), rewritten))
        first = calls[0]
        where = sources.source_line(parsed.file, first.lineno, function.__name__, traced.cell_namer)
        written = clues.source_of(parsed, first.args[0])
        variable = next(iter(clues.names_in(first.args[0])), None)
        diagnoses.append(
            Diagnosis(
                "debug-print-fstring",
                explanation=say(
                    "{} ({}) is formatted by Python while JAX traces {}, when {} is a tracer with no value yet: the text is "
                    "fixed then, so every call prints the tracer ({}), never the value.",
                    code(written),
                    place(where),
                    code(function.__name__),
                    code(variable or "the value"),
                    code("JitTracer(...)"),
                ),
                fix=with_edits(located, edits) if edits else 'jax.debug.print("x = {}", x)',
                fix_note=say(
                    "Give {} a template and the values as arguments: it formats them when the compiled code runs.",
                    code("jax.debug.print"),
                ),
                where=where,
                variable=variable,
                function=function.__name__,
            )
        )
    return diagnoses
