"""``python-scalar-conversion``: a traced value asked to be a plain Python number (``int()``, ``float()``,
``.item()``, ``math.*``, a Python list indexed by one). The fix undoes the conversion; a loop count is
made static or the loop a ``lax.fori_loop``.

>>> import jax, jax.numpy as jnp
>>> from jaxmagic.doctor.case import Case
>>> def mean(x):
...     return x.sum().item() / 2
>>> try:
...     jax.jit(mean)(jnp.ones(2))
... except TypeError as exc:
...     found = PYTHON_SCALAR_CONVERSION.diagnose(Case(exc, None, lambda filename: None))
>>> found.fix.splitlines()[-1].strip()
'return x.sum() / 2'
"""

from __future__ import annotations

import ast
import math

import jax
import jax.numpy as jnp

import jaxmagic.doctor.branch_rewrites as branch_rewrites
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.case import depends_on
from jaxmagic.doctor.chosen import Chosen, Offer, Static
from jaxmagic.doctor.clues import MISSING, Span
from jaxmagic.doctor.declared import Line, user_function
from jaxmagic.doctor.masking import mask_later_slice, used_as_size


def _container(line: Line, node: ast.AST) -> str | None:
    """``list`` or ``tuple`` for a Python sequence written in place (``[1, 2]``) or named (``self.layers``)."""
    value = line.frame.resolve(node) if isinstance(node, (ast.Name, ast.Attribute)) else MISSING
    written = {ast.List: "list", ast.Tuple: "tuple"}.get(type(node))
    return written or (type(value).__name__ if isinstance(value, (list, tuple)) else None)


def _conversion(line: Line, node: ast.AST) -> dict | None:
    """What converts (``math``, ``cast``, ``item``, ``list-index``), the traced value, and the edit that undoes it."""
    jn = line.jax_names
    if isinstance(node, ast.Subscript):
        container, seq = _container(line, node.value), line.text(node.value)
        if container is None or not isinstance(line.case.exc, jax.errors.TracerIntegerConversionError):
            return None
        return {"kind": "list-index", "value": node.slice, "container": container, "shown": f"{seq}[{line.text(node.slice)}]",
                "edit": rewrites.Edit(Span.of(node.value), f"{jn.jnp}.asarray({seq})")}  # fmt: skip
    if not isinstance(node, ast.Call):
        return None
    func, callee = node.func, line.frame.resolve(node.func)
    name = getattr(callee, "__name__", "")
    if callee is not MISSING and getattr(math, name, None) is callee and hasattr(jnp, name):
        return {"kind": "math", "math": name, "value": node.args[0] if node.args else node, "shown": line.text(node),
                "edit": rewrites.Edit(Span.of(func), f"{jn.jnp}.{name}")}  # fmt: skip
    if isinstance(func, ast.Name) and func.id in ("int", "float", "complex") and node.args:
        inner = line.text(node.args[0])
        atomic = isinstance(node.args[0], (ast.Name, ast.Attribute, ast.Call, ast.Subscript))
        new = f"{inner}.astype({func.id})" if atomic else f"{jn.jnp}.asarray({inner}, dtype={func.id})"
        return {"kind": "cast", "value": node.args[0], "shown": f"{func.id}({inner})", "edit": rewrites.Edit(Span.of(node), new)}  # fmt: skip
    if isinstance(func, ast.Attribute) and func.attr in ("item", "tolist") and not node.args:
        inner = line.text(func.value)
        return {"kind": "item", "value": func.value, "shown": f"{inner}.{func.attr}()",
                "edit": rewrites.Edit(Span.of(node), inner)}  # fmt: skip
    return None


def _printed(line: Line, node: ast.AST) -> rewrites.Edit | None:
    """``print(...)`` whose arguments hold the conversion, as a ``jax.debug.print`` of the array itself."""
    statement = line.statement()
    call = statement.value if isinstance(statement, ast.Expr) else None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "print"):
        return None
    replacement = rewrites.debug_print_call(call, line.parsed, line.jax_names.jax) if node in ast.walk(call) else None
    return rewrites.Edit(Span.of(call), replacement) if replacement else None


def python_scalar_conversion(line: Line) -> dict | None:
    """The conversion, the traced value it converts, and the fixes: undone, or a loop count static / a fori_loop."""
    case, node = line.case, line.expression()
    found = _conversion(line, node) if node is not None else None
    if found is None or node is None or isinstance(case.exc, jax.errors.TracerBoolConversionError):
        return None
    static_names = case.static_candidates(depends := depends_on(case, line.frame, found["value"]))
    facts = {**found, "node": node, "fname": case.function_name or line.frame.function, "static_names": static_names,
             "variable": (depends or [None])[0]}  # fmt: skip
    loop = branch_rewrites.counted_loop(line.parsed.tree, node)
    if loop is not None:
        fori = branch_rewrites.fori_rewrite(loop, user_function(line), line.parsed.lines, lax=line.jax_names.lax, unwrap=node)  # fmt: skip
        return {**facts, "kind": "loop", "fori": fori}
    printed = _printed(line, node) if found["kind"] in ("cast", "item") else None
    masked = mask_later_slice(line, node) or []
    note = "printed" if printed else "number" if found["kind"] in ("cast", "item") else found["kind"]
    return {**facts, "edits": None if not (printed or masked) and used_as_size(line, node) else [printed or found["edit"], *masked], "masked": bool(masked), "note": note,
            "number_note": not (static_names or printed or found["kind"] in ("math", "list-index")), "unprinted": not printed}  # fmt: skip


_NUMBER = "If you need it as a Python number (a loop count, a shape), it cannot come from traced data: XLA compiles for fixed shapes. Use a fixed maximum size and mask what is past it."  # fmt: skip
_CHOICES = (
    Offer("{note}{masked}", "edits"),
    Static("static_names", "it is then a real Python number (a loop count, a shape).", lead="If you need a real Python number: "),
    Offer(_NUMBER, "number_note"),
    Offer("To see the value while it runs, print it from the compiled code:", "unprinted", '{jax}.debug.print("{{}}", {value})'),
)  # fmt: skip
_LOOP = (
    Static("static_names", "the count is then a plain int while JAX traces (each new value compiles {fname} once more)."),
    Offer("Keep the count traced and loop inside the compiled code with `{lax}.fori_loop`:", "fori"),
    Offer("Loop inside the compiled code with `{lax}.fori_loop` (its bounds may be traced):", None, "result = {lax}.fori_loop(0, {value}, body, initial)  # body(i, carry) -> carry", otherwise=True),
)  # fmt: skip

PYTHON_SCALAR_CONVERSION = Chosen(
    "python-scalar-conversion",
    "int() / float() / .item() on a traced value",
    python_scalar_conversion,
    raised=(jax.errors.ConcretizationTypeError, jax.errors.TracerIntegerConversionError),
    order=60,
    explanation="{shown} ({where}) asks for a plain Python number, but while JAX traces {fname} {value} is traced and "
    "has no value yet, only a shape and a dtype.",
    phrases={
        "note": {
            "list-index": "Turn the {container!s} into one array, which a traced index can index.",
            "math": "Use `{jnp}.{math}`, which computes the same inside the compiled code.",
            "number": "Keep it a JAX array: arithmetic works on it as is, inside the compiled code.",
            "printed": "To print it, print from the compiled code: `{jax}.debug.print` formats the array itself, "
            "with your format, on every call (a plain `print` runs only while JAX traces).",
        },
        "masked": {
            True: " It is then used as a length: a length computed from the data cannot be compiled (XLA compiles for "
            "fixed shapes), so the slice keeps its full length and masks the rest."
        },
    },
    choices=_CHOICES,
    kinds={
        "list-index": {
            "explanation": "{shown} ({where}) indexes a Python {container!s} with a traced index: Python needs a "
            "real int to pick an element, and while JAX traces {fname} the index has no value yet."
        },
        "math": {
            "explanation": "{shown} ({where}) uses Python's `math`, which works on plain Python numbers only; while "
            "JAX traces {fname}, {value} is traced and has no value yet."
        },
        "loop": {
            "explanation": "{node} ({where}) asks for a plain Python int to count a Python loop, but while JAX traces "
            "{fname} {value} is traced and has no value yet; no array method turns it into one.",
            "choices": _LOOP,
        },
    },
    variable="variable",
)
