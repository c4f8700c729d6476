"""``tracer-leak``: a jitted function kept a traced value outside itself (a global, a list,
``self``), and using it later raised ``UnexpectedTracerError``.

JAX's message names the function and the line that made the value; the doctor finds the statement
that stored it and rewrites the function to return the value instead.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

import jax

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.clues import Span
from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.registry import describes, pitfall
from jaxmagic.tracing import sources
from jaxmagic.words import code, place, say

_STORE_METHODS = {"append", "extend", "insert", "add", "update", "setdefault", "appendleft", "put"}


def _locals_of(fnode: ast.AST) -> set[str]:
    args = fnode.args
    found = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    found.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
    declared = set()
    for node in ast.walk(fnode):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
    for node in ast.walk(fnode):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id not in declared:
            found.add(node.id)
    return found


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _stores(fnode: ast.AST) -> list[tuple[ast.stmt, str, ast.AST | None]]:
    """Statements that keep a value outside the function: ``(statement, where it goes, stored value)``."""
    local = _locals_of(fnode)
    declared = set()
    for node in ast.walk(fnode):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
    found = []
    for stmt in ast.walk(fnode):
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                if isinstance(target, ast.Name) and target.id in declared:
                    found.append((stmt, say("the global {}", code(target.id)), stmt.value))
                elif isinstance(target, ast.Attribute):
                    found.append((stmt, say("{}", code(ast.unparse(target))), stmt.value))
                elif isinstance(target, ast.Subscript) and _root_name(target) not in local:
                    found.append((stmt, say("{}", code(ast.unparse(target.value))), stmt.value))
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            func = stmt.value.func
            if isinstance(func, ast.Attribute) and func.attr in _STORE_METHODS:
                root = _root_name(func.value)
                if root is not None and (root not in local or isinstance(func.value, ast.Attribute)):
                    value = stmt.value.args[-1] if stmt.value.args else None
                    found.append((stmt, say("{}", code(ast.unparse(func.value))), value))
    return sorted(found, key=lambda item: item[0].lineno)


def _helper_that_made_it(origin, fnode: ast.AST, traced_file: str):
    """``(parsed, function node)`` of the user's function (a helper, a model's ``__call__``) where the
    leaked value was made and stored, when it is not the jitted function itself."""
    if origin is None:
        return None
    file, line = origin
    if file == traced_file and fnode.lineno <= line <= fnode.end_lineno:
        return None
    parsed = clues.parse_around(file, line)
    if parsed is None:
        return None
    inner = None
    for node in clues.nodes_in(parsed.tree, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if node.lineno <= line <= node.end_lineno and (inner is None or node.lineno >= inner.lineno):
            inner = node
    return (parsed, inner) if inner is not None and _stores(inner) else None


def _leak_from_helper(case, traced, origin, usage, parsed, helper: ast.AST) -> Diagnosis:
    """The value was made and stored in a function the jitted one calls (``self.last = h`` in a
    model's ``__call__``, ``seen.append(h)`` in a helper): the fix drops the store there."""
    made = clues.statement_at(parsed.tree, origin[1])
    variable = made.targets[0].id if isinstance(made, ast.Assign) and isinstance(made.targets[0], ast.Name) else None
    stores = _stores(helper)
    stmt, destination, value = next(
        (s for s in stores if s[2] is not None and variable in clues.names_in(s[2])), stores[0]
    )
    where = sources.source_line(parsed.file, stmt.lineno, helper.name, case.cell_namer)
    kept = variable or clues.source_of(parsed, value) if value is not None else "the value"
    edit = rewrites.Edit(Span.of(stmt), "", comment=None)
    fix = rewrites.with_edits(parsed.lines, rewrites.function_first_line(helper), helper.end_lineno, [edit])
    return case.diagnosis(
        "tracer-leak",
        explanation=say(
            "{} was computed inside {} while JAX traced {}, and {} stored it in {} ({}). Outside the trace that "
            "stored value is a stand-in (a tracer) with no value, so using it{} fails.",
            code(kept),
            code(helper.name),
            code(traced.name),
            code(helper.name),
            destination,
            place(where),
            say(" at {}", place(usage)) if usage else "",
        ),
        fix=fix,
        fix_note=say(
            "Do not keep traced values in {}: to see {} outside, return it from {} and from {} with the "
            "result (a jitted function hands back everything through its return value).",
            destination,
            code(kept),
            code(helper.name),
            code(traced.name),
        ),
        where=where,
        variable=kept,
        function=helper.name,
    )


@dataclass(frozen=True)
class StoredTracer:
    """What ``tracer_leak`` found: JAX's traced function, where the value was made and used, the
    function that stored it (the traced one, or a helper), the statement that made it, and the
    store ``(statement, destination, value)``."""

    traced: Any
    origin: tuple[str, int] | None
    usage: Any
    parsed: clues.ParsedSource
    function: ast.AST
    created: ast.stmt | None
    store: tuple | None
    variable: str | None = None
    in_helper: bool = False


@pitfall("tracer-leak", "A traced value escaped from its function", "error", order=30, messages=("Leaked trace",))
def tracer_leak(case) -> StoredTracer | None:
    """``tracer-leak``: a traced value stored outside its function, used after the trace.

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
    ...     case = Case(exc, None, lambda filename: None)
    >>> found = describe(case, tracer_leak(case))
    >>> found.variable, found.where.text
    ('y', 'kept.append(y)')
    """
    if not (isinstance(case.exc, jax.errors.UnexpectedTracerError) or case.says("tracer-leak")):
        return None
    traced = case.traced
    origin = clues.leak_origin(case.message)
    usage = case.where(case.innermost)
    if traced is None:
        return None
    parsed = clues.parse_around(traced.file, traced.line)
    fnode = clues.function_node(parsed, traced.name, traced.line) if parsed else None
    if fnode is None or not isinstance(fnode, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    helper = _helper_that_made_it(origin, fnode, traced.file)
    if helper is not None:
        return StoredTracer(traced, origin, usage, helper[0], helper[1], None, None, in_helper=True)
    created = clues.statement_at(parsed.tree, origin[1]) if origin else None
    if created is not None and not any(node is created for node in ast.walk(fnode)):
        created = None  # made outside the traced function: an argument, created where the caller called it
    variable = None
    if isinstance(created, ast.Assign) and isinstance(created.targets[0], ast.Name):
        variable = created.targets[0].id
    chosen = _store_of(_stores(fnode), created, variable)
    if chosen is None:
        return None
    return StoredTracer(traced, origin, usage, parsed, fnode, created, chosen, variable=variable)


def _store_of(stores: list, created: ast.stmt | None, variable: str | None) -> tuple | None:
    """The store that kept the leaked value: the statement that made it, or one whose value reads
    its name; else the function's first store."""
    for stmt, destination, value in stores:
        mentions = value is not None and variable is not None and variable in clues.names_in(value)
        if stmt is created or mentions:
            return (stmt, destination, value)
    return stores[0] if stores else None


@describes("tracer-leak")
def describe(case, found: StoredTracer) -> Diagnosis:
    """The store removed and the value returned instead (or, in a helper, the store removed)."""
    traced, origin, usage, parsed, fnode = found.traced, found.origin, found.usage, found.parsed, found.function
    if found.in_helper:
        return _leak_from_helper(case, traced, origin, usage, parsed, fnode)
    created, variable = found.created, found.variable
    stmt, destination, value = found.store
    if variable is None or stmt is created:
        # ``global g; g = f(x)``: the stored expression is the value to hand back.
        variable = (
            _root_name(stmt.targets[0])
            if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name)
            else (value.id if isinstance(value, ast.Name) else variable)
        )
    where = sources.source_line(parsed.file, stmt.lineno, traced.name, case.cell_namer)
    created_at = sources.source_line(parsed.file, origin[1], traced.name, case.cell_namer) if origin else None
    returned = variable or (clues.source_of(parsed, value) if value is not None else "the value")
    if stmt is created or (isinstance(stmt, ast.Assign) and destination.startswith("the global")):
        edits = rewrites.ungloballed(fnode, variable)
    else:
        edits = [rewrites.Edit(Span.of(stmt), "")]
    edits += rewrites.handed_back(parsed, fnode, returned)
    fix = rewrites.with_edits(parsed.lines, rewrites.function_first_line(fnode), fnode.end_lineno, edits)
    fix += f"\n\n# the caller keeps it:  result, {returned} = {traced.name}(...)"
    explanation = say(
        "{} was computed inside {} while JAX traced it{}, and {} stored it in {} ({}) instead of returning it. Outside "
        "the trace that stored value is a stand-in (a tracer) with no value, so using it{} fails.",
        code(returned),
        code(traced.name),
        say(" ({})", place(created_at)) if created_at else "",
        code(traced.name),
        destination,
        place(where),
        say(" at {}", place(usage)) if usage else "",
    )
    return case.diagnosis(
        "tracer-leak",
        explanation=explanation,
        fix=fix,
        fix_note=say(
            "Return {} from {} (a jitted function hands back everything through its return value).",
            code(returned),
            code(traced.name),
        ),
        where=where,
        variable=returned,
        function=traced.name,
        alternatives=(
            (
                "To debug, print it from inside the compiled code instead:",
                f'{rewrites.jax_names(case.innermost.frame.f_globals).jax if case.innermost else "jax"}.debug.print("{returned} = {{}}", {returned})',
            ),
        ),
    )
