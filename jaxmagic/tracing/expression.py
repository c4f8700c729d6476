"""Any expression as a call: ``f(x) + 1`` becomes ``(lambda x: f(x) + 1)(x)``. The names the
expression reads from the notebook (its free names) are split by what they hold: arrays, and
pytrees or objects holding arrays (parameters, a Flax NNX or Equinox model), become the function's
arguments, traced as a jitted function's arguments are; everything else (functions, modules,
classes, Python numbers and strings) stays closed over, a constant of the compiled program as it
is of ``jax.jit(lambda x: f(x) + 1)``.

>>> import jax.numpy as jnp
>>> def f(v):
...     return v * 2
>>> found = as_function("f(x) + n", {"f": f, "x": jnp.ones(2), "n": 3}, None)
>>> found.expression.arguments, found.expression.closed_over, found.expression.function_text
(('x',), ('f', 'n'), 'lambda x: f(x) + n')
>>> found.function(*found.args).tolist()
[5.0, 5.0]
"""

from __future__ import annotations

import ast
import builtins
import inspect
import symtable
import types
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from jaxmagic.errors import UsageProblem
from jaxmagic.tracing import libraries


@dataclass(frozen=True)
class Expression:
    """An expression timed as a function of its free names: ``arguments`` (traced, in the order
    they first appear) and ``closed_over`` (constants of the compiled program)."""

    text: str
    arguments: tuple[str, ...]
    closed_over: tuple[str, ...]

    @property
    def function_text(self) -> str:
        """``lambda x, params: model(params, x) + 1``: the function that is jitted."""
        return f"lambda {', '.join(self.arguments)}: {self.text}" if self.arguments else f"lambda: {self.text}"


@dataclass(frozen=True)
class ExpressionCall:
    """The expression as a function, the values of its arguments, and how it was split."""

    function: Callable
    args: tuple
    expression: Expression


def free_names(text: str) -> list[str]:
    """The names an expression reads from outside it, in the order they first appear (names its
    own lambdas and comprehensions bind are not free).

    >>> free_names("sum(f(v) for v in xs) + (lambda y: y * k)(z)")
    ['sum', 'f', 'xs', 'k', 'z']
    """
    table = symtable.symtable(f"(lambda: ({text}))", "<expression>", "eval")
    found: set[str] = set()

    def walk(scope) -> None:
        for symbol in scope.get_symbols():
            if symbol.is_global() and symbol.is_referenced():
                found.add(symbol.get_name())
        for child in scope.get_children():
            walk(child)

    walk(table)
    nodes = sorted(
        (node for node in ast.walk(ast.parse(text, mode="eval")) if isinstance(node, ast.Name)),
        key=lambda node: (node.lineno, node.col_offset),
    )
    order = [node.id for node in nodes]
    return list(dict.fromkeys(name for name in order if name in found))


def is_argument(value: Any) -> bool:
    """Whether a free name's value becomes an argument (traced): an array, or a pytree or object
    that holds one (parameters, a model); a function, module, class, number or string stays closed
    over.

    >>> import jax.numpy as jnp, numpy as np
    >>> is_argument(jnp.ones(2)), is_argument({"w": np.ones(2)}), is_argument(3.0), is_argument(jnp.sin)
    (True, True, False, False)
    """
    import jax
    import numpy as np

    if isinstance(value, (types.ModuleType, type)) or inspect.isroutine(value):
        return False
    if libraries.holds_nnx_objects((value,), {}):
        return True
    try:
        leaves = jax.tree_util.tree_leaves(value)
    except Exception:  # an object JAX cannot flatten is no pytree of arrays
        return False
    return any(isinstance(leaf, (jax.Array, np.ndarray)) for leaf in leaves)


def as_function(
    text: str,
    namespace: Mapping[str, Any],
    local_namespace: Mapping[str, Any] | None,
    *,
    filename: str = "<jaxmagic-call>",
    line: int = 1,
    magic: str = "%jitcompare",
) -> ExpressionCall:
    """The expression ``text`` as a function of its free names that hold arrays, closed over the
    others, with those arrays as its arguments. A free name defined nowhere is a ``UsageProblem``."""
    values: dict[str, Any] = {}
    for name in free_names(text):
        for scope in (local_namespace, namespace):
            if scope is not None and name in scope:
                values[name] = scope[name]
                break
        else:
            if not hasattr(builtins, name):
                raise UsageProblem(
                    f"{magic}: name '{name}' is not defined. Define it first (run the cell that defines it), "
                    f"or use the cell form, where the cell's own definitions run first.",
                    example=f"{magic} f(x) + 1",
                )
    arguments = tuple(name for name, value in values.items() if is_argument(value))
    closed = tuple(name for name in values if name not in arguments)
    function = _compile(text, arguments, {name: values[name] for name in closed}, filename, line)
    expression = Expression(ast.unparse(ast.parse(text.strip(), mode="eval").body), arguments, closed)
    return ExpressionCall(function, tuple(values[name] for name in arguments), expression)


def _compile(text: str, arguments: tuple[str, ...], closed: dict[str, Any], filename: str, line: int) -> Callable:
    """``lambda <arguments>: <text>`` closed over ``closed``'s values (a closure, as a cell's own
    lambda would be), its code placed at ``line`` of ``filename`` for tracebacks."""
    body = ast.parse(text.strip(), mode="eval").body
    ast.increment_lineno(body, line - 1)
    # The names are identifiers (Python's own symbol table found them), so the frame can be parsed.
    module = ast.parse(f"def expression({', '.join(closed)}):\n    return lambda {', '.join(arguments)}: None")
    factory = module.body[0]
    assert isinstance(factory, ast.FunctionDef) and isinstance(factory.body[0], ast.Return)
    lambda_node = factory.body[0].value
    assert isinstance(lambda_node, ast.Lambda)
    lambda_node.body = body
    written = {id(node) for node in ast.walk(body)}
    for node in ast.walk(factory):  # the frame around the expression stands where it does
        if id(node) not in written and isinstance(node, (ast.stmt, ast.expr, ast.arg)):
            ast.copy_location(node, body)
    ast.fix_missing_locations(module)
    scope: dict[str, Any] = {"__builtins__": builtins}
    exec(compile(module, filename, "exec"), scope)
    function = scope["expression"](**closed)
    function.__qualname__ = function.__name__ = "<expression>"
    return function
