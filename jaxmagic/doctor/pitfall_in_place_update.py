"""``in-place-update``: ``x[0] = 1`` (or ``x[i] += v``) on a JAX array. JAX arrays are immutable,
with or without ``jit``; the functional form ``x = x.at[0].set(1)`` makes an updated copy (which
XLA turns back into an in-place update where it can).

>>> import jax.numpy as jnp
>>> from jaxmagic.doctor.case import Case
>>> def reset(x):
...     x[0] = 0.0
...     return x
>>> try:
...     reset(jnp.ones(3))
... except TypeError as exc:
...     found = IN_PLACE_UPDATE.diagnose(Case(exc, None, lambda filename: None))
>>> found.fix.splitlines()[1].strip()
'x = x.at[0].set(0.0)'
"""

from __future__ import annotations

import ast

from jaxmagic.doctor.declared import Declared, Line, Replace

METHODS = {ast.Add: "add", ast.Sub: "subtract", ast.Mult: "multiply", ast.Div: "divide", ast.Pow: "power"}


def item_assigned(statement: ast.stmt | None) -> tuple[ast.Assign | ast.AugAssign, ast.Subscript, str] | None:
    """The assignment to an item ``x[i] = v`` or ``x[i] op= v``, its ``x[i]``, and the ``.at``
    method that does it."""
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target, method = statement.targets[0], "set"
    elif isinstance(statement, ast.AugAssign) and type(statement.op) in METHODS:
        target, method = statement.target, METHODS[type(statement.op)]
    else:
        return None
    return (statement, target, method) if isinstance(target, ast.Subscript) else None


def in_place_update(line: Line) -> dict | None:
    """The item assignment: the statement, the array, the index, the value and the ``.at`` method."""
    found = item_assigned(line.statement())
    if found is None:
        return None
    statement, target, method = found
    empty = isinstance(target.slice, ast.Tuple) and not target.slice.elts
    index = "()" if empty else target.slice
    return {"statement": statement, "array": target.value, "index": index, "value": statement.value, "method": method}


IN_PLACE_UPDATE = Declared(
    "in-place-update",
    "An in-place update of a JAX array (x[i] = v)",
    in_place_update,
    raised=TypeError,
    messages=("JAX arrays are immutable and do not support in-place item assignment",),
    order=5,
    explanation="{statement} ({where}) changes {array} in place, but JAX arrays are immutable (with or without "
    "`jit`): an array never changes once made.",
    rewrite=(Replace("statement", "{array} = {array}.at[{index}].{method}({value})"),),
    fix_note="`{array}.at[{index}].{method}(...)` returns an updated copy; rebind the name to it. Under `jit` XLA reuses the memory, so it "
    "costs no copy there.",
    variable="array",
)
