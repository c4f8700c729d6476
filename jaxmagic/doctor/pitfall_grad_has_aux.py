"""``grad-has-aux``: ``jax.grad`` (or ``value_and_grad``) of a function that returns a tuple, such
as ``(loss, predictions)``, without ``has_aux=True``. ``grad`` differentiates a function whose
output is one scalar; ``has_aux=True`` says that the first value is the one to differentiate and
that the others come back as they are, beside the gradient.

>>> import jax, jax.numpy as jnp
>>> from jaxmagic.doctor.case import Case
>>> def loss_fn(w):
...     return jnp.sum(w ** 2), w
>>> try:
...     grads = jax.grad(loss_fn)(jnp.ones(2))
... except TypeError as exc:
...     found = GRAD_HAS_AUX.diagnose(Case(exc, None, lambda filename: None))
>>> found.fix
'grads, aux = jax.grad(loss_fn, has_aux=True)(jnp.ones(2))'
"""

from __future__ import annotations

import ast

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.donations as donations
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.clues import MISSING
from jaxmagic.doctor.declared import AddKeyword, Declared, Given, Line, Replace

_GRADS = ("grad", "value_and_grad", "filter_grad", "filter_value_and_grad")


def _transform(node: ast.AST, lookup) -> str | None:
    """``grad`` / ``value_and_grad`` / Equinox's and Flax's twins, for a call of one of them."""
    if not (isinstance(node, ast.Call) and node.args) or any(k.arg == "has_aux" for k in node.keywords):
        return None
    value = clues.resolve(node.func, lookup)
    name = getattr(value, "__name__", None)
    module = getattr(value, "__module__", "") or ""
    if value is MISSING or name not in _GRADS or module.split(".")[0] not in ("jax", "flax", "equinox"):
        return None
    return name


def _target(line: Line, statement: ast.stmt, transform: str) -> dict:
    """``grads = ...`` -> ``grads, aux = ...``; ``loss, grads = ...`` -> ``(loss, aux), grads = ...``."""
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
        return {}
    target = statement.targets[0]
    if "value_and_grad" in transform:
        if not (isinstance(target, ast.Tuple) and len(target.elts) == 2):
            return {}
        return {"target": target, "taken": "({0}, aux), {1}".format(*map(line.text, target.elts))}
    written = line.text(target)
    return {"target": target, "taken": f"({written}), aux" if isinstance(target, ast.Tuple) else f"{written}, aux"}


def grad_has_aux(line: Line) -> dict | None:
    """The ``grad(f)`` call in the failing statement whose ``f`` returned a tuple."""
    statement = line.statement()
    for node in ast.walk(statement) if statement is not None else ():
        transform = _transform(node, line.frame.lookup)
        if transform is not None and isinstance(node, ast.Call) and statement is not None:
            kind = "value_and_grad" if "value_and_grad" in transform else "grad"
            found = {"kind": kind, "grad": node, "transform": transform, "function": node.args[0]}
            return {**found, **_target(line, statement, transform)}
    call = line.expression(ast.Call)
    return _defined(line, call.func.id) if call is not None and isinstance(call.func, ast.Name) else None


def _defined(line: Line, name: str) -> dict | None:
    """``name = jax.grad(f)`` written earlier (this cell first, then the others the user ran): the
    fix is that line with ``has_aux=True``; the call then gives ``(grads, aux)``."""
    lookup = line.frame.lookup
    found = donations.assignment_of(
        line.case, line.frame, name, lambda value: isinstance(value, ast.Call) and _transform(value, lookup) is not None
    )
    if found is None:
        return None
    parsed, assign = found
    assert isinstance(assign.value, ast.Call)
    fixed = rewrites.definition_with_edits(parsed.lines, assign, [rewrites.keyword_edit(assign.value, "has_aux=True")])
    return {"kind": "defined", "transform": _transform(assign.value, lookup),
            "function": clues.source_of(parsed, assign.value.args[0]), "fixed": fixed, "name": name}  # fmt: skip


GRAD_HAS_AUX = Declared(
    "grad-has-aux",
    "grad of a function that returns several values, without has_aux",
    grad_has_aux,
    raised=TypeError,
    messages=("Gradient only defined for scalar-output functions. Output was (",),
    order=14,
    explanation="{function} returns several values, and {transform} ({where}) differentiates a function whose "
    "output is one scalar.",
    rewrite=(AddKeyword("grad", "has_aux=True"), Replace("target", "{taken}")),
    shown="enclosing",
    fix_note="Say that the first value is the one to differentiate: with `has_aux=True`, {transform} hands the "
    "other values back as they are, beside the gradient.",
    kinds={
        "defined": {
            "rewrite": (Given("fixed"),),
            "fix_note": "Say that the first value is the one to differentiate: "
            "with `has_aux=True`, {name} gives the gradient and the other values, as `(grads, aux)`.",
        },  # fmt: skip
        "value_and_grad": {
            "fix_note": "Say that the first value is the one to differentiate: with `has_aux=True`, {transform} "
            "hands the other values back as they are, beside the gradient (the loss and them as `(loss, aux)`)."
        },
    },
    function="function",
)
