"""``donated-nnx-state``: a Flax NNX model used after the state split from it was donated.

``nnx.state(model)`` and ``nnx.split(model)`` hand out the model's own Variables: donating that state
deletes the model's arrays too ("Array has been deleted"). The fix updates the model with the state
the donating call returned.

>>> import jax, jax.numpy as jnp, flax.nnx as nnx
>>> from jaxmagic.doctor.case import Case
>>> step = jax.jit(lambda state: jax.tree_util.tree_map(lambda a: a / 2, state), donate_argnums=0)
>>> model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
>>> try:
...     state = nnx.state(model)
...     state = step(state)
...     y = model(jnp.ones(2))
... except (RuntimeError, ValueError) as exc:
...     case = Case(exc, None, lambda filename: None)
>>> found = DONATED_NNX_STATE.diagnose(case)
>>> found.variable, found.fix.splitlines()[1]
('model', 'nnx.update(model, state)  # `model` takes the arrays `step` returned')
"""

from __future__ import annotations

import ast
import sys
from typing import NamedTuple

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.donations as donations
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.clues import ParsedSource, UserFrame
from jaxmagic.doctor.declared import Declared, Given, Line, edited, end_of
from jaxmagic.tracing import sources

# Where the user took a model's state: the statement, the ``nnx.state`` / ``nnx.split`` call, and the
# names it bound to states (none: written in place, ``step(nnx.state(model))``).
StateOrigin = NamedTuple("StateOrigin", [("source", ParsedSource), ("statement", ast.stmt), ("call", ast.Call),
                                         ("state_names", tuple[str, ...])])  # fmt: skip


def _state_call_of(value: ast.AST, model: str, lookup, splitters=("state", "split")) -> ast.Call | None:
    """The ``nnx.state(...)`` / ``nnx.split(...)`` call in ``value`` whose first argument reads ``model``."""
    nnx = sys.modules.get("flax.nnx")
    found = [f for f in (getattr(nnx, name, None) for name in splitters) if f is not None]
    calls = (n for n in ast.walk(value) if isinstance(n, ast.Call) and n.args and model in clues.names_in(n.args[0]))
    return next((c for c in calls if any(clues.resolve(c.func, lookup) is f for f in found)), None)


def _origins(case, frame: UserFrame, model: str) -> dict[str, StateOrigin]:
    """The names the user bound to ``model``'s state, each with where: the latest binding wins."""
    found, lookup = {}, frame.lookup
    for parsed in reversed(donations.candidate_sources(case, frame)):
        assigned = sorted((n for n in ast.walk(parsed.tree) if isinstance(n, ast.Assign)), key=lambda s: s.lineno)
        taken = [(s, c) for s in assigned if len(s.targets) == 1 and (c := _state_call_of(s.value, model, lookup))]
        for statement, call in taken:  # ``graphdef, state = nnx.split(model)``: all but the graphdef
            target, split = statement.targets[0], _state_call_of(call, model, lookup, ("split",)) is statement.value
            bound = target.elts[1 if split else 0 :] if isinstance(target, ast.Tuple) else [target]
            names = [e.id for e in bound if isinstance(e, ast.Name)]
            found.update(dict.fromkeys(names, StateOrigin(parsed, statement, call, tuple(names))))
    return found


def donated_nnx_state(line: Line) -> dict | None:
    """A model read (the outermost frame first: where the user names it) whose state a call donated."""
    for frame in line.case.frames:
        statement, lookup = line.case.statement(frame), frame.lookup
        names = clues.names_in(statement) if statement is not None else []
        deleted = [n for n in names if donations.is_nnx_object(v := lookup(n)) and donations.has_deleted(v)]
        found = next(filter(None, (_donated(line, frame, model) for model in deleted)), None)
        if found is not None:
            return found
    return None


def _donated(line: Line, frame: UserFrame, model: str) -> dict | None:
    case, named = line.case, _origins(line.case, frame, model)
    inline = lambda node: _state_call_of(node, model, frame.lookup)  # noqa: E731  step(nnx.state(model))
    found = donations.find_donation(case, frame, lambda node: getattr(node, "id", None) in named or bool(inline(node)))
    if found is None:
        return None
    parsed, call, callee, parameter = found
    passed, statement = rewrites.call_parameters(call, callee)[parameter], clues.statement_at(parsed.tree, call.lineno)
    written = inline(passed)
    named_origin = named.get(getattr(passed, "id", ""))  # step(state), after state = nnx.state(model)
    origin = StateOrigin(parsed, statement, written, ()) if written and statement else named_origin
    if origin is None or statement is None:
        return None
    nnx = rewrites.alias(frame.frame.f_globals, sys.modules["flax.nnx"], "nnx")
    fname, returned = donations.callee_name(call, callee), _returned_state(statement, call, passed, frame)
    update = f"{nnx}.update({clues.source_of(origin.source, origin.call.args[0])}, {returned or 'new_state'})"
    after = rewrites.Edit(end_of(statement), f"\n{update}", f"`{model}` takes the arrays `{fname}` returned")
    fixed = edited(parsed.lines, statement, after) if returned else None
    return {"model": model, "where": case.where(frame), "taken": clues.source_of(origin.source, origin.statement),
            "taken_at": sources.source_line(origin.source.file, origin.statement.lineno, "", case.cell_namer),
            "donated_at": sources.source_line(parsed.file, call.lineno, "", case.cell_namer),
            "state": origin.state_names[0] if origin.state_names else None,
            "fname": fname, "parameter": parameter, "option": donations.donation_option(callee), "nnx": nnx,
            "update": update, "fixed": fixed, "kind": "" if fixed else "unnamed",
            "kept": _copied_state(origin, case.names(frame).jax)}  # fmt: skip


def _returned_state(statement: ast.stmt | None, call: ast.Call, passed: ast.expr, frame: UserFrame) -> str | None:
    """The name the donating call's result (the new state) is bound to, where it can be told."""
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1 and statement.value is call):
        return None
    target = statement.targets[0]
    names = [e.id for e in target.elts if isinstance(e, ast.Name)] if isinstance(target, ast.Tuple) else []
    if isinstance(passed, ast.Name) and passed.id in names:
        return passed.id  # loss, state = step(graphdef, state, ...): the state is rebound
    states = [n for n in names if isinstance(frame.lookup(n), getattr(sys.modules.get("flax.nnx"), "State", ()))]
    return target.id if isinstance(target, ast.Name) else states[0] if len(states) == 1 else None


def _copied_state(origin: StateOrigin, jax: str) -> str:
    """The statement that took the state, then a copy of the arrays of each state it bound (not
    ``nnx.clone``: the clone's Variables hold the very same arrays)."""
    statement, copy = origin.statement, f"{jax}.tree_util.tree_map(lambda a: a.copy(), {{}})"
    if origin.state_names:
        copies = "".join(f"\n{n} = " + copy.format(n) for n in origin.state_names)
        kept = rewrites.Edit(end_of(statement), copies, "arrays of their own, not the model's")
    else:  # in place: step(nnx.state(model))
        kept = rewrites.Edit(clues.Span.of(origin.call), copy.format(clues.source_of(origin.source, origin.call)))
    return edited(origin.source.lines, statement, kept)


_UNNAMED = "Bind what {fname} returns to a name and call {update} right after it: {model} then holds live arrays."
_KEEP = "To keep {model} as it was (what the code does without donation), donate a copy of its arrays: one copy, made \
once, not one per call:"

DONATED_NNX_STATE = Declared(
    "donated-nnx-state",
    "A Flax NNX model used after its state was donated",
    donated_nnx_state,
    messages=("Array has been deleted", "has been deleted or donated", "called on deleted or donated buffer"),
    order=19,  # before donated-buffer: the model, not an array, is what the user reads
    explanation="{taken} ({taken_at}) hands out the Variables of {model} itself: the state and {model} share their arrays. "
    "At {donated_at} you passed {passed} to {fname}, which donates its parameter {parameter} ({option}): JAX reused "
    "those arrays' memory for the result and deleted them. {model} still holds the deleted arrays, so using it "
    "({where}) fails. (Without donation this would run, silently on the weights {model} had before the call: {model} "
    "sees what {fname} returns only once you `{nnx}.update` it.)",
    rewrite=(Given("fixed"),),
    fix_note="Update {model} with the state {fname} returned, right after the call: {model} then holds live arrays, "
    "the new ones.",
    kinds={"unnamed": {"fix_note": _UNNAMED}},
    pieces={"passed": ("{state}", "the state of {model}")},
    alternatives=((_KEEP, "{kept}"), ("Or stop donating: remove {option} from the jit of {fname}.", "")),
    variable="model",
    function="fname",
)
