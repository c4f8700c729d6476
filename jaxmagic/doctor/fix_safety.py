"""Which parts of a fix the doctor may run to check it: definitions, and expressions built from
JAX's, NumPy's and the user's own names (never a call into code it cannot see is harmless).
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import types
from typing import Any

import jax
import numpy as np

import jaxmagic.doctor.clues as clues
from jaxmagic.doctor.clues import MISSING
from jaxmagic.tracing import callables

SAFE_BUILTINS = frozenset(
    {tuple, list, dict, set, frozenset, int, float, bool, str, complex, range, len, slice, abs, min, max, sorted, zip}
)
SAFE_MODULES = ("jax", "jaxlib", "numpy", "functools", "flax", "equinox", "optax", "ml_dtypes", "dataclasses")


def is_definition(statement: ast.stmt, lookup) -> bool:
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
        return True
    if isinstance(statement, ast.Assign) and all(isinstance(t, ast.Name) for t in statement.targets):
        return _wraps_only(statement.value, lookup)
    return False


WRAPPERS = frozenset(
    {"jit", "partial", "grad", "value_and_grad", "vmap", "pmap", "checkpoint", "remat", "jacfwd", "jacrev", "hessian"}
    | {"filter_jit", "filter_grad", "filter_value_and_grad", "filter_vmap", "checkify"}
)


def _wraps_only(node: ast.AST, lookup) -> bool:
    """``jax.jit(f, ...)``, ``functools.partial(f, ...)``, a name: an assignment that wraps a
    function (a transform of JAX or a library), running nothing."""
    if isinstance(node, ast.Attribute):
        return _wraps_only(node.value, lookup) and not isinstance(node.value, ast.Call)
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.Call):
        wrapper = getattr(_callee(node.func, lookup), "__name__", None) in WRAPPERS
        # a lambda, like a ``def``, runs nothing until it is called
        arguments = (a for a in node.args if not isinstance(a, ast.Lambda))
        return wrapper and _is_library_call(node, lookup) and all(safe_expression(a, lookup) for a in arguments)
    return False


def is_library(fn: Any) -> bool:
    """True for JAX's, NumPy's, the libraries' and Python's own callables; False for the user's
    (a function of theirs, jitted or not, a method, a callable object of their class)."""
    try:
        if fn in SAFE_BUILTINS:
            return True
    except TypeError:  # unhashable
        pass
    owner = getattr(fn, "__objclass__", None) or type(getattr(fn, "__self__", None))
    if isinstance(fn, (types.BuiltinMethodType, types.MethodDescriptorType)) and owner in _PYTHON_VALUES:
        return True  # size.tolist(), config.items(): a method of a Python value
    if isinstance(fn, type) and dataclasses.is_dataclass(fn) and not hasattr(fn, "__post_init__"):
        return True  # a dataclass's own __init__ only stores its fields
    inner = callables.python_function(fn)
    if inner is not None:
        module = inner.__module__ or ""
    elif isinstance(fn, (type, types.BuiltinFunctionType, np.ufunc)):
        module = getattr(fn, "__module__", None) or ""
    else:
        module = type(fn).__module__ or ""
    return module.split(".")[0] in SAFE_MODULES


def safe_expression(node: ast.AST, lookup) -> bool:
    """True when evaluating ``node`` runs none of the user's functions: names, constants,
    containers, arithmetic, and calls of JAX, NumPy and Python's constructors.

    >>> import jax.numpy as jnp
    >>> lookup = {"jnp": jnp, "x": 1, "step": lambda v: v}.get
    >>> safe_expression(ast.parse("jnp.ones((2, x))", mode="eval").body, lookup)
    True
    >>> safe_expression(ast.parse("step(x)", mode="eval").body, lookup)
    False
    """
    for inner in ast.walk(node):
        if isinstance(inner, (ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom, ast.Starred)):
            return False
        if isinstance(inner, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return False
        if isinstance(inner, ast.Call) and not _is_library_call(inner, lookup):
            return False
    return True


def evaluated(node: ast.expr, frame: clues.UserFrame) -> Any:
    """The value of an argument as the user wrote it in ``frame``: a name's value, or a safe
    expression (``jnp.ones((4, 3))``) evaluated there; ``MISSING`` for anything else.

    >>> import jax.numpy as jnp
    >>> def site(n):
    ...     return user_frame()
    >>> def user_frame():
    ...     import sys
    ...     return clues.UserFrame(sys._getframe(1), 0, 0)
    >>> evaluated(ast.parse("jnp.ones((n, 2))", mode="eval").body, site(3)).shape
    (3, 2)
    """
    value = clues.resolve(node, frame.lookup)
    if value is MISSING and safe_expression(node, frame.lookup):
        try:
            return evaluate(node, {**frame.frame.f_globals, **frame.frame.f_locals})
        except Exception:
            return MISSING
    return value


def evaluate(node: ast.expr, scope: dict, filename: str = "<argument>") -> Any:
    """The value of ``node``, an expression ``safe_expression`` let through, in ``scope`` (compiled
    as ``filename``: where its tracebacks say it ran)."""
    return eval(compile(ast.Expression(node), filename, "eval"), scope)  # noqa: S307 (checked safe)


def _callee(node: ast.expr, lookup) -> Any:
    """What a call calls: a name or a dotted name (``clues.resolve``), or an array's own method
    (``params.copy``), read from its class so that nothing runs."""
    found = clues.resolve(node, lookup)
    if found is MISSING and isinstance(node, ast.Attribute):
        base = clues.resolve(node.value, lookup)
        if isinstance(base, (jax.Array, np.ndarray, *_PYTHON_VALUES)):
            try:
                return inspect.getattr_static(base, node.attr)
            except AttributeError:
                return MISSING
    return found


def _is_library_call(node: ast.Call, lookup) -> bool:
    fn = _callee(node.func, lookup)
    if fn is MISSING and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, _MADE):
        return safe_expression(
            node.func.value, lookup
        )  # jnp.arange(8.0).reshape(4, 2), {...}.items(): a method of a value made here
    return fn is not MISSING and is_library(fn)


_PYTHON_VALUES = (dict, list, tuple, set, frozenset, str)
_MADE = (ast.Call, ast.Dict, ast.List, ast.Tuple, ast.Set, ast.Constant)


def calls_of_user_code(statement: ast.stmt, lookup) -> list[ast.Call]:
    return [n for n in ast.walk(statement) if isinstance(n, ast.Call) and not _is_library_call(n, lookup)]
