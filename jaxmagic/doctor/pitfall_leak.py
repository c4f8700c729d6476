"""``tracer-leak``: a jitted function kept a traced value outside itself (a global, a list,
``self``), and using it later raised ``UnexpectedTracerError``.

JAX's message names the function and the line that made the value; the fix returns the value
instead of storing it (where a helper stored it: drops the store there).

>>> import jax, jax.numpy as jnp
>>> from jaxmagic.doctor.case import Case
>>> kept = []
>>> @jax.jit
... def step(x):
...     y = jnp.sin(x)
...     kept.append(y)
...     return y * 2
>>> _ = step(jnp.ones(2))
>>> try:
...     kept[0] + 1
... except Exception as exc:
...     found = TRACER_LEAK.diagnose(Case(exc, None, lambda filename: None))
>>> found.variable, found.where.text
('y', 'kept.append(y)')
"""

from __future__ import annotations

import ast
from typing import Any

import jax

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.clues import Span
from jaxmagic.doctor.declared import Declared, Given, HandedBack, Line
from jaxmagic.doctor.traced_code import with_edits
from jaxmagic.tracing import sources

_STORE_METHODS = {"append", "extend", "insert", "add", "update", "setdefault", "appendleft", "put"}
_Def = ast.FunctionDef | ast.AsyncFunctionDef
_Store = tuple[ast.stmt, str, bool, Any]  # the statement, where the value goes, whether a global, the value


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _stores(fnode: _Def) -> list[_Store]:
    """The statements that keep a value outside the function, in order."""
    declared = {name for node in ast.walk(fnode) if isinstance(node, (ast.Global, ast.Nonlocal)) for name in node.names}
    args = fnode.args
    local = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a}
    local |= {n.id for n in ast.walk(fnode) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} - declared
    found: list[_Store] = []
    for stmt in ast.walk(fnode):
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                if isinstance(target, ast.Name) and target.id in declared:
                    found.append((stmt, target.id, True, stmt.value))
                elif isinstance(target, ast.Attribute):
                    found.append((stmt, ast.unparse(target), False, stmt.value))
                elif isinstance(target, ast.Subscript) and _root_name(target) not in local:
                    found.append((stmt, ast.unparse(target.value), False, stmt.value))
        elif isinstance(stmt, ast.Expr) and isinstance(call := stmt.value, ast.Call):
            kept = (
                call.func.value if isinstance(call.func, ast.Attribute) and call.func.attr in _STORE_METHODS else None
            )
            root = _root_name(kept) if kept is not None else None
            if kept is not None and root is not None and (root not in local or isinstance(kept, ast.Attribute)):
                found.append((stmt, ast.unparse(kept), False, call.args[-1] if call.args else None))
    return sorted(found, key=lambda store: store[0].lineno)


def _assigned_name(statement: ast.AST | None) -> str | None:
    named = isinstance(statement, ast.Assign) and isinstance(statement.targets[0], ast.Name)
    return statement.targets[0].id if named else None  # type: ignore[union-attr]


def _store_of(stores: list[_Store], created: ast.AST | None, variable: str | None) -> _Store | None:
    """The store that kept the leaked value: the statement that made it, or one whose value reads
    its name; else the function's first store."""
    mentions = [s for s in stores if s[0] is created or (s[3] is not None and variable in clues.names_in(s[3]))]
    return (mentions or stores or [None])[0]


def _helper(origin: tuple[str, int], traced: _Def, traced_file: str) -> tuple[clues.ParsedSource, _Def] | None:
    """The user's function (a helper, a model's ``__call__``) that made and stored the value,
    where it is not the jitted function itself."""
    file, line = origin
    parsed = clues.parse_around(file, line)
    if parsed is None or (file == traced_file and traced.lineno <= line <= (traced.end_lineno or line)):
        return None
    around = [n for n in ast.walk(parsed.tree) if isinstance(n, _Def) and n.lineno <= line <= (n.end_lineno or 0)]
    inner = max(around, key=lambda n: n.lineno, default=None)
    return (parsed, inner) if inner is not None and _stores(inner) else None


def tracer_leak(line: Line) -> dict[str, Any] | None:
    """The statement that stored the leaked value, where it went, and the function to hand it back from."""
    case, traced, origin = line.case, line.case.traced, clues.leak_origin(line.message)
    if traced is None or not (isinstance(case.exc, jax.errors.UnexpectedTracerError) or case.says("tracer-leak")):
        return None
    parsed = clues.parse_around(traced.file, traced.line)
    fnode = clues.function_node(parsed, traced.name, traced.line) if parsed else None
    if parsed is None or not isinstance(fnode, _Def):
        return None
    helper = _helper(origin, fnode, traced.file) if origin else None
    parsed, keeper = helper or (parsed, fnode)
    created = clues.statement_at(parsed.tree, origin[1]) if origin else None
    if not any(node is created for node in ast.walk(keeper)):
        created = None  # made outside the traced function: an argument, created where the caller called it
    variable = _assigned_name(created)
    store = _store_of(_stores(keeper), created, variable)
    if store is None:
        return None
    statement, target, is_global, value = store
    if helper is None and (variable is None or statement is created):
        variable = _assigned_name(statement) or (value.id if isinstance(value, ast.Name) else variable)
    made = sources.source_line(parsed.file, origin[1], traced.name, case.cell_namer) if origin else None
    usage = case.where(line.frame)
    found = {"name": variable or (clues.source_of(parsed, value) if value is not None else "the value"),
             "traced": traced.name, "keeper": keeper.name, "target": target, "usage": usage, "made_at": made,
             "where": sources.source_line(parsed.file, statement.lineno, keeper.name, case.cell_namer),
             "located": (parsed, keeper), "stored": "global" if is_global else "", "used": "at" if usage else ""}  # fmt: skip
    if helper is not None:
        return {
            **found,
            "kind": "helper",
            "fixed": with_edits((parsed, keeper), [rewrites.Edit(Span.of(statement), "")]),
        }
    kept_as_global = statement is created or (isinstance(statement, ast.Assign) and is_global)
    return {**found, "made": "placed" if made else "", "dropped": None if kept_as_global else Span.of(statement)}


_TRACER = "Outside the trace that stored value is a stand-in (a tracer) with no value, so using it{used} fails."
_RETURNED = "(a jitted function hands back everything through its return value)."

TRACER_LEAK = Declared(
    "tracer-leak", "A traced value escaped from its function", tracer_leak, order=30, messages=("Leaked trace",),
    says=False, variable="name", function="keeper",
    explanation="{name} was computed inside {traced} while JAX traced it{made}, and {traced} stored it in {stored} "
    "({where}) instead of returning it. " + _TRACER,
    rewrite=(HandedBack(store="dropped"),),
    fix_note="Return {name} from {traced} " + _RETURNED,
    alternatives=(("To debug, print it from inside the compiled code instead:", '{jax}.debug.print("{name} = {{}}", {name})'),),
    kinds={"helper": {
        "explanation": "{name} was computed inside {keeper} while JAX traced {traced}, and {keeper} stored it in "
        "{stored} ({where}). " + _TRACER,
        "fix_note": "Do not keep traced values in {stored}: to see {name} outside, return it from {keeper} and from "
        "{traced} with the result " + _RETURNED,
        "rewrite": (Given("fixed"),), "alternatives": ()}},
    clauses={"stored": {"global": "the global {target}", "": "{target}"}, "made": {"placed": " ({made_at})"},
             "used": {"at": " at {usage}"}},
)  # fmt: skip
