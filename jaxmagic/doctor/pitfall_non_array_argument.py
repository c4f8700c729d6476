"""``non-array-argument``: a jitted function called with a value JAX cannot trace (a string, an
object of the user's class, ``self`` of a method jitted in its class body), not marked static.

For a parameter, the fix marks it static where the user jits the function; for an Equinox module
(which holds its activation functions as leaves), the ``jax.jit`` becomes ``eqx.filter_jit``, as
Equinox documents: every leaf that is not an array static. For ``self``, it
follows the Sharp Bits' first strategy: the method calls a jitted function of the attributes it
reads, so a changed attribute is seen on the next call (a static ``self`` would be hashed by
identity, and a mutated object would silently reuse the old compiled code).

>>> import jax
>>> from jaxmagic.doctor.case import Case
>>> @jax.jit
... def act(x, name):
...     return x * 2 if name == "double" else x
>>> try:
...     act(1.0, "double")
... except TypeError as exc:
...     case = Case(exc, None, lambda filename: None)
>>> NON_ARRAY_ARGUMENT.diagnose(case).fix.splitlines()[0]
'@jax.jit(static_argnames=("name",))'
"""

from __future__ import annotations

import ast
import inspect
import re
from typing import Any

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.equinox_jit as equinox_jit
import jaxmagic.doctor.method_rewrites as method_rewrites
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.clues import MISSING
from jaxmagic.doctor.declared import Declared, Given, Line, Replace
from jaxmagic.tracing import callables

_DETAIL = re.compile(
    r"Error interpreting argument to <function (?P<qualname>[\w.<>]+) at 0x[0-9a-f]+> as an abstract "
    r"array\. The problematic value is of type <class '(?P<type>[\w.<>]+)'> and was passed to the "
    r"function at path (?P<path>\w+)(?P<inside>[\w.\[\]'\"]*)"
)


def _find(qualname: str, namespace: dict) -> Any:
    """The function named ``Class.method`` / ``f`` in ``namespace`` (read statically: no descriptor runs)."""
    head, *rest = qualname.split(".")
    found = namespace.get(head, MISSING)
    for part in rest:
        found = inspect.getattr_static(found, part, MISSING) if found is not MISSING else MISSING
    return found


def non_array_argument(line: Line) -> dict | None:
    """The argument JAX names by its path, in the function JAX names by its qualified name, and the
    fix: the parameter made static, or for ``self`` the method calling a jitted function."""
    detail = _DETAIL.search(line.message)
    if detail is None:
        return None
    module = equinox_jit.module_passed_to_jax_jit(line, detail.group("path"))
    if module is not None:
        return module
    function = callables.python_function(_find(detail.group("qualname"), line.frame.frame.f_globals))
    located = clues.function_of_code(function.__code__) if function is not None else None
    if function is None or located is None:
        return None
    parsed, node = located
    if not isinstance(node, ast.FunctionDef):
        return None
    parameter = detail.group("path")
    found = {"fname": node.name, "parameter": parameter, "type": detail.group("type").rsplit(".", 1)[-1]}
    if parameter == "self":
        written = method_rewrites.method_calling_jitted_function(parsed, node, _owner(line, function), line.jax_names)
        if written is None:
            return None
        return {**found, "kind": "self-settings" if written[1] else "self", "fixed": written[0], "settings": written[1]}
    use = rewrites.decorator_jit(node, clues.lookup_in(function.__globals__))
    if use is None or use.library == "eqx":
        return None
    edit = rewrites.add_static_edit(use, [parameter], parsed.lines, line.jax_names.jit)
    fixed = rewrites.definition_with_edits(parsed.lines, node, [edit])
    return {**found, "fixed": fixed, "static": (parameter,)}


def _owner(line: Line, function: Any) -> Any:
    """The object whose method was called (``self``), as written at the call where it can be: ``s.apply(3)``."""
    owner = line.frame.lookup("self")
    statement = line.statement()
    for call in clues.nodes_in(statement, ast.Call) if statement is not None else ():
        if isinstance(call.func, ast.Attribute) and call.func.attr == function.__name__:
            owner = clues.resolve(call.func.value, line.frame.lookup)
    return None if owner is MISSING else owner


_SELF = {
    "explanation": "{fname} is jitted in its class body, so `self` is its first argument: an object of type {type}, "
    "which JAX cannot trace ({where}).",
    "fix_note": "Jit a function of the attributes it reads, and let the method call it: a changed attribute is then "
    "seen on the next call.",
    "alternatives": (
        (
            "Marking `self` static instead hashes the object by identity: after `self.<attribute> = ...` "
            "changes, the compiled code silently keeps the old value.",
            "",
        ),
    ),  # fmt: skip
}

_EQUINOX = {
    "explanation": "{argument} is an Equinox {type}, which holds leaves JAX cannot trace (its activation "
    "functions), and `jax.jit` ({where}) makes every leaf of its arguments an input.",
    "rewrite": (Replace("jit", "{filter_jit}"),),
    "fix_note": "Jit it with `{filter_jit}`, as Equinox documents: the module's arrays are traced, every other leaf "
    "is static.",
}

NON_ARRAY_ARGUMENT = Declared(
    "non-array-argument",
    "A value JAX cannot trace passed to a jitted function",
    non_array_argument,
    raised=TypeError,
    messages=("as an abstract array. The problematic value is of type",),
    order=8,
    explanation="{parameter} of {fname} got a {type} ({where}), which JAX cannot trace: only arrays and numbers (and "
    "pytrees of them) can be traced arguments.",
    rewrite=(Given("fixed"),),
    fix_note="Mark {parameter} static: JAX compiles once per value of it, which must be hashable.",
    kinds={
        "equinox": _EQUINOX,
        "self": _SELF,
        "self-settings": {
            **_SELF,
            "fix_note": "Jit a function of the attributes it reads ({settings} static), and let the method call it: "
            "a changed attribute is then seen on the next call.",
        },
    },
    variable="parameter",
    function="fname",
    static="static",
)
