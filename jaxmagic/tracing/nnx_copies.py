"""The user's Flax NNX objects left as they were: a call is traced, profiled and timed on copies of
every NNX object it reaches.

NNX modules, optimizers and ``Rngs`` are mutable: a training step changes them in place, and a
trace that fails half-way can leave them changed. Before jaxmagic traces or runs a call, every NNX
object the call reaches is copied: among its arguments, in a ``functools.partial``'s arguments, as a
bound method's object, in a closure's cells (also of functions those hold), and in the globals a
function the user wrote reads by name. All are copied together (split and merged as one graph), so
that references they share stay shared between the copies; the callee is rebuilt around the copies
(a new partial, a new bound method, a new function object with the same code and new cells, or
new globals: the module's own, with those names bound to the copies). A function the callee calls
in turn reads the user's globals.

>>> from flax import nnx
>>> model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
>>> def make(m):
...     return lambda x: m(x)
>>> fn, (copy, x), _ = on_nnx_copies(make(model), (model, 1.0), {})
>>> copy is not model and fn.__closure__[0].cell_contents is copy and x == 1.0
True
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import sys
import types
from typing import Any, Callable, cast

from jaxmagic.tracing import libraries
from jaxmagic.tracing.sources import is_jaxmagic_file, is_library_file

_DEPTH = 6  # how far into partials and closures the search goes


def on_nnx_copies(fn: Callable, args: tuple, kwargs: dict, *, copy_arrays: bool = True) -> tuple[Callable, tuple, dict]:
    """``(fn, args, kwargs)`` with every Flax NNX object they reach replaced by a copy (see the
    module's docstring). With ``copy_arrays`` the copies hold arrays of their own (a donating step
    deletes its inputs' buffers); without, they share the user's arrays, which nothing can change
    (enough for tracing). Returned unchanged when nothing reaches an NNX object.
    """
    if sys.modules.get("flax.nnx.graph") is None:  # imported only where the user works with NNX
        return fn, args, kwargs
    found: dict[int, Any] = {}
    _collect((fn, args, kwargs), found, set(), 0)
    if not found:
        return fn, args, kwargs
    import jax
    from flax import nnx

    originals = tuple(found.values())
    graphdef, state = nnx.split(originals)
    if copy_arrays:
        state = jax.tree_util.tree_map(lambda a: a.copy() if isinstance(a, jax.Array) else a, state)
    copies = nnx.merge(graphdef, state)
    copy_of = {id(original): copy for original, copy in zip(originals, copies, strict=True)}
    rebuilt = cast(tuple, _rebuild((fn, args, kwargs), copy_of, {}, 0))  # a tuple is rebuilt as a tuple
    rebuilt_fn, rebuilt_args, rebuilt_kwargs = rebuilt
    return rebuilt_fn, tuple(rebuilt_args), dict(rebuilt_kwargs)


def call_on_nnx_copies(call, *, copy_arrays: bool = True):
    """A ``Call`` (or any dataclass with ``fn``, ``function``, ``args``, ``kwargs``) on copies of the
    NNX objects it reaches; ``call`` itself where it reaches none."""
    fn, args, kwargs = on_nnx_copies(call.fn, call.args, call.kwargs, copy_arrays=copy_arrays)
    if fn is call.fn and args is call.args and kwargs is call.kwargs:
        return call
    function = call.function if fn is call.fn else None  # None: found again inside the new callee
    return dataclasses.replace(call, fn=fn, function=function, args=args, kwargs=kwargs)


def nnx_argument_names(call) -> list[str]:
    """The parameters whose arguments are (or hold) Flax NNX objects, then those the callee reaches
    itself (its closure's variables, the globals it reads)."""
    callee = names_reached(call.fn)
    if not libraries.holds_nnx_objects(call.args, call.kwargs):
        return callee
    signature, bound = call.signature, None
    if signature is not None:
        try:
            bound = signature.bind_partial(*call.args, **call.kwargs).arguments
        except TypeError:
            bound = None
    if bound is None:
        bound = {f"args[{i}]": a for i, a in enumerate(call.args)} | dict(call.kwargs)
    return [name for name, value in bound.items() if libraries.holds_nnx_objects((value,), {})] + callee


def reaches_nnx_objects(fn: Callable) -> bool:
    """True when the callee itself (a partial's arguments, a bound method's object, a closure's
    cells) reaches a Flax NNX object.

    >>> reaches_nnx_objects(print)
    False
    """
    if sys.modules.get("flax.nnx.graph") is None:
        return False
    found: dict[int, Any] = {}
    _collect(fn, found, set(), 0)
    return bool(found)


def names_reached(fn: Callable) -> list[str]:
    """How the user names the Flax NNX objects the callee reaches itself: the variables of its
    closure and the globals it reads that hold some (``model``, ``optimizer``), in the order of its
    code; the callee's own name where it reaches them otherwise (a partial, a bound method);
    ``[]`` where it reaches none.

    >>> names_reached(print)
    []
    """
    if not reaches_nnx_objects(fn):
        return []
    names = []
    if isinstance(fn, types.FunctionType):
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=False):
            if _holds_nnx(_cell_value(cell)):
                names.append(name)
        names += sorted(_globals_read(fn))
    return names or [getattr(fn, "__name__", None) or type(fn).__name__]


def _is_nnx_object(obj) -> bool:
    graph = sys.modules.get("flax.nnx.graph")
    variables = sys.modules.get("flax.nnx.variablelib")
    return (graph is not None and graph.is_graph_node(obj)) or (
        variables is not None and isinstance(obj, variables.Variable)
    )


def _parts(obj) -> list | None:
    """What ``obj`` holds that a call can reach, or ``None`` for a leaf."""
    if isinstance(obj, (tuple, list)):
        return list(obj)
    if isinstance(obj, dict):
        return list(obj.values())
    if isinstance(obj, functools.partial):
        return [obj.func, *obj.args, *obj.keywords.values()]
    if inspect.ismethod(obj):
        return [obj.__self__, obj.__func__]
    if isinstance(obj, types.FunctionType):
        cells = [_cell_value(cell) for cell in obj.__closure__ or ()]
        return cells + list(obj.__defaults__ or ()) + list(_globals_read(obj).values())
    return None


def _globals_read(function: types.FunctionType) -> dict[str, Any]:
    """The module-level names a function the user wrote reads (its nested functions' too), with
    their values, where a value is or holds a Flax NNX object."""
    if is_library_file(function.__code__.co_filename) or is_jaxmagic_file(function.__code__.co_filename):
        return {}
    names, codes = set(), [function.__code__]
    while codes:
        code = codes.pop()
        names.update(code.co_names)
        codes.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    found = {}
    for name in names:
        value = function.__globals__.get(name)
        if _is_nnx_object(value) or (isinstance(value, (tuple, list, dict)) and _holds_nnx(value)):
            found[name] = value
    return found


def _holds_nnx(value) -> bool:
    if _is_nnx_object(value):
        return True
    found: dict[int, Any] = {}
    _collect(value, found, set(), _DEPTH - 2)
    return bool(found)


def _cell_value(cell):
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return None


def _collect(obj, found: dict, seen: set, depth: int) -> None:
    if _is_nnx_object(obj):
        found.setdefault(id(obj), obj)
        return
    if depth > _DEPTH or id(obj) in seen:
        return
    seen.add(id(obj))
    parts = _parts(obj)
    if parts is None:
        import jax

        leaves = jax.tree_util.tree_leaves(obj, is_leaf=_is_nnx_object) if _is_registered_pytree(obj) else ()
        parts = [leaf for leaf in leaves if leaf is not obj]
    for part in parts:
        _collect(part, found, seen, depth + 1)


def _is_registered_pytree(obj) -> bool:
    """A pytree node JAX knows (a dataclass registered as one, a Flax struct): its leaves are reached."""
    import jax

    try:
        leaves = jax.tree_util.tree_leaves(obj, is_leaf=_is_nnx_object)
    except Exception:
        return False
    return not (len(leaves) == 1 and leaves[0] is obj)


def _rebuild(obj, copy_of: dict, memo: dict, depth: int):
    """``obj`` with each NNX object replaced by its copy; what holds none is returned as it is."""
    if id(obj) in copy_of:
        return copy_of[id(obj)]
    if depth > _DEPTH:
        return obj
    if id(obj) in memo:
        return memo[id(obj)]
    memo[id(obj)] = obj  # a cycle comes back to the original
    rebuilt = _rebuilt(obj, copy_of, memo, depth)
    memo[id(obj)] = rebuilt
    return rebuilt


def _rebuilt(obj, copy_of: dict, memo: dict, depth: int):
    def again(part):
        return _rebuild(part, copy_of, memo, depth + 1)

    for holds_parts, rebuilt in _REBUILDERS:
        if holds_parts(obj):
            return rebuilt(obj, again)
    return obj


def _same(new, old) -> bool:
    """Every part rebuilt is the very part it was: nothing to copy.

    >>> part = [1]
    >>> _same([part], [part]), _same([[1]], [part])
    (True, False)
    """
    return all(a is b for a, b in zip(new, old, strict=True))


def _sequence_rebuilt(obj: tuple | list, again):
    parts = [again(p) for p in obj]
    return obj if _same(parts, obj) else type(obj)(parts)


def _dict_rebuilt(obj: dict, again):
    parts = {k: again(v) for k, v in obj.items()}
    return obj if _same(parts.values(), obj.values()) else parts


def _partial_rebuilt(obj: functools.partial, again):
    func, args = again(obj.func), [again(a) for a in obj.args]
    keywords = {k: again(v) for k, v in obj.keywords.items()}
    if func is obj.func and _same(args, obj.args) and _same(keywords.values(), obj.keywords.values()):
        return obj
    return functools.partial(func, *args, **keywords)


def _method_rebuilt(obj: types.MethodType, again):
    receiver, function = again(obj.__self__), again(obj.__func__)
    if receiver is obj.__self__ and function is obj.__func__:
        return obj
    return types.MethodType(function, receiver)


def _pytree_rebuilt(obj, again):
    import jax

    leaves, tree = jax.tree_util.tree_flatten(obj, is_leaf=_is_nnx_object)
    parts = [again(leaf) for leaf in leaves]
    return obj if _same(parts, leaves) else jax.tree_util.tree_unflatten(tree, parts)


def _function_rebuilt(function: types.FunctionType, again) -> types.FunctionType:
    """The same code with new cells, defaults and globals where they held NNX objects."""
    cells = function.__closure__ or ()
    values = [_cell_value(cell) for cell in cells]
    new_values = [again(v) for v in values]
    defaults = function.__defaults__ or ()
    new_defaults = tuple(again(d) for d in defaults)
    read = _globals_read(function)
    new_globals = {name: again(value) for name, value in read.items()}
    if (
        all(a is b for a, b in zip(new_values, values, strict=True))
        and all(a is b for a, b in zip(new_defaults, defaults, strict=True))
        and all(new_globals[name] is value for name, value in read.items())
    ):
        return function
    namespace = function.__globals__
    if any(new_globals[name] is not value for name, value in read.items()):
        namespace = {**namespace, **new_globals}
    closure = tuple(
        cell if new is old else types.CellType(new) for cell, old, new in zip(cells, values, new_values, strict=True)
    )
    rebuilt = types.FunctionType(function.__code__, namespace, function.__name__, new_defaults or None, closure or None)
    rebuilt.__kwdefaults__ = function.__kwdefaults__
    rebuilt.__qualname__ = function.__qualname__
    rebuilt.__module__ = function.__module__
    rebuilt.__doc__ = function.__doc__
    rebuilt.__annotations__ = dict(getattr(function, "__annotations__", {}))
    rebuilt.__dict__.update(function.__dict__)
    return rebuilt


# What can hold NNX objects, in the order asked, and how each is rebuilt around their copies.
_REBUILDERS = (
    (lambda obj: type(obj) in (tuple, list), _sequence_rebuilt),
    (lambda obj: type(obj) is dict, _dict_rebuilt),
    (lambda obj: isinstance(obj, functools.partial), _partial_rebuilt),
    (inspect.ismethod, _method_rebuilt),
    (lambda obj: isinstance(obj, types.FunctionType), _function_rebuilt),
    (_is_registered_pytree, _pytree_rebuilt),
)
