"""A case's call taken apart, the way a user's ``jax.jit`` would take it: the callee, its
arguments, and which of them must be static (what cannot be traced).

    >>> import jax.numpy as jnp
    >>> ns = {"f": lambda x, n: x * n, "x": jnp.ones(2)}
    >>> call = parse_call("f(x, 3)", ns)
    >>> call.function is ns["f"], len(call.args), static_positions(call, static_scalars=True)
    (True, 2, (1,))
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Callable

import jax
import numpy as np


@dataclass
class ParsedCall:
    """``function(*args, **kwargs)``, each part evaluated in the cell's namespace."""

    function: Callable
    args: tuple
    kwargs: dict = field(default_factory=dict)

    def __call__(self):
        return self.function(*self.args, **self.kwargs)


def parse_call(call: str, namespace: dict) -> ParsedCall:
    """Evaluate the callee and each argument of ``call`` (a call expression) in ``namespace``."""
    node = ast.parse(call.strip(), mode="eval").body
    if not isinstance(node, ast.Call):
        raise ValueError(f"not a call expression: {call!r}")

    def value(expr: ast.expr) -> Any:
        return eval(compile(ast.Expression(expr), "<call>", "eval"), namespace)

    args = []
    for arg in node.args:
        if isinstance(arg, ast.Starred):
            args.extend(value(arg.value))
        else:
            args.append(value(arg))
    kwargs = {}
    for keyword in node.keywords:
        if keyword.arg is None:
            kwargs.update(value(keyword.value))
        else:
            kwargs[keyword.arg] = value(keyword.value)
    return ParsedCall(value(node.func), tuple(args), kwargs)


def traceable(leaf: Any) -> bool:
    """Whether ``jax.jit`` can trace this leaf (an array, a NumPy scalar, a Python number)."""
    return isinstance(leaf, (bool, int, float, complex, np.ndarray, np.generic, jax.Array))


def _traced(leaf: Any, static_scalars: bool) -> bool:
    return traceable(leaf) and not (static_scalars and isinstance(leaf, (bool, int, float, complex)))


def static_positions(call: ParsedCall, *, static_scalars: bool = False) -> tuple[int, ...]:
    """Positions of the arguments ``jax.jit`` must take as static: those with a leaf it cannot
    trace (a function, a string, an object), and with ``static_scalars`` a Python scalar."""
    return tuple(
        i
        for i, arg in enumerate(call.args)
        if not all(_traced(leaf, static_scalars) for leaf in jax.tree_util.tree_leaves(arg)) or arg is None
    )


def static_names(call: ParsedCall, *, static_scalars: bool = False) -> tuple[str, ...]:
    """Keyword arguments ``jax.jit`` must take as static (as :func:`static_positions`)."""
    return tuple(
        name
        for name, arg in call.kwargs.items()
        if not all(_traced(leaf, static_scalars) for leaf in jax.tree_util.tree_leaves(arg)) or arg is None
    )


def jitted(call: ParsedCall, *, static_scalars: bool = False) -> JittedCall:
    """The call under an outer ``jax.jit``: every leaf of the arguments and keyword arguments that
    ``jax.jit`` can trace is traced, and every array of the callee; the rest (functions, strings,
    objects, the callee's Python numbers, and with ``static_scalars`` every Python scalar) is held
    fixed, as ``equinox.filter_jit`` does."""
    leaves, treedef = jax.tree_util.tree_flatten((call.function, call.args, call.kwargs))
    # in the callee (a module, a partial) only arrays are traced: its Python numbers and flags are
    # settings, as equinox.filter_jit holds them
    in_callee = len(jax.tree_util.tree_leaves(call.function))
    traced = [
        _traced(leaf, static_scalars or i < in_callee) and (i >= in_callee or hasattr(leaf, "shape"))
        for i, leaf in enumerate(leaves)
    ]
    fixed = [None if is_traced else leaf for leaf, is_traced in zip(leaves, traced, strict=True)]

    def rebuilt(dynamic):
        given = iter(dynamic)
        whole = [next(given) if is_traced else leaf for leaf, is_traced in zip(fixed, traced, strict=True)]
        function, args, kwargs = jax.tree_util.tree_unflatten(treedef, whole)
        return function(*args, **kwargs)

    function = jax.jit(rebuilt)
    dynamic = [leaf for leaf, is_traced in zip(leaves, traced, strict=True) if is_traced]
    return JittedCall(lambda: function(dynamic), lambda: function.lower(dynamic))


@dataclass
class JittedCall:
    """A call under an outer ``jax.jit``: call it to run it; ``lower()`` lowers the same program
    (for XLA's own account of it: ``call.lower().compile().memory_analysis()``)."""

    run: Callable[[], Any]
    lower: Callable[[], Any]

    def __call__(self):
        return self.run()
