"""Keeping a shape fixed where the user sliced by a traced bound: ``x[a:b]`` becomes
``jnp.where(keep, x, 0)``, ``keep`` computed just before the statement (shared by the recognisers
of ``traced-shape`` and ``python-scalar-conversion``).
"""

from __future__ import annotations

import ast

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.clues import MISSING, Span
from jaxmagic.doctor.declared import Line, start_of


def mask_edits(line: Line, node: ast.Subscript, statement: ast.stmt | None) -> list[rewrites.Edit] | None:
    """``x[a:b]`` -> ``jnp.where(keep, x, 0)`` with ``keep`` computed just before the statement:
    the same shape on every call, the rows outside the slice zeroed (``None`` for a strided slice).

    See ``docs/pitfalls.md#traced-shape`` for the code it writes.
    """
    sl = node.slice
    if not isinstance(sl, ast.Slice) or sl.step is not None or statement is None:
        return None
    array = line.text(node.value)
    conditions = [f"(index {op} {line.text(b)})" for op, b in ((">=", sl.lower), ("<", sl.upper)) if b is not None]
    if not conditions:
        return None
    value = line.case.traced_value(array, line.frame) if isinstance(node.value, ast.Name) else MISSING
    ndim = getattr(value, "ndim", 1) or 1
    keep = " & ".join(conditions) if len(conditions) > 1 else conditions[0][1:-1]
    expand = "" if ndim <= 1 else "[:, " + ", ".join(["None"] * (ndim - 1)) + "]"
    jnp = line.jax_names.jnp
    insert = rewrites.Edit(
        start_of(statement),
        f"index = {jnp}.arange({array}.shape[0])\nkeep = {keep}\n",
    )
    replace = rewrites.Edit(
        Span.of(node), f"{jnp}.where(keep{expand}, {array}, 0)", comment="fixed shape: the rows outside the slice are 0"
    )
    return [insert, replace]


def _assigned(line: Line, conversion: ast.AST) -> tuple[str, ast.Assign, ast.AST] | None:
    """For ``k = int(...)`` (``conversion`` its value): ``k``, that statement, and the function it is in."""
    found, statement = clues.function_of_code(line.frame.code), line.statement()
    if found is None or not isinstance(statement, ast.Assign) or statement.value is not conversion:
        return None
    if len(statement.targets) != 1 or not isinstance(statement.targets[0], ast.Name):
        return None
    return statement.targets[0].id, statement, found[1]


def mask_later_slice(line: Line, conversion: ast.AST) -> list[rewrites.Edit] | None:
    """For ``k = int(...)`` (``conversion`` its value): the first later ``x[:k]`` in the same
    function, masked to a fixed shape (``mask_edits``); ``None`` where there is none."""
    assigned = _assigned(line, conversion)
    if assigned is None:
        return None
    name, statement, function = assigned
    for node in clues.in_order(clues.nodes_in(function, ast.Subscript)):
        bounds = (node.slice.lower, node.slice.upper) if isinstance(node.slice, ast.Slice) else ()
        if node.lineno > (statement.end_lineno or 0) and any(b and name in clues.names_in(b) for b in bounds):
            later = clues.statement_at(function, node.lineno)
            return mask_edits(line, node, later) if later is not None else None
    return None


_SIZES = {
    "tile",
    "zeros",
    "ones",
    "full",
    "empty",
    "reshape",
    "arange",
    "repeat",
    "broadcast_to",
    "range",
    "eye",
    "split",
}


def used_as_size(line: Line, conversion: ast.AST) -> bool:
    """For ``k = int(...)``: whether a later call in the same function takes ``k`` as a size (a
    shape, a count of repeats or of a ``range``), which no array can stand for while JAX traces.

    >>> _SIZES >= {"tile", "zeros", "range"}
    True
    """
    assigned = _assigned(line, conversion)
    if assigned is None:
        return False
    name, statement, function = assigned
    after = statement.end_lineno or 0
    for call in clues.nodes_in(function, ast.Call):
        called = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
        sizes = [*call.args, *(k.value for k in call.keywords)] if called in _SIZES else []
        if call.lineno > after and any(name in clues.names_in(a) for a in sizes):
            return True
    return False
