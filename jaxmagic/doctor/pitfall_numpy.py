"""``numpy-in-jit``: a traced value given to a NumPy function (the fix calls ``jax.numpy``'s), used
to index a NumPy array (the fix indexes a JAX array), or given to another library's function that
makes a NumPy array of it (the fix calls JAX's own where JAX has it, else the function outside).

>>> import jax, jax.numpy as jnp, numpy as np
>>> from jaxmagic.doctor.case import Case
>>> def smooth(x):
...     return np.exp(x) + 1
>>> try:
...     jax.jit(smooth)(jnp.ones(2))
... except TypeError as exc:
...     found = NUMPY_IN_JIT.diagnose(Case(exc, None, lambda filename: None))
>>> found.fix.splitlines()[-1].strip()
'return jnp.exp(x) + 1'
"""

from __future__ import annotations

import ast
from typing import Any

import jax
import jax.numpy as jnp
import jax.scipy as jax_scipy
import numpy as np

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.case import depends_on
from jaxmagic.doctor.clues import MISSING
from jaxmagic.doctor.declared import AddStatic, Declared, Line, Replace, Rewritten


def _numpy_array(line: Line, node: ast.expr) -> bool:
    """Whether ``node`` is a NumPy array: a name holding one, or a call of NumPy's that makes one."""
    made = isinstance(node, ast.Call) and clues.counterpart(node.func, line.frame.lookup, "numpy", jnp) is not None
    return made or isinstance(line.frame.resolve(node), np.ndarray)


def _library_module(line: Line, call: ast.Call) -> str | None:
    """The module of a non-JAX library function the call makes (SciPy...), ``None`` otherwise."""
    callee = line.frame.resolve(call.func)
    module = getattr(callee, "__module__", "") or ""
    return None if callee is MISSING or not module or module.startswith(("jax", "jaxlib")) else module


def numpy_in_jit(line: Line) -> dict | None:
    """The NumPy call (``kind`` none), the NumPy array indexed (``indexed``) or the library call
    (``library``, ``library-jax`` where JAX has its own) that got a traced value."""
    exc, case = line.case.exc, line.case
    conversion = isinstance(exc, jax.errors.TracerArrayConversionError)
    in_numpy = isinstance(exc, (TypeError, jax.errors.TracerIntegerConversionError)) and "Tracer" in line.message
    if not (conversion or in_numpy):
        return None
    found: dict[str, Any] = {"fname": case.function_name or line.frame.function}
    indexed = line.expression(ast.Subscript)
    if conversion and isinstance(indexed, ast.Subscript) and _numpy_array(line, indexed.value):
        variable = (depends_on(case, line.frame, indexed.slice) or [None])[0]
        return {**found, "kind": "indexed", "node": indexed, "table": indexed.value, "index": indexed.slice,
                "variable": variable}  # fmt: skip
    call = line.expression(ast.Call)
    if not isinstance(call, ast.Call):
        return None
    found.update(written=ast.unparse(call.func), variable=(depends_on(case, line.frame, call) or [None])[0])
    path = clues.counterpart(call.func, line.frame.lookup, "numpy", jnp)
    if path is not None:
        return {**found, "path": path, **_numpy_calls(line, call)}
    module = _library_module(line, call) if conversion else None
    if module is None:
        return None
    equivalent = clues.counterpart(call.func, line.frame.lookup, "scipy", jax_scipy)
    return {**found, "kind": "library-jax" if equivalent else "library", "library": module.split(".")[0],
            "func": call.func, "equivalent": equivalent and f"scipy.{equivalent}"}  # fmt: skip


def _numpy_calls(line: Line, call: ast.Call) -> dict:
    """Every NumPy call of the failing statement made ``jnp``'s, and the traced settings (an axis, a
    count) passed to the call, to be made static where the user's ``jax.jit`` decorator is."""
    statement = line.statement() or call
    replaced = []
    for node in ast.walk(statement):
        path = clues.counterpart(node.func, line.frame.lookup, "numpy", jnp) if isinstance(node, ast.Call) else None
        if isinstance(node, ast.Call) and path is not None:
            replaced.append((node.func, f"{line.jax_names.jnp}.{path}"))
    later = [n for arg in call.args[1:] + [k.value for k in call.keywords] for n in clues.names_in(arg)]
    settings = line.case.scalar_arguments(list(dict.fromkeys(later)))
    located = clues.function_of_code(line.frame.code) if settings and line.case.traced_frame is line.frame else None
    use = rewrites.decorator_jit(located[1], line.frame.lookup) if located else None
    decorator = use if use is not None and use.library != "eqx" else None
    return {"replaced": list(dict.fromkeys(ast.unparse(func) for func, _ in replaced)), "calls": replaced,
            "decorator": decorator, "settings": settings if decorator is not None else None}  # fmt: skip


_LIBRARY = {
    "explanation": "{written} (from {library}) turns its input into a NumPy array, which needs real numbers; inside "
    "{fname} its input is traced and has no values yet ({where}).",
    "alternatives": (),
}

NUMPY_IN_JIT = Declared(
    "numpy-in-jit",
    "NumPy called on a traced value",
    numpy_in_jit,
    order=40,
    explanation="{written} is NumPy: it needs real numbers, but inside {fname} {argument} is traced, a stand-in with a "
    "shape and a dtype and no values yet, so NumPy cannot read it ({where}). `{jnp}.{path}` does the same "
    "computation as part of the compiled code.",
    pieces={
        "argument": ("{variable}", "its argument"),
        "made_static": " {settings} set an axis or a count, so they are made static.",
    },
    rewrite=(Rewritten("calls"), AddStatic("decorator", "settings")),
    fix_note="Use {jnp} instead of NumPy inside a jitted function ({replaced}).{made_static}",
    alternatives=(("If you need NumPy itself, call it outside the jitted function, on arrays with values:", ""),),
    fallback="result = {fname}(...)   # the jitted part\n{written}(result)   # the NumPy-based part, after it",
    kinds={
        "indexed": {
            "explanation": "{node} ({where}) indexes the NumPy array {table} with {index}, which is traced: NumPy "
            "needs a real index, and while JAX traces {fname} it has no value yet.",
            "rewrite": (Replace("table", "{jnp}.asarray({table})"),),
            "fix_note": "Index a JAX array instead: `{jnp}.asarray({table})` can be indexed by a traced value.",
            "alternatives": (),
        },
        "library-jax": {
            **_LIBRARY,
            "rewrite": (Replace("func", "{jax}.{equivalent}"),),
            "fix_note": "Use JAX's own `{jax}.{equivalent}`, which traces.",
        },
        "library": {
            **_LIBRARY,
            "rewrite": (),
            "fix_note": "Call {written} outside the jitted function, on arrays with values.",
        },
    },
    variable="variable",
)
