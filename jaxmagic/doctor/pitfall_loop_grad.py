"""``dynamic-loop-grad``: ``jax.grad`` through ``lax.fori_loop`` (or ``while_loop``) whose bounds
are traced. With a traced bound the loop is a ``while_loop``, whose number of steps is known only
when it runs, and reverse-mode differentiation must store every step: JAX refuses. With bounds
that are Python ints while JAX traces (a static argument), ``fori_loop`` is a ``scan`` of fixed
length, which ``grad`` differentiates.

JAX's error carries, as its cause, the stack where the loop was written: the fix marks the loop's
bound static in the jit the user wrote (its decorator, or the ``jax.jit(...)`` at the call); where
none is, it differentiates forward, ``jax.jacfwd`` where ``jax.grad`` was written.

>>> import jax
>>> from jaxmagic.doctor.case import Case
>>> @jax.jit
... def power(x, n):
...     return jax.lax.fori_loop(0, n, lambda i, acc: acc * x, 1.0)
>>> try:
...     jax.grad(power)(2.0, 3)
... except ValueError as exc:
...     case = Case(exc, None, lambda filename: None)
>>> found = LOOP_GRAD.diagnose(case)
>>> found.variable, found.static_argnames
('n', ('n',))
"""

from __future__ import annotations

import ast

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.forward_mode as forward_mode
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.declared import Declared, Given, Line, edited
from jaxmagic.tracing.sources import source_line

_LOOPS = {"fori_loop": (0, 1), "while_loop": ()}  # the loop and the positions of its bounds


def loop_grad(line: Line) -> dict | None:
    """The ``fori_loop`` / ``while_loop`` at the line JAX's error names as its source (its cause's
    stack), the parameters its bounds read, and those made static where the user jits."""
    found = _loop(line)
    if found is None:
        return None
    parsed, loop = found
    function = clues.enclosing(parsed.tree, loop, (ast.FunctionDef, ast.AsyncFunctionDef))
    function = function if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
    names = _bound_parameters(loop, function)
    fname = function.name if function is not None else None
    fixed, kind = _way_out(line, parsed, function, names)
    return {"loop": f"lax.{_callee_name(loop)}", "names": names, "variable_name": names[0] if names else None,
            "where": source_line(parsed.file, loop.lineno, fname or "", line.case.cell_namer), "fixed": fixed,
            "fname": fname, "static": names if fixed and not kind else (), "kind": kind}  # fmt: skip


def _bound_parameters(loop: ast.Call, function: ast.FunctionDef | ast.AsyncFunctionDef | None) -> list[str]:
    """The parameters of ``function`` that the loop's bounds read."""
    bounds = [loop.args[i] for i in _LOOPS[_callee_name(loop)] if i < len(loop.args)]
    bounds += [k.value for k in loop.keywords if k.arg in ("lower", "upper")]
    parameters = [a.arg for a in function.args.args + function.args.kwonlyargs] if function is not None else []
    return [n for n in dict.fromkeys(n for bound in bounds for n in clues.names_in(bound)) if n in parameters]


def _way_out(
    line: Line, parsed: clues.ParsedSource, function: ast.AST | None, names: list[str]
) -> tuple[str | None, str]:
    """The fix and its kind: the bounds made static where the user jits; else the gradient forward."""
    fixed = _static_edit(line, parsed, function, names) if names else None
    if fixed:
        return fixed, ""
    forward = forward_mode.grad_written_forward(line)
    return forward, ("unfixed" if names else "bounds") + ("-forward" if forward else "")


def _loop(line: Line) -> tuple[clues.ParsedSource, ast.Call] | None:
    """The source where the loop was written (the last user frame of the error's cause) and the loop there."""
    cause = line.case.exc.__cause__
    frames = clues.user_frames(cause.__traceback__) if cause is not None else []
    parsed = clues.parse_around(frames[-1].file, frames[-1].line) if frames else None
    if parsed is None:
        return None
    loops = [n for n in ast.walk(parsed.tree) if isinstance(n, ast.Call) and _callee_name(n) in _LOOPS]
    loop = next((n for n in loops if n.lineno <= frames[-1].line <= (n.end_lineno or n.lineno)), None)
    return (parsed, loop) if loop is not None else None


def _callee_name(call: ast.Call) -> str:
    return call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")


def _static_edit(line: Line, parsed: clues.ParsedSource, function: ast.AST | None, names: list[str]) -> str | None:
    """The bound's parameters made static where the user jits: the function's decorator, or a
    ``jax.jit(...)`` in the failing statement."""
    lookup, jit_name = line.frame.lookup, line.jax_names.jit
    use = rewrites.decorator_jit(function, lookup) if function is not None else None
    if function is not None and use is not None and use.library != "eqx":
        edit = rewrites.add_static_edit(use, names, parsed.lines, jit_name)
        return rewrites.definition_with_edits(parsed.lines, function, [edit])
    statement = line.statement()
    if statement is None:
        return None
    for node in ast.walk(statement):
        use = rewrites.jit_use(node, lookup) if isinstance(node, ast.Call) else None
        if use is not None and use.kind == "call" and use.library == "jax":
            edit = rewrites.add_static_edit(use, names, line.parsed.lines, jit_name)
            return edited(line.parsed.lines, statement, edit)
    return None


_DIFFERENTIATED = "`{loop}` ({where}) is differentiated with `grad`. "
_TRACED_BOUND = (
    _DIFFERENTIATED + "Its bound {names} is traced (an argument of a jitted function), so `{loop}` becomes a "
    "`while_loop` whose number of steps is known only when it runs; reverse-mode differentiation (`grad`) must keep "
    "every step, and cannot."
)
_BOUNDS = (
    _DIFFERENTIATED + "Its bounds are traced values, so the number of steps is known only when it runs; reverse-mode "
    "differentiation (`grad`) must keep every step, and cannot."
)
_NO_STATIC = (
    "Give the loop bounds known while JAX traces (Python ints: a static argument), or write it as `lax.scan` over a "
    "fixed number of steps, masking the steps past the traced bound."
)
_FORWARD = (
    "Differentiate it forward: `jax.jacfwd` carries the derivative along the loop, step by step, keeping nothing, "
    "and for a function with one number out it gives what `grad` gives."
)

LOOP_GRAD = Declared(
    "dynamic-loop-grad",
    "grad through a loop whose bounds are traced",
    loop_grad,
    raised=ValueError,
    messages=("Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop",),
    order=12,
    explanation=_TRACED_BOUND,
    rewrite=(Given("fixed"),),
    fix_note="Mark {names} static: it is then a Python int while JAX traces, and `fori_loop` with fixed bounds is a "
    "`lax.scan` of fixed length, which `grad` differentiates.",
    kinds={
        "unfixed": {"fix_note": _NO_STATIC},
        "bounds": {"explanation": _BOUNDS, "fix_note": _NO_STATIC},
        "unfixed-forward": {"fix_note": _FORWARD},
        "bounds-forward": {"explanation": _BOUNDS, "fix_note": _FORWARD},
    },
    variable="variable_name",
    function="fname",
    static="static",
)
