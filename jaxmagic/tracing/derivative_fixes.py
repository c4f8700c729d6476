"""The documented fix for a derivative that blew up (``blowups.DerivativeBlowup``), written into the
user's own function and checked on the user's arguments before it is shown.

JAX's FAQ ("Gradients contain NaN where using ``where``") gives the rule: the value a derivative is
taken at must be safe, so a ``jnp.where`` goes *inside* the partially defined function, beside the
one that picks the result (the double ``where``). Where the user wrote the operation bare
(``jnp.sqrt(x)`` at 0, ``jnp.linalg.norm`` of a zero vector, ``jnp.std`` of a constant row), the
same rule is a safe square root (``safe_sqrt``) or a safe norm (``safe_norm``), which give the
same values and the gradient 0 there. A fix is kept only when the rewritten function returns the
same values on the user's arguments and its gradient there is finite.

>>> import jax.numpy as jnp
>>> from jaxmagic.tracing.blowups import DerivativeBlowup
>>> from jaxmagic.tracing.sources import SourceLine
>>> def norm_of(x):
...     return jnp.linalg.norm(x)
>>> line = SourceLine(norm_of.__code__.co_filename, norm_of.__code__.co_firstlineno + 1, "norm_of", "")
>>> blowup = DerivativeBlowup("sqrt", 0.0, "inf", line, (0,), (1,))
>>> fix = fix_for(blowup, norm_of, (jnp.zeros(3),), {})
>>> fix.kind, fix.same_values, fix.finite_gradient
('safe norm', True, True)
>>> print(fix.code.splitlines()[-1])
    return safe_norm(x)
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
from dataclasses import dataclass
from typing import Any

import numpy as np

from jaxmagic.tracing.callables import python_function

SAFE_SQRT = """def safe_sqrt(x):
    positive = x > 0
    return {jnp}.where(positive, {jnp}.sqrt({jnp}.where(positive, x, 1.0)), 0.0)
"""
SAFE_NORM = """def safe_norm(x, axis=None, keepdims=False):
    return safe_sqrt({jnp}.sum(x * x, axis=axis, keepdims=keepdims))
"""
# Where a point is safe to take each forward operation's derivative at (inside a double where).
SAFE_POINT = {"asin": "0.0", "acos": "0.0", "atanh": "0.0", "erf_inv": "0.0"}


@dataclass(frozen=True)
class GradientFix:
    """A checked fix: ``kind`` (``double where``, ``safe sqrt``, ``safe norm``, ``safe std``),
    ``code`` (the helpers it needs, then the user's function rewritten), ``function`` (its name),
    ``line`` (the user's line it changes, as written, and ``fixed_line`` as rewritten),
    ``same_values`` (the rewritten function returns what the user's did, on the user's
    arguments) and ``finite_gradient`` (its gradient there is finite, where the user's was not)."""

    kind: str
    code: str
    function: str
    line: str
    fixed_line: str
    same_values: bool
    finite_gradient: bool

    @property
    def checked(self) -> bool:
        return self.same_values and self.finite_gradient


def fix_for(blowup, callee, args: tuple, kwargs: dict) -> GradientFix | None:
    """The checked fix for ``blowup`` in the function ``callee`` (as the user calls it, on ``args``
    and ``kwargs``: a gradient's own function, not the gradient); ``None`` where none applies or
    the check fails."""
    function = python_function(callee)
    source = blowup.source
    if function is None or source is None or not _holds_line(function, source):
        return None
    try:
        written = _rewritten(function, source.line, blowup.forward)
    except (OSError, TypeError, SyntaxError, ValueError):
        return None
    if written is None:
        return None
    kind, code, line, fixed_line = written
    same, finite = _check(function, code, args, kwargs)
    if not (same and finite):
        return None
    return GradientFix(kind, code, function.__name__, line, fixed_line, same, finite)


def forward_is_finite(callee, args: tuple, kwargs: dict) -> bool | None:
    """Whether ``callee``'s own value on the user's arguments is finite (``None``: it could not
    run): a derivative is the cause only where the value it is the derivative of is finite."""
    try:
        value = callee(*args, **kwargs)
    except Exception:
        return None
    return _all_finite(value)


def _holds_line(function: types.FunctionType, source) -> bool:
    code = function.__code__
    if code.co_filename != source.file:
        return False
    lines = [line for _, _, line in code.co_lines() if line is not None]
    return bool(lines) and code.co_firstlineno <= source.line <= max(lines)


def _rewritten(function: types.FunctionType, line: int, forward: str) -> tuple[str, str, str, str] | None:
    """``(kind, code, line as written, line as rewritten)``, or ``None``."""
    lines, first = inspect.getsourcelines(function)
    text = textwrap.dedent("".join(lines))
    tree = ast.parse(text)
    target = line - first + 1
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.lineno == target:
            op = _operation(node.func, function)
            if op is None or not _derives_to(op, forward):
                continue
            jnp = _written_alias(node.func, function) or _alias(function.__globals__)
            edit = _edit(tree, node, op, forward, jnp)
            if edit is None:
                continue
            kind, replacement, helpers = edit
            fixed = _replace(text, node, replacement)
            code = "".join(helper.format(jnp=jnp) + "\n\n" for helper in helpers) + fixed
            return kind, code, text.splitlines()[target - 1].strip(), fixed.splitlines()[target - 1].strip()
    return None


def _operation(func: ast.expr, function: types.FunctionType) -> str | None:
    """What the called name is, looked up in the function's globals: ``sqrt``, ``log``, ``norm``,
    ``std``, ``asin``... (``None`` for anything else)."""
    import jax.numpy as jnp
    from jax import lax

    known = {
        id(jnp.sqrt): "sqrt",
        id(lax.sqrt): "sqrt",
        id(jnp.log): "log",
        id(lax.log): "log",
        id(jnp.arcsin): "asin",
        id(jnp.arccos): "acos",
        id(jnp.arctanh): "atanh",
        id(jnp.cbrt): "cbrt",
        id(jnp.linalg.norm): "norm",
        id(jnp.std): "std",
    }
    value = _looked_up(func, function)
    return known.get(id(value)) if value is not None else None


def _looked_up(node: ast.expr, function: types.FunctionType) -> Any:
    """A dotted name's value in the function's globals (or closure), without running any code."""
    if isinstance(node, ast.Name):
        scope = dict(function.__globals__)
        scope.update(inspect.getclosurevars(function).nonlocals)
        return scope.get(node.id)
    if isinstance(node, ast.Attribute):
        owner = _looked_up(node.value, function)
        return getattr(owner, node.attr, None) if isinstance(owner, types.ModuleType) or owner is not None else None
    return None


def _derives_to(op: str, forward: str) -> bool:
    """Whether the user's operation ``op`` computes the primitive ``forward`` whose derivative blew up."""
    return op == forward or (op in ("norm", "std") and forward == "sqrt")


def _edit(tree: ast.AST, node: ast.Call, op: str, forward: str, jnp: str) -> tuple[str, str, list[str]] | None:
    """``(kind, the call rewritten, helper definitions it needs)``."""
    if not node.args:
        return None
    argument = ast.unparse(node.args[0])
    where = _enclosing_where(tree, node)
    if where is not None:
        condition, branch = where
        safe = SAFE_POINT.get(forward, "1.0")
        guarded = (
            f"{jnp}.where({condition}, {argument}, {safe})"
            if branch == 1
            else f"{jnp}.where({condition}, {safe}, {argument})"
        )
        rest = [ast.unparse(a) for a in node.args[1:]] + [ast.unparse(k) for k in node.keywords]
        return "double where", f"{ast.unparse(node.func)}({', '.join([guarded, *rest])})", []
    if op == "sqrt" and len(node.args) == 1 and not node.keywords:
        return "safe sqrt", f"safe_sqrt({argument})", [SAFE_SQRT]
    if op == "norm" and len(node.args) == 1 and all(k.arg in ("axis", "keepdims") for k in node.keywords):
        keywords = "".join(f", {ast.unparse(k)}" for k in node.keywords)
        return "safe norm", f"safe_norm({argument}{keywords})", [SAFE_SQRT, SAFE_NORM]
    if op == "std":
        arguments = ", ".join([ast.unparse(a) for a in node.args] + [ast.unparse(k) for k in node.keywords])
        return "safe std", f"safe_sqrt({jnp}.var({arguments}))", [SAFE_SQRT]
    return None


def _enclosing_where(tree: ast.AST, node: ast.Call) -> tuple[str, int] | None:
    """``(condition, branch)`` when ``node`` is (inside) a branch of a ``where`` / ``select`` call."""
    for parent in ast.walk(tree):
        if not (isinstance(parent, ast.Call) and len(parent.args) == 3):
            continue
        name = parent.func.attr if isinstance(parent.func, ast.Attribute) else getattr(parent.func, "id", "")
        if name not in ("where", "select"):
            continue
        for branch in (1, 2):
            if any(inner is node for inner in ast.walk(parent.args[branch])):
                return ast.unparse(parent.args[0]), branch
    return None


def _replace(text: str, node: ast.Call, replacement: str) -> str:
    """``text`` with ``node``'s source replaced by ``replacement``."""
    lines = text.splitlines(keepends=True)
    assert node.end_lineno is not None and node.end_col_offset is not None  # parsed from source
    start = sum(len(line) for line in lines[: node.lineno - 1]) + _char_offset(lines[node.lineno - 1], node.col_offset)
    end = sum(len(line) for line in lines[: node.end_lineno - 1]) + _char_offset(
        lines[node.end_lineno - 1], node.end_col_offset
    )
    return text[:start] + replacement + text[end:]


def _char_offset(line: str, byte_offset: int) -> int:
    return len(line.encode()[:byte_offset].decode(errors="ignore"))


def _written_alias(func: ast.expr, function: types.FunctionType) -> str | None:
    """The name the call itself reaches ``jax.numpy`` by (``np_`` in ``np_.std(m)``), if any."""
    import jax.numpy

    root = func
    while isinstance(root, ast.Attribute):
        root = root.value
    if isinstance(root, ast.Name) and _looked_up(root, function) is jax.numpy:
        return root.id
    return None


def _alias(namespace: dict) -> str:
    """The name the user's code gives ``jax.numpy`` (``jnp`` when none)."""
    import jax.numpy

    return next((name for name, value in namespace.items() if value is jax.numpy), "jnp")


def _check(function: types.FunctionType, code: str, args: tuple, kwargs: dict) -> tuple[bool, bool]:
    """``(same values, finite gradient)`` of the rewritten function on the user's arguments."""
    import jax

    namespace = dict(function.__globals__)
    namespace.update(inspect.getclosurevars(function).nonlocals)
    if _alias(function.__globals__) not in namespace:
        namespace["jnp"] = jax.numpy
    try:
        exec(compile(code, f"<fix of {function.__name__}>", "exec"), namespace)  # noqa: S102
        fixed = namespace[function.__name__]
        before, after = function(*args, **kwargs), fixed(*args, **kwargs)
    except Exception:
        return False, False
    same = _same(before, after)
    return same, same and _gradient_is_finite(fixed, args, kwargs)


def _same(before, after) -> bool:
    import jax

    old, new = jax.tree_util.tree_leaves(before), jax.tree_util.tree_leaves(after)
    if len(old) != len(new):
        return False
    try:
        return all(
            np.allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-7, equal_nan=True)
            for a, b in zip(old, new, strict=True)
        )
    except (TypeError, ValueError):
        return False


def _gradient_is_finite(fixed, args: tuple, kwargs: dict) -> bool:
    """The gradient of ``fixed`` (with respect to every floating array argument, its outputs
    weighted by ones) is finite on the user's arguments."""
    import jax
    import jax.numpy as jnp

    def differentiable(value) -> bool:
        if isinstance(value, (float, complex)):
            return True
        return hasattr(value, "dtype") and jnp.issubdtype(value.dtype, jnp.inexact)

    positions = [i for i, a in enumerate(args) if all(differentiable(leaf) for leaf in jax.tree_util.tree_leaves(a))]
    if not positions:
        return False

    def of(*chosen):
        full = list(args)
        for position, value in zip(positions, chosen, strict=True):
            full[position] = value
        return fixed(*full, **kwargs)

    try:
        value, pullback = jax.vjp(of, *[args[i] for i in positions])
        gradient = pullback(jax.tree_util.tree_map(jnp.ones_like, value))
    except Exception:
        return False
    return _all_finite(gradient)


def _all_finite(value) -> bool:
    import jax

    leaves = jax.tree_util.tree_leaves(value)
    try:
        return all(
            bool(np.isfinite(np.asarray(leaf)).all())
            for leaf in leaves
            if np.issubdtype(np.asarray(leaf).dtype, np.inexact)
        )
    except (TypeError, ValueError):
        return False
