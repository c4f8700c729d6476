"""``python-control-flow``: Python's ``if`` / ``while`` / ``assert`` / ``bool()`` on a traced value. The fix
marks a setting static (by name, or by its place in the call of a library's jitted function) and keeps
data traced (``lax.cond`` / ``jnp.where`` / ``lax.while_loop`` / ``checkify``); the others follow.

>>> import jax, jax.numpy as jnp
>>> from jaxmagic.doctor.case import Case
>>> def halve(x, n):
...     while n > 0:
...         x, n = x / 2, n - 1
...     return x
>>> try:
...     jax.jit(halve)(jnp.ones(2), 3)
... except Exception as exc:
...     found = PYTHON_CONTROL_FLOW.diagnose(Case(exc, None, lambda filename: None))
>>> found.variable, found.where.text, found.static_argnames
('n', 'while n > 0:', ('n',))
"""

from __future__ import annotations

import ast

import jax

import jaxmagic.doctor.branch_rewrites as branch_rewrites
import jaxmagic.doctor.clues as clues
from jaxmagic.doctor.case import depends_on, kind_of, static_field_choice
from jaxmagic.doctor.chosen import Chosen, MagicHint, Offer, Static, StaticField, StaticPlaces
from jaxmagic.doctor.clues import Span
from jaxmagic.doctor.declared import Line, user_function
from jaxmagic.doctor.static_positions import placed_settings

_WRITTEN = {"if": "if {}:", "while": "while {}:", "assert": "assert {}", "ifexp": "... if {} else ...", "bool": "bool({})",
            "not": "not {}"}  # fmt: skip


def _condition(line: Line) -> tuple[str, ast.AST | None, ast.AST | None]:
    """What asked for a truth value (``if``, ``while``, ``bool``...), the condition's node, and the node holding it."""
    span, node = line.frame.span(), line.expression()
    statement = branch_rewrites.asking_statement(line.parsed.tree, line.statement(), span)
    if isinstance(statement, (ast.If, ast.While, ast.Assert)) and span is not None:
        test = Span.of(statement.test)
        # A bare name as the test: the jump's position is the whole statement, not the name.
        if test.contains(span) or (span.contains(test) and span.line == statement.lineno):
            return type(statement).__name__.lower(), statement.test, statement
    if node is not None:
        ternary = node if isinstance(node, ast.IfExp) else clues.enclosing(line.parsed.tree, node, ast.IfExp)
        if isinstance(ternary, ast.IfExp) and (ternary is node or Span.of(ternary.test).contains(Span.of(node))):
            return "ifexp", ternary.test, ternary
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "bool" and node.args:
            return "bool", node.args[0], node
        if isinstance(node, ast.BoolOp):
            return "and-or", node, node
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return "not", node.operand, node
    return "other", node, statement


def _traced(line: Line, cond: ast.AST | None, ambiguous: bool) -> dict:
    """The traced names the condition depends on, which could be static, and whether they are settings."""
    case = line.case
    depends = depends_on(case, line.frame, cond)
    variable, static_names = (depends or [None])[0], case.static_candidates(depends) if not ambiguous else []
    argument = variable in case.parameters() and isinstance(cond, ast.Name) and cond.id == variable
    placed = None if ambiguous or static_names else placed_settings(case)  # a setting passed through a library
    flag = placed or static_field_choice(case, line.frame, cond) or (static_names and all(map(case.is_flag, static_names)))  # fmt: skip
    return {"kind": "setting" if flag else "data", "variable": variable, "static_names": static_names, "placed": placed,
            "traced": "argument" if argument else "depends" if variable else "value", "tracer": case.under_jit,
            "value_kind": kind_of(case.traced_value(variable)) if argument and variable else ""}  # fmt: skip


def python_control_flow(line: Line) -> dict | None:
    """The construct that asked a traced value for True or False, the names it depends on, and the fixes."""
    case, frame = line.case, line.frame
    ambiguous = isinstance(case.exc, ValueError) and case.says("python-control-flow")
    if not (isinstance(case.exc, jax.errors.TracerBoolConversionError) or ambiguous):
        return None
    kind, cond, holder = _condition(line)
    if ambiguous and not any(clues.is_tracer(frame.lookup(n)) for n in (clues.names_in(cond) if cond else ())):
        return None  # NumPy's own ambiguity outside any trace: a plain bug, not a JIT trap
    shown = getattr(case.where(frame), "text", "") or ""
    text = line.text(cond) if cond is not None else ("" if shown.lstrip().startswith("%") else shown)
    jn = line.jax_names
    how, edit = branch_rewrites.statement_rewrite(
        kind, holder, user_function(line), line.parsed.lines, jnp=jn.jnp, lax=jn.lax,
        scalar=not ambiguous and not case.batched, values=frame.lookup, jax=jn.jax,
    )  # fmt: skip
    fname = case.function_name or frame.function
    return {"test": cond, "cond": text or "the condition", "fname": fname, "ambiguous": ambiguous, "how": how,
            "construct": kind if kind in ("and-or", "other") else "written", "written": _WRITTEN.get(kind, "{}").format(text),
            "asker": kind if kind in ("if", "while") else "", "otherwise": kind == "while",
            "edits": edit, "checked": branch_rewrites.assert_rewrite(holder, line.parsed.lines), **_traced(line, cond, ambiguous),
            **(branch_rewrites.builtin_rewrite(cond, frame.resolve, line.text, jn.jnp) if kind == "other" else {})}  # fmt: skip


_KEPT = Offer("{how}", "edits")
_STATIC = Static("static_names", "JAX then compiles {fname} once per value it is called with, and your {asker} sees a plain Python value.")  # fmt: skip
_PLACED_WHY = "JAX then compiles once per value it is called with, and {cond} in {fname} is a plain Python value."
_CHECKED = "Check it inside the compiled code with `checkify`, which reports the failure after the call (or check the result outside the jitted function):"  # fmt: skip
_CHECKIFIED = "from jax.experimental import checkify\n\n{fixed}\n\nerror, result = checkify.checkify({fname})(...)   # the check runs in the compiled code\nerror.throw()   # raises here if it failed"  # fmt: skip
_LAST = (Offer(_CHECKED, "checked", _CHECKIFIED), Offer("{otherwise}", otherwise=True), MagicHint("static_names"))

PYTHON_CONTROL_FLOW = Chosen(
    "python-control-flow",
    "Python if / while on a traced value",
    python_control_flow,
    raised=(jax.errors.TracerBoolConversionError, ValueError),
    messages=("truth value of an array",),
    says=False,
    sourceless=True,
    order=50,
    explanation="{traced} Python's {construct} at {where} needs a real True or False to decide, so tracing stops "
    "there.{ambiguous}",
    phrases={
        "tracer": {True: "`jax.jit`", False: "JAX"},
        "traced": {
            "argument": "{variable} is an argument of {fname}, so {tracer} traces it: while {fname} is traced, "
            "{variable} stands for any {value_kind!s}, with no value yet.",
            "depends": "{cond} depends on {variable}, which is traced: while JAX traces {fname} it has no value yet, "
            "only a shape and a dtype.",
            "value": "{cond} is a traced value: while JAX traces {fname} it has no value yet.",
        },
        "construct": {"and-or": "`and` / `or` on {cond}", "other": "{cond} as a True / False", "written": "{written}"},
        "ambiguous": {True: " (It is an array of several values, too, and an array has no single truth value.)"},
        "asker": {"if": "`if`", "while": "`while`", "": "condition"},
        "how": {
            "cond": "Keep it traced and let the compiled code choose: `{lax}.cond` runs only the branch it needs (both branches must give the same shape and dtype).",
            "where": "Keep it traced and let the compiled code choose: `{jnp}.where` computes both values and picks one per element.",
            "carried": "Keep it traced and let the compiled code choose: `{lax}.cond` runs only the branch it needs, each branch taking the values your {asker} changes and giving them back (any pytree, a dict of arrays too: both branches give the same structure, shapes and dtypes).",
            "returned": "Keep it traced and let the compiled code choose: `{lax}.cond` runs only the branch it needs: your early return, or the rest of {fname}; each is a function of the values the rest assigns again (both return the same structure, shapes and dtypes).",
            "tree": "Keep it traced and let the compiled code choose: `{jax}.tree.map` with `{jnp}.where` picks, in each array of the pytree, the new value or the old one per element.",
            "while": "Keep it traced and loop inside the compiled code with `{lax}.while_loop` (the loop state keeps one shape and dtype).",
            "ternary": "Keep it traced and choose with `{jnp}.where`, which computes both values and picks one per element.",
            "builtin": "Python's `{builtin}` compares with `<` and `>`, each asking a True / False; {replacement} compares inside the compiled code.",
        },  # fmt: skip
        "otherwise": {
            True: "Let the compiled code loop: `{lax}.while_loop(cond_fun, body_fun, init)` runs a body function "
            "while a condition function of the loop state ({cond}) holds.",
            False: "Let the compiled code decide: `{jnp}.where({cond}, if_true, if_false)` picks per element, "
            "`{lax}.cond({cond}, true_fun, false_fun)` runs one of two functions.",
        },
    },
    choices=(_KEPT, StaticField("test"), _STATIC, *_LAST),
    kinds={
        "setting": {"choices": (StaticField("test"), _STATIC, StaticPlaces("placed", _PLACED_WHY), _KEPT, *_LAST)},
        "builtin": {"choices": (_KEPT, _STATIC)},
    },  # fmt: skip
    variable="variable",
)
