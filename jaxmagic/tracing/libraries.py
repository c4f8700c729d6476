"""Callees jitted by a library that builds on ``jax.jit``: Flax NNX's ``nnx.jit`` and Equinox's
``eqx.filter_jit``. Each is traced, lowered and re-wrapped with the library's own semantics (NNX
splits and merges the module graph; Equinox makes every non-array leaf static), never re-wrapped
in plain ``jax.jit``.

Such an object exists only once its library is imported, so recognising one imports nothing.

>>> import jax.numpy as jnp
>>> recognise(jnp.sin) is None
True
"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass
from typing import Any, Callable, Literal

from jaxmagic import _jax_private


@dataclass(frozen=True)
class LibraryJit:
    """A callee wrapped by a library's jit.

    ``decorator`` is how the user wrote it (``nnx.jit``, ``eqx.filter_jit``); ``function`` the
    Python function inside; ``static_argnums`` / ``static_argnames`` / ``donate_argnums`` the
    options it was made with, where the library has them; ``all_non_arrays_static`` is Equinox's rule.
    """

    decorator: str
    function: Callable
    rewrap: Callable[[], Callable]  # a fresh wrapper with the same options: compiles anew
    trace: Callable[..., Any]  # trace(*args, **kwargs) -> jax.stages.Traced
    static_argnums: tuple[int, ...] = ()
    static_argnames: tuple[str, ...] = ()
    donate_argnums: tuple[int, ...] = ()
    all_non_arrays_static: bool = False
    donates: bool = False  # some argument's buffers are donated


def recognise(fn: Any) -> LibraryJit | None:
    """The library jit that wraps ``fn``, or ``None`` for anything else."""
    kind = (type(fn).__module__, type(fn).__qualname__)
    if kind == ("flax.nnx.transforms.compilation", "JitWrapped"):
        return _nnx(fn)
    if kind == ("equinox._jit", "_JitWrapper"):
        return _equinox(fn)
    return None


def user_call_in_progress(fun: Any, frame: Any) -> tuple[Callable, tuple] | None:
    """The user's function and positional arguments behind ``fun``, a function JAX is tracing for a
    call, when ``eqx.filter_jit`` made it: Equinox traces a wrapper of its own, called from its
    ``_call(jit_wrapper, is_lower, args, kwargs)``, whose frame (from ``frame`` outward) holds the
    user's. ``None`` for any other ``fun``.

    >>> import sys
    >>> user_call_in_progress(len, sys._getframe()) is None
    True
    """
    if getattr(fun, "__module__", None) != "equinox._jit":
        return None
    while frame is not None:
        if frame.f_code.co_name == "_call" and frame.f_globals.get("__name__") == "equinox._jit":
            local = frame.f_locals
            wrapper, args = local.get("jit_wrapper"), local.get("args")
            if recognise(wrapper) is None or not isinstance(args, tuple):
                return None
            function = wrapper.__wrapped__
            owner = getattr(function, "__self__", None)
            if owner is not None:  # a bound method: ``self`` is its first argument
                return function.__func__, (owner, *args)
            if not isinstance(function, types.FunctionType) and callable(function):  # a module called as it is
                return type(function).__call__, (function, *args)
            return function, args
        frame = frame.f_back
    return None


def holds_nnx_objects(args: tuple, kwargs: dict) -> bool:
    """True when an argument is (or holds) a Flax NNX object: a module, an optimizer, ``Rngs``.
    Such objects are mutable graphs, traced the way ``nnx.jit`` traces them."""
    graph = sys.modules.get("flax.nnx.graph")  # imported only where the user works with NNX
    if graph is None:
        return False
    import jax

    leaves = jax.tree_util.tree_leaves((args, kwargs), is_leaf=graph.is_graph_node)
    return any(graph.is_graph_node(leaf) for leaf in leaves)


def holds_equinox_module(args: tuple, kwargs: dict) -> bool:
    """True when an argument is (or holds) an Equinox module: jitted, as Equinox documents, with
    ``eqx.filter_jit``."""
    equinox = sys.modules.get("equinox")  # imported only where the user works with Equinox
    if equinox is None:
        return False
    import jax

    leaves = jax.tree_util.tree_leaves((args, kwargs), is_leaf=lambda leaf: isinstance(leaf, equinox.Module))
    return any(isinstance(leaf, equinox.Module) for leaf in leaves)


def filter_jit(function: Callable) -> Callable:
    """``eqx.filter_jit(function)``."""
    import equinox as eqx

    return eqx.filter_jit(function)


def without_nnx_partials(fn: Any, args: tuple, kwargs: dict) -> tuple[Any, tuple, dict]:
    """The call as the function inside a partial that holds Flax NNX objects, with the partial's
    arguments first: ``nnx.cached_partial(train_step, model, optimizer)(x, y)`` and
    ``functools.partial(train_step, model, optimizer)(x, y)`` are ``train_step(model, optimizer, x,
    y)``, so that the model and optimizer are traced as ``nnx.jit`` traces its arguments (a jitted
    function cannot change objects it closes over). ``nnx.cached_partial``'s arguments are NNX's
    clones of the user's objects, sharing their variables. Anything else is returned as it is.

    >>> import functools
    >>> from flax import nnx
    >>> def step(model, x):
    ...     return model(x)
    >>> layer = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    >>> fn, args, _ = without_nnx_partials(functools.partial(step, layer), (1.0,), {})
    >>> fn is step and args[0] is layer and args[1] == 1.0
    True
    >>> half = functools.partial(print, 1)
    >>> without_nnx_partials(half, (2,), {}) == (half, (2,), {})
    True
    """
    import functools

    while True:
        cached = _cached_partial_parts(fn)
        if cached is not None:
            fn, args = cached[0], (*cached[1], *args)
        elif isinstance(fn, functools.partial) and holds_nnx_objects(fn.args, fn.keywords):
            fn, args, kwargs = fn.func, (*fn.args, *args), {**fn.keywords, **kwargs}
        else:
            return fn, args, kwargs


def _cached_partial_parts(fn: Any) -> tuple[Any, tuple] | None:
    """``(function, cached arguments)`` of an ``nnx.cached_partial``, read from its closure."""
    code = getattr(fn, "__code__", None)
    if code is None or code.co_name != "cache_args_wrapper":
        return None
    if not code.co_filename.replace("\\", "/").endswith("flax/nnx/graphlib.py"):
        return None
    cells = dict(zip(code.co_freevars, (cell.cell_contents for cell in fn.__closure__ or ()), strict=False))
    if "f" not in cells or not isinstance(cells.get("cached_args"), tuple):
        return None
    return cells["f"], cells["cached_args"]


def fresh_callee(fn: Any) -> Any:
    """A new callable that runs as ``fn`` runs, which no cache keyed by ``fn`` recognises.

    ``eqx.filter_jit`` keeps the function as a static argument of its ``jax.jit``: JAX finds the
    program compiled for an equal function (the same function object, an equal bound method, an
    equal module), however fresh the wrapper. So the function itself is copied: a function as a
    new function object with the same code, globals, defaults and closure; a bound method, a
    ``functools.partial`` (``jax.tree_util.Partial`` too) or an Equinox bound method around a
    copy of its function, with the same receiver and arguments; an object called as it is (an
    Equinox module) as ``Partial(copy of its __call__, object)``. Signatures, names, and which
    leaves are arrays and which are static stay as they were: ``eqx.filter_jit`` traces what it
    traced and keeps static what it kept static.

    >>> import functools
    >>> def f(x, n=2, *, k=1):
    ...     return x * n + k
    >>> g = fresh_callee(f)
    >>> g is not f, g == f, g(3), g(3, k=0), g.__name__, g.__code__ is f.__code__
    (True, False, 7, 6, 'f', True)
    >>> half = fresh_callee(functools.partial(f, n=3))
    >>> half.func is not f, half(1), half.keywords
    (True, 4, {'n': 3})
    """
    import functools

    if isinstance(fn, types.FunctionType):
        copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
        copy.__kwdefaults__ = fn.__kwdefaults__
        copy.__qualname__, copy.__module__, copy.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
        copy.__annotations__ = fn.__annotations__
        copy.__dict__.update(fn.__dict__)
        return copy
    if isinstance(fn, types.MethodType):
        return types.MethodType(fresh_callee(fn.__func__), fn.__self__)
    if isinstance(fn, functools.partial):  # jax.tree_util.Partial is one: its arguments stay leaves
        return type(fn)(fresh_callee(fn.func), *fn.args, **fn.keywords)
    if _is_equinox_bound_method(fn):
        return type(fn)(fresh_callee(fn.__func__), fn.__self__)
    call = type(fn).__call__ if callable(fn) else None
    if isinstance(call, types.FunctionType):  # its fields stay leaves of the Partial: arrays traced
        import jax

        method = fresh_callee(call)
        method.__name__, method.__qualname__ = type(fn).__name__, type(fn).__qualname__  # as Equinox names fn
        return jax.tree_util.Partial(method, fn)
    return functools.wraps(fn)(lambda *args, **kwargs: fn(*args, **kwargs))


def _is_equinox_bound_method(fn: Any) -> bool:
    """True for an Equinox module's method taken from the module: a pytree holding the module."""
    return (type(fn).__module__, type(fn).__qualname__) == ("equinox._module._prebuilt", "BoundMethod")


def nnx_jit(fn: Callable, static_argnums: tuple[int, ...] = (), static_argnames: tuple[str, ...] = ()) -> Any:
    """``nnx.jit(fn)`` with the given static arguments: a plain function called with NNX objects."""
    from flax import nnx

    return nnx.jit(fn, static_argnums=static_argnums or None, static_argnames=static_argnames or None)


def _nnx(wrapped: Any) -> LibraryJit:
    from flax import nnx

    options = _jax_private.jit_options(wrapped.jitted_fn)  # NNX passes its options to jax.jit

    def rewrap():
        return nnx.jit(
            wrapped.fun,
            static_argnums=options.static_argnums or None,
            static_argnames=options.static_argnames or None,
            donate_argnums=options.donate_argnums or None,
            donate_argnames=options.donate_argnames or None,
        )

    def trace(*args, **kwargs):
        return rewrap().trace(*args, **kwargs).traced  # NNX's Traced holds JAX's

    return LibraryJit(
        "nnx.jit",
        wrapped.fun,
        rewrap,
        trace,
        static_argnums=options.static_argnums,
        static_argnames=options.static_argnames,
        donate_argnums=options.donate_argnums,
        donates=bool(options.donate_argnums or options.donate_argnames),
    )


def _equinox(wrapped: Any) -> LibraryJit:
    import equinox as eqx
    import jax

    donations: dict[tuple[bool, bool], Literal["all", "all-except-first", "none"]] = {
        (True, True): "all",
        (False, True): "all-except-first",
    }
    donate = donations.get((bool(wrapped.donate_first), bool(wrapped.donate_rest)), "none")
    function = wrapped.__wrapped__  # ``fn`` is only its name

    def rewrap():
        # Equinox keys its compiled programs by the function (a static argument of its jax.jit):
        # the user's own function would find the program their calls compiled.
        return eqx.filter_jit(fresh_callee(function), donate=donate)

    def trace(*args, **kwargs):
        # As filter_jit does: arrays are traced, every other leaf is part of the compiled code.
        (dynamic_args, dynamic_kwargs), static = eqx.partition((args, kwargs), eqx.is_array)

        def with_static_leaves(*dynamic_args, **dynamic_kwargs):
            full_args, full_kwargs = eqx.combine((dynamic_args, dynamic_kwargs), static)
            # And of what it returns (a model with its activation functions): arrays come out of
            # the compiled code, the rest is returned as it is, outside it. Before them, as in
            # Equinox's own program, the int32 marker it waits on after every call: an output XLA
            # allocates (4 KiB at the peak on a TPU), which the memory, HLO and profile then count.
            return jax.numpy.array(0), eqx.filter(function(*full_args, **full_kwargs), eqx.is_array)

        with_static_leaves.__name__ = getattr(function, "__name__", "filter_jit")
        return jax.jit(with_static_leaves).trace(*dynamic_args, **dynamic_kwargs)

    return LibraryJit("eqx.filter_jit", function, rewrap, trace, all_non_arrays_static=True, donates=donate != "none")
