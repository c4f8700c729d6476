"""What each equation of a traced program computes on the call's own arguments, and which one first
made a NaN or an inf.

An interpreter over the jaxpr: every equation runs on concrete values with its primitive's own
``bind`` (JAX's "writing custom interpreters" recipe), one at a time. Calls of a nested jaxpr
(an inner ``jit``, ``closed_call``, ``custom_jvp_call`` / ``custom_vjp_call``, ``checkpoint``)
are entered and their equations evaluated too; a ``cond`` runs the branch its index picks; loops
(``while``, ``scan``) run whole, and show what they return. Each output is kept as a ``Summary``:
the value itself when small, otherwise shape, min / mean / max and the count of NaNs and infs.

>>> import jax, jax.numpy as jnp
>>> closed = jax.make_jaxpr(lambda x: jnp.log(x) * 2)(jnp.ones(3))
>>> run = evaluate(closed, [jnp.array([1.0, -1.0, 2.0])])
>>> [v.primitive for v in run.equations]
['log', 'mul']
>>> run.first_nonfinite.primitive, run.first_nonfinite.outputs[0].nans
('log', 1)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from jax.extend import core as jcore

from jaxmagic import _jax_private
from jaxmagic.tracing.listing import line_made_here, name_stack_facts
from jaxmagic.tracing.sources import CellNamer, SourceLine, no_cells

SMALL = 8  # a value with at most this many elements is kept whole

# Primitives that call one nested jaxpr on all their operands: the parameter that holds it.
_CALLS = {
    "jit": "jaxpr",
    "pjit": "jaxpr",
    "closed_call": "call_jaxpr",
    "core_call": "call_jaxpr",
    "custom_jvp_call": "call_jaxpr",
    "custom_vjp_call": "call_jaxpr",
    "custom_vjp_call_jaxpr": "fun_jaxpr",
    "checkpoint": "jaxpr",
    "remat": "jaxpr",
}


@dataclass(frozen=True)
class Summary:
    """One array as a reader needs it: ``value`` (a NumPy array) when it has at most ``SMALL``
    elements, and always ``shape``, ``dtype``, ``minimum`` / ``mean`` / ``maximum`` (of the finite
    elements; ``None`` for none or a non-numeric dtype) and the ``nans`` / ``infs`` counts.

    >>> s = summarise(np.array([1.0, np.nan, 3.0]))
    >>> s.minimum, s.maximum, s.nans, s.finite
    (1.0, 3.0, 1, False)
    """

    shape: tuple
    dtype: str
    value: Any = None
    minimum: float | None = None
    mean: float | None = None
    maximum: float | None = None
    nans: int = 0
    infs: int = 0

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def finite(self) -> bool:
        return self.nans == 0 and self.infs == 0


def summarise(value: Any) -> Summary:
    """A ``Summary`` of one array (a PRNG key or another non-numeric value: its shape and dtype only).

    >>> summarise(np.arange(20.0)).mean, summarise(np.arange(20.0)).value is None
    (9.5, True)
    """
    shape = tuple(getattr(value, "shape", ()))
    dtype = str(getattr(value, "dtype", type(value).__name__))
    try:
        array = np.asarray(value)
    except Exception:  # a PRNG key array, a token
        return Summary(shape, dtype)
    small = array.copy() if array.size <= SMALL else None
    if array.dtype.kind not in "biufc" and array.dtype.name not in _LOW_PRECISION:
        return Summary(shape, dtype, small)
    if array.size == 0:
        return Summary(shape, dtype, small)
    if array.dtype.kind == "b":
        array = array.astype(np.int8)
    if array.dtype.kind == "c":
        nans = int(np.count_nonzero(np.isnan(array)))
        infs = int(np.count_nonzero(np.isinf(array)))
        return Summary(shape, dtype, small, nans=nans, infs=infs)
    if array.dtype.name in _LOW_PRECISION:
        array = array.astype(np.float32)
    if array.dtype.kind == "f":
        finite = np.isfinite(array)
        if not finite.all():
            nans = int(np.count_nonzero(np.isnan(array)))
            infs = int(array.size - np.count_nonzero(finite) - nans)
            kept = array[finite]
            if kept.size == 0:
                return Summary(shape, dtype, small, nans=nans, infs=infs)
            return Summary(shape, dtype, small, float(kept.min()), float(kept.mean()), float(kept.max()), nans, infs)
    return Summary(shape, dtype, small, _number(array.min()), float(array.mean()), _number(array.max()))


_LOW_PRECISION = {
    "bfloat16",
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3b11fnuz",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
}


def _number(x: Any) -> float | int:
    return int(x) if np.issubdtype(type(x), np.integer) else float(x)


@dataclass(frozen=True)
class EquationValue:
    """What one equation computed: its ``path`` (the listing's index path, ``(3, "jaxpr", 0)``),
    ``primitive``, ``outputs`` (a ``Summary`` each), ``derivative`` (``forward`` / ``backward``
    under ``-t grad``, else empty) and, for an equation whose outputs are not all finite,
    ``inputs`` (a ``Summary`` each) and ``source`` (the user's ``SourceLine``)."""

    path: tuple
    primitive: str
    outputs: tuple[Summary, ...]
    derivative: str = ""
    inputs: tuple[Summary, ...] = ()
    source: SourceLine | None = None

    @property
    def finite(self) -> bool:
        return all(s.finite for s in self.outputs)

    @property
    def made_nan(self) -> bool:
        """Its outputs hold a NaN that none of its inputs held."""
        return any(s.nans for s in self.outputs) and not any(s.nans for s in self.inputs)

    @property
    def made_nonfinite(self) -> bool:
        """It made a NaN or an inf that its inputs did not already hold."""
        made_inf = any(s.infs for s in self.outputs) and not any(s.infs or s.nans for s in self.inputs)
        return self.made_nan or made_inf


@dataclass
class ValueRun:
    """One evaluation: ``equations`` (an ``EquationValue`` each, in the order they ran: a nested
    call's equations before the call's own), ``outputs`` (the program's results, as arrays),
    ``inputs`` (a ``Summary`` of each argument), ``first_nonfinite`` / ``first_nan`` (the first
    equation that made a NaN or inf / a NaN) and ``seconds`` (the evaluation's wall time)."""

    equations: list[EquationValue] = field(default_factory=list)
    outputs: list = field(default_factory=list)
    inputs: list[Summary] = field(default_factory=list)
    first_nonfinite: EquationValue | None = None
    first_nan: EquationValue | None = None
    seconds: float = 0.0

    @property
    def by_path(self) -> dict[tuple, EquationValue]:
        return {value.path: value for value in self.equations}

    @property
    def output_summaries(self) -> list[Summary]:
        return [summarise(v) for v in self.outputs]


def evaluate(closed_jaxpr, arguments: Sequence[Any], cell_namer: CellNamer = no_cells) -> ValueRun:
    """Run ``closed_jaxpr`` on ``arguments`` (one per input) one equation at a time."""
    run = ValueRun(inputs=[summarise(a) for a in arguments])
    start = time.perf_counter()
    run.outputs = _run(closed_jaxpr.jaxpr, closed_jaxpr.consts, list(arguments), (), run, cell_namer)
    run.seconds = time.perf_counter() - start
    return run


def _run(
    jaxpr, consts, arguments, path: tuple, run: ValueRun, cell_namer: CellNamer, enclosing: SourceLine | None = None
) -> list:
    """Run ``jaxpr``'s equations, recording each; ``enclosing`` is the line of the call equation
    the jaxpr is nested in (``None`` at the top)."""
    env: dict = {}

    def read(var):
        return var.val if isinstance(var, jcore.Literal) else env[var]

    env.update(zip(jaxpr.constvars, consts, strict=True))
    env.update(zip(jaxpr.invars, arguments, strict=True))
    last_use = _last_uses(jaxpr)
    for index, eqn in enumerate(jaxpr.eqns):
        here = path + (index,)
        invals = [read(v) for v in eqn.invars]
        outs = _equation(eqn, invals, here, run, cell_namer, enclosing)
        for var, out in zip(eqn.outvars, outs, strict=False):
            if not _jax_private.is_dropped_variable(var):
                env[var] = out
        _record(eqn, here, invals, outs, run, cell_namer, enclosing)
        for var in last_use.get(index, ()):  # a value nothing reads again is let go, as eager code would
            env.pop(var, None)
    return [read(v) for v in jaxpr.outvars]


def _last_uses(jaxpr) -> dict[int, list]:
    """Equation index -> the variables it is the last to read (the program's outputs excluded)."""
    last: dict = {}
    for index, eqn in enumerate(jaxpr.eqns):
        for var in eqn.invars:
            if not isinstance(var, jcore.Literal):
                last[var] = index
    kept = {v for v in jaxpr.outvars if not isinstance(v, jcore.Literal)}
    by_index: dict[int, list] = {}
    for var, index in last.items():
        if var not in kept:
            by_index.setdefault(index, []).append(var)
    return by_index


def _source(eqn, cell_namer: CellNamer, enclosing: SourceLine | None) -> SourceLine | None:
    """The user's line that made ``eqn`` here, as the listing shows it (``listing.line_made_here``)."""
    return line_made_here(eqn.source_info, enclosing, cell_namer)


def _equation(eqn, invals: list, path: tuple, run: ValueRun, cell_namer: CellNamer, enclosing=None) -> list:
    name = eqn.primitive.name
    key = _CALLS.get(name)
    if key is not None and key in eqn.params:
        inner = eqn.params[key]
        body = getattr(inner, "jaxpr", inner)
        if len(body.invars) == len(invals):
            source = _source(eqn, cell_namer, enclosing)
            return _run(body, getattr(inner, "consts", ()), invals, path + (key,), run, cell_namer, source)
    if name == "cond" and "branches" in eqn.params:
        branches = eqn.params["branches"]
        chosen = min(max(int(np.asarray(invals[0])), 0), len(branches) - 1)
        branch = branches[chosen]
        source = _source(eqn, cell_namer, enclosing)
        return _run(branch.jaxpr, branch.consts, invals[1:], path + (f"branches[{chosen}]",), run, cell_namer, source)
    return _jax_private.bind_equation(eqn, invals)


def _record(eqn, path: tuple, invals: list, outs: list, run: ValueRun, cell_namer: CellNamer, enclosing=None) -> None:
    outputs = tuple(summarise(o) for o in outs)
    derivative = name_stack_facts(getattr(eqn.source_info, "name_stack", ""))[1]
    value = EquationValue(path, eqn.primitive.name, outputs, derivative)
    if not value.finite:
        value = EquationValue(
            path,
            eqn.primitive.name,
            outputs,
            derivative,
            inputs=tuple(summarise(v) for v in invals),
            source=_source(eqn, cell_namer, enclosing),
        )
        if run.first_nonfinite is None and value.made_nonfinite:
            run.first_nonfinite = value
        if run.first_nan is None and value.made_nan:
            run.first_nan = value
    run.equations.append(value)


def flat_arguments(
    in_avals: Sequence[Any], args: tuple, kwargs: dict, static_argnums=(), static_argnames=()
) -> list | None:
    """The call's array arguments, one per input of its jaxpr (static arguments, and leaves a jit
    of a library keeps out of the program, left out), or ``None`` where they do not line up.

    >>> import jax, jax.numpy as jnp
    >>> closed = jax.make_jaxpr(lambda x, n: x * n, static_argnums=1)(jnp.ones(2), 3)
    >>> [a.shape for a in flat_arguments(closed.in_avals, (jnp.ones(2), 3), {}, (1,))]
    [(2,)]
    """
    import jax

    dynamic = (
        tuple(a for i, a in enumerate(args) if i not in set(static_argnums)),
        {k: v for k, v in kwargs.items() if k not in set(static_argnames)},
    )
    leaves = jax.tree_util.tree_leaves(dynamic)
    for keep in (_is_traceable, _is_array):
        kept = [leaf for leaf in leaves if keep(leaf)]
        if len(kept) == len(in_avals) and all(_fits(leaf, aval) for leaf, aval in zip(kept, in_avals, strict=True)):
            return [_as_input(leaf, aval) for leaf, aval in zip(kept, in_avals, strict=True)]
    return None


def _is_array(leaf: Any) -> bool:
    return hasattr(leaf, "shape") and hasattr(leaf, "dtype")


def _is_traceable(leaf: Any) -> bool:
    return _is_array(leaf) or isinstance(leaf, (bool, int, float, complex, np.generic))


def _fits(leaf: Any, aval: Any) -> bool:
    return tuple(np.shape(leaf)) == tuple(getattr(aval, "shape", ()))


def _as_input(leaf: Any, aval: Any) -> Any:
    import jax.numpy as jnp

    if _is_array(leaf) and str(leaf.dtype) == str(aval.dtype):
        return leaf
    return jnp.asarray(leaf, dtype=aval.dtype)
