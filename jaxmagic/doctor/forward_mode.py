"""The gradient written forward: where the user wrote ``jax.grad`` (``g = jax.grad(f)``, or
``jax.grad(f)(x)`` at the failing line), ``jax.jacfwd`` in its place. JAX differentiates a loop
whose length is traced forward but not in reverse; for a function with one number out the two give
the same values (the check by value says whether they did).
"""

from __future__ import annotations

import ast
import functools

import jax

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.donations as donations
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.declared import Line, edited


def grad_written_forward(line: Line) -> str | None:
    """Where ``jax.grad`` was written (``g = jax.grad(f)``, or at the failing line), ``jax.jacfwd``
    in its place: JAX differentiates a loop of traced length forward, and for a function with one
    number out the two give the same values (the check by value says whether they did)."""
    is_grad = functools.partial(_calls, line, jax.grad)
    statement, parsed, callee = line.statement(), line.parsed, line.expression(ast.Call)
    call = next((n for n in ast.walk(statement) if is_grad(n)), None) if statement is not None else None
    if call is None and callee is not None and isinstance(callee.func, ast.Name):
        parsed, statement = donations.assignment_of(line.case, line.frame, callee.func.id, is_grad) or (parsed, None)
        call = statement.value if statement is not None else None
    if not isinstance(call, ast.Call) or statement is None or not isinstance(call.func, ast.Attribute):
        return None
    return edited(parsed.lines, statement, rewrites.Edit(clues.Span.of(call.func), f"{line.jax_names.jax}.jacfwd"))


def _calls(line: Line, function: object, node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and line.frame.resolve(node.func) is function
