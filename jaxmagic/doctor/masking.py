"""Keeping a shape fixed where the user sliced by a traced bound: ``x[a:b]`` becomes
``jnp.where(keep, x, 0)``, ``keep`` computed just before the statement (shared by the recognisers
of ``traced-shape`` and ``python-scalar-conversion``).
"""

from __future__ import annotations

import ast

import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.case import Case
from jaxmagic.doctor.clues import MISSING, Span, UserFrame


def mask_edits(
    case: Case, frame: UserFrame, node: ast.Subscript, statement: ast.stmt, jn
) -> list[rewrites.Edit] | None:
    """``x[a:b]`` -> ``jnp.where(keep, x, 0)`` with ``keep`` computed just before the statement:
    the same shape on every call, the rows outside the slice zeroed (``None`` for a strided slice).

    See ``docs/pitfalls.md#traced-shape`` for the code it writes.
    """
    sl = node.slice
    if not isinstance(sl, ast.Slice) or sl.step is not None:
        return None
    array = case.text(frame, node.value)
    conditions = []
    if sl.lower is not None:
        conditions.append(f"(index >= {case.text(frame, sl.lower)})")
    if sl.upper is not None:
        conditions.append(f"(index < {case.text(frame, sl.upper)})")
    if not conditions:
        return None
    value = case.traced_value(array, frame) if isinstance(node.value, ast.Name) else MISSING
    ndim = getattr(value, "ndim", 1) or 1
    keep = " & ".join(conditions) if len(conditions) > 1 else conditions[0][1:-1]
    expand = "" if ndim <= 1 else "[:, " + ", ".join(["None"] * (ndim - 1)) + "]"
    insert = rewrites.Edit(
        Span(statement.lineno, statement.lineno, statement.col_offset, statement.col_offset),
        f"index = {jn.jnp}.arange({array}.shape[0])\nkeep = {keep}\n",
    )
    replace = rewrites.Edit(
        Span.of(node),
        f"{jn.jnp}.where(keep{expand}, {array}, 0)",
        comment="fixed shape: the rows outside the slice are 0",
    )
    return [insert, replace]
