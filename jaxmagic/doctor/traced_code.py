"""What the trace-time recognisers read: the traced function and the user's helpers it calls, the
globals each reads (from the bytecode), the jaxpr JAX traced, and what tracing printed.

>>> scale = 2.0
>>> def f(x):
...     return x * scale
>>> [(load.name, load.line) for load in global_loads(f)]
[('scale', 2)]
"""

from __future__ import annotations

import ast
import dis
import numbers
import types
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, cast

import jax
import numpy as np

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.clues import Span
from jaxmagic.tracing import callables
from jaxmagic.tracing.sources import CellNamer
from jaxmagic.words import units

MAX_FUNCTIONS = 20  # user functions followed from the traced one (helpers it calls)

DefinitionNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda  # a function's definition
Located = tuple[clues.ParsedSource, DefinitionNode]  # where ``clues.function_of_code`` found a function


@dataclass(frozen=True)
class Load:
    """One place a function reads a global name: which function, which code object, which line.

    >>> scale = 2.0
    >>> def f(x):
    ...     return x * scale
    >>> [(load.name, load.line) for load in global_loads(f)]
    [('scale', 2)]
    """

    function: types.FunctionType
    code: types.CodeType
    name: str
    line: int


def globals_of(function: Callable[..., Any]) -> dict[str, Any]:
    """The namespace a Python function reads its globals from (``function.__globals__``).

    For a function kept in a dataclass field (``Load.function``), which pyright reads as a bound
    method, not knowing its ``__globals__``.

    >>> globals_of(globals_of)["globals_of"] is globals_of
    True
    """
    return cast(types.FunctionType, function).__globals__


def codes(code: types.CodeType) -> Iterator[types.CodeType]:
    """A code object and every code object nested in it (inner functions, comprehensions)."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from codes(const)


def instructions(code: types.CodeType, *opnames: str) -> Iterator[tuple[types.CodeType, dis.Instruction]]:
    """The instructions named ``opnames`` of ``code`` and of the code nested in it, each with its code.

    >>> [i.argval for _, i in instructions(instructions.__code__, "LOAD_GLOBAL")][:1]
    ['codes']
    """
    return ((inner, i) for inner in codes(code) for i in dis.get_instructions(inner) if i.opname in opnames)


def global_loads(function: types.FunctionType) -> Iterator[Load]:
    """Every place ``function`` (or a function nested in it) reads a global name."""
    for code, instruction in instructions(function.__code__, "LOAD_GLOBAL", "LOAD_NAME"):
        positions = getattr(instruction, "positions", None)  # Python 3.11 and later
        line = positions.lineno if positions else None
        yield Load(function, code, instruction.argval, line or code.co_firstlineno)


def stored_globals(function: types.FunctionType) -> set[str]:
    """The global names ``function`` assigns (``global n_calls; n_calls += 1``).

    >>> def bump():
    ...     global counter
    ...     counter = 1
    >>> stored_globals(bump)
    {'counter'}
    """
    return {i.argval for _, i in instructions(function.__code__, "STORE_GLOBAL")}


def argument_methods(arguments) -> list[types.FunctionType]:
    """The methods of the user's own classes among ``arguments`` (a model passed to a jitted step:
    its ``__call__`` runs while JAX traces too).

    >>> class Double:
    ...     def __call__(self, x):
    ...         return x * 2
    >>> [m.__name__ for m in argument_methods([Double(), 3.0])]
    ['__call__']
    """
    found: list[types.FunctionType] = []
    seen: set[type] = set()
    for argument in arguments:
        for cls in type(argument).__mro__:
            if cls in seen or cls is object:
                continue
            seen.add(cls)
            for name, member in vars(cls).items():
                if name.startswith("__") and name != "__call__":
                    continue  # __init__, __repr__...: not run by the traced call
                if isinstance(member, types.FunctionType) and clues.is_user_file(member.__code__.co_filename):
                    found.append(member)
    return found


def user_functions(fn: Any, arguments=()) -> list[types.FunctionType]:
    """The traced function, the methods of the user's objects it gets as ``arguments``, and the
    user's own functions these read as globals (their helpers).

    >>> def helper(x):
    ...     return x + 1
    >>> def f(x):
    ...     return helper(x) * 2
    >>> [g.__name__ for g in user_functions(f)]
    ['f', 'helper']
    """
    first = callables.python_function(fn)
    if first is None:
        return []
    found = [first] + [m for m in argument_methods(arguments) if m is not first]
    queue = list(found)
    while queue and len(found) < MAX_FUNCTIONS:
        current = queue.pop(0)
        on_host = host_callbacks(current)
        for load in global_loads(current):
            if load.name in on_host:
                continue  # runs on the host with real values, each call: not traced code
            value = current.__globals__.get(load.name)
            helper = callables.python_function(value) if value is not None and callable(value) else None
            if (
                isinstance(helper, types.FunctionType)
                and helper not in found
                and clues.is_user_file(helper.__code__.co_filename)
            ):
                found.append(helper)
                queue.append(helper)
    return found


HOST_CALLBACKS = ("pure_callback", "io_callback", "callback")  # jax.pure_callback, io_callback, jax.debug.callback


def host_callbacks(function: types.FunctionType) -> set[str]:
    """The names ``function`` hands to JAX as host callbacks (``jax.pure_callback(log, ...)``):
    they run on the host, on real values, each time the compiled code runs.

    >>> import jax
    >>> def log(x):
    ...     print(x)
    ...     return x
    >>> def f(x):
    ...     return jax.pure_callback(log, jax.ShapeDtypeStruct((), "float32"), x)
    >>> host_callbacks(f)
    {'log'}
    """
    located = clues.function_of_code(function.__code__)
    if located is None:
        return set()
    lookup = clues.lookup_in(function.__globals__)
    found = set()
    for call in clues.nodes_in(located[1], ast.Call):
        callee = clues.resolve(call.func, lookup)
        module = getattr(callee, "__module__", "") or ""
        named = getattr(callee, "__name__", "") in HOST_CALLBACKS and module.split(".")[0] == "jax"
        if named and call.args and isinstance(call.args[0], ast.Name):
            found.add(call.args[0].id)
    return found


def with_edits(found: Located | None, edits: Iterable[rewrites.Edit]) -> str | None:
    """The function located by ``clues.function_of_code`` with ``edits`` applied (``None`` for a lambda)."""
    if found is None:
        return None
    parsed, node = found
    if isinstance(node, ast.Lambda):
        return None
    return rewrites.definition_with_edits(parsed.lines, node, edits)


@dataclass(frozen=True)
class SourcedFunction:
    """A traced function with its source: ``located`` is ``(parsed, node)`` (see ``clues.function_of_code``),
    ``lookup`` finds the names it reads."""

    function: types.FunctionType
    located: Located
    lookup: Callable[[str], Any]

    @property
    def parsed(self) -> clues.ParsedSource:
        return self.located[0]

    @property
    def node(self) -> DefinitionNode:
        return self.located[1]


def with_source(functions: Iterable[types.FunctionType]) -> Iterator[SourcedFunction]:
    """The functions whose source is known, each with its parsed source and a name lookup.

    >>> def f(x):
    ...     return x
    >>> [s.node.name for s in with_source([f])]
    ['f']
    """
    for function in functions:
        located = clues.function_of_code(function.__code__)
        if located is not None:
            yield SourcedFunction(function, located, clues.lookup_in(function.__globals__))


@dataclass(frozen=True)
class Traced:
    """A function that traced fine, as the trace-time recognisers see it.

    ``functions``: the traced function and its helpers (``user_functions``); ``closed_jaxpr``:
    what JAX traced (``None``: not known); ``printed_text``: what tracing printed (``None``: not
    watched); ``cell_namer``: how places are named; ``arguments``: the values it was called with.

    >>> Traced([], None, None, lambda filename: None).printed_text is None
    True
    """

    functions: list[types.FunctionType]
    closed_jaxpr: Any
    printed_text: str | None
    cell_namer: CellNamer
    arguments: tuple = ()  # the values it was called with, where known (a bound method's object first)


def is_baked_value(name: str, value: Any) -> bool:
    """True for a global whose value JAX compiles in when a traced function reads it: a number (but
    not a bool, nor a name in capitals: a constant by convention, meant never to change) or an array.

    >>> is_baked_value("rate", 0.1), is_baked_value("EPSILON", 1e-6), is_baked_value("debug", True)
    (True, False, False)
    """
    if isinstance(value, jax.Array):
        return not clues.is_tracer(value)
    if isinstance(value, np.ndarray):
        return True
    if isinstance(value, (numbers.Number, np.generic)) and not isinstance(value, bool):
        # Names in capitals are constants by convention: meant never to change.
        return not (name.isupper() or (name.upper() == name and "_" in name))
    return False


def as_parameters(function: types.FunctionType, names: list[str]) -> str | None:
    """The function's definition with the globals ``names`` added as its last parameters, and how
    to call it (``None`` for a lambda, defaults or ``*args``, or unknown source).

    >>> scale = 2.0
    >>> def f(x):
    ...     return x * scale
    >>> as_parameters(f, ["scale"]).splitlines()[0]
    'def f(x, scale):'
    """
    located = clues.function_of_code(function.__code__)
    if located is None:
        return None
    parsed, node = located
    edit = parameter_edit(parsed, node, names)
    if edit is None or isinstance(node, ast.Lambda):
        return None
    params = [a.arg for a in node.args.posonlyargs + node.args.args] + names
    text = rewrites.definition_with_edits(parsed.lines, node, [edit])
    return f"{text}\n\n# call it with the current values:  {node.name}({', '.join(params)})"


def parameter_edit(parsed: clues.ParsedSource, node: ast.AST, names: list[str]) -> rewrites.Edit | None:
    """The edit adding ``names`` as a function definition's last parameters; ``None`` for a lambda
    (or any node but a ``def``) or a definition with defaults, ``*args``, keyword-only parameters or
    ``**kwargs``."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    args = node.args
    if args.defaults or args.kw_defaults or args.vararg or args.kwonlyargs or args.kwarg:
        return None
    added = ", ".join(names)
    if args.posonlyargs or args.args:
        return rewrites.Edit(clues.end_of((args.posonlyargs + args.args)[-1]), f", {added}")
    # ``def f():``: the parameters go between the parentheses right after the name.
    raw = parsed.lines[node.lineno - 1].encode()
    at = raw.find(b"(", node.col_offset)
    if at < 0:
        return None
    return rewrites.Edit(Span(node.lineno, node.lineno, at + 1, at + 1), added)


def array_leaves(value: Any) -> list | None:
    """The arrays of a global pytree of arrays (a dict of parameters, say); ``None`` for anything else.

    >>> import numpy as np
    >>> len(array_leaves({"w": np.ones(2), "b": 0.0})), array_leaves(3.0)
    (1, None)
    """
    if not isinstance(value, (dict, list, tuple)) or not value:
        return None
    try:
        leaves = jax.tree_util.tree_leaves(value)
    except Exception:
        return None
    if not leaves or not all(isinstance(leaf, (jax.Array, np.ndarray, numbers.Number, np.generic)) for leaf in leaves):
        return None
    arrays = [leaf for leaf in leaves if isinstance(leaf, (jax.Array, np.ndarray))]
    return arrays or None


def describe_value(value: Any) -> str:
    """A global's value in a few words: ``a float32[3] array``, ``0.1``, ``a dict of 2 arrays``.

    >>> import numpy as np
    >>> describe_value(np.ones(3, np.float32)), describe_value(0.1)
    ('a float32[3] array', '0.1')
    """
    arrays = array_leaves(value)
    if arrays is not None:
        return f"a {type(value).__name__} of {len(arrays)} array{'s' * (len(arrays) != 1)}"
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is not None and dtype is not None and shape != ():
        return f"a {dtype}{list(shape)} array"
    text = repr(value.item() if hasattr(value, "item") and shape == () else value)
    return units.shorten(text, 40)
