"""How a call is jitted when its callee is not a plain ``jax.jit`` of arrays: through the library
that jitted it (``nnx.jit``, ``eqx.filter_jit``), or with the leaves JAX cannot trace kept static.
Each looks like ``jax.jit``'s result: called, traced and lowered.

>>> import jax.numpy as jnp
>>> def scale(x, how):
...     return how(x) * 2
>>> jitted = UntraceableLeavesStatic(scale)
>>> jitted(jnp.ones(2), jnp.tanh).tolist() == (jnp.tanh(jnp.ones(2)) * 2).tolist()
True
"""

from __future__ import annotations

import contextlib
import functools
import threading
from typing import Any, Callable, Iterator

from jaxmagic import _jax_private
from jaxmagic.tracing import libraries


class LibraryJitted:
    """A library jit (``nnx.jit``, ``eqx.filter_jit``) seen as ``jax.jit`` is: called, traced and
    lowered, each time through a fresh wrapper of that library."""

    def __init__(self, library: libraries.LibraryJit):
        self.library = library
        self._wrapper = library.rewrap()

    def __call__(self, *args, **kwargs):
        return self._wrapper(*args, **kwargs)

    def trace(self, *args, **kwargs):
        return self.library.trace(*args, **kwargs)

    def lower(self, *args, **kwargs):
        return self.trace(*args, **kwargs).lower()


class UntraceableLeavesStatic:
    """``jax.jit`` of a function whose arguments hold leaves JAX cannot trace (functions, other
    objects): those leaves are part of the compiled code, every traceable leaf is an input.

    The jitted function is made once per set of untraceable leaves (by identity), so calling it
    again with the same arguments hits JAX's cache.
    """

    def __init__(self, function: Callable, static_argnums=(), static_argnames=(), donate_argnums=()):
        self.function = function
        self.options = dict(static_argnums=static_argnums, static_argnames=static_argnames)
        self.donate_argnums = donate_argnums
        self._jitted: dict = {}

    def _split(self, args: tuple, kwargs: dict):
        import jax

        static_positions = set(self.options["static_argnums"])
        static_names = set(self.options["static_argnames"])
        shown = (
            tuple(None if i in static_positions else a for i, a in enumerate(args)),
            {k: None if k in static_names else v for k, v in kwargs.items()},
        )
        leaves, tree = jax.tree_util.tree_flatten(shown)
        untraceable = tuple(i for i, leaf in enumerate(leaves) if not is_traceable_leaf(leaf))
        key = (tree, untraceable, tuple(id(leaves[i]) for i in untraceable))
        jitted = self._jitted.get(key)
        if jitted is None:
            kept = {i: leaves[i] for i in untraceable}
            function = self.function

            def with_static_leaves(dynamic_args, dynamic_kwargs, static_args, static_kwargs):
                dynamic = jax.tree_util.tree_leaves((dynamic_args, dynamic_kwargs))
                it = iter(dynamic)
                full = [kept[i] if i in kept else next(it) for i in range(len(leaves))]
                full_args, full_kwargs = jax.tree_util.tree_unflatten(tree, full)
                full_args = tuple(static_args.get(i, a) for i, a in enumerate(full_args))
                full_kwargs = {k: static_kwargs.get(k, v) for k, v in full_kwargs.items()}
                return function(*full_args, **full_kwargs)

            with_static_leaves.__name__ = getattr(function, "__name__", "function")
            with_static_leaves.__qualname__ = getattr(function, "__qualname__", with_static_leaves.__name__)
            jitted = self._jitted[key] = jax.jit(with_static_leaves, static_argnums=(2, 3))
        dynamic = [leaf for i, leaf in enumerate(leaves) if i not in untraceable]
        dynamic_args, dynamic_kwargs = _dynamic_tree(tree, leaves, untraceable, dynamic)
        static_args = _Frozen({i: args[i] for i in static_positions if i < len(args)})
        static_kwargs = _Frozen({k: kwargs[k] for k in static_names if k in kwargs})
        return jitted, (dynamic_args, dynamic_kwargs, static_args, static_kwargs)

    def __call__(self, *args, **kwargs):
        jitted, arguments = self._split(args, kwargs)
        return jitted(*arguments)

    def trace(self, *args, **kwargs):
        jitted, arguments = self._split(args, kwargs)
        return jitted.trace(*arguments)

    def lower(self, *args, **kwargs):
        return self.trace(*args, **kwargs).lower()


class _Frozen(dict):
    """A dict of static argument values, hashable (JAX keys compiled code by its hash)."""

    def __hash__(self):
        return hash(tuple(sorted(self.items(), key=lambda kv: str(kv[0]))))


def _dynamic_tree(tree, leaves, untraceable, dynamic):
    import jax

    it = iter(dynamic)
    placed = [None if i in untraceable else next(it) for i in range(len(leaves))]
    return jax.tree_util.tree_unflatten(tree, placed)


def is_traceable_leaf(leaf: Any) -> bool:
    """True for a leaf ``jax.jit`` can trace: an array, a NumPy scalar, a Python number or bool, or
    a ``jax.ShapeDtypeStruct`` (a shape and a dtype: traced, never run).

    >>> import jax.numpy as jnp
    >>> is_traceable_leaf(jnp.ones(2)), is_traceable_leaf(3), is_traceable_leaf(jnp.tanh)
    (True, True, False)
    """
    import jax
    import numpy as np

    return isinstance(leaf, (bool, int, float, complex, np.ndarray, np.generic, jax.Array, jax.ShapeDtypeStruct))


def has_untraceable_leaves(args: tuple, kwargs: dict) -> bool:
    """True when some leaf of the arguments is neither traceable nor a string (strings are a usage
    error of their own: see ``check_traceable``)."""
    import jax

    return any(
        not is_traceable_leaf(leaf) and not isinstance(leaf, (str, bytes))
        for leaf in jax.tree_util.tree_leaves((args, kwargs))
    )


def fresh_function(function: Callable) -> Callable:
    """A new function object that calls ``function``.

    JAX caches traces and compiled programs per function object, so ``jax.jit`` of a function
    the notebook has already jitted skips compiling, and a trace jaxmagic makes would be found
    again by the user's next call (even after a global it reads changed). A fresh wrapper keeps
    jaxmagic's traces and compilations apart from the user's: the first call then costs what a
    first call costs. Its signature is ``function``'s; ``is_own_wrapper`` tells it apart (its
    compilations are jaxmagic's, not the user's).

    >>> def f(x, n=2):
    ...     return x * n
    >>> g = fresh_function(f)
    >>> import inspect
    >>> g is not f, g(3), inspect.signature(g) == inspect.signature(f), is_own_wrapper(g)
    (True, 6, True, True)
    """

    @functools.wraps(function)
    def fresh(*args, **kwargs):
        return function(*args, **kwargs)

    vars(fresh)["__jaxmagic_own__"] = True  # a function's attributes live in its __dict__
    return fresh


def is_own_wrapper(fn) -> bool:
    """True for the wrappers ``fresh_function`` makes: what JAX compiles for them, it compiles for
    jaxmagic's own view or measurement (a log of the user's recompilations leaves it out).

    >>> is_own_wrapper(print), is_own_wrapper(fresh_function(print))
    (False, True)
    """
    return getattr(fn, "__dict__", {}).get("__jaxmagic_own__", False) is True


class _OwnWork(threading.local):
    depth = 0


_OWN_WORK = _OwnWork()


@contextlib.contextmanager
def own_work(*, cache_writes: bool = False) -> Iterator[None]:
    """Everything JAX traces, lowers and compiles inside is jaxmagic's own work, whatever function
    it is (a fresh wrapper, the user's ``nnx.jit`` re-wrapped, a function the user's function calls):
    a watch of the user's compilations leaves it out, JAX logs none of it where the user turned
    on ``jax_log_compiles`` or ``jax_explain_cache_misses`` (``_jax_private.compile_logs_off``),
    and writes none of it into the user's persistent compilation cache (programs with jaxmagic's
    own options or rewrites, which the user never compiles), unless ``cache_writes``: the work
    is the user's very call, which their cache serves and keeps as it would for them.
    Scoped to this thread; nests (the outermost decides); also a decorator.

    >>> doing_own_work()
    False
    >>> with own_work():
    ...     with own_work():
    ...         inside = doing_own_work()
    ...     still = doing_own_work()
    >>> inside, still, doing_own_work()
    (True, True, False)
    """
    _OWN_WORK.depth += 1
    try:
        with contextlib.ExitStack() as outermost:
            if _OWN_WORK.depth == 1:
                outermost.enter_context(_jax_private.compile_logs_off())
                if not cache_writes:
                    outermost.enter_context(_jax_private.persistent_cache_writes_off())
            yield
    finally:
        _OWN_WORK.depth -= 1


def doing_own_work() -> bool:
    """True while this thread runs inside ``own_work()``: what JAX compiles now is jaxmagic's."""
    return _OWN_WORK.depth > 0
