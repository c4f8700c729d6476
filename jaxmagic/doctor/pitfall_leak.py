"""``tracer-leak``: a jitted function kept a traced value outside itself (a global, a list, ``self``); using it
later raised ``UnexpectedTracerError``. The fix hands it back (where a helper made it, or it is returned too: no store).

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
from jaxmagic.doctor.clues import ParsedSource, Span
from jaxmagic.doctor.declared import Declared, Given, HandedBack, Line
from jaxmagic.doctor.traced_code import with_edits
from jaxmagic.tracing import sources

_STORE_METHODS = {"append", "extend", "insert", "add", "update", "setdefault", "appendleft", "put"}
_Def = ast.FunctionDef | ast.AsyncFunctionDef
_Store = tuple[ast.stmt, str, bool, Any]  # the statement, where the value goes, whether a global, the value


def _root_name(node: ast.AST | None) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def stores(fnode: _Def) -> list[_Store]:
    """The statements that keep a value outside the function, in order."""
    declared = {name for node in ast.walk(fnode) if isinstance(node, (ast.Global, ast.Nonlocal)) for name in node.names}
    args = fnode.args
    local = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a}
    local |= set(clues.names_in(fnode, ast.Store)) - declared
    found = [kept for stmt in ast.walk(fnode) if isinstance(stmt, ast.stmt) for kept in _kept(stmt, local)]
    return sorted(found, key=lambda store: store[0].lineno)


def _kept(stmt: ast.stmt, local: set[str]) -> list[_Store]:
    """Where ``stmt`` keeps a value outside its function: in a global, an attribute, an item of an
    outer container, or a container's method (``history.append(y)``)."""
    places: list[tuple[ast.expr, ast.expr, bool, Any]] = []  # what it assigns to, shown as, a global, the value
    if isinstance(stmt, ast.Expr) and isinstance(call := stmt.value, ast.Call):
        method = call.func if isinstance(call.func, ast.Attribute) and call.func.attr in _STORE_METHODS else None
        places += [(method.value, method.value, False, call.args[-1] if call.args else None)] if method else []
    elif isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        places += [(t, t.value if isinstance(t, ast.Subscript) else t, isinstance(t, ast.Name), stmt.value)
                   for t in targets]  # fmt: skip
    return [(stmt, ast.unparse(shown), is_global, value) for target, shown, is_global, value in places
            if (root := _root_name(target)) is not None and (isinstance(target, ast.Attribute) or root not in local)]  # fmt: skip


def _assigned_name(statement: ast.AST | None) -> str | None:
    named = isinstance(statement, ast.Assign) and isinstance(statement.targets[0], ast.Name)
    return statement.targets[0].id if named else None  # type: ignore[union-attr]


def _keeper(line: Line) -> tuple[Any, ParsedSource, _Def, bool] | None:
    """JAX's traced function, and the function that kept the value with its source: the traced one,
    or the user's function (a helper, a model's ``__call__``) that made and stored it (``True``)."""
    traced, origin = line.case.traced, clues.leak_origin(line.message)
    parsed = clues.parse_around(traced.file, traced.line) if traced is not None else None
    fnode = clues.function_node(parsed, traced.name, traced.line) if parsed and traced else None
    if traced is None or parsed is None or not isinstance(fnode, _Def):
        return None
    file, made = origin or (traced.file, fnode.lineno)
    around = clues.parse_around(file, made)
    if around is None or (file == traced.file and fnode.lineno <= made <= (fnode.end_lineno or made)):
        return traced, parsed, fnode, False
    inner = [n for n in ast.walk(around.tree) if isinstance(n, _Def) and n.lineno <= made <= (n.end_lineno or 0)]
    helper = max(inner, key=lambda n: n.lineno, default=None)
    return (traced, around, helper, True) if helper is not None and stores(helper) else (traced, parsed, fnode, False)


def _stored(parsed: ParsedSource, keeper: _Def, made: int | None, in_helper: bool) -> tuple[_Store, str, bool] | None:
    """The store that kept the leaked value (the statement that made it, or one whose value reads
    its name; else the function's first), the value's name (or its expression), and whether the
    store is the global's own assignment."""
    created = clues.statement_at(parsed.tree, made) if made else None
    if not any(node is created for node in ast.walk(keeper)):
        created = None  # made outside the traced function: an argument, created where the caller called it
    variable, kept = _assigned_name(created), stores(keeper)
    mentions = [s for s in kept if s[0] is created or (s[3] is not None and variable in clues.names_in(s[3]))]
    if not kept:
        return None
    store = (mentions or kept)[0]
    statement, _, _, value = store
    if not in_helper and (variable is None or statement is created):
        variable = _assigned_name(statement) or (value.id if isinstance(value, ast.Name) else variable)
    named = variable or (clues.source_of(parsed, value) if value is not None else "the value")
    return store, named, statement is created or (isinstance(statement, ast.Assign) and store[2])


def tracer_leak(line: Line) -> dict[str, Any] | None:
    """The statement that stored the leaked value, where it went, and the function to hand it back from."""
    leaked = isinstance(line.case.exc, jax.errors.UnexpectedTracerError) or line.case.says("tracer-leak")
    found, origin, namer = _keeper(line) if leaked else None, clues.leak_origin(line.message), line.case.cell_namer
    stored = _stored(found[1], found[2], origin and origin[1], found[3]) if found else None
    if found is None or stored is None:
        return None
    (traced, parsed, keeper, in_helper), (statement, target, is_global, _) = found, stored[0]
    made = sources.source_line(parsed.file, origin[1], traced.name, namer) if origin and not in_helper else None
    facts = {"name": stored[1], "traced": traced.name, "keeper": keeper.name, "target": target, "usage": line.where({}),
             "where": sources.source_line(parsed.file, statement.lineno, keeper.name, namer), "made_at": made,
             "located": (parsed, keeper), "global": target if is_global else None,
             "fixed": with_edits((parsed, keeper), [rewrites.Edit(Span.of(statement), "")])}  # fmt: skip
    dropped = None if stored[2] or in_helper else Span.of(statement)  # returned already, too: only the store goes
    kind = "helper" if in_helper else "self" if target.startswith("self.") else dropped and rewrites.returned_at(keeper, stored[1]) is not None and "returned"  # fmt: skip
    return {**facts, "dropped": dropped, "kind": kind}


_TRACER, _RETURNED = "Outside the trace that stored value is a stand-in (a tracer) with no value, so using it at {usage} fails.", "(a jitted function hands back everything through its return value)."  # fmt: skip
_STORED = "{name} was computed inside {traced} while JAX traced it{made}, and {traced} stored it in {stored} ({where})"

TRACER_LEAK = Declared(
    "tracer-leak", "A traced value escaped from its function", tracer_leak, order=30, messages=("Leaked trace",),
    says=False, variable="name", function="keeper",
    explanation=_STORED + " instead of returning it. " + _TRACER,
    rewrite=(HandedBack(store="dropped"),),
    fix_note="Return {name} from {traced} " + _RETURNED,
    alternatives=(("To debug, print it from inside the compiled code instead:", '{jax}.debug.print("{name} = {{}}", {name})'),),
    kinds={"helper": {
        "explanation": "{name} was computed inside {keeper} while JAX traced {traced}, and {keeper} stored it in "
        "{stored} ({where}). " + _TRACER,
        "fix_note": "Do not keep traced values in {stored}: to see {name} outside, return it from {keeper} and from "
        "{traced} with the result " + _RETURNED,
        "rewrite": (Given("fixed"),), "alternatives": ()},
        "self": {"rewrite": (), "fix_note": "Keep the state out of `self`: take {target} as an argument of {traced} and return its new value, and let the caller store it on the object, outside the jitted method."},
        "returned": {"explanation": _STORED + " as well as returning it. " + _TRACER,
        "fix_note": "Use the value {traced} returns, not the one kept in {stored}: drop the store " + _RETURNED}},
    pieces={"stored": ("the global {global}", "{target}"), "made": " ({made_at})"},
)  # fmt: skip
