"""``array-truth-value``: ``and`` / ``or`` / ``not`` (or ``if``) on arrays of several values,
outside any trace. Python asks each array for one True or False, and an array of several values has
none. Element-wise logic is ``jnp.logical_and`` / ``logical_or`` / ``logical_not``; a question
about the whole array is ``.any()`` or ``.all()``.

>>> import jax.numpy as jnp
>>> def both_positive(a, b):
...     return (a > 0) and (b > 0)
>>> try:
...     both_positive(jnp.ones(2), jnp.ones(2))
... except ValueError as exc:
...     case = Case(exc, None, lambda filename: None)
>>> describe(case, array_truth_value(case)).fix.splitlines()[-1].strip()
'return jnp.logical_and(a > 0, b > 0)'
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import jaxmagic.doctor.branch_rewrites as branch_rewrites
import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.case import Case, function_source
from jaxmagic.doctor.clues import Span
from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.registry import describes, pitfall
from jaxmagic.words import code, place, say


@dataclass(frozen=True)
class ArrayTruthValue:
    """What ``array_truth_value`` found: the ``and`` / ``or`` / ``not`` expression, or the condition of
    an ``if`` / ``while``."""

    node: ast.expr
    logic: bool  # True for and / or / not, False for a condition


@pitfall(
    "array-truth-value",
    "and / or / if on an array of several values",
    "error",
    order=55,
    messages=("truth value of an array with more than one element is ambiguous",),
)
def array_truth_value(case: Case) -> ArrayTruthValue | None:
    """NumPy's ambiguity outside any trace (``python-control-flow`` takes the traced ones)."""
    if not (isinstance(case.exc, ValueError) and case.says("array-truth-value")):
        return None
    frame = case.innermost
    if frame is None or any(clues.is_tracer(v) for v in frame.frame.f_locals.values()):
        return None
    parsed = case.parsed(frame)
    node = clues.node_at(parsed.tree, frame.span()) if parsed is not None else None
    logic = (
        node
        if isinstance(node, ast.BoolOp) or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not))
        else None
    )
    if logic is None and node is not None:
        logic = clues.enclosing(parsed.tree, node, ast.BoolOp)
    if logic is not None:
        return ArrayTruthValue(logic, True)
    statement = case.statement(frame)
    if isinstance(statement, (ast.If, ast.While)):
        return ArrayTruthValue(statement.test, False)
    return None


@describes("array-truth-value")
def describe(case: Case, found: ArrayTruthValue) -> Diagnosis:
    """Element-wise logic for ``and`` / ``or`` / ``not``; ``.any()`` / ``.all()`` for a condition."""
    frame = case.innermost
    parsed = case.parsed(frame)
    jn = case.names(frame)
    where = case.where(frame)
    shown = clues.source_of(parsed, found.node)
    if found.logic:
        new = branch_rewrites.array_condition(parsed.lines, found.node, jn.jnp)
        return case.diagnosis(
            "array-truth-value",
            explanation=say(
                "{} ({}) asks Python for one True or False from each array, and an array of several values has none.",
                code(shown),
                place(where),
            ),
            fix=function_source(case, frame, [rewrites.Edit(Span.of(found.node), new)]) or new,
            fix_note=say("Combine them element by element: {}.", code(new)),
            alternatives=(
                (
                    say(
                        "If you meant the whole array, ask it: {} or {}.",
                        code(f"({shown}).all()"),
                        code(f"({shown}).any()"),
                    ),
                    "",
                ),
            ),
            where=where,
        )
    return case.diagnosis(
        "array-truth-value",
        explanation=say(
            "{} ({}) asks for one True or False, and {} is an array of several values.",
            code(clues.source_of(parsed, clues.statement_at(parsed.tree, frame.line)).splitlines()[0]),
            place(where),
            code(shown),
        ),
        fix="",
        fix_note=say(
            "Say which you mean: {} (every element) or {} (at least one); or choose per element with {}.",
            code(f"({shown}).all()"),
            code(f"({shown}).any()"),
            code(f"{jn.jnp}.where({shown}, ..., ...)"),
        ),
        where=where,
    )
