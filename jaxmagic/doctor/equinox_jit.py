"""Where ``jax.jit(f)(model, ...)`` is given an Equinox module, which holds leaves JAX cannot
trace (its activation functions): the ``jax.jit`` to write as ``eqx.filter_jit``, as Equinox
documents (every leaf that is not an array static), by the name the user imported Equinox as."""

from __future__ import annotations

import ast
import inspect
import sys

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.declared import Line


def module_passed_to_jax_jit(line: Line, parameter: str) -> dict | None:
    """``jax.jit(f)(model, ...)`` in the failing statement, where the argument JAX names is an
    Equinox module: the ``jax.jit`` to write as ``eqx.filter_jit`` (by the name the user imported
    Equinox as)."""
    equinox = sys.modules.get("equinox")
    statement = line.statement()
    alias = next((name for name, value in line.frame.frame.f_globals.items() if value is equinox), None)
    if equinox is None or statement is None or alias is None:
        return None
    for call in clues.nodes_in(statement, ast.Call):
        jit = call.func
        if not (isinstance(jit, ast.Call) and jit.args):
            continue
        use = rewrites.jit_use(jit, line.frame.lookup)
        if use is None or use.kind != "call" or use.library != "jax":
            continue
        names = _parameters(jit.args[0], line)
        position = names.index(parameter) if parameter in names else None
        if position is None or position >= len(call.args):
            continue
        module = clues.resolve(call.args[position], line.frame.lookup)
        if isinstance(module, equinox.Module):
            return {"kind": "equinox", "jit": jit.func, "filter_jit": f"{alias}.filter_jit", "parameter": parameter,
                    "argument": line.text(call.args[position]), "type": type(module).__name__,
                    "fname": line.frame.function}  # fmt: skip
    return None


def _parameters(callee: ast.expr, line: Line) -> list[str]:
    """The parameter names of the function given to ``jax.jit``: a lambda's, or a named function's."""
    if isinstance(callee, ast.Lambda):
        return [a.arg for a in callee.args.args]
    try:
        return list(inspect.signature(clues.resolve(callee, line.frame.lookup)).parameters)
    except (TypeError, ValueError):  # not a function, or one Python cannot read
        return []
