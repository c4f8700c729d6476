"""``python-iterator``: ``next(iterator)`` in a traced function or a loop body. Python runs it
while JAX traces, once per trace, not once per iteration: a ``lax.fori_loop`` body is traced once,
so every iteration reuses the one value ``next`` gave then. The values belong in an array, indexed
by the loop's counter.

>>> import jax.numpy as jnp
>>> from jax import lax
>>> numbers = iter(range(5))
>>> def total():
...     return lax.fori_loop(0, 5, lambda i, acc: acc + next(numbers), 0)
>>> from jaxmagic.doctor.traced_code import Traced
>>> (found,) = PYTHON_ITERATOR.notice(Traced([total], None, None, lambda filename: None))
>>> found.fix.splitlines()[1:3]
['    numbers_values = jnp.asarray(list(numbers))', '    return lax.fori_loop(0, 5, lambda i, acc: acc + numbers_values[i], 0)']
"""

from __future__ import annotations

import ast
import builtins

import jaxmagic.doctor.clues as clues
from jaxmagic.doctor.declared import Declared, Function, InsertBefore, Replace


def _loop_index(tree: ast.AST, call: ast.Call) -> str | None:
    """The counter of the ``lambda i, carry: ...`` around ``call`` (a ``fori_loop`` body)."""
    for lam in clues.nodes_in(tree, ast.Lambda):
        if any(c is call for c in ast.walk(lam)) and len(lam.args.args) == 2:
            return lam.args.args[0].arg
    return None


def python_iterator(function: Function) -> dict | None:
    """The function's first ``next(...)`` call, the loop counter around it, and the statement it is in."""
    calls = [
        c
        for c in clues.nodes_in(function.node, ast.Call)
        if len(c.args) == 1 and function.resolve(c.func) is builtins.next
    ]
    if not calls:
        return None
    call, index = calls[0], _loop_index(function.node, calls[0])
    facts = {"at": call, "call": call, "iterator": call.args[0], "index": index, "kind": "counted" if index else ""}
    statement = clues.statement_at(function.node, call.lineno)
    if index is not None and statement is not None and isinstance(call.args[0], ast.Name):
        facts.update(statement=statement, replaced=call, values=f"{call.args[0].id}_values")
    return facts


PYTHON_ITERATOR = Declared(
    "python-iterator",
    "next(iterator) in traced code",
    python_iterator,
    severity="warning",
    stage="trace",
    order=25,
    explanation="{call} ({where}) is plain Python: it runs while JAX traces {function}, once, not on each call or "
    "each loop iteration (a loop body is traced once). Every iteration reuses the one value it gave then, and the "
    "iterator is left advanced.",
    rewrite=(
        InsertBefore("statement", "{values} = {jnp}.asarray(list({iterator}))"),
        Replace("replaced", "{values}[{index}]"),
    ),
    fallback="values = {jnp}.asarray(list({iterator}))   # then index values[i] inside the loop",
    fix_note="Put the values in an array first and index it with the loop's counter.",
    kinds={"counted": {"fix_note": "Put the values in an array first and index it with the loop's counter {index}."}},
    variable="iterator",
)
