"""``nnx-closure``: a Flax NNX object (a model, an optimizer, ``Rngs``) read by a traced function as
a global or a captured variable instead of being passed to it. ``jax.jit`` and ``nnx.jit`` trace
their arguments only: an object reached any other way keeps the arrays it had outside, and
changing it inside (a ``BatchNorm``'s statistics, ``Dropout``'s key, ``optimizer.update``) or
taking its gradient is refused by Flax ("from a different trace level").

The fix passes the objects in, and uses ``nnx.jit``, which carries their changes back out.

>>> import jax, jax.numpy as jnp
>>> from flax import nnx
>>> from jaxmagic.doctor.case import Case
>>> model = nnx.Dropout(0.5, rngs=nnx.Rngs(0))
>>> @jax.jit
... def forward(x):
...     return model(x)
>>> try:
...     forward(jnp.ones(2))
... except Exception as exc:
...     case = Case(exc, None, lambda filename: None)
>>> NNX_CLOSURE.diagnose(case).variable
'model'
"""

from __future__ import annotations

import ast
import sys

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.clues import Span, UserFrame
from jaxmagic.doctor.declared import Declared, Given, Line, edited, end_of
from jaxmagic.doctor.donations import is_nnx_object
from jaxmagic.doctor.traced_code import instructions, parameter_edit


def _captured(frame: UserFrame) -> list[str]:
    """Globals and closure variables of the frame's code (nested functions included) holding NNX objects."""
    found = []
    for _, instruction in instructions(frame.code, "LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF"):
        name, free = instruction.argval, instruction.opname == "LOAD_DEREF"
        if free and name not in frame.code.co_freevars:
            continue
        if is_nnx_object(frame.frame.f_locals.get(name) if free else frame.frame.f_globals.get(name)):
            found.append(name)
    return list(dict.fromkeys(found))


def nnx_closure(line: Line) -> dict | None:
    """The outermost of the user's functions in the traceback that reads NNX objects it was not
    given: the objects, and the fix passing them in (``nnx.jit`` for ``jax.jit``)."""
    if "flax.nnx" not in sys.modules:
        return None
    case = line.case
    for index, frame in enumerate(case.frames):
        captured = _captured(frame) if frame.function != "<module>" else []
        if captured:
            nnx = rewrites.alias(frame.frame.f_globals, sys.modules["flax.nnx"], "nnx")
            return {"captured": captured, "first": captured[0], "fname": frame.function, "where": case.where(frame),
                    "nnx": nnx, "fixed": _fixed(line, index, captured, nnx),
                    "kind": "several" if len(captured) > 1 else ""}  # fmt: skip
    return None


def _fixed(line: Line, index: int, captured: list[str], nnx: str) -> str | None:
    """The function taking the objects as parameters, jitted with ``nnx.jit``, and its call passing them."""
    frame = line.case.frames[index]
    located = clues.function_of_code(frame.code)
    parsed, node = located if located is not None else (None, None)
    if parsed is None or not isinstance(node, ast.FunctionDef):
        return None
    added = parameter_edit(parsed, node, captured)
    call = _call_edit(line, index, node.name, captured)
    if added is None or call is None:
        return None
    edits = [added] + [e for e in [_nnx_jit_edit(node, frame, nnx)] if e is not None]
    definition = rewrites.definition_with_edits(parsed.lines, node, edits)
    return f"{definition}\n\n{call}"


def _nnx_jit_edit(node: ast.FunctionDef, frame: UserFrame, nnx: str) -> rewrites.Edit | None:
    """``@jax.jit`` -> ``@nnx.jit`` (options kept): ``nnx.jit`` carries the objects' changes out."""
    use = rewrites.decorator_jit(node, frame.lookup)
    if use is None or use.library != "jax":
        return None
    written = use.node  # @jax.jit, @jax.jit(...) or @partial(jax.jit, ...)
    if use.kind != "bare" and isinstance(written, ast.Call):
        written = written.func if use.kind == "call" else written.args[0]
    return rewrites.Edit(Span.of(written), f"{nnx}.jit")


def _call_edit(line: Line, index: int, name: str, captured: list[str]) -> str | None:
    """The statement calling the traced function, in its caller, with the objects passed in
    (``None`` where the call is not written plainly)."""
    site = line.case.frames[index - 1] if index > 0 else None
    statement = line.case.statement(site) if site is not None else None
    parsed = line.case.parsed(site) if site is not None else None
    plain = [n for n in ast.walk(statement) if isinstance(n, ast.Call) and not n.keywords] if statement else []
    call = next((n for n in plain if isinstance(n.func, ast.Name) and n.func.id == name), None)
    if call is None or parsed is None or statement is None:
        return None
    added = ", ".join(captured)
    edit = rewrites.Edit(end_of(call.args[-1]), f", {added}") if call.args else rewrites.Edit(end_of(call, 1), added)
    return edited(parsed.lines, statement, edit)


_PASSED = (
    "Pass {captured} in, and jit with `{nnx}.jit`: it traces the objects it is given and carries their changes "
    "(weights, statistics, the optimizer's step) back out to them."
)

NNX_CLOSURE = Declared(
    "nnx-closure",
    "A Flax NNX object used inside a traced function without being passed to it",
    nnx_closure,
    messages=("from a different trace level", "Cannot extract graph node from different trace level"),
    order=7,
    explanation="{fname} reads {captured} from outside instead of taking it as an argument. JAX and Flax trace a "
    "function's arguments only: an object reached any other way is not part of the trace, so Flax refuses to change "
    "it or take its gradient inside ({where}).",
    rewrite=(Given("fixed"),),
    fix_note=_PASSED,
    kinds={
        "several": {
            "explanation": "{fname} reads {captured} from outside instead of taking them as arguments. JAX and Flax "
            "trace a function's arguments only: an object reached any other way is not part of the trace, so Flax "
            "refuses to change it or take its gradient inside ({where})."
        }
    },
    variable="first",
    function="fname",
)
