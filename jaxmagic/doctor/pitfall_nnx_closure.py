"""``nnx-closure``: a Flax NNX object (a model, an optimizer, ``Rngs``) read by a traced function as
a global or a captured variable instead of being passed to it. ``jax.jit`` and ``nnx.jit`` trace
their arguments only: an object reached any other way keeps the arrays it had outside, and
changing it inside (a ``BatchNorm``'s statistics, ``Dropout``'s key, ``optimizer.update``) or
taking its gradient is refused by Flax ("from a different trace level").

The fix passes the objects in, and uses ``nnx.jit``, which carries their changes back out.

>>> import jax, jax.numpy as jnp
>>> from flax import nnx
>>> model = nnx.Dropout(0.5, rngs=nnx.Rngs(0))
>>> @jax.jit
... def forward(x):
...     return model(x)
>>> try:
...     forward(jnp.ones(2))
... except Exception as exc:
...     case = Case(exc, None, lambda filename: None)
>>> nnx_closure(case).captured
('model',)
"""

from __future__ import annotations

import ast
import dis
import sys
from dataclasses import dataclass

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.case import Case
from jaxmagic.doctor.clues import Span, UserFrame
from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.registry import describes, pitfall
from jaxmagic.doctor.traced_code import codes, parameter_edit
from jaxmagic.words import code, names, place, say


@dataclass(frozen=True)
class NnxClosure:
    """The traced function's frame and the NNX objects it reads without being passed them."""

    frame: UserFrame
    captured: tuple[str, ...]


def _is_graph_node(value) -> bool:
    nnx = sys.modules.get("flax.nnx")
    try:
        return nnx is not None and bool(nnx.graph.is_graph_node(value))
    except Exception:
        return False


def _captured(frame: UserFrame) -> list[str]:
    """Globals and closure variables of the frame's code (nested functions included) holding NNX objects."""
    found = []
    for inner in codes(frame.code):
        for instruction in dis.get_instructions(inner):
            if instruction.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
                value = frame.frame.f_globals.get(instruction.argval)
            elif instruction.opname == "LOAD_DEREF" and instruction.argval in frame.code.co_freevars:
                value = frame.frame.f_locals.get(instruction.argval)
            else:
                continue
            if _is_graph_node(value):
                found.append(instruction.argval)
    return list(dict.fromkeys(found))


@pitfall(
    "nnx-closure",
    "A Flax NNX object used inside a traced function without being passed to it",
    "error",
    order=7,
    messages=("from a different trace level", "Cannot extract graph node from different trace level"),
)
def nnx_closure(case: Case) -> NnxClosure | None:
    """The outermost of the user's functions in the traceback that reads an NNX object it was not given."""
    if not case.says("nnx-closure") or "flax.nnx" not in sys.modules:
        return None
    for frame in case.frames:
        if frame.function == "<module>":
            continue
        captured = _captured(frame)
        if captured:
            return NnxClosure(frame, tuple(captured))
    return None


def _nnx_jit_edit(fnode: ast.AST, frame: UserFrame, nnx_name: str) -> rewrites.Edit | None:
    """``@jax.jit`` -> ``@nnx.jit`` (options kept): ``nnx.jit`` carries the objects' changes out."""
    use = rewrites.decorator_jit(fnode, frame.lookup)
    if use is None or use.library != "jax":
        return None
    if use.kind == "bare":
        return rewrites.Edit(Span.of(use.node), f"{nnx_name}.jit")
    if use.kind == "call":
        return rewrites.Edit(Span.of(use.node.func), f"{nnx_name}.jit")
    return rewrites.Edit(Span.of(use.node.args[0]), f"{nnx_name}.jit")


def _call_edit(case: Case, found: NnxClosure, name: str):
    """The call of the traced function, in its caller's statement, with the objects passed in:
    ``(parsed, statement, edit)``, or ``None`` where the call is not written plainly."""
    index = case.frames.index(found.frame)
    site = case.frames[index - 1] if index > 0 else None
    statement = case.statement(site) if site is not None else None
    if statement is None:
        return None
    for node in ast.walk(statement):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == name
            and not node.keywords
        ):
            added = ", ".join(found.captured)
            if node.args:
                last = node.args[-1]
                at = Span(last.end_lineno, last.end_lineno, last.end_col_offset, last.end_col_offset)
                return case.parsed(site), statement, rewrites.Edit(at, f", {added}")
            at = Span(node.end_lineno, node.end_lineno, node.end_col_offset - 1, node.end_col_offset - 1)
            return case.parsed(site), statement, rewrites.Edit(at, added)
    return None


@describes("nnx-closure")
def describe(case: Case, found: NnxClosure) -> Diagnosis:
    """The objects passed in as parameters, the function jitted with ``nnx.jit``, and the call changed."""
    frame = found.frame
    located = clues.function_of_code(frame.code)
    where = case.where(frame)
    nnx = sys.modules["flax.nnx"]
    nnx_name = rewrites.alias(frame.frame.f_globals, nnx, "nnx")
    fix = ""
    if located is not None and isinstance(located[1], ast.FunctionDef):
        parsed, fnode = located
        added = parameter_edit(parsed, fnode, list(found.captured))
        call = _call_edit(case, found, fnode.name)
        if added is not None and call is not None:
            edits = [added] + [e for e in [_nnx_jit_edit(fnode, frame, nnx_name)] if e is not None]
            definition = rewrites.with_edits(parsed.lines, rewrites.function_first_line(fnode), fnode.end_lineno, edits)
            site_parsed, statement, edit = call
            called = rewrites.with_edits(site_parsed.lines, statement.lineno, statement.end_lineno, [edit])
            fix = f"{definition}\n\n{called}"
    return case.diagnosis(
        "nnx-closure",
        explanation=say(
            "{} reads {} from outside instead of taking {}. JAX and Flax trace a function's "
            "arguments only: an object reached any other way is not part of the trace, so Flax refuses to change "
            "it or take its gradient inside ({}).",
            code(frame.function),
            names(found.captured),
            "it as an argument" if len(found.captured) == 1 else "them as arguments",
            place(where),
        ),
        fix=fix,
        fix_note=say(
            "Pass {} in, and jit with {}: it traces the objects it is given and carries their changes (weights, "
            "statistics, the optimizer's step) back out to them.",
            names(found.captured),
            code(f"{nnx_name}.jit"),
        ),
        where=where,
        variable=found.captured[0],
        function=frame.function,
    )
