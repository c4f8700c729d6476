"""``grad-has-aux``: ``jax.grad`` (or ``value_and_grad``) of a function that returns a tuple, such
as ``(loss, predictions)``, without ``has_aux=True``. ``grad`` differentiates a function whose
output is one scalar; ``has_aux=True`` says that the first value is the one to differentiate and
that the others come back as they are, beside the gradient.

>>> import jax, jax.numpy as jnp
>>> def loss_fn(w):
...     return jnp.sum(w ** 2), w
>>> try:
...     grads = jax.grad(loss_fn)(jnp.ones(2))
... except TypeError as exc:
...     case = Case(exc, None, lambda filename: None)
>>> grad_has_aux(case).transform
'grad'
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.case import Case, function_source
from jaxmagic.doctor.clues import MISSING, Span
from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.registry import describes, pitfall
from jaxmagic.words import code, place, say

_GRADS = ("grad", "value_and_grad", "filter_grad", "filter_value_and_grad")


@dataclass(frozen=True)
class GradOfTuple:
    """The ``grad(...)`` call without ``has_aux``, the statement it is in, and which transform it is."""

    statement: ast.stmt
    grad: ast.Call
    transform: str
    function: str


def _transform(node: ast.AST, lookup) -> str | None:
    """``grad`` / ``value_and_grad`` / Equinox's and Flax's twins, for a call of one of them."""
    if not (isinstance(node, ast.Call) and node.args):
        return None
    value = clues.resolve(node.func, lookup)
    name = getattr(value, "__name__", None)
    module = getattr(value, "__module__", "") or ""
    if value is MISSING or name not in _GRADS or module.split(".")[0] not in ("jax", "flax", "equinox"):
        return None
    if any(k.arg == "has_aux" for k in node.keywords):
        return None
    return name


@pitfall(
    "grad-has-aux",
    "grad of a function that returns several values, without has_aux",
    "error",
    order=14,
    messages=("Gradient only defined for scalar-output functions. Output was (",),
)
def grad_has_aux(case: Case) -> GradOfTuple | None:
    """The ``grad(f)`` call in the failing statement whose ``f`` returned a tuple."""
    if not (isinstance(case.exc, TypeError) and case.says("grad-has-aux")):
        return None
    frame = case.innermost
    statement = case.statement(frame) if frame is not None else None
    if statement is None:
        return None
    for node in ast.walk(statement):
        transform = _transform(node, frame.lookup)
        if transform is not None:
            return GradOfTuple(statement, node, transform, case.text(frame, node.args[0]))
    return None


def _target_edit(case: Case, found: GradOfTuple) -> rewrites.Edit | None:
    """``grads = ...`` -> ``grads, aux = ...``; ``loss, grads = ...`` -> ``(loss, aux), grads = ...``."""
    statement = found.statement
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
        return None
    target = statement.targets[0]
    text = case.text(case.innermost, target)
    if "value_and_grad" in found.transform:
        if not (isinstance(target, ast.Tuple) and len(target.elts) == 2):
            return None
        value, grads = (case.text(case.innermost, e) for e in target.elts)
        return rewrites.Edit(Span.of(target), f"({value}, aux), {grads}")
    wrapped = f"({text})" if isinstance(target, ast.Tuple) else text
    return rewrites.Edit(Span.of(target), f"{wrapped}, aux")


@describes("grad-has-aux")
def describe(case: Case, found: GradOfTuple) -> Diagnosis:
    """``has_aux=True`` added, and the statement taking the extra values apart."""
    frame = case.innermost
    grad = found.grad
    end = Span(grad.end_lineno, grad.end_lineno, grad.end_col_offset - 1, grad.end_col_offset - 1)
    edits = [rewrites.Edit(end, ", has_aux=True")]
    target = _target_edit(case, found)
    if target is not None:
        edits.append(target)
    parsed = case.parsed(frame)
    if frame.function == "<module>":
        statement = found.statement
        fixed = rewrites.with_edits(parsed.lines, statement.lineno, statement.end_lineno, edits)
    else:
        fixed = function_source(case, frame, edits)
    where = case.where(frame)
    return case.diagnosis(
        "grad-has-aux",
        explanation=say(
            "{} returns several values, and {} ({}) differentiates a function whose output is one scalar.",
            code(found.function),
            code(found.transform),
            place(where),
        ),
        fix=fixed or "",
        fix_note=say(
            "Say that the first value is the one to differentiate: with {}, {} hands the other values back "
            "as they are, beside the gradient{}.",
            code("has_aux=True"),
            code(found.transform),
            say(" (the loss and them as {})", code("(loss, aux)")) if "value_and_grad" in found.transform else "",
        ),
        where=where,
        function=found.function,
    )
