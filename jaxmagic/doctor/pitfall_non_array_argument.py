"""``non-array-argument``: a jitted function called with a value JAX cannot trace (a string, an
object of the user's class, ``self`` of a method jitted in its class body), not marked static.

For a parameter, the fix marks it static where the user jits the function. For ``self``, it
follows the Sharp Bits' first strategy: the method calls a jitted function of the attributes it
reads, so a changed attribute is seen on the next call (a static ``self`` would be hashed by
identity, and a mutated object would silently reuse the old compiled code).

>>> import jax
>>> @jax.jit
... def act(x, name):
...     return x * 2 if name == "double" else x
>>> try:
...     act(1.0, "double")
... except TypeError as exc:
...     case = Case(exc, None, lambda filename: None)
>>> describe(case, non_array_argument(case)).fix.splitlines()[0]
'@jax.jit(static_argnames=("name",))'
"""

from __future__ import annotations

import ast
import inspect
import re
from dataclasses import dataclass
from typing import Any

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.method_rewrites as method_rewrites
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.case import Case
from jaxmagic.doctor.clues import MISSING
from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.registry import describes, pitfall
from jaxmagic.tracing import callables
from jaxmagic.words import code, names, place, say

_DETAIL = re.compile(
    r"Error interpreting argument to <function (?P<qualname>[\w.<>]+) at 0x[0-9a-f]+> as an abstract "
    r"array\. The problematic value is of type <class '(?P<type>[\w.<>]+)'> and was passed to the "
    r"function at path (?P<path>\w+)"
)


@dataclass(frozen=True)
class NonArrayArgument:
    """What ``non_array_argument`` found: the jitted Python function, its source, the parameter and
    the type JAX could not trace, and the object (``self``) where it is a method."""

    function: Any
    parsed: clues.ParsedSource
    node: ast.FunctionDef
    parameter: str
    type_name: str
    owner: Any = None


def _find(qualname: str, namespace: dict) -> Any:
    """The function named ``Class.method`` / ``f`` in ``namespace`` (read statically: no descriptor runs)."""
    head, *rest = qualname.split(".")
    found = namespace.get(head, MISSING)
    for part in rest:
        found = inspect.getattr_static(found, part, MISSING) if found is not MISSING else MISSING
    return found


@pitfall(
    "non-array-argument",
    "A value JAX cannot trace passed to a jitted function",
    "error",
    order=8,
    messages=("as an abstract array. The problematic value is of type",),
)
def non_array_argument(case: Case) -> NonArrayArgument | None:
    """The argument JAX names by its path, in the function JAX names by its qualified name."""
    detail = (
        _DETAIL.search(case.message) if isinstance(case.exc, TypeError) and case.says("non-array-argument") else None
    )
    frame = case.innermost
    if detail is None or frame is None:
        return None
    function = callables.python_function(_find(detail.group("qualname"), frame.frame.f_globals))
    located = clues.function_of_code(function.__code__) if function is not None else None
    if located is None or not isinstance(located[1], ast.FunctionDef):
        return None
    parameter = detail.group("path")
    owner = frame.lookup(parameter) if parameter == "self" else None
    statement = case.statement(frame)
    if parameter == "self" and statement is not None:  # the object is written at the call: s.apply(3)
        for call in clues.nodes_in(statement, ast.Call):
            if isinstance(call.func, ast.Attribute) and call.func.attr == function.__name__:
                owner = clues.resolve(call.func.value, frame.lookup)
    return NonArrayArgument(
        function,
        located[0],
        located[1],
        parameter,
        detail.group("type").rsplit(".", 1)[-1],
        None if owner is MISSING else owner,
    )


@describes("non-array-argument")
def describe(case: Case, found: NonArrayArgument) -> Diagnosis | None:
    """Static where it is a setting; for ``self``, the method calling a jitted function of its attributes."""
    frame = case.innermost
    jn = case.names(frame)
    fname = found.node.name
    where = case.where(frame)
    if found.parameter == "self":
        written = method_rewrites.method_calling_jitted_function(found.parsed, found.node, found.owner, jn)
        if written is None:
            return None
        fix, settings = written
        return case.diagnosis(
            "non-array-argument",
            explanation=say(
                "{} is jitted in its class body, so {} is its first argument: an object of type {}, which JAX cannot "
                "trace ({}).",
                code(fname),
                code("self"),
                code(found.type_name),
                place(where),
            ),
            fix=fix,
            fix_note=say(
                "Jit a function of the attributes it reads{}, and let the method call it: a changed "
                "attribute is then seen on the next call.",
                say(" ({} static)", names(settings)) if settings else "",
            ),
            alternatives=(
                (
                    say(
                        "Marking {} static instead hashes the object by identity: after {} changes, the "
                        "compiled code silently keeps the old value.",
                        code("self"),
                        code("self.<attribute> = ..."),
                    ),
                    "",
                ),
            ),
            where=where,
            variable="self",
            function=fname,
        )
    use = rewrites.decorator_jit(found.node, rewrites.lookup_in(found.function.__globals__))
    if use is None or use.library == "eqx":
        return None
    edit = rewrites.add_static_edit(use, [found.parameter], found.parsed.lines, jn.jit)
    fix = rewrites.with_edits(
        found.parsed.lines, rewrites.function_first_line(found.node), found.node.end_lineno, [edit]
    )
    return case.diagnosis(
        "non-array-argument",
        explanation=say(
            "{} of {} got a {} ({}), which JAX cannot trace: only arrays and numbers (and pytrees of them) "
            "can be traced arguments.",
            code(found.parameter),
            code(fname),
            code(found.type_name),
            place(where),
        ),
        fix=fix,
        fix_note=say(
            "Mark {} static: JAX compiles once per value of it, which must be hashable.", code(found.parameter)
        ),
        where=where,
        variable=found.parameter,
        function=fname,
        static_argnames=(found.parameter,),
    )
