"""``python-control-flow``: Python's ``if`` / ``while`` / ``assert`` / ``bool()`` on a traced value.

The fix marks the argument static where it is a scalar argument of a jitted function, and rewrites
the statement with ``jax.lax.cond`` / ``jnp.where`` / ``jax.lax.while_loop`` / ``checkify``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import jax

import jaxmagic.doctor.branch_rewrites as branch_rewrites
import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.case import (
    Case,
    depends_on,
    function_source,
    kind_of,
    magic_hint,
    static_choice,
    static_field_choice,
)
from jaxmagic.doctor.clues import Span, UserFrame
from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.registry import describes, pitfall
from jaxmagic.words import Words, code, place, say

# python-control-flow


_CONSTRUCTS = {
    "if": "if {cond}:",
    "while": "while {cond}:",
    "assert": "assert {cond}",
    "ternary": "... if {cond} else ...",
    "bool": "bool({cond})",
    "not": "not {cond}",
}


def _construct(kind: str, cond: str) -> Words:
    """The Python construct that asked for a truth value, in words: ``if n > 0:``, ``and`` / ``or`` on ..."""
    if kind == "and-or":
        return say("{} / {} on {}", code("and"), code("or"), code(cond))
    if kind == "other":
        return say("{} as a True / False", code(cond))
    return say("{}", code(_CONSTRUCTS[kind].format(cond=cond)))


def _condition(case: Case, frame: UserFrame):
    """What asked for a truth value (``if``, ``while``, ``bool()``...) and the condition's node."""
    parsed = case.parsed(frame)
    if parsed is None:
        return "other", None, None
    span = frame.span()
    statement = clues.statement_at(parsed.tree, frame.line)
    node = clues.node_at(parsed.tree, span)
    if isinstance(statement, (ast.If, ast.While, ast.Assert)) and span is not None:
        test = Span.of(statement.test)
        # A bare name as the test: the jump's position is the whole statement, not the name.
        if test.contains(span) or (span.contains(test) and span.line == statement.lineno):
            kind = {ast.If: "if", ast.While: "while", ast.Assert: "assert"}[type(statement)]
            return kind, statement.test, statement
    if node is not None:
        ternary = node if isinstance(node, ast.IfExp) else clues.enclosing(parsed.tree, node, ast.IfExp)
        if ternary is not None and (ternary is node or Span.of(ternary.test).contains(Span.of(node))):
            return "ternary", ternary.test, ternary
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "bool" and node.args:
            return "bool", node.args[0], node
        if isinstance(node, ast.BoolOp):
            return "and-or", node, node
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return "not", node.operand, node
    return "other", node, statement


def _parent_of(tree: ast.AST, child: ast.AST) -> ast.AST | None:
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and child in block:
                return node
    return None


@dataclass(frozen=True)
class TracedCondition:
    """What ``python_control_flow`` found: the construct (``if``, ``while``, ``and-or``...), the
    condition and the statement holding it, the traced names it depends on, and which could be static."""

    kind: str
    cond: ast.expr | None
    holder: ast.AST | None
    cond_text: str
    depends: tuple[str, ...]
    ambiguous: bool  # NumPy's "truth value of an array" on a traced array
    scalar: bool  # one value (not under vmap): lax.cond can choose
    static_names: tuple[str, ...]


@pitfall(
    "python-control-flow",
    "Python if / while on a traced value",
    "error",
    order=50,
    messages=("truth value of an array",),
)
def python_control_flow(case: Case) -> TracedCondition | None:
    """``python-control-flow``: ``if`` / ``while`` / ``assert`` / ``bool()`` on a traced value.

    >>> import jax, jax.numpy as jnp
    >>> from jaxmagic.doctor.case import Case
    >>> def halve(x, n):
    ...     while n > 0:
    ...         x, n = x / 2, n - 1
    ...     return x
    >>> try:
    ...     jax.jit(halve)(jnp.ones(2), 3)
    ... except Exception as exc:
    ...     case = Case(exc, None, lambda filename: None)
    >>> found = describe(case, python_control_flow(case))
    >>> found.variable, found.where.text, found.static_argnames
    ('n', 'while n > 0:', ('n',))
    """
    exc = case.exc
    ambiguous = isinstance(exc, ValueError) and case.says("python-control-flow")
    if not (isinstance(exc, jax.errors.TracerBoolConversionError) or ambiguous):
        return None
    frame = case.innermost
    if frame is None:
        return None
    kind, cond, holder = _condition(case, frame)
    traced_names = [n for n in (clues.names_in(cond) if cond is not None else []) if clues.is_tracer(frame.lookup(n))]
    if ambiguous and not traced_names:
        return None  # NumPy's own ambiguity outside any trace: a plain bug, not a JIT trap
    line_text = frame.source_line(case.cell_namer).text
    cond_text = (
        case.text(frame, cond)
        if cond is not None
        else (line_text if line_text and not line_text.lstrip().startswith("%") else "the condition")
    )
    depends = depends_on(case, frame, cond)
    return TracedCondition(
        kind=kind,
        cond=cond,
        holder=holder,
        cond_text=cond_text,
        depends=tuple(depends),
        ambiguous=ambiguous,
        scalar=not ambiguous and not case.batched,  # under vmap a condition holds one value per example
        static_names=tuple(case.static_candidates(depends) if not ambiguous else ()),
    )


@describes("python-control-flow")
def describe(case: Case, found: TracedCondition) -> Diagnosis:
    """Why Python's construct stopped the trace, and the fixes in the order that fits the value."""
    frame = case.innermost
    kind, cond, holder, cond_text = found.kind, found.cond, found.holder, found.cond_text
    depends, static_names = list(found.depends), list(found.static_names)
    variable = depends[0] if depends else None
    where = case.where(frame)
    fname = case.function_name or frame.function
    jn = case.names(frame)
    why = say(
        " Python's {} at {} needs a real True or False to decide, so tracing stops there.",
        _construct(kind, cond_text),
        place(where),
    )
    if found.ambiguous:
        why += " (It is an array of several values, too, and an array has no single truth value.)"
    choice = (
        static_choice(
            case,
            static_names,
            say(
                "JAX then compiles {} once per value it is called with, and your {} sees a plain Python value.",
                code(fname),
                code(kind) if kind in ("if", "while") else "condition",
            ),
        )
        if static_names
        else None
    )
    field = static_field_choice(case, frame, cond)
    static = [c for c in (field, choice) if c]
    rewrite = _control_flow_rewrite(case, frame, kind, holder, jn, found.scalar)
    kept_traced = [rewrite] if rewrite is not None else []
    # A setting (a bool, an int, a string) is best made static; data is best kept traced.
    flag = bool(field) or (bool(static_names) and all(case.is_flag(n) for n in static_names))
    fixes = (static + kept_traced) if flag else (kept_traced + static)
    if kind == "assert" and isinstance(holder, ast.Assert):
        fixes.append(_assert_rewrite(case, frame, holder, jn))
    if not fixes:
        fixes.append(_control_flow_template(kind, cond_text, jn))
    fixes += magic_hint(case, static_names)
    (note, fix), *others = fixes
    fixed_static = choice[1] if choice else None
    return case.diagnosis(
        "python-control-flow",
        explanation=_what_is_traced(case, found, variable, fname) + why,
        fix=fix,
        fix_note=note,
        alternatives=tuple(others),
        where=where,
        variable=variable,
        static_argnames=tuple(static_names) if static_names and fix == fixed_static else (),
    )


def _what_is_traced(case: Case, found: TracedCondition, variable: str | None, fname: str):
    """The condition's traced value, in words: an argument of the jitted function, or a value that depends on one."""
    cond, cond_text = found.cond, found.cond_text
    if variable is not None and variable in case.parameters() and isinstance(cond, ast.Name) and cond.id == variable:
        return say(
            "{} is an argument of {}, so {} traces it: while {} is traced, {} stands for any {}, with no value yet.",
            code(variable),
            code(fname),
            code("jax.jit") if case.under_jit else "JAX",
            code(fname),
            code(variable),
            kind_of(case.traced_value(variable)),
        )
    if variable is not None:
        return say(
            "{} depends on {}, which is traced: while JAX traces {} it has no value yet, only a shape and a dtype.",
            code(cond_text),
            code(variable),
            code(fname),
        )
    return say("{} is a traced value: while JAX traces {} it has no value yet.", code(cond_text), code(fname))


def _control_flow_rewrite(case: Case, frame: UserFrame, kind: str, holder, jn, scalar: bool):
    parsed = case.parsed(frame)
    found = clues.function_of_code(frame.code)
    if parsed is None or holder is None:
        return None
    function = found[1] if found else parsed.tree
    edit = None
    if kind == "if" and isinstance(holder, ast.If):
        edit = branch_rewrites.if_rewrite(
            holder, _parent_of(function, holder) or function, parsed.lines, jnp=jn.jnp, lax=jn.lax, scalar=scalar
        )
        if edit is not None:
            uses_cond = ".cond(" in edit.text
            label = (
                say(
                    "Keep it traced and let the compiled code choose: {} runs only the branch it needs (both branches "
                    "must give the same shape and dtype).",
                    code(f"{jn.lax}.cond"),
                )
                if uses_cond
                else say(
                    "Keep it traced and let the compiled code choose: {} computes both values and picks one per "
                    "element.",
                    code(f"{jn.jnp}.where"),
                )
            )
    elif kind == "while" and isinstance(holder, ast.While):
        edit = branch_rewrites.while_rewrite(holder, function, parsed.lines, lax=jn.lax, jnp=jn.jnp)
        label = say(
            "Keep it traced and loop inside the compiled code with {} (the loop state keeps one shape and dtype).",
            code(f"{jn.lax}.while_loop"),
        )
    elif kind == "ternary" and isinstance(holder, ast.IfExp):
        edit = branch_rewrites.ternary_rewrite(holder, parsed.lines, jnp=jn.jnp)
        label = say(
            "Keep it traced and choose with {}, which computes both values and picks one per element.",
            code(f"{jn.jnp}.where"),
        )
    if edit is None:
        return None
    rewritten = function_source(case, frame, [edit])
    return (label, rewritten) if rewritten else None


def _assert_rewrite(case: Case, frame: UserFrame, node: ast.Assert, jn) -> tuple[str, str]:
    """``assert cond, msg`` -> ``checkify.check(cond, msg)``, run through ``checkify.checkify``."""
    cond = case.text(frame, node.test)
    message = case.text(frame, node.msg) if node.msg is not None else f'"{cond} failed"'
    edit = rewrites.Edit(Span.of(node), f"checkify.check({cond}, {message})")
    body = function_source(case, frame, [edit]) or edit.text
    name = case.function_name or frame.function
    snippet = (
        f"from jax.experimental import checkify\n\n{body}\n\n"
        f"error, result = checkify.checkify({name})(...)   # the check runs in the compiled code\n"
        f"error.throw()   # raises here if it failed"
    )
    return (
        say(
            "Check it inside the compiled code with {}, which reports the failure after the call (or check the "
            "result outside the jitted function):",
            code("checkify"),
        ),
        snippet,
    )


def _control_flow_template(kind: str, cond: str, jn) -> tuple:
    """No rewrite of the user's code fits: JAX's control flow named in words (no code that would
    not run as it stands)."""
    if kind == "while":
        return (
            say(
                "Let the compiled code loop: {} runs a body function while a condition function of the "
                "loop state ({}) holds.",
                code(f"{jn.lax}.while_loop(cond_fun, body_fun, init)"),
                code(cond),
            ),
            "",
        )
    return (
        say(
            "Let the compiled code decide: {} picks per element, {} runs one of two functions.",
            code(f"{jn.jnp}.where({cond}, if_true, if_false)"),
            code(f"{jn.lax}.cond({cond}, true_fun, false_fun)"),
        ),
        "",
    )
