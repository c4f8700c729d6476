"""Callables as jaxmagic reads them, in one place: the Python function inside a jit wrapper
(``unwrap_jit``) or behind any callable (``python_function``: partials, bound methods, callable
objects), a jitted method bound to its instance, a callable's short name, its signature and
positional parameters, and whether an argument is a function value.

>>> import functools, jax
>>> def f(x, n):
...     return x
>>> unwrap_jit(jax.jit(f)) is f, python_function(functools.partial(f, n=2)) is f
(True, True)
>>> callable_name(jax.jit(f)), positional_parameters(f)
('f', ['x', 'n'])
"""

from __future__ import annotations

import functools
import inspect
import types
from typing import Any, Callable

from jaxmagic import _jax_private
from jaxmagic.tracing import libraries


def unwrap_jit(fn: Callable) -> Callable:
    """The Python function inside a ``jax.jit``, ``nnx.jit`` or ``eqx.filter_jit`` wrapper (the
    callee itself otherwise).

    >>> import jax
    >>> def f(x):
    ...     return x
    >>> unwrap_jit(jax.jit(f)) is f, unwrap_jit(f) is f
    (True, True)
    """
    if _jax_private.is_jitted(fn):
        return fn.__wrapped__
    library = libraries.recognise(fn)
    if library is not None:
        return library.function
    return fn


def bind_jitted_method(fn: Any, args: tuple) -> tuple[Any, tuple]:
    """The callee as a function of all its arrays: a method jitted in its class body
    (``@partial(jax.jit, static_argnums=0)`` on ``def calc(self, y)``), taken from an instance, is
    that jitted function with the instance as its first argument; so is an object whose
    ``__call__`` is jitted (an Equinox module's ``filter_jit``), and an object that holds arrays
    (a model called directly), so that its arrays are inputs rather than constants baked in.
    """
    bound = _unbind_jit_wrapper(fn, args)
    if bound is not None:
        return bound
    # Equinox's function-like modules (eqx.filter_vmap(model)) have ``__get__``, so Python calls them
    # routines: one that holds arrays is an object here, its arrays inputs
    routine = inspect.isroutine(fn) and not _holds_arrays(fn)
    if routine or _is_jit_wrapper(fn) or isinstance(fn, functools.partial) or inspect.isclass(fn):
        return fn, args
    bound = _unbind_jit_wrapper(fn.__call__ if callable(fn) else None, args)
    if bound is not None:
        return bound
    call_method = type(fn).__call__ if callable(fn) else None
    if inspect.isfunction(call_method) and _holds_arrays(fn):
        return call_method, (fn, *args)
    return fn, args


def _unbind_jit_wrapper(method: Any, args: tuple) -> tuple[Any, tuple] | None:
    inner = getattr(method, "__func__", None)
    if inspect.ismethod(method) and _is_jit_wrapper(inner):
        return inner, (method.__self__, *args)
    # Equinox binds a filter_jit method as ``eqx.Partial(wrapper, instance)``
    inner, bound, keywords = (
        getattr(method, "func", None),
        getattr(method, "args", None),
        getattr(method, "keywords", None),
    )
    if type(method).__qualname__ == "Partial" and _is_jit_wrapper(inner) and isinstance(bound, tuple) and not keywords:
        return inner, (*bound, *args)
    return None


def _holds_arrays(obj: Any) -> bool:
    import jax

    leaves = jax.tree_util.tree_leaves(obj)
    return leaves != [obj] and any(isinstance(leaf, jax.Array) for leaf in leaves)


def _is_jit_wrapper(fn: Any) -> bool:
    return fn is not None and (_jax_private.is_jitted(fn) or libraries.recognise(fn) is not None)


def is_function_value(value: Any) -> bool:
    """True for a function passed as an argument (a ``def``, lambda, partial, builtin or jitted
    function): JAX cannot trace it, so it can only be static. Modules and other callable objects
    that hold arrays are not functions here.

    >>> import functools, jax.numpy as jnp
    >>> is_function_value(jnp.sin), is_function_value(functools.partial(max, 1)), is_function_value(3)
    (True, True, False)
    """
    if isinstance(value, functools.partial):
        return True
    if inspect.isfunction(value) or inspect.ismethod(value) or inspect.isbuiltin(value):
        return True
    return _jax_private.is_jitted(value) or libraries.recognise(value) is not None


def callable_name(fn: Any) -> str:
    """A short human name for any callable.

    >>> import functools
    >>> callable_name(functools.partial(print, 1)), callable_name(lambda: 0)
    ('partial(print)', '<lambda>')
    """
    fn = unwrap_jit(fn)
    if isinstance(fn, functools.partial):
        return f"partial({callable_name(fn.func)})"
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if name is None:
        name = type(fn).__qualname__
    return name.replace(".<locals>", "")


def signature_of(fn: Callable) -> inspect.Signature | None:
    """``inspect.signature`` that answers ``None`` instead of raising."""
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def positional_parameters(fn: Callable) -> list[str]:
    """The names of the parameters that can be given by position, in order (``[]`` where Python
    cannot tell).

    >>> def f(x, /, n, *rest, mode="a"):
    ...     pass
    >>> positional_parameters(f)
    ['x', 'n']
    """
    sig = signature_of(fn)
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [name for name, p in (sig.parameters.items() if sig else ()) if p.kind in kinds]


def python_function(fn: Any) -> types.FunctionType | None:
    """The plain Python function behind a jitted function, partial, bound method or callable object.

    >>> import functools
    >>> def f(x, n):
    ...     return x
    >>> python_function(functools.partial(f, n=2)) is f, python_function(len)
    (True, None)
    """
    seen = 0
    while fn is not None and seen < 8:
        seen += 1
        if isinstance(fn, types.FunctionType):
            return fn
        wrapped = getattr(fn, "__wrapped__", None)
        if wrapped is not None:
            fn = wrapped
        elif isinstance(fn, functools.partial):
            fn = fn.func
        elif isinstance(fn, types.MethodType):
            fn = fn.__func__
        elif callable(fn) and not isinstance(fn, type):
            fn = type(fn).__call__
        else:
            return None
    return None


def innermost(fun: Any) -> Any:
    """The innermost function whose code runs: through partials, bound methods and every
    ``__wrapped__`` (a jax.jit wrapper, and also a ``jax.vmap`` or ``functools.wraps`` wrapper,
    where ``python_function`` stops at the first plain function), then a callable object's
    ``__call__``; ``fun`` itself where there is nothing to go through.

    >>> import functools, jax
    >>> def k(x):
    ...     return x
    >>> innermost(jax.vmap(k)) is k, python_function(jax.vmap(k)) is k
    (True, False)
    """
    for _ in range(16):
        if isinstance(fun, functools.partial):
            fun = fun.func
        elif inspect.ismethod(fun):
            fun = fun.__func__
        elif hasattr(fun, "__wrapped__") and callable(fun.__wrapped__):
            fun = fun.__wrapped__
        else:
            break
    if not hasattr(fun, "__code__") and callable(fun):
        call = type(fun).__call__
        if hasattr(call, "__code__"):
            return call
    return fun
