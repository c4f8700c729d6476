"""``dynamic-loop-grad``: ``jax.grad`` through ``lax.fori_loop`` (or ``while_loop``) whose bounds
are traced. With a traced bound the loop is a ``while_loop``, whose number of steps is known only
when it runs, and reverse-mode differentiation must store every step: JAX refuses. With bounds
that are Python ints while JAX traces (a static argument), ``fori_loop`` is a ``scan`` of fixed
length, which ``grad`` differentiates.

JAX's error carries, as its cause, the stack where the loop was written: the fix marks the loop's
bound static in the jit the user wrote (its decorator, or the ``jax.jit(...)`` at the call).

>>> import jax
>>> @jax.jit
... def power(x, n):
...     return jax.lax.fori_loop(0, n, lambda i, acc: acc * x, 1.0)
>>> try:
...     jax.grad(power)(2.0, 3)
... except ValueError as exc:
...     case = Case(exc, None, lambda filename: None)
>>> loop_grad(case).names
('n',)
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.case import Case
from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.registry import describes, pitfall
from jaxmagic.tracing.sources import source_line
from jaxmagic.words import code, place, say
from jaxmagic.words import names as name_list

_LOOPS = {"fori_loop": (0, 1), "while_loop": ()}  # the loop and the positions of its bounds


@dataclass(frozen=True)
class LoopGrad:
    """The loop JAX could not differentiate, its function, and the parameters its bounds read."""

    parsed: clues.ParsedSource
    loop: ast.Call
    kind: str
    function: ast.FunctionDef | None
    names: tuple[str, ...]


def _loop_frame(case: Case) -> clues.UserFrame | None:
    cause = case.exc.__cause__
    frames = clues.user_frames(cause.__traceback__) if cause is not None else []
    return frames[-1] if frames else None


@pitfall(
    "dynamic-loop-grad",
    "grad through a loop whose bounds are traced",
    "error",
    order=12,
    messages=("Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop",),
)
def loop_grad(case: Case) -> LoopGrad | None:
    """The ``fori_loop`` / ``while_loop`` at the line JAX's error names as its source."""
    if not (isinstance(case.exc, ValueError) and case.says("dynamic-loop-grad")):
        return None
    frame = _loop_frame(case)
    parsed = clues.parse_around(frame.file, frame.line) if frame is not None else None
    if parsed is None:
        return None
    loop = next((node for node in clues.nodes_in(parsed.tree, ast.Call) if _is_loop_at(node, frame.line)), None)
    if loop is None:
        return None
    kind = _callee_name(loop)
    function = clues.enclosing(parsed.tree, loop, (ast.FunctionDef, ast.AsyncFunctionDef))
    bounds = [loop.args[i] for i in _LOOPS[kind] if i < len(loop.args)]
    bounds += [k.value for k in loop.keywords if k.arg in ("lower", "upper")]
    parameters = [a.arg for a in function.args.args + function.args.kwonlyargs] if function is not None else []
    read = [n for bound in bounds for n in clues.names_in(bound)]
    return LoopGrad(parsed, loop, kind, function, tuple(n for n in dict.fromkeys(read) if n in parameters))


def _callee_name(call: ast.Call) -> str:
    return call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")


def _is_loop_at(node: ast.Call, line: int) -> bool:
    """A ``fori_loop`` / ``while_loop`` call whose lines hold ``line``."""
    return node.lineno <= line <= node.end_lineno and _callee_name(node) in _LOOPS


def _static_edit(case: Case, found: LoopGrad) -> str | None:
    """The bound's parameters made static where the user jits: the function's decorator, or a
    ``jax.jit(...)`` in the failing statement."""
    site = case.innermost
    if not found.names or site is None:
        return None
    lookup = site.lookup
    jit_name = case.names(site).jit
    use = rewrites.decorator_jit(found.function, lookup) if found.function is not None else None
    if use is not None and use.library != "eqx":
        lines = found.parsed.lines
        first = rewrites.function_first_line(found.function)
        edit = rewrites.add_static_edit(use, found.names, lines, jit_name)
        return rewrites.with_edits(lines, first, found.function.end_lineno, [edit])
    parsed = case.parsed(site)
    statement = case.statement(site)
    if parsed is None or statement is None:
        return None
    for node in ast.walk(statement):
        use = rewrites.jit_use(node, lookup) if isinstance(node, ast.Call) else None
        if use is not None and use.kind == "call" and use.library == "jax":
            edit = rewrites.add_static_edit(use, found.names, parsed.lines, jit_name)
            return rewrites.with_edits(parsed.lines, statement.lineno, statement.end_lineno, [edit])
    return None


@describes("dynamic-loop-grad")
def describe(case: Case, found: LoopGrad) -> Diagnosis:
    """Why grad cannot go through the loop, and its bound made static where the user jits."""
    name = found.function.name if found.function is not None else None
    where = source_line(found.parsed.file, found.loop.lineno, name, case.cell_namer)
    loop = f"lax.{found.kind}"
    fixed = _static_edit(case, found)
    if found.names:
        reason = say(
            "Its bound {} is traced (an argument of a jitted function), so {} becomes a {} whose number of steps "
            "is known only when it runs; reverse-mode differentiation ({}) must keep every step, and cannot.",
            name_list(found.names),
            code(loop),
            code("while_loop"),
            code("grad"),
        )
    else:
        reason = say(
            "Its bounds are traced values, so the number of steps is known only when it runs; reverse-mode "
            "differentiation ({}) must keep every step, and cannot.",
            code("grad"),
        )
    note = (
        say(
            "Mark {} static: it is then a Python int while JAX traces, and {} with fixed bounds is a {} of "
            "fixed length, which {} differentiates.",
            name_list(found.names),
            code("fori_loop"),
            code("lax.scan"),
            code("grad"),
        )
        if fixed
        else say(
            "Give the loop bounds known while JAX traces (Python ints: a static argument), or write it as "
            "{} over a fixed number of steps, masking the steps past the traced bound.",
            code("lax.scan"),
        )
    )
    return case.diagnosis(
        "dynamic-loop-grad",
        explanation=say("{} ({}) is differentiated with {}. ", code(loop), place(where), code("grad")) + reason,
        fix=fixed or "",
        fix_note=note,
        where=where,
        variable=found.names[0] if found.names else None,
        function=found.function.name if found.function is not None else None,
        static_argnames=found.names if fixed else (),
    )
