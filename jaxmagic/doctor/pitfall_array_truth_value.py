"""``array-truth-value``: ``and`` / ``or`` / ``not`` (or ``if``) on arrays of several values,
outside any trace. Python asks each array for one True or False, and an array of several values has
none. Element-wise logic is ``jnp.logical_and`` / ``logical_or`` / ``logical_not``; a question
about the whole array is ``.any()`` or ``.all()``.

>>> import jax.numpy as jnp
>>> from jaxmagic.doctor.case import Case
>>> def both_positive(a, b):
...     return (a > 0) and (b > 0)
>>> try:
...     both_positive(jnp.ones(2), jnp.ones(2))
... except ValueError as exc:
...     found = ARRAY_TRUTH_VALUE.diagnose(Case(exc, None, lambda filename: None))
>>> found.fix.splitlines()[-1].strip()
'return jnp.logical_and(a > 0, b > 0)'
"""

from __future__ import annotations

import ast

import jaxmagic.doctor.clues as clues
from jaxmagic.doctor.branch_rewrites import array_condition
from jaxmagic.doctor.declared import Declared, Line, Replace


def array_truth_value(line: Line) -> dict | None:
    """NumPy's ambiguity outside any trace (``python-control-flow`` takes the traced ones): the
    ``and`` / ``or`` / ``not`` expression, or the condition of an ``if`` / ``while``."""
    if any(clues.is_tracer(v) for v in line.frame.frame.f_locals.values()):
        return None
    node = line.expression()
    negation = isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)
    logic = node if isinstance(node, ast.BoolOp) or negation else None
    if logic is None and node is not None:
        logic = clues.enclosing(line.parsed.tree, node, ast.BoolOp)
    if logic is not None:
        return {"kind": "logic", "node": logic, "new": array_condition(line.parsed.lines, logic, line.jax_names.jnp)}
    statement = line.statement()
    if isinstance(statement, (ast.If, ast.While)):
        return {"kind": "condition", "node": statement.test, "statement": line.text(statement).splitlines()[0]}
    return None


ARRAY_TRUTH_VALUE = Declared(
    "array-truth-value",
    "and / or / if on an array of several values",
    array_truth_value,
    raised=ValueError,
    messages=("truth value of an array with more than one element is ambiguous",),
    order=55,
    explanation="{node} ({where}) asks Python for one True or False from each array, and an array of several "
    "values has none.",
    rewrite=(Replace("node", "{new}"),),
    fix_note="Combine them element by element: {new}.",
    alternatives=(("If you meant the whole array, ask it: `({node}).all()` or `({node}).any()`.", ""),),
    kinds={
        "condition": {
            "explanation": "{statement} ({where}) asks for one True or False, and {node} is an array of several "
            "values.",
            "rewrite": (),
            "fix_note": "Say which you mean: `({node}).all()` (every element) or `({node}).any()` (at least one); "
            "or choose per element with `{jnp}.where({node}, ..., ...)`.",
            "alternatives": (),
        }
    },
)
