"""``formatted-tracer``: ``print(f"{loss:.3f}")`` (or a logging call) inside a jitted function. A
traced value cannot be formatted as a number, which raises, and the call would run only while
tracing anyway; the fix is the call as ``jax.debug.print``, with the same format.

>>> import jax, jax.numpy as jnp
>>> from jaxmagic.doctor.case import Case
>>> def show(x):
...     print(f"sum {x.sum():.2f}")
...     return x
>>> try:
...     jax.jit(show)(jnp.ones(2))
... except TypeError as exc:
...     found = FORMATTED_TRACER.diagnose(Case(exc, None, lambda filename: None))
>>> found.fix.splitlines()[1].strip(), found.severity
('jax.debug.print("sum {:.2f}", x.sum())', 'error')
"""

from __future__ import annotations

import ast
from typing import Any

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.declared import Declared, Line, Rewritten


def formatted_tracer(line: Line) -> dict[str, Any] | None:
    """The call formatting a traced value (``print``, ``logging.info``...), rewritten as ``jax.debug.print``."""
    node = line.expression() if "Tracer" in line.message else None
    if node is None:
        return None
    joined = node if isinstance(node, ast.JoinedStr) else clues.enclosing(line.parsed.tree, node, ast.JoinedStr)
    call = node if isinstance(node, ast.Call) else clues.enclosing(line.parsed.tree, node, ast.Call)
    if not isinstance(joined, ast.JoinedStr) or not isinstance(call, ast.Call):
        return None
    is_print = isinstance(call.func, ast.Name) and call.func.id == "print"
    shaped = call if is_print else ast.Call(func=ast.Name("print"), args=[joined], keywords=[])
    replacement = rewrites.debug_print_call(shaped, line.parsed, line.jax_names.jax)
    if replacement is None:
        return None
    value = next((n for n in clues.names_in(joined) if clues.is_tracer(line.frame.lookup(n))), None)
    return {"written": "print" if is_print else ast.unparse(call.func), "value": value, "shown": value or "the value",
            "traced": line.case.function_name or line.frame.function, "prints": [(call, replacement)],
            "kind": "" if is_print else "other"}  # fmt: skip


FORMATTED_TRACER = Declared(
    "formatted-tracer",
    "A traced value formatted as a number (print, logging)",
    formatted_tracer,
    raised=TypeError,
    messages=("unsupported format string passed to",),
    order=80,
    explanation="{written} in {traced} ({where}) runs while JAX traces {traced}, when {shown} is a tracer, a stand-in "
    "with no value yet, so it cannot be formatted as a number. (Plain Python like this would run only at trace time "
    "anyway, not on each call.)",
    rewrite=(Rewritten("prints"),),
    fix_note="`{jax}.debug.print` formats the real value, inside the compiled code, on every call.",
    kinds={
        "other": {
            "alternatives": (("To keep {written}, call it outside the jitted function, on the values it returns.", ""),)
        }
    },  # fmt: skip
    variable="value",
)
