"""``donated-nnx-state``: a Flax NNX model used after the state split from it was donated.

``nnx.state(model)`` and ``nnx.split(model)`` hand out the model's own Variables: the state and the
model share their arrays. Passing that state to a ``jax.jit`` function at a donated position lets
JAX reuse the arrays' memory for the result and delete them, so the next use of the model fails
with "Array has been deleted". The recogniser finds the model read, the line that split its state
and the call that donated it; the fix updates the model with the state the call returned.

>>> from jaxmagic.doctor.registry import PITFALLS
>>> PITFALLS["donated-nnx-state"].severity
'error'
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from typing import Any

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.donations as donations
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.clues import ParsedSource, Span, UserFrame
from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.registry import describes, pitfall
from jaxmagic.tracing import sources
from jaxmagic.words import code, place, say

SPLITTERS = ("state", "split")  # the nnx functions that hand out a model's own Variables


@dataclass(frozen=True)
class StateOrigin:
    """Where the user took a model's state: the statement, the ``nnx.state`` / ``nnx.split`` call,
    the names it bound to states, and the argument as written (``model``, ``(model, optimizer)``)."""

    source: ParsedSource
    statement: ast.stmt
    call: ast.Call
    state_names: tuple[str, ...]
    subject: str


@dataclass(frozen=True)
class DonatedModel:
    """What ``donated_nnx_state`` found: the model's name and the frame that read it, where its
    state was taken, and the donating call ``(source, call, callee, parameter)``."""

    model: str
    frame: UserFrame
    origin: StateOrigin
    donation: tuple


def _splitter(node: ast.AST, lookup) -> str | None:
    """``state`` / ``split`` when ``node`` is a call to ``nnx.state`` / ``nnx.split``."""
    nnx = sys.modules.get("flax.nnx")
    if nnx is None or not isinstance(node, ast.Call):
        return None
    callee = clues.resolve(node.func, lookup)
    return next((name for name in SPLITTERS if callee is getattr(nnx, name, None)), None)


def _state_call_of(value: ast.AST, model: str, lookup) -> ast.Call | None:
    """The ``nnx.state(...)`` / ``nnx.split(...)`` call inside ``value`` whose first argument
    mentions ``model`` (``nnx.state(model).to_pure_dict()`` counts)."""
    for node in clues.nodes_in(value, ast.Call):
        if _splitter(node, lookup) and node.args and model in clues.names_in(node.args[0]):
            return node
    return None


def _bound_states(statement: ast.Assign, call: ast.Call, lookup) -> tuple[str, ...]:
    """The names an assignment binds to states: all but the graphdef of ``nnx.split``."""
    (target,) = statement.targets
    if isinstance(target, ast.Name):
        return (target.id,)
    if not isinstance(target, ast.Tuple):
        return ()
    names = [e.id for e in target.elts if isinstance(e, ast.Name)]
    return tuple(names[1:] if _splitter(call, lookup) == "split" and statement.value is call else names)


def _origins(case, frame: UserFrame, model: str) -> list[StateOrigin]:
    """Every place the user took ``model``'s state, the latest first."""
    found = []
    for parsed in donations.candidate_sources(case, frame):
        here = []
        for statement in clues.nodes_in(parsed.tree, ast.Assign):
            call = _state_call_of(statement.value, model, frame.lookup) if len(statement.targets) == 1 else None
            if call is not None:
                names = _bound_states(statement, call, frame.lookup)
                subject = clues.source_of(parsed, call.args[0])
                here.append(StateOrigin(parsed, statement, call, names, subject))
        found += sorted(here, key=lambda origin: -origin.statement.lineno)
    return found


def _donated_state(case, frame: UserFrame, model: str, origins: list[StateOrigin]):
    """``(origin, (source, call, callee, parameter))``: the latest call that donated a state taken
    from ``model``, passed by its name or written in place (``step(nnx.state(model))``)."""
    names = {name: origin for origin in reversed(origins) for name in origin.state_names}
    for index, parsed in enumerate(donations.candidate_sources(case, frame)):
        best = None
        for call in clues.nodes_in(parsed.tree, ast.Call):
            if index == 0 and call.lineno >= frame.line:
                continue
            callee = clues.resolve(call.func, frame.lookup)
            if not donations.is_donating_jit(callee):
                continue
            _, donated = donations.donated_positions(callee)
            for parameter, node in rewrites.call_parameters(call, callee).items():
                if parameter not in donated:
                    continue
                origin = names.get(node.id) if isinstance(node, ast.Name) else None
                inline = _state_call_of(node, model, frame.lookup)
                if inline is not None:
                    statement = clues.statement_at(parsed.tree, call.lineno)
                    origin = StateOrigin(parsed, statement, inline, (), clues.source_of(parsed, inline.args[0]))
                if origin is not None and (best is None or call.lineno > best[1][1].lineno):
                    best = (origin, (parsed, call, callee, parameter))
        if best is not None:
            return best
    return None


@pitfall(
    "donated-nnx-state",
    "A Flax NNX model used after its state was donated",
    "error",
    order=19,  # before donated-buffer: the model, not an array, is what the user reads
    messages=("Array has been deleted", "has been deleted or donated"),
)
def donated_nnx_state(case) -> DonatedModel | None:
    """``donated-nnx-state``: a model read after the state split from it was donated.

    >>> import jax, jax.numpy as jnp
    >>> from flax import nnx
    >>> from jaxmagic.doctor.case import Case
    >>> step = jax.jit(lambda state: jax.tree_util.tree_map(lambda a: a / 2, state), donate_argnums=0)
    >>> model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    >>> try:
    ...     state = nnx.state(model)
    ...     state = step(state)
    ...     y = model(jnp.ones(2))
    ... except (RuntimeError, ValueError) as exc:
    ...     case = Case(exc, None, lambda filename: None)
    >>> found = describe(case, donated_nnx_state(case))
    >>> found.variable, found.fix.splitlines()[1]
    ('model', 'nnx.update(model, state)  # `model` takes the arrays `step` returned')
    """
    if not case.says("donated-nnx-state") or "flax.nnx" not in sys.modules:
        return None
    for frame in case.frames:  # the outermost first: where the user names the model
        statement = case.statement(frame)
        for name in clues.names_in(statement) if statement is not None else []:
            value = frame.lookup(name)
            if not (donations.is_nnx_object(value) and donations.has_deleted(value)):
                continue
            found = _donated_state(case, frame, name, _origins(case, frame, name))
            if found is not None:
                return DonatedModel(name, frame, *found)
    return None


def _returned_state(case, facts: DonatedModel) -> str | None:
    """The name the donating call's result (the new state) is bound to, where it can be told."""
    parsed, call, _, parameter = facts.donation
    statement = clues.statement_at(parsed.tree, call.lineno)
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1 and statement.value is call):
        return None
    target = statement.targets[0]
    if isinstance(target, ast.Name):
        return target.id
    if not isinstance(target, ast.Tuple):
        return None
    names = [e.id for e in target.elts if isinstance(e, ast.Name)]
    passed = rewrites.call_parameters(call, facts.donation[2]).get(parameter)
    if isinstance(passed, ast.Name) and passed.id in names:
        return passed.id  # loss, state = step(graphdef, state, ...): the state is rebound
    states = [n for n in names if _is_state(facts.frame.lookup(n))]
    return states[0] if len(states) == 1 else None


def _is_state(value: Any) -> bool:
    statelib = sys.modules.get("flax.nnx.statelib")
    return statelib is not None and isinstance(value, statelib.State)


def _copied_state(frame: UserFrame, origin: StateOrigin) -> str:
    """The statement that took the state, followed by a copy of the arrays of each state it bound
    (``nnx.clone`` would not do: the clone's Variables hold the very same arrays)."""
    jn = rewrites.jax_names(frame.frame.f_globals)
    statement = origin.statement
    if origin.state_names:
        copies = "".join(f"\n{n} = {jn.jax}.tree_util.tree_map(lambda a: a.copy(), {n})" for n in origin.state_names)
        end = Span(statement.end_lineno, statement.end_lineno, statement.end_col_offset, statement.end_col_offset)
        edit = rewrites.Edit(end, copies, comment="arrays of their own, not the model's")
    else:  # written in place: step(nnx.state(model))
        call = clues.source_of(origin.source, origin.call)
        edit = rewrites.Edit(Span.of(origin.call), f"{jn.jax}.tree_util.tree_map(lambda a: a.copy(), {call})")
    return rewrites.with_edits(origin.source.lines, statement.lineno, statement.end_lineno, [edit])


@describes("donated-nnx-state")
def describe(case, facts: DonatedModel) -> Diagnosis:
    """The model updated with the returned state right after the donating call, in words and as code."""
    frame, model, origin = facts.frame, facts.model, facts.origin
    parsed, call, callee, parameter = facts.donation
    where = case.where(frame)
    fname = donations.callee_name(call, callee)
    option = donations.donation_option(callee)
    nnx = rewrites.alias(frame.frame.f_globals, sys.modules["flax.nnx"], "nnx")
    taken_at = sources.source_line(origin.source.file, origin.statement.lineno, "", case.cell_namer)
    donated_at = sources.source_line(parsed.file, call.lineno, "", case.cell_namer)
    state = origin.state_names[0] if origin.state_names else None
    explanation = say(
        "{} ({}) hands out {}'s own Variables: the state and {} share their arrays. At {} you passed {} to {}, "
        "which donates its parameter {} ({}): JAX reused those arrays' memory for the result and deleted them. "
        "{} still holds the deleted arrays, so using it ({}) fails. (Without donation this would run, silently on "
        "the weights {} had before the call: {} sees what {} returns only once you {} it.)",
        code(clues.source_of(origin.source, origin.statement)),
        place(taken_at),
        code(model),
        code(model),
        place(donated_at),
        code(state) if state else say("the state of {}", code(model)),
        code(fname),
        code(parameter),
        code(option),
        code(model),
        place(where),
        code(model),
        code(model),
        code(fname),
        code(f"{nnx}.update"),
    )
    returned = _returned_state(case, facts)
    statement = clues.statement_at(parsed.tree, call.lineno)
    if returned is not None and statement is not None:
        update = f"{nnx}.update({origin.subject}, {returned})"
        end = Span(statement.end_lineno, statement.end_lineno, statement.end_col_offset, statement.end_col_offset)
        edit = rewrites.Edit(end, f"\n{update}", comment=f"`{model}` takes the arrays `{fname}` returned")
        fix = rewrites.with_edits(parsed.lines, statement.lineno, statement.end_lineno, [edit])
        note = say(
            "Update {} with the state {} returned, right after the call: {} then holds live arrays, the new ones.",
            code(model),
            code(fname),
            code(model),
        )
    else:
        fix = ""  # the returned state has no name to update with: the fix in words
        note = say(
            "Bind what {} returns to a name and call {} right after it: {} then holds live arrays.",
            code(fname),
            code(f"{nnx}.update({origin.subject}, new_state)"),
            code(model),
        )
    alternatives = []
    kept = _copied_state(frame, origin)
    if kept:
        alternatives.append(
            (
                say(
                    "To keep {} as it was (what the code does without donation), donate a copy of its arrays: one "
                    "copy, made once, not one per call:",
                    code(model),
                ),
                kept,
            )
        )
    alternatives.append((say("Or stop donating: remove {} from the jit of {}.", code(option), code(fname)), ""))
    return case.diagnosis(
        "donated-nnx-state",
        explanation=explanation,
        fix=fix,
        fix_note=note,
        alternatives=tuple(alternatives),
        where=where,
        variable=model,
        function=fname,
    )
