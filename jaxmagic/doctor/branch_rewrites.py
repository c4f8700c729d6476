"""Python control flow on traced values, rewritten the way JAX compiles it: ``jnp.where`` or
``jax.lax.cond`` for an ``if``, ``jax.lax.while_loop`` for a ``while``, ``jax.lax.fori_loop``
for a ``for`` over ``range(n)``. Each rewrite is an ``Edit`` of the user's own source.

>>> import ast
>>> lines = ("def f(x, n):", "    if n > 0:", "        y = x", "    else:", "        y = -x", "    return y")
>>> tree = ast.parse("\\n".join(lines))
>>> edit = if_rewrite(tree.body[0].body[0], tree.body[0], lines, jnp="jnp", lax="jax.lax", scalar=False)
>>> edit.text
'y = jnp.where(n > 0, x, -x)'
"""

from __future__ import annotations

import ast
import textwrap
from typing import Sequence

import jax
import numpy as np

import jaxmagic.doctor.cond_rewrites as cond_rewrites
from jaxmagic.doctor.clues import MISSING, Span, enclosing, is_tracer, names_in, segment
from jaxmagic.doctor.rewrites import Edit


def _src(lines: Sequence[str], node: ast.AST) -> str:
    return segment(tuple(lines), Span.of(node))


def asking_statement(tree: ast.AST, statement: ast.stmt | None, span: Span | None) -> ast.stmt | None:
    """The statement whose condition at ``span`` failed: on ``if c: x = 1`` (one line, whose innermost
    statement is ``x = 1``), the ``if`` where ``span`` lies in its test; ``statement`` otherwise.

    >>> tree = ast.parse("if c: x = 1")
    >>> type(asking_statement(tree, tree.body[0].body[0], Span(1, 1, 3, 4))).__name__
    'If'
    """
    outer = enclosing(tree, statement, (ast.If, ast.While)) if statement is not None else None
    return outer if outer is not None and span is not None and Span.of(outer.test).contains(span) else statement


def array_condition(lines: Sequence[str], node: ast.AST, jnp: str) -> str:
    """A condition written for traced values: ``and`` / ``or`` / ``not`` (which ask Python for a
    truth value) become ``jnp.logical_and`` / ``logical_or`` / ``logical_not``.

    >>> lines = ("a > 0 and not b",)
    >>> array_condition(lines, ast.parse(lines[0], mode="eval").body, "jnp")
    'jnp.logical_and(a > 0, jnp.logical_not(b))'
    """
    if isinstance(node, ast.BoolOp):
        name = "logical_and" if isinstance(node.op, ast.And) else "logical_or"
        parts = [array_condition(lines, value, jnp) for value in node.values]
        text = parts[0]
        for part in parts[1:]:
            text = f"{jnp}.{name}({text}, {part})"
        return text
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return f"{jnp}.logical_not({array_condition(lines, node.operand, jnp)})"
    return _src(lines, node)


def _is_constant(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp):
        return _is_constant(node.operand)
    return isinstance(node, ast.Constant)


def _branch(stmts: list[ast.stmt]):
    """A branch reduced to one value: ``("return", expr)``, ``("assign", name, expr)`` or ``None``."""
    if len(stmts) != 1:
        return None
    (stmt,) = stmts
    if isinstance(stmt, ast.Return) and stmt.value is not None:
        return ("return", stmt.value)
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return ("assign", stmt.targets[0].id, stmt.value)
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
        return ("augassign", stmt.target.id, stmt)
    if isinstance(stmt, ast.If):
        return ("if", stmt)
    return None


def _choose(cond: str, yes: str, no: str, *, jnp: str, lax: str, use_cond: bool) -> str:
    if use_cond:
        return f"{lax}.cond({cond}, lambda: {yes}, lambda: {no})"
    return f"{jnp}.where({cond}, {yes}, {no})"


def _value_of(stmts, kind, name, lines, *, jnp, lax, scalar, following=None) -> str | None:
    """The expression a branch produces for ``kind``/``name`` (nested ``if``s become nested choices)."""
    shape = _branch(stmts)
    if shape is None:
        return None
    if shape[0] == "if":
        return _if_value(shape[1], kind, name, lines, jnp=jnp, lax=lax, scalar=scalar, following=following)
    if kind == "return" and shape[0] == "return":
        return _src(lines, shape[1])
    if kind == "assign" and shape[0] == "assign" and shape[1] == name:
        return _src(lines, shape[2])
    if kind == "assign" and shape[0] == "augassign" and shape[1] == name:
        return cond_rewrites.augmented(lines, shape[2])
    return None


def _if_value(node: ast.If, kind, name, lines, *, jnp, lax, scalar, following=None) -> str | None:
    cond = array_condition(lines, node.test, jnp)
    yes = _value_of(node.body, kind, name, lines, jnp=jnp, lax=lax, scalar=scalar)
    if node.orelse:
        no = _value_of(node.orelse, kind, name, lines, jnp=jnp, lax=lax, scalar=scalar, following=following)
    elif kind == "assign":
        no = name  # no else: the variable keeps the value it had
    elif following is not None:
        no = _src(lines, following.value)
    else:
        return None
    if yes is None or no is None:
        return None
    use_cond = scalar and kind == "return" and not (_is_constant_text(yes) or _is_constant_text(no))
    return _choose(cond, yes, no, jnp=jnp, lax=lax, use_cond=use_cond)


def _is_constant_text(text: str) -> bool:
    try:
        return _is_constant(ast.parse(text, mode="eval").body)
    except SyntaxError:
        return False


def _next_statement(tree: ast.AST, node: ast.stmt) -> ast.stmt | None:
    """The statement after ``node`` in its block, found anywhere in ``tree``."""
    for parent in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(parent, field, None)
            if isinstance(block, list) and node in block:
                index = block.index(node)
                return block[index + 1] if index + 1 < len(block) else None
    return None


def if_rewrite(
    node: ast.If, parent: ast.AST, lines: Sequence[str], *, jnp: str, lax: str, scalar: bool, values=None
) -> Edit | None:
    """``if c: return a / else: return b`` -> ``return lax.cond(c, ...)`` (``jnp.where`` for arrays);
    ``if c: y = a / else: y = b`` -> ``y = jnp.where(c, a, b)``. ``None`` for other shapes of ``if``
    (the module's example shows the second), and for a ``y`` that ``values`` (name -> the value it
    holds, where known) says is a pytree. ``parent``: the function (or any node) holding it."""
    shape = _branch(node.body)
    if shape is not None and shape[0] == "return":
        return _return_rewrite(node, parent, lines, jnp=jnp, lax=lax, scalar=scalar)
    if shape is not None and shape[0] in ("assign", "augassign") and not _holds_pytree(values, str(shape[1])):
        value = _if_value(node, "assign", shape[1], lines, jnp=jnp, lax=lax, scalar=scalar)
        return Edit(Span.of(node), f"{shape[1]} = {value}") if value is not None else None
    return None


def carried_rewrite(
    node: ast.If, function: ast.AST, lines: Sequence[str], *, jnp: str, lax: str, scalar: bool, jax: str = "jax"
) -> tuple[str, Edit | None]:
    """An ``if`` whose branches assign a pytree, several names or several statements, or return
    early, as ``lax.cond`` over what they carry (``cond_rewrites``), with which (``carried``,
    ``returned``, ``tree`` where the condition is not one value)."""
    cond = array_condition(lines, node.test, jnp)
    if scalar and isinstance(node.body[-1], ast.Return):
        return "returned", cond_rewrites.returned_rewrite(node, function, lines, cond, lax=lax)
    how = "carried" if scalar else "tree"
    return how, cond_rewrites.assigned_rewrite(node, function, lines, cond, lax=lax, jnp=jnp, scalar=scalar, jax=jax)


def _holds_pytree(values, name: str) -> bool:
    """True where ``name`` is known to hold a pytree of arrays (a dict of gradients), not one array or number."""
    value = values(name) if values is not None else MISSING
    return value is not MISSING and not is_tracer(value) and not isinstance(value, (jax.Array, np.ndarray, np.generic, int, float, complex))  # fmt: skip


def _return_rewrite(node: ast.If, parent: ast.AST, lines: Sequence[str], *, jnp: str, lax: str, scalar: bool) -> Edit | None:  # fmt: skip
    """``if c: return a`` followed by ``return b`` (or with ``else: return b``) as one ``return``."""
    following = None
    if not node.orelse:
        following = _next_statement(parent, node)
        if not isinstance(following, ast.Return) or following.value is None:
            return None
    value = _if_value(node, "return", None, lines, jnp=jnp, lax=lax, scalar=scalar, following=following)
    if value is None:
        return None
    end = Span.of(following or node)
    return Edit(Span(node.lineno, end.end_line, node.col_offset, end.end_col), f"return {value}")


def ternary_rewrite(node: ast.IfExp, lines: Sequence[str], *, jnp: str) -> Edit:
    """``a if c else b`` -> ``jnp.where(c, a, b)``.

    >>> lines = ("y = x if x > 0 else 0.0",)
    >>> ternary_rewrite(ast.parse(lines[0]).body[0].value, lines, jnp="jnp").text
    'jnp.where(x > 0, x, 0.0)'
    """
    return Edit(
        Span.of(node),
        f"{jnp}.where({array_condition(lines, node.test, jnp)}, {_src(lines, node.body)}, {_src(lines, node.orelse)})",
    )


def _defined_before(function: ast.AST, line: int) -> set[str]:
    found = set()
    args = getattr(function, "args", None)
    if args is not None:
        found.update(a.arg for a in args.posonlyargs + args.args + args.kwonlyargs)
        found.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
    for sub in ast.walk(function):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store) and sub.lineno < line:
            found.add(sub.id)
    return found


def _escapes(stmts: list[ast.stmt]) -> bool:
    """True when a loop body leaves the loop early (break, continue, return, yield)."""
    for stmt in stmts:
        for sub in ast.walk(stmt):
            if isinstance(sub, (ast.Break, ast.Continue, ast.Return, ast.Yield, ast.YieldFrom)):
                return True
    return False


def _carried(node: ast.While | ast.For, function: ast.AST, lines: Sequence[str], index: str = "") -> tuple | None:
    """What a JAX loop written for ``node`` carries (the variables its body assigns that were
    defined before it, not the loop's ``index``) and its body's text indented as a loop function's;
    ``None`` where it carries nothing, leaves early, has an ``else`` or a body on the loop's line."""
    if node.orelse or _escapes(node.body) or node.body[0].lineno == node.lineno:
        return None
    defined = _defined_before(function, node.lineno)
    carried = [n for n in names_in(ast.Module(node.body, []), ast.Store) if n in defined and n != index]
    body = textwrap.dedent("\n".join(lines[node.body[0].lineno - 1 : node.body[-1].end_lineno]))
    return (carried, textwrap.indent(body, "    ")) if carried else None


def _pack(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names)


def _tuple(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"({', '.join(names)})"


def while_rewrite(
    node: ast.While, function: ast.AST, lines: Sequence[str], *, lax: str, jnp: str = "jnp"
) -> Edit | None:
    r"""``while c: body`` -> ``jax.lax.while_loop`` carrying the variables the body assigns.

    >>> lines = ("def f(x, n):", "    while n > 0:", "        x = x * 2", "        n = n - 1", "    return x")
    >>> function = ast.parse("\n".join(lines)).body[0]
    >>> print(while_rewrite(function.body[0], function, lines, lax="lax").text.splitlines()[-1])
    x, n = lax.while_loop(loop_condition, loop_body, (x, n))
    """
    found = _carried(node, function, lines)
    if found is None:
        return None
    carried, body = found
    unpack = f"    {_pack(carried)} = carry"
    text = "\n".join(
        [
            "def loop_condition(carry):",
            unpack,
            f"    return {array_condition(lines, node.test, jnp)}",
            "",
            "def loop_body(carry):",
            unpack,
            body,
            f"    return {_pack(carried)}",
            "",
            f"{_pack(carried)} = {lax}.while_loop(loop_condition, loop_body, {_tuple(carried)})",
        ]
    )
    return Edit(Span.of(node), text, comment="")


def fori_rewrite(
    node: ast.For, function: ast.AST, lines: Sequence[str], *, lax: str, unwrap: ast.AST | None = None
) -> Edit | None:
    r"""``for i in range(a, b): body`` -> ``jax.lax.fori_loop(a, b, ...)`` carrying assigned variables.

    >>> lines = ("def f(x, n):", "    total = 0.0", "    for i in range(n):", "        total += x[i]", "    return total")
    >>> function = ast.parse("\n".join(lines)).body[0]
    >>> print(fori_rewrite(function.body[1], function, lines, lax="lax").text.splitlines()[-1])
    total = lax.fori_loop(0, n, loop_body, total)
    """
    call = node.iter
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "range"):
        return None
    if call.keywords or not (1 <= len(call.args) <= 2) or not isinstance(node.target, ast.Name):
        return None
    found = _carried(node, function, lines, index=node.target.id)
    if found is None:
        return None
    carried, body = found

    def bound(arg: ast.AST) -> str:
        # ``range(int(n))``: fori_loop takes the traced ``n`` itself (``unwrap`` is the ``int(n)`` call)
        if arg is unwrap and isinstance(arg, ast.Call) and arg.args:
            return _src(lines, arg.args[0])
        return _src(lines, arg)

    start, stop = ("0", bound(call.args[0])) if len(call.args) == 1 else (bound(call.args[0]), bound(call.args[1]))
    text = "\n".join(
        [
            f"def loop_body({node.target.id}, carry):",
            f"    {_pack(carried)} = carry",
            body,
            f"    return {_pack(carried)}",
            "",
            f"{_pack(carried)} = {lax}.fori_loop({start}, {stop}, loop_body, {_tuple(carried)})",
        ]
    )
    return Edit(Span.of(node), text)


def statement_rewrite(
    kind: str,
    holder: ast.AST | None,
    function: ast.AST,
    lines: Sequence[str],
    *,
    jnp: str,
    lax: str,
    scalar: bool,
    values=None,
    jax: str = "jax",
) -> tuple[str | None, Edit | None]:
    """The construct ``kind`` (``if``, ``while``, ``ifexp``) that asked a traced value for True or
    False, as JAX's control flow, with which it uses (``cond``, ``where``, ``while``, ``ternary``);
    ``scalar``: one value, which ``lax.cond`` can choose on.

    >>> lines = ("y = x if x > 0 else 0.0",)
    >>> how, edit = statement_rewrite("ifexp", ast.parse(lines[0]).body[0].value, None, lines, jnp="jnp", lax="lax", scalar=True)
    >>> how, edit.text
    ('ternary', 'jnp.where(x > 0, x, 0.0)')
    """
    if kind == "if" and isinstance(holder, ast.If):
        edit = if_rewrite(holder, function, lines, jnp=jnp, lax=lax, scalar=scalar, values=values)
        if edit is not None:
            return ("cond" if ".cond(" in edit.text else "where"), edit
        how, edit = carried_rewrite(holder, function, lines, jnp=jnp, lax=lax, scalar=scalar, jax=jax)
        return (how if edit is not None else "where"), edit
    if kind == "while" and isinstance(holder, ast.While):
        return "while", while_rewrite(holder, function, lines, lax=lax, jnp=jnp)
    if kind == "ifexp" and isinstance(holder, ast.IfExp):
        return "ternary", ternary_rewrite(holder, lines, jnp=jnp)
    return None, None


def assert_rewrite(node: ast.AST | None, lines: Sequence[str]) -> Edit | None:
    """``assert cond, msg`` -> ``checkify.check(cond, msg)``, a check the compiled code runs.

    >>> lines = ("assert n > 0",)
    >>> assert_rewrite(ast.parse(lines[0]).body[0], lines).text
    'checkify.check(n > 0, "n > 0 failed")'
    """
    if not isinstance(node, ast.Assert):
        return None
    cond = _src(lines, node.test)
    message = _src(lines, node.msg) if node.msg is not None else f'"{cond} failed"'
    return Edit(Span.of(node), f"checkify.check({cond}, {message})")


def counted_loop(tree: ast.AST, node: ast.AST) -> ast.For | None:
    """The ``for ... in range(...)`` loop in ``tree`` whose ``range`` has ``node`` as a bound, else ``None``.

    >>> tree = ast.parse("for i in range(int(n)): pass")
    >>> counted_loop(tree, tree.body[0].iter.args[0]) is tree.body[0]
    True
    """
    loop = enclosing(tree, node, ast.For)
    if not isinstance(loop, ast.For) or not isinstance(loop.iter, ast.Call) or not isinstance(loop.iter.func, ast.Name):
        return None
    return loop if loop.iter.func.id == "range" and any(a is node for a in loop.iter.args) else None


def builtin_rewrite(node: ast.AST | None, resolve, text, jnp: str) -> dict:
    """Python's ``min`` / ``max`` on traced values (they compare with ``<``, asking for a True or
    False): ``jnp.minimum(a, b)`` / ``jnp.min(a)`` (``maximum`` / ``max``), as facts of
    ``python-control-flow``'s kind ``builtin``; ``{}`` for any other node.

    >>> node = ast.parse("min(x, 0.0)", mode="eval").body
    >>> builtin_rewrite(node, lambda func: min, ast.unparse, "jnp")["edits"].text
    'jnp.minimum(x, 0.0)'
    """
    builtin = resolve(node.func) if isinstance(node, ast.Call) and not node.keywords else None
    if builtin not in (min, max) or not 1 <= len(node.args) <= 2 or isinstance(node.args[0], ast.Starred):  # type: ignore[union-attr]
        return {}
    name = f"{jnp}.{builtin.__name__}" + ("imum" if len(node.args) == 2 else "")  # type: ignore[union-attr]
    edit = Edit(Span.of(node), f"{name}({', '.join(text(a) for a in node.args)})")  # type: ignore[union-attr]
    return {"how": "builtin", "kind": "builtin", "builtin": builtin.__name__, "replacement": name, "edits": edit}  # type: ignore[union-attr]
