"""A communication budget for tests: ``expect_collectives(fn, max={"all-gather": 1}, forbid=[...])``.

Used as a context manager or a decorator, it reads every program the function (or, without one,
any of the user's functions) compiles inside the block, through the same compile events as the
recompile watch, finds the collectives in each optimized program (``jaxmagic.compiled.collectives``) and
raises ``CollectiveBudgetExceeded`` (an ``AssertionError``) at the end of the block when there are
more of a kind than ``max`` allows, more in all than ``total``, or any of a ``forbid`` kind; the
message names each one with the line of the user's code that added it. Given no limit at all, it
expects no communication. Counts are per program, as in the optimized HLO text: a collective in
a loop body counts once.

>>> import jax, jax.numpy as jnp
>>> double = jax.jit(lambda x: x * 2)
>>> with expect_collectives(double, forbid=["all-gather"]) as log:
...     _ = double(jnp.ones(4))
>>> log.collectives
[]
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

from jaxmagic._jax_private import jaxpr_argument_names
from jaxmagic.compiled.collective_causes import EquationContext
from jaxmagic.compiled.collectives import KINDS, Collective, counts, find_collectives, flat_shardings, mesh_of
from jaxmagic.recompiles.events import RecompileEvent
from jaxmagic.recompiles.log import RecompileLog
from jaxmagic.recompiles.signatures import function_identity
from jaxmagic.words.collectives import budget_headline, budget_item
from jaxmagic.words.untrusted import one_line, safe_text

__all__ = ["expect_collectives", "CollectiveBudgetExceeded", "ExpectCollectives", "CollectiveLimits"]


@dataclass(frozen=True)
class CollectiveLimits:
    """What a budget allows: ``maxima`` (kind -> most allowed), ``total`` (most in all, or
    ``None``) and ``forbid`` (kinds allowed none).

    >>> CollectiveLimits.of(max={"all_gather": 1}, forbid=["all-to-all"])
    CollectiveLimits(maxima={'all-gather': 1}, total=None, forbid=('all-to-all',))
    >>> CollectiveLimits.of().total
    0
    """

    maxima: dict
    total: int | None
    forbid: tuple[str, ...]

    @classmethod
    def of(cls, max: Mapping[str, int] | None = None, total: int | None = None, forbid: Iterable[str] = ()):  # noqa: A002
        if max is not None and not isinstance(max, Mapping):
            raise TypeError(
                f"expect_collectives: max takes a dict of kind -> count, not {max!r}; "
                'e.g. expect_collectives(step, max={"all-gather": 1}) (total=N limits them all together)'
            )
        if isinstance(forbid, str):
            forbid = [forbid]
        maxima = {_kind(kind): _count(value, f"max[{kind!r}]") for kind, value in (max or {}).items()}
        forbidden = tuple(dict.fromkeys(_kind(kind) for kind in forbid))
        total = _count(total, "total") if total is not None else None
        if not maxima and not forbidden and total is None:
            total = 0  # no limit given: no communication at all
        return cls(maxima, total, forbidden)

    def over(self, counted: Mapping[str, int]) -> list[str]:
        """The kinds (and ``total``) ``counted`` goes over, in ``KINDS`` order."""
        found = [
            k for k in KINDS if counted.get(k, 0) > (0 if k in self.forbid else self.maxima.get(k, counted.get(k, 0)))
        ]
        if self.total is not None and sum(counted.values()) > self.total:
            found.append("total")
        return found


class CollectiveBudgetExceeded(AssertionError):
    """``expect_collectives``'s failure: ``function`` (the names watched, ``None``: every function), ``counts``
    (kind -> collectives compiled in the block), ``over`` (the kinds over budget, ``total`` for
    the sum), ``collectives`` (each ``Collective`` of those kinds, with its line) and ``limits``."""

    def __init__(self, functions, counted: dict, over: list, found: list, limits: CollectiveLimits):
        self.functions, self.counts, self.over, self.limits = tuple(functions), counted, over, limits
        self.function = ", ".join(self.functions) or None
        self.collectives = [c for c, _ in found]
        self.found = found  # (Collective, RecompileEvent of the program it is in)
        counted_here = [(c, e) for c, e in found if "total" in over or c.kind in over]
        compiled_by = (
            list(self.functions) if self.functions else list(dict.fromkeys(e.function for _, e in counted_here))
        )
        lines = [str(budget_headline(compiled_by, counted, sum(counted.values()), over, limits))]
        for number, (collective, event) in enumerate(counted_here, start=1):
            lines.append(str(budget_item(number, collective, event.function, event.call_site)))
        super().__init__(safe_text("\n".join(one_line(line) for line in lines)))  # names from the user's code

    def _render_traceback_(self) -> list[str]:
        """How IPython shows it: the message alone, without jaxmagic's or JAX's frames."""
        return [f"{type(self).__name__}: {self}"]


def expect_collectives(
    fn_or_name: Callable | str | None = None,
    *,
    max: Mapping[str, int] | None = None,  # noqa: A002 - the documented keyword
    total: int | None = None,
    forbid: Iterable[str] = (),
) -> "ExpectCollectives":
    """Fail when the programs ``fn_or_name`` compiles inside the block (every function's, when
    ``None``) hold more collectives of a kind than ``max`` allows (kind -> count, kinds as XLA
    names them: ``all-reduce``, ``all-gather``, ``reduce-scatter``, ``all-to-all``,
    ``collective-permute``), more than ``total`` in all, or any kind in ``forbid``. With no
    limit at all, any communication fails.

    >>> import jax, jax.numpy as jnp
    >>> @expect_collectives(max={"all-reduce": 1})
    ... def run():
    ...     return jax.jit(jnp.sum)(jnp.ones(3))
    >>> float(run())
    3.0
    """
    return ExpectCollectives(fn_or_name, CollectiveLimits.of(max, total, forbid))


class ProgramLog(RecompileLog):
    """A ``RecompileLog`` that also reads each compiled program: ``found`` holds
    ``(Collective, RecompileEvent)`` for every collective found, in order; ``collectives`` the
    collectives alone."""

    def __init__(self, functions=(), **options):
        super().__init__(functions, **options)
        self.found: list[tuple[Collective, RecompileEvent]] = []

    def record_program(
        self, event: RecompileEvent, hlo_text: str, shardings: Iterable = (), jaxpr=None, asked=None
    ) -> None:
        """Find the collectives of one compiled program: ``shardings`` (its arguments') name the
        mesh axes; ``jaxpr`` (the program traced) names the values a collective reconciles;
        ``asked`` (a ``ShardingRequest``: the ``out_shardings`` its ``jax.jit`` was given and the
        line that gave them) names the line that asked for the communication an output needs."""
        if not self.wants(event.function, event.internal):
            return
        shardings = list(shardings)
        equations = None
        names = jaxpr_argument_names(jaxpr) if jaxpr is not None else None
        if names is not None and jaxpr is not None:
            known = shardings if len(shardings) == len(names) else []
            out_shardings = (
                flat_shardings(asked.out_shardings) if asked is not None and asked.out_shardings is not None else ()
            )
            count = len(jaxpr.jaxpr.outvars)
            equations = EquationContext(
                jaxpr,
                input_names=names,
                input_shardings=known,
                output_names=["result"] if count == 1 else [f"result[{i}]" for i in range(count)],
                output_shardings=out_shardings,
                cell_namer=self.cell_namer,
                asked_at=asked.line(self.cell_namer) if asked is not None else None,
            )
        collectives = find_collectives(
            hlo_text, mesh=mesh_of(shardings), cell_namer=self.cell_namer, equations=equations
        )
        with self._lock:
            self.found.extend((c, event) for c in collectives)

    @property
    def collectives(self) -> list[Collective]:
        """Every collective of the programs compiled while watching."""
        with self._lock:
            return [c for c, _ in self.found]


class ExpectCollectives:
    """The budget ``expect_collectives`` returns: a context manager (``as`` gives its
    ``ProgramLog``) and a decorator.

    >>> expect_collectives("step", forbid="all-to-all")
    expect_collectives('step', forbid=('all-to-all',))
    """

    def __init__(self, fn_or_name: Callable | str | None, limits: CollectiveLimits, *, more: Iterable[str] = ()):
        self.functions = tuple(_name_of(f) for f in ([fn_or_name] if fn_or_name is not None else []) + list(more))
        self.function = ", ".join(self.functions) or None
        self.limits = limits
        self.log: ProgramLog | None = None

    def __enter__(self) -> ProgramLog:
        self.log = ProgramLog(self.functions, scope="the block expecting collectives")
        self.log.start()
        return self.log

    def __exit__(self, kind, value, traceback) -> None:
        __tracebackhide__ = True
        log = self.log
        assert log is not None  # __enter__ made it
        log.stop()
        if kind is not None:  # the block's own error comes first
            return None
        counted = counts(log.collectives)
        over = self.limits.over(counted)
        if over:
            raise CollectiveBudgetExceeded(self.functions, counted, over, list(log.found), self.limits)
        return None

    def __call__(self, function: Callable) -> Callable:
        @functools.wraps(function)
        def within_budget(*args, **kwargs):
            __tracebackhide__ = True
            with ExpectCollectives(None, self.limits, more=self.functions):
                return function(*args, **kwargs)

        return within_budget

    def __repr__(self) -> str:
        parts = [repr(name) for name in self.functions]
        if self.limits.maxima:
            parts.append(f"max={self.limits.maxima!r}")
        if self.limits.total is not None:
            parts.append(f"total={self.limits.total}")
        if self.limits.forbid:
            parts.append(f"forbid={self.limits.forbid!r}")
        return f"expect_collectives({', '.join(parts)})"


def limits_of_marker(args: Iterable, kwargs: dict) -> tuple[CollectiveLimits, tuple[str, ...]]:
    """``(limits, function names)`` of ``@pytest.mark.max_collectives(...)``: a dict (per kind)
    or a whole number (in all) first, then function names; or the keywords ``max``, ``total``,
    ``forbid`` and ``functions``.

    >>> limits_of_marker(({"all-gather": 1}, "step"), {"forbid": ["all-to-all"]})[1]
    ('step',)
    >>> limits_of_marker((0,), {})[0].total
    0
    """
    kwargs = dict(kwargs)
    args = list(args)
    maxima, total = kwargs.pop("max", None), kwargs.pop("total", None)
    if args and isinstance(args[0], Mapping):
        maxima = args.pop(0)
    elif args and isinstance(args[0], int) and not isinstance(args[0], bool):
        total = args.pop(0)
    forbid = kwargs.pop("forbid", ())
    names = tuple(args) + tuple(kwargs.pop("functions", ()))
    if kwargs or not all(isinstance(n, str) and n for n in names):
        raise ValueError(
            "@pytest.mark.max_collectives takes a dict of kind -> count or a whole number, then function "
            'names, and the keywords forbid=[...], total=N; e.g. @pytest.mark.max_collectives({"all-gather": 1}, '
            f'forbid=["all-to-all"]); got {tuple(args)!r} {kwargs!r}'
        )
    return CollectiveLimits.of(maxima, total, forbid), names


def _kind(kind) -> str:
    name = str(kind).strip().lower().replace("_", "-")
    if name not in KINDS:
        raise ValueError(
            f"expect_collectives: unknown kind of collective {kind!r}; choose from {', '.join(KINDS)}; "
            'e.g. expect_collectives(step, forbid=["all-to-all"])'
        )
    return name


def _count(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(
            f"expect_collectives: {what} takes a non-negative whole number, not {value!r}; "
            'e.g. expect_collectives(step, max={"all-gather": 1})'
        )
    return value


def _name_of(fn_or_name) -> str:
    if isinstance(fn_or_name, str):
        if not fn_or_name.strip():
            raise ValueError(
                'expect_collectives: give the function or its name, e.g. expect_collectives(step, forbid=["all-gather"])'
            )
        return fn_or_name
    if not callable(fn_or_name):
        raise TypeError(
            f"expect_collectives: expected a function or its name, not {type(fn_or_name).__name__}; "
            'e.g. expect_collectives(step, forbid=["all-gather"])'
        )
    return function_identity(fn_or_name)[0]
