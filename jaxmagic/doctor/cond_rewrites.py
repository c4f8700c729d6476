"""An ``if`` on a traced scalar whose branches carry values that ``jnp.where`` cannot pick between as
one array: ``jax.lax.cond`` over the names the ``if`` assigns (a pytree such as a dict of gradients, or
several names, or a branch of several statements), and over the two returns of an early ``return``
and the function's last. ``jax.lax.cond`` takes and gives back any pytree whose two branches have the
same structure, shapes and dtypes, and runs only the branch the condition picks. Where the condition
is an array of several values (``lax.cond`` needs one), a single name assigned a pytree is picked per
leaf and per element with ``jax.tree.map`` and ``jnp.where``.

>>> lines = ("def f(grads, loss):", "    if loss > 1.0:", "        grads = jax.tree.map(lambda g: g / 2, grads)",
...          "    return grads")
>>> function = ast.parse("\\n".join(lines)).body[0]
>>> assigned_rewrite(function.body[0], function, lines, "loss > 1.0", lax="jax.lax", jnp="jnp", scalar=True).text
'grads = jax.lax.cond(loss > 1.0, lambda grads: jax.tree.map(lambda g: g / 2, grads), lambda grads: grads, grads)'
"""

from __future__ import annotations

import ast
import textwrap
from typing import Sequence

from jaxmagic.doctor.clues import Span, names_in, segment
from jaxmagic.doctor.rewrites import Edit

_OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Pow: "**",
              ast.Mod: "%", ast.MatMult: "@", ast.BitAnd: "&", ast.BitOr: "|"}  # fmt: skip
_LEAVES = (ast.Return, ast.Break, ast.Continue, ast.Yield, ast.YieldFrom, ast.Global, ast.Nonlocal, ast.Await,
           ast.If, ast.While, ast.Assert)  # fmt: skip
LINE = 120  # the longest line a lambda of one branch is written on; a longer one becomes a function
_OWN_SCOPE = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp, ast.SetComp,
              ast.DictComp, ast.GeneratorExp)  # fmt: skip


def _src(lines: Sequence[str], node: ast.AST) -> str:
    return segment(tuple(lines), Span.of(node))


def augmented(lines: Sequence[str], stmt: ast.AugAssign) -> str:
    """The value ``x += v`` gives ``x``, as an expression: ``x + (v)``.

    >>> lines = ("x *= a + 1",)
    >>> augmented(lines, ast.parse(lines[0]).body[0])
    'x * (a + 1)'
    """
    op = _OPERATORS.get(type(stmt.op))
    if op is None:
        raise ValueError("operator")
    return f"{_src(lines, stmt.target)} {op} ({_src(lines, stmt.value)})"


def _inside(stmts: Sequence[ast.AST]) -> list[ast.AST]:
    """The nodes of ``stmts`` outside the scopes of their own (functions, lambdas, comprehensions)."""
    found: list[ast.AST] = []
    todo: list[ast.AST] = list(stmts)
    while todo:
        node = todo.pop()
        found.append(node)
        if not isinstance(node, _OWN_SCOPE):
            todo.extend(ast.iter_child_nodes(node))
    return found


def stored(stmts: Sequence[ast.stmt]) -> list[str]:
    """The names ``stmts`` assign or define, in the order they are written (not those inside a lambda,
    a comprehension or a function defined there, whose names are their own).

    >>> stored(ast.parse("a = [g for g in b]\\nc, d = f(a)").body)
    ['a', 'c', 'd']
    """
    found = [n for n in _inside(stmts) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
             or isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]  # fmt: skip
    found.sort(key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))
    return list(dict.fromkeys(n.id if isinstance(n, ast.Name) else getattr(n, "name", "") for n in found))


def _leaves(stmts: Sequence[ast.AST]) -> bool:
    """True when ``stmts`` leave their block early (``return``, ``break``...), name another scope's
    variables, or hold a condition of their own (which would ask for a True or False again)."""
    return any(isinstance(n, _LEAVES) for n in _inside(stmts))


def _whole_lines(lines: Sequence[str], stmts: Sequence[ast.stmt]) -> bool:
    """True when ``stmts`` fill their lines (no ``if c: x = 1`` on one line), so that they can be moved as lines."""
    first, last = stmts[0], stmts[-1]
    before = lines[first.lineno - 1].encode()[: first.col_offset].decode(errors="ignore")
    after = lines[(last.end_lineno or last.lineno) - 1].encode()[last.end_col_offset or 0 :].decode(errors="ignore")
    return not before.strip() and (not after.strip() or after.strip().startswith("#"))


def _defined_before(function: ast.AST, line: int) -> set[str]:
    """The names ``function`` binds before ``line``: its parameters and what its body assigns above."""
    args = getattr(function, "args", None)
    found = (
        {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs} if isinstance(args, ast.arguments) else set()
    )
    body = getattr(function, "body", [])
    stores = (n for n in _inside(body) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    return found | {n.id for n in stores if n.lineno < line}


def _fresh(function: ast.AST, name: str) -> str:
    """``name``, or ``name_2``... where ``function`` already uses it."""
    used = set(names_in(function)) | set(names_in(function, ast.Store))
    used |= {n.name for n in ast.walk(function) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    fresh, count = name, 1
    while fresh in used:
        count += 1
        fresh = f"{name}_{count}"
    return fresh


def _tuple(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else f"({', '.join(names)})"


def _block(lines: Sequence[str], stmts: Sequence[ast.stmt]) -> str | None:
    """The text of ``stmts`` indented as a function's body: their lines, or, where they share a line
    with other code (``if c: x = 1``), each statement's own text (``None`` for one of several lines)."""
    if _whole_lines(lines, stmts):
        return textwrap.indent(textwrap.dedent("\n".join(lines[stmts[0].lineno - 1 : stmts[-1].end_lineno])), "    ")
    if any(s.end_lineno != s.lineno for s in stmts):
        return None
    return "\n".join(f"    {_src(lines, s)}" for s in stmts)


def _single_value(lines: Sequence[str], stmts: Sequence[ast.stmt], names: Sequence[str]) -> str | None:
    """What a branch of one assignment to exactly ``names`` gives them, as one expression (``None``: another shape)."""
    if len(stmts) != 1:
        return None
    (stmt,) = stmts
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) and [stmt.target.id] == list(names):
        return augmented(lines, stmt) if type(stmt.op) in _OPERATORS else None
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
        return None
    target = stmt.targets[0]
    written = [target] if isinstance(target, ast.Name) else getattr(target, "elts", [])
    if [getattr(t, "id", None) for t in written] != list(names) or not isinstance(target, (ast.Name, ast.Tuple)):
        return None
    value = _src(lines, stmt.value)
    return f"({value})" if isinstance(stmt.value, ast.Tuple) and not value.startswith("(") else value


def _carried(node: ast.If, function: ast.AST) -> tuple[list[str], list[str]] | None:
    """The names an ``if`` hands on (assigned in a branch and known before it, or assigned in both)
    and those of them its branches take (known before it); ``None`` where a branch leaves early."""
    if _leaves(node.body) or _leaves(node.orelse):
        return None
    defined, both = _defined_before(function, node.lineno), set(stored(node.body)) & set(stored(node.orelse))
    carried = [n for n in stored([*node.body, *node.orelse]) if n in defined or n in both]
    return (carried, [n for n in carried if n in defined]) if carried else None


def assigned_rewrite(node: ast.If, function: ast.AST, lines: Sequence[str], cond: str, *, lax: str, jnp: str,
                     scalar: bool, jax: str = "jax") -> Edit | None:  # fmt: skip
    """``if c: <assignments>`` (``else`` too) -> the names it assigns from ``lax.cond(c, ...)``, each
    branch a function of the names it changes (a lambda for one assignment); with ``scalar`` false, one
    name picked per leaf with ``jnp.where``. ``None`` where a branch leaves early or assigns nothing
    known after it."""
    found = _carried(node, function)
    if found is None:
        return None
    carried, taken = found
    yes = _single_value(lines, node.body, carried)
    no = _single_value(lines, node.orelse, carried) if node.orelse else _tuple(taken) if taken == carried else None
    if not scalar:
        if len(carried) != 1 or yes is None or node.orelse:
            return None
        return Edit(Span.of(node), f"{carried[0]} = {jax}.tree.map(lambda new, old: {jnp}.where({cond}, new, old), {yes}, {carried[0]})")  # fmt: skip
    operands, params = "".join(f", {n}" for n in taken), f"lambda {', '.join(taken)}:" if taken else "lambda:"
    line = f"{', '.join(carried)} = {lax}.cond({cond}, {params} {yes}, {params} {no}{operands})"
    if yes is not None and no is not None and node.col_offset + len(line) <= LINE:
        return Edit(Span.of(node), line)
    true_body, false_body = _block(lines, node.body), _block(lines, node.orelse) if node.orelse else ""
    if true_body is None or false_body is None:
        return None
    give = f"    return {', '.join(carried)}"
    true_fun, false_fun = _fresh(function, "true_fun"), _fresh(function, "false_fun")
    text = "\n".join([f"def {true_fun}({', '.join(taken)}):", true_body, give,
                      f"def {false_fun}({', '.join(taken)}):", *([false_body] if false_body else []), give,
                      f"{', '.join(carried)} = {lax}.cond({cond}, {true_fun}, {false_fun}{operands})"])  # fmt: skip
    return Edit(Span.of(node), text)


def returned_rewrite(node: ast.If, function: ast.AST, lines: Sequence[str], cond: str, *, lax: str) -> Edit | None:
    r"""An early ``if c: ... return a`` in a function's body and the rest of the function, ending in
    ``return b``, -> ``return lax.cond(c, true_fun, false_fun, ...)``, each function taking the names
    its statements assign that were known before the ``if``. ``None`` for any other shape.

    >>> lines = ("def f(p, loss):", "    if loss > 9:", "        return p, loss", "    p = p - 1", "    return p, loss")
    >>> function = ast.parse("\n".join(lines)).body[0]
    >>> print(returned_rewrite(function.body[0], function, lines, "loss > 9", lax="lax").text)
    def true_fun(p):
        return p, loss
    def false_fun(p):
        p = p - 1
        return p, loss
    return lax.cond(loss > 9, true_fun, false_fun, p)
    """
    body: list[ast.stmt] = list(getattr(function, "body", []))
    if node.orelse or node not in body or node is body[-1]:
        return None
    rest = body[body.index(node) + 1 :]
    ends = [node.body[-1], rest[-1]]
    if not all(isinstance(s, ast.Return) and s.value is not None for s in ends):
        return None
    if _leaves([*node.body[:-1], *rest[:-1], *(s.value for s in ends if isinstance(s, ast.Return) and s.value)]):
        return None
    true_body, false_body = _block(lines, node.body), _block(lines, rest)
    if true_body is None or false_body is None:
        return None
    defined = _defined_before(function, node.lineno)
    taken = [n for n in stored([*node.body, *rest]) if n in defined]
    true_fun, false_fun = _fresh(function, "true_fun"), _fresh(function, "false_fun")
    params = ", ".join(taken)
    text = "\n".join([f"def {true_fun}({params}):", true_body, f"def {false_fun}({params}):",
                      false_body, f"return {lax}.cond({cond}, {true_fun}, {false_fun}{''.join(f', {n}' for n in taken)})"])  # fmt: skip
    return Edit(Span(node.lineno, rest[-1].end_lineno or rest[-1].lineno, node.col_offset, rest[-1].end_col_offset or 0), text)  # fmt: skip
