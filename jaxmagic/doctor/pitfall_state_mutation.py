"""``state-mutation``: a traced method that changes its object (``self.n += 1``). The assignment is
Python: it runs while JAX traces, once, not each time the compiled code runs, so the compiled
code keeps returning what it computed then and the object stops changing. JAX's way is to pass
the state in and return the new state.

>>> class Counter:
...     def __init__(self):
...         self.n = 0
...     def count(self):
...         self.n += 1
...         return self.n
>>> counter = Counter()
>>> from jaxmagic.doctor.traced_code import Traced
>>> traced = Traced([Counter.count], None, None, lambda filename: None, (counter,))
>>> (found,) = STATE_MUTATION.notice(traced)
>>> found.severity, found.variable, found.fix.splitlines()[0]
('warning', 'self.n', 'def count(n):')
"""

from __future__ import annotations

import ast

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.clues import Span
from jaxmagic.doctor.declared import Function, Given, WithFields, edited, end_of, start_of
from jaxmagic.tracing.callables import python_function


def _is_library_object(obj) -> bool:
    """Objects whose libraries carry state changes out of the compiled code themselves (a Flax
    NNX module's variables) or forbid them (an Equinox module is frozen)."""
    return any(cls.__module__.split(".")[0] in ("flax", "equinox") for cls in type(obj).__mro__)


def state_mutation(function: Function) -> dict | None:
    """The traced method itself (its object's other methods may not run), bound to the object the
    call is bound to (or an argument), where it assigns ``self.<attribute>``: the first such
    statement, the attributes, and the method as a function of that state where it is simple."""
    traced, node = function.traced, function.node
    if function.sourced.function is not traced.functions[0] or not isinstance(node, ast.FunctionDef):
        return None
    owners = [a for a in traced.arguments if not isinstance(a, type) and hasattr(a, "__dict__")]
    owner_object = next((o for o in owners if python_function(getattr(type(o), function.name, None)) is traced.functions[0]), None)  # fmt: skip
    if owner_object is None or _is_library_object(owner_object) or not node.args.args:
        return None
    owner = node.args.args[0].arg
    statements, attributes = _assignments_to(node, owner)
    if not statements:
        return None
    fixed = _functional(function.parsed, node, owner, attributes)
    return {"at": statements[0], "statement": statements[0], "assigned": [f"{owner}.{a}" for a in attributes],
            "variable_name": f"{owner}.{attributes[0]}", "attribute": attributes[0], "fixed": fixed,
            "qualname": function.sourced.function.__qualname__,
            "fix_call": f"{function.name}({owner}.{attributes[0]})" if fixed else ""}  # fmt: skip


def _assignments_to(fnode: ast.AST, owner: str) -> tuple[list[ast.stmt], list[str]]:
    """The statements that assign ``<owner>.<attribute>`` (in source order) and those attributes."""
    statements, attributes = [], []
    for node in ast.walk(fnode):
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if not isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            continue
        assigned = [
            t.attr
            for t in targets
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == owner
        ]
        if assigned:
            statements.append(node)
            attributes += [a for a in assigned if a not in attributes]
    return clues.in_order(statements), attributes


def _functional(parsed: clues.ParsedSource, node: ast.FunctionDef, owner: str, attributes: list[str]) -> str | None:
    """For one attribute: the method as a function of that state returning ``(result, new state)``
    (``def count(n): n += 1; return n, n``); ``None`` where the method is not that simple."""
    attribute_uses, returned = _simple(node, owner, attributes)
    if returned is None:
        return None
    attribute = attributes[0]
    edits = [rewrites.Edit(Span.of(n), attribute) for n in attribute_uses]
    edits += _state_returned(returned, attribute)
    edits.append(rewrites.Edit(Span.of(node.args.args[0]), attribute))
    if node.returns is not None:  # the annotation no longer holds: it returns the state too
        dropped = _annotation_dropped(parsed, node.returns)
        if dropped is None:
            return None
        edits.append(dropped)
    return edited(parsed.lines, node, *edits)


def _simple(node: ast.FunctionDef, owner: str, attributes: list[str]) -> tuple[list[ast.Attribute], ast.expr | None]:
    """The method's uses of ``self.<attribute>`` and the value it returns, where it is that simple:
    one parameter, one attribute, every use of ``self`` that attribute, one ``return`` at its end."""
    if len(attributes) != 1 or len(node.args.args) != 1 or node.args.vararg or node.args.kwarg:
        return [], None
    inside = list(ast.walk(node))
    uses = [n for n in inside if isinstance(n, ast.Name) and n.id == owner]
    attribute_uses = clues.attributes_of(node, owner)
    returns = [n for n in inside if isinstance(n, ast.Return)]
    if any(n.attr != attributes[0] for n in attribute_uses) or len(uses) != len(attribute_uses) or len(returns) != 1:
        return [], None
    return attribute_uses, returns[0].value if returns[0] is node.body[-1] else None


def _state_returned(value: ast.expr, attribute: str) -> list[rewrites.Edit]:
    """``return a`` -> ``return a, n``; ``return a, b`` -> ``return (a, b), n``."""
    if isinstance(value, ast.Tuple):
        return [rewrites.Edit(start_of(value), "("), rewrites.Edit(end_of(value), f"), {attribute}")]
    return [rewrites.Edit(end_of(value), f", {attribute}")]


def _annotation_dropped(parsed, returns: ast.expr) -> rewrites.Edit | None:
    """The edit that removes `` -> T`` from a ``def`` line (``None``: the arrow is not found)."""
    line = parsed.lines[returns.lineno - 1].encode()
    arrow = line.rfind(b"->", 0, returns.col_offset)
    if arrow < 0:
        return None
    while arrow > 0 and line[arrow - 1 : arrow] == b" ":
        arrow -= 1
    end = end_of(returns)
    return rewrites.Edit(Span(returns.lineno, end.end_line, arrow, end.end_col), "")


STATE_MUTATION = WithFields(
    "state-mutation",
    "A traced method changes its object's attributes",
    state_mutation,
    severity="warning",
    stage="trace",
    order=45,
    explanation="{statement} ({where}) changes {assigned} while JAX traces {qualname}: the assignment is Python, so it "
    "runs once, when JAX traces, not each time the compiled code runs. Later calls return what the compiled code "
    "computed from the value {assigned} had then, and leave the object unchanged.",
    rewrite=(Given("fixed"),),
    fix_note="Keep the state out of the object: pass it in and return the new state with the result, then keep the "
    "returned state yourself (`result, {attribute} = {function}({attribute})`).",
    variable="variable_name",
    function="qualname",
    reference="https://docs.jax.dev/en/latest/stateful-computations.html",
)
