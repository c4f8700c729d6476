"""``python-iterator``: ``next(iterator)`` in a traced function or a loop body. Python runs it
while JAX traces, once per trace, not once per iteration: a ``lax.fori_loop`` body is traced once,
so every iteration reuses the one value ``next`` gave then. The values belong in an array, indexed
by the loop's counter.

>>> import jax.numpy as jnp
>>> from jax import lax
>>> numbers = iter(range(5))
>>> def total():
...     return lax.fori_loop(0, 5, lambda i, acc: acc + next(numbers), 0)
>>> traced = Traced([total], None, None, lambda filename: None)
>>> (found,) = describe(traced, python_iterator(traced))
>>> found.fix.splitlines()[1:3]
['    numbers_values = jnp.asarray(list(numbers))', '    return lax.fori_loop(0, 5, lambda i, acc: acc + numbers_values[i], 0)']
"""

from __future__ import annotations

import ast
import builtins
import types
from dataclasses import dataclass

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.clues import Span
from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.registry import describes, pitfall
from jaxmagic.doctor.traced_code import Traced, with_edits, with_source
from jaxmagic.tracing import sources
from jaxmagic.words import code, place, say


def _next_calls(node: ast.AST, lookup) -> list[ast.Call]:
    return [
        c for c in clues.nodes_in(node, ast.Call) if len(c.args) == 1 and clues.resolve(c.func, lookup) is builtins.next
    ]


def _loop_index(tree: ast.AST, call: ast.Call) -> str | None:
    """The counter of the ``lambda i, carry: ...`` around ``call`` (a ``fori_loop`` body)."""
    for lam in clues.nodes_in(tree, ast.Lambda):
        if any(c is call for c in ast.walk(lam)) and len(lam.args.args) == 2:
            return lam.args.args[0].arg
    return None


@dataclass(frozen=True)
class IteratorUse:
    """What ``python_iterator`` found in one function: its source and its first ``next(...)`` call."""

    function: types.FunctionType
    located: tuple
    call: ast.Call


@pitfall("python-iterator", "next(iterator) in traced code", "warning", stage="trace", order=25)
def python_iterator(traced: Traced) -> list[IteratorUse]:
    """One warning per function that calls ``next`` on an iterator while it is traced."""
    found = []
    for sourced in with_source(traced.functions):
        function, located, lookup = sourced.function, sourced.located, sourced.lookup
        parsed, node = located
        calls = _next_calls(node, lookup)
        if calls:
            found.append(IteratorUse(function, located, calls[0]))
    return found


@describes("python-iterator")
def describe(traced: Traced, found: list[IteratorUse]) -> list[Diagnosis]:
    """The values put in an array before the loop, indexed by its counter."""
    diagnoses = []
    for use in found:
        function, located, call = use.function, use.located, use.call
        parsed, node = located
        iterator = clues.source_of(parsed, call.args[0])
        index = _loop_index(node, call)
        statement = clues.statement_at(node, call.lineno)
        jn = rewrites.jax_names(function.__globals__)
        fix = None
        if index is not None and statement is not None and isinstance(call.args[0], ast.Name):
            values = f"{iterator}_values"
            edits = [
                rewrites.Edit(
                    Span(statement.lineno, statement.lineno, statement.col_offset, statement.col_offset),
                    f"{values} = {jn.jnp}.asarray(list({iterator}))\n",
                ),
                rewrites.Edit(Span.of(call), f"{values}[{index}]"),
            ]
            fix = with_edits(located, edits)
        where = sources.source_line(parsed.file, call.lineno, function.__name__, traced.cell_namer)
        diagnoses.append(
            Diagnosis(
                "python-iterator",
                explanation=say(
                    "{} ({}) is plain Python: it runs while JAX traces {}, once, not on each call or each loop iteration "
                    "(a loop body is traced once). Every iteration reuses the one value it gave then, and the iterator "
                    "is left advanced.",
                    code(clues.source_of(parsed, call)),
                    place(where),
                    code(function.__name__),
                ),
                fix=fix or f"values = {jn.jnp}.asarray(list({iterator}))   # then index values[i] inside the loop",
                fix_note=say(
                    "Put the values in an array first and index it with the loop's counter{}.",
                    say(" {}", code(index)) if index else "",
                ),
                where=where,
                variable=iterator,
                function=function.__name__,
            )
        )
    return diagnoses
