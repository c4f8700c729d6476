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
>>> traced = Traced([Counter.count], None, None, lambda filename: None, (counter,))
>>> (found,) = describe(traced, state_mutations(traced))
>>> found.severity, found.variable, found.fix.splitlines()[0]
('warning', 'self.n', 'def count(n):')
"""

from __future__ import annotations

import ast
import types
from dataclasses import dataclass

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.clues import Span
from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.registry import describes, pitfall
from jaxmagic.doctor.traced_code import Traced, function_node
from jaxmagic.tracing import sources
from jaxmagic.words import code, names, place, say


@dataclass(frozen=True)
class Mutation:
    """A traced method's assignments to attributes of its own object (``self.n += 1``)."""

    function: types.FunctionType
    located: tuple
    owner: str  # the method's first parameter: "self"
    statements: tuple  # the assigning statements, in source order
    attributes: tuple  # the attributes assigned, in order of first assignment


def _is_library_object(obj) -> bool:
    """Objects whose libraries carry state changes out of the compiled code themselves (a Flax
    NNX module's variables) or forbid them (an Equinox module is frozen)."""
    return any(cls.__module__.split(".")[0] in ("flax", "equinox") for cls in type(obj).__mro__)


@pitfall("state-mutation", "A traced method changes its object's attributes", "warning", stage="trace", order=45)
def state_mutations(traced: Traced) -> list[Mutation]:
    """``state-mutation``: each traced method of the object the call is bound to (or of an argument)
    that assigns ``self.<attribute>``."""
    found = []
    owners = [a for a in traced.arguments if not isinstance(a, type) and hasattr(a, "__dict__")]
    for function in traced.functions[:1]:  # the traced method itself (its object's other methods may not run)
        owner_object = next((o for o in owners if getattr(type(o), function.__name__, None) is function), None)
        if owner_object is None or _is_library_object(owner_object):
            continue
        located = function_node(function)
        if located is None or isinstance(located[1], ast.Lambda) or not located[1].args.args:
            continue
        owner = located[1].args.args[0].arg
        statements, attributes = _assignments_to(located[1], owner)
        if statements:
            found.append(Mutation(function, located, owner, tuple(statements), tuple(attributes)))
    return found


def _assignments_to(fnode: ast.AST, owner: str) -> tuple[list[ast.stmt], list[str]]:
    """The statements that assign ``<owner>.<attribute>`` (in source order) and those attributes."""
    statements, attributes = [], []
    for node in clues.nodes_in(fnode, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        assigned = [
            t.attr
            for t in targets
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == owner
        ]
        if assigned:
            statements.append(node)
            attributes += [a for a in assigned if a not in attributes]
    statements.sort(key=lambda n: (n.lineno, n.col_offset))
    return statements, attributes


@describes("state-mutation")
def describe(traced: Traced, found: list[Mutation]) -> list[Diagnosis]:
    """One warning per method: what runs only while tracing, and the state passed in and returned."""
    return [_describe_one(traced, mutation) for mutation in found]


def _describe_one(traced: Traced, mutation: Mutation) -> Diagnosis:
    function, (parsed, node) = mutation.function, mutation.located
    first = mutation.statements[0]
    where = sources.source_line(function.__code__.co_filename, first.lineno, function.__name__, traced.cell_namer)
    assigned = [f"{mutation.owner}.{a}" for a in mutation.attributes]
    explanation = say(
        "{} ({}) changes {} while JAX traces {}: the assignment is Python, so it runs once, when JAX traces, not "
        "each time the compiled code runs. Later calls return what the compiled code computed from the value "
        "{} had then, and leave the object unchanged.",
        code(clues.source_of(parsed, first)),
        place(where),
        names(assigned),
        code(function.__qualname__),
        names(assigned) if len(assigned) > 1 else code(assigned[0]),
    )
    fix = _functional(parsed, node, mutation)
    return Diagnosis(
        "state-mutation",
        explanation=explanation,
        fix=fix or "",  # more than one attribute, or other uses of the object: the fix in words
        fix_note=say(
            "Keep the state out of the object: pass it in and return the new state with the result, then keep "
            "the returned state yourself ({}).",
            code(f"result, {mutation.attributes[0]} = {function.__name__}({mutation.attributes[0]})"),
        ),
        fix_call=f"{function.__name__}({mutation.owner}.{mutation.attributes[0]})" if fix else "",
        where=where,
        variable=assigned[0],
        function=function.__qualname__,
        reference="https://docs.jax.dev/en/latest/stateful-computations.html",
    )


def _functional(parsed, node, mutation: Mutation) -> str | None:
    """For one attribute: the method as a function of that state returning ``(result, new state)``
    (``def count(n): n += 1; return n, n``); ``None`` where the method is not that simple."""
    if len(mutation.attributes) != 1 or len(node.args.args) != 1 or node.args.vararg or node.args.kwarg:
        return None
    attribute, owner = mutation.attributes[0], mutation.owner
    uses = [
        n
        for n in clues.nodes_in(node, ast.Name)
        if n.id == owner and n is not node.args.args[0]  # every use of self must be self.<attribute>
    ]
    attribute_uses = [
        n
        for n in clues.nodes_in(node, ast.Attribute)
        if isinstance(n.value, ast.Name) and n.value.id == owner and n.attr == attribute
    ]
    returns = [n for n in clues.nodes_in(node, ast.Return)]
    if len(uses) != len(attribute_uses) or len(returns) != 1 or returns[0] is not node.body[-1]:
        return None
    if returns[0].value is None:
        return None
    edits = [rewrites.Edit(Span.of(n), attribute) for n in attribute_uses]
    edits += _state_returned(returns[0].value, attribute)
    edits.append(rewrites.Edit(Span.of(node.args.args[0]), attribute))
    if node.returns is not None:  # the annotation no longer holds: it returns the state too
        dropped = _annotation_dropped(parsed, node.returns)
        if dropped is None:
            return None
        edits.append(dropped)
    return rewrites.with_edits(parsed.lines, node.lineno, node.end_lineno, edits)


def _state_returned(value: ast.expr, attribute: str) -> list[rewrites.Edit]:
    """``return a`` -> ``return a, n``; ``return a, b`` -> ``return (a, b), n``."""
    end = Span(value.end_lineno, value.end_lineno, value.end_col_offset, value.end_col_offset)
    if isinstance(value, ast.Tuple):
        start = Span(value.lineno, value.lineno, value.col_offset, value.col_offset)
        return [rewrites.Edit(start, "("), rewrites.Edit(end, f"), {attribute}")]
    return [rewrites.Edit(end, f", {attribute}")]


def _annotation_dropped(parsed, returns: ast.expr) -> rewrites.Edit | None:
    """The edit that removes `` -> T`` from a ``def`` line (``None``: the arrow is not found)."""
    line = parsed.lines[returns.lineno - 1].encode()
    arrow = line.rfind(b"->", 0, returns.col_offset)
    if arrow < 0:
        return None
    while arrow > 0 and line[arrow - 1 : arrow] == b" ":
        arrow -= 1
    return rewrites.Edit(Span(returns.lineno, returns.end_lineno, arrow, returns.end_col_offset), "")
