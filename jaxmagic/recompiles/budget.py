"""A compile budget for one function in plain Python: ``expect_compiles(fn, max=N)``.

Used as a context manager or a decorator, it watches the compilations of that one function (other
functions, and JAX's own eager primitive compilations inside the block, do not count) and raises
``CompileBudgetExceeded`` (an ``AssertionError``) at the end of the block when it compiled more
than ``max`` times. The message is the whole explanation: each compilation with every differing
argument, before → after, and the fix.

>>> import jax, jax.numpy as jnp
>>> @jax.jit
... def scale(x):
...     return x * 2
>>> with expect_compiles(scale, max=1):
...     for _ in range(3):
...         _ = scale(jnp.ones(3))
>>> try:
...     with expect_compiles(scale, max=1):
...         for n in (4, 5):
...             _ = scale(jnp.ones(n))
... except AssertionError as failure:
...     print(failure)
`scale` compiled 2 times in the block; expected at most 1 time.
  1. shape of `x` changed: f32[3] → f32[4] (axis 0: 3 → 4) at <doctest jaxmagic.recompiles.budget[3]>:4
  2. shape of `x` changed: f32[4] → f32[5] (axis 0: 4 → 5) at <doctest jaxmagic.recompiles.budget[3]>:4
  → Keep the shape of `x` fixed: pad it (jnp.pad) or bucket it to a few sizes and mask the padding, so only a few shapes ever compile.
"""

from __future__ import annotations

import functools
from typing import Callable

from jaxmagic.recompiles.events import RecompileLimitExceeded
from jaxmagic.recompiles.log import RecompileLog
from jaxmagic.recompiles.signatures import function_identity
from jaxmagic.words.recompiles import budget_headline, budget_scope
from jaxmagic.words.untrusted import one_line

__all__ = ["expect_compiles", "CompileBudgetExceeded", "ExpectCompiles"]


class CompileBudgetExceeded(RecompileLimitExceeded, AssertionError):
    """``expect_compiles``'s failure: an ``AssertionError`` (so test runners report it as a failed
    check) that is also a ``RecompileLimitExceeded`` (``function``, ``count``, ``limit``, ``events``).

    >>> issubclass(CompileBudgetExceeded, AssertionError)
    True
    """

    def _headline(self) -> str:
        return one_line(budget_headline(self.function, self.count, self.limit))


def expect_compiles(fn_or_name: Callable | str, max: int) -> "ExpectCompiles":  # noqa: A002 - the documented keyword
    """Fail when ``fn_or_name`` (a function, jitted or not, or its name) compiles more than ``max``
    times inside the ``with`` block or the decorated function.

    >>> import jax, jax.numpy as jnp
    >>> double = jax.jit(lambda x: x * 2)
    >>> @expect_compiles("<lambda>", max=1)
    ... def run():
    ...     return double(jnp.ones(2)) + double(jnp.ones(2))
    >>> run().tolist()
    [4.0, 4.0]
    """
    return ExpectCompiles(fn_or_name, max)


class ExpectCompiles:
    """The budget ``expect_compiles`` returns: a context manager and a decorator. ``log`` is the
    ``RecompileLog`` of the watched function's compilations (after the block too).

    >>> budget = expect_compiles("step", max=0)
    >>> budget.function, budget.limit
    ('step', 0)
    """

    def __init__(self, fn_or_name: Callable | str, limit: int):
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValueError(
                f"expect_compiles: max takes a non-negative whole number of compilations, not {limit!r}; "
                "e.g. expect_compiles(step, max=1)"
            )
        self.function = _name_of(fn_or_name)
        self.limit = limit
        self.log: RecompileLog | None = None

    def __enter__(self) -> RecompileLog:
        self.log = RecompileLog([self.function], scope=budget_scope(self.function, self.limit))
        self.log.start()
        return self.log

    def __exit__(self, kind, value, traceback) -> None:
        __tracebackhide__ = True
        log = self.log
        assert log is not None  # __enter__ made it
        log.stop()
        if kind is not None:  # the block's own error comes first
            return None
        count = sum(log.counts.values())
        if count > self.limit:
            raise CompileBudgetExceeded(self.function, count, self.limit, log.events)
        return None

    def __call__(self, function: Callable) -> Callable:
        @functools.wraps(function)
        def within_budget(*args, **kwargs):
            __tracebackhide__ = True
            with ExpectCompiles(self.function, self.limit):
                return function(*args, **kwargs)

        return within_budget

    def __repr__(self) -> str:
        return f"expect_compiles({self.function!r}, max={self.limit})"


def _name_of(fn_or_name) -> str:
    if isinstance(fn_or_name, str):
        if not fn_or_name.strip():
            raise ValueError("expect_compiles: give the function or its name, e.g. expect_compiles(step, max=1)")
        return fn_or_name
    if not callable(fn_or_name):
        raise TypeError(
            f"expect_compiles: expected a function or its name, not {type(fn_or_name).__name__}; "
            "e.g. expect_compiles(step, max=1)"
        )
    return function_identity(fn_or_name)[0]
