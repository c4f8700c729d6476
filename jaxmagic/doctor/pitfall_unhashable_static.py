"""``unhashable-static``: a list, dict, slice, dataclass or array passed where ``jax.jit`` (found from
the call at the user's line) expects a static value, which must be hashable. The fix, by the value's
type, keeps every use of it in the function valid (``_hashable``, ``static_split``).

>>> import jax, jax.numpy as jnp
>>> from jaxmagic.doctor.case import Case
>>> tile = jax.jit(lambda x, reps: jnp.tile(x, reps), static_argnums=1)
>>> try:
...     tile(jnp.ones(2), [2])
... except ValueError as exc:
...     found = UNHASHABLE_STATIC.diagnose(Case(exc, None, lambda filename: None))
>>> found.pitfall, found.variable, found.fix
('unhashable-static', 'reps', 'tile(jnp.ones(2), (2,))')
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
from typing import Any

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.donations as donations
import jaxmagic.doctor.rewrites as rewrites
import jaxmagic.doctor.static_positions as static_positions
import jaxmagic.doctor.static_split as static_split
from jaxmagic import _jax_private
from jaxmagic.doctor.clues import MISSING, Span
from jaxmagic.doctor.declared import Declared, Given, Line
from jaxmagic.tracing import callables

_UNHASHABLE_RE = re.compile(r"object of type <class '(?P<type>[\w.]+)'>, (?P<value>.*?)\. The error was", re.S)


def _jitted_callee(line: Line) -> tuple[ast.Call | None, Any]:
    """The call at the user's line and the ``jax.jit`` object it calls (or the case's function)."""
    call, frame, fn = line.expression(ast.Call), line.frame, line.case.fn
    callee = frame.resolve(call.func) if isinstance(call, ast.Call) else MISSING
    if isinstance(call, ast.Call) and callee is MISSING and isinstance(call.func, ast.Attribute):
        # model.step(...): looked up statically, so that a property of the user's object does not run here
        owner = frame.lookup(call.func.value.id) if isinstance(call.func.value, ast.Name) else MISSING
        callee = inspect.getattr_static(owner, call.func.attr, MISSING) if owner is not MISSING else MISSING
    if not _jax_private.is_jitted(callee) and fn is not None and _jax_private.is_jitted(fn):
        callee = fn
    return (call if isinstance(call, ast.Call) else None), callee


def _static_argument(line: Line, call: ast.Call | None, callee: Any) -> tuple[str | None, ast.expr | None, str | None]:
    """The static parameter given an unhashable value, the argument written for it, and how the
    user made it static (``static_argnums=(1,)``): where the call and the jit are known."""
    options = _jax_private.jit_options(callee) if _jax_private.is_jitted(callee) else None
    if call is None or options is None:
        return None, None, None
    sig = rewrites.signature_of(callee)
    names = list(sig.parameters) if sig else []
    static = set(options.static_argnames) | {names[i] for i in options.static_argnums if i < len(names)}
    for name, node in rewrites.call_parameters(call, callee).items():
        value = line.frame.lookup(node.id) if isinstance(node, ast.Name) else MISSING
        literal = isinstance(node, (ast.List, ast.Set, ast.Dict, ast.Call))
        unhashable = isinstance(value, (list, dict, set, bytearray)) or getattr(type(value), "__hash__", 1) is None
        if name in static and ((value is not MISSING and unhashable) or (value is MISSING and literal)):
            index, written = names.index(name) if name in names else None, static_positions.written_static_names
            by_name = name in written(callables.python_function(callee), line.frame.lookup)  # JAX lists both
            return name, node, f"static_argnums=({index},)" if index in options.static_argnums and not by_name else f'static_argnames=("{name}",)'  # fmt: skip
    return None, None, None


def _hashable(line: Line, node: ast.expr, value: Any, callee: Any, parameter: str) -> dict:
    """The fix by the value's type, every use of it kept valid: what a tuple cannot stand in for (``static_split``);
    else a tuple, made a ``slice`` / ``dict`` again first thing (a ``list`` / ``set`` where the function changes it)."""
    made = line.frame.resolve(node.func) if isinstance(node, ast.Call) else MISSING
    function = callables.python_function(callee)
    if dataclasses.is_dataclass(value) or (isinstance(made, type) and dataclasses.is_dataclass(made)):
        return static_split.frozen_fix(line, made if isinstance(made, type) else type(value))
    if split := static_split.split_fix(line, node, value, function, parameter):
        return split
    found = rewrites.hashable_form(line.text, node, value, made)
    if found is None:
        return {}
    hashable, back, kind = found
    call = line.fix([rewrites.Edit(Span.of(node), hashable)], "statement")
    again = f"{parameter} = {back.format(parameter)}" if back else ""
    body = rewrites.with_first_statement(function, again) if again else None
    if kind in (None, dict) and back or kind is not None and rewrites.changes_in_place(function, parameter):
        return {"kind": "wrapped", "hashable": hashable, "wrapped": again, "fixed": f"{body}\n\n{call}"} if body else {}
    return {"kind": "sequence" if body else "", "hashable": hashable, "fixed": call, "wrapped": again,
            "again": f"{body}\n\n{call}"}  # fmt: skip


def unhashable_static(line: Line) -> dict | None:
    """The static parameter and the argument given for it, how JAX showed the value, and the fix
    by the value's type (``_hashable``; where none is known, the fix in words: ``kind`` ``words``)."""
    detail = _UNHASHABLE_RE.search(line.message)
    type_name = detail.group("type").rsplit(".", 1)[-1].replace("ArrayImpl", "jax.Array") if detail else "value"
    shown = " ".join(detail.group("value").split()) if detail else ""
    call, callee = _jitted_callee(line)
    parameter, argument, how = _static_argument(line, call, callee)
    found = {"fname": donations.callee_name(call, callee), "parameter": parameter, "argument": argument,
             "type": type_name, "option": how, "holding": shown if argument is None else None}  # fmt: skip
    value = clues.resolve(argument, line.frame.lookup) if isinstance(argument, ast.Name) else MISSING
    params = list(getattr(rewrites.signature_of(callee), "parameters", ()))
    traced = rewrites.without_static(callables.python_function(callee), parameter or "", params.index(parameter) if parameter in params else None, line.jax_names.jit)  # fmt: skip
    found["traced"] = f"{traced}\n\n{line.fix([], 'statement')}" if traced else ""
    fixed = _hashable(line, argument, value, callee, parameter or "") if argument is not None and line.statement() else {}  # fmt: skip
    if fixed:
        return {**found, **fixed}
    numbers = re.findall(r"-?\d+(?:\.\d+)?", shown)
    example = rewrites.tuple_of(numbers) if numbers and len(numbers) <= 8 and shown.strip().startswith("[") else None
    return {**found, "kind": "words", "example": example}


_PIECES = {"what": ("{parameter}", "A static argument"), "how": " ({option})", "written": " ({argument})",
           "holding": " holding {holding!s}", "subject": ("{parameter}", "it"), "example": " such as `{example}`"}  # fmt: skip
_AS_DATA = ("If {subject} is data (numbers to compute with), not a setting, do not make it static: pass it as an "
            "ordinary argument, traced like the others:")  # fmt: skip

UNHASHABLE_STATIC = Declared(
    "unhashable-static",
    "An unhashable value passed as a static argument",
    unhashable_static,
    raised=(ValueError, TypeError),
    messages=("Non-hashable static arguments are not supported",),
    order=10,
    explanation="{what} is a static argument of {fname}{how}: JAX compiles one version per static value and finds it "
    "again by the value's hash, so a static value must be hashable. Here it got a {type!s}{written}{holding}, which "
    "is not ({where}).",
    pieces=_PIECES,
    rewrite=(Given("fixed"),),
    fix_note="Pass `{hashable}`, a tuple of the same elements: a tuple is hashable.",
    alternatives=((_AS_DATA, "{traced}"),),
    kinds={
        "wrapped": {
            "fix_note": "Pass `{hashable}`, a tuple (hashable), and make it a {type!s} again in {fname}: `{wrapped}`."
        },
        "split": {"fix_note": static_split.NOTE, "alternatives": ()},
        "dataclass": {"fix_note": static_split.FROZEN_NOTE},
        "sequence": {
            "alternatives": (
                ("Or make it a {type!s} again first thing in {fname} (`{wrapped}`):", "{again}"),
                (_AS_DATA, ""),
            )
        },
        "words": {"rewrite": (), "fix_note": "Pass a tuple{example} (hashable) instead of a {type!s}."},
    },  # fmt: skip
    variable="parameter",
    function="fname",
)
