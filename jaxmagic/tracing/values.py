"""What each equation of a traced program computes on the call's own arguments, and which one first
made a NaN or an inf.

An interpreter over the jaxpr (JAX's "writing custom interpreters" recipe): every equation runs on
concrete values one at a time, as eager code runs, each by a compiled program that also summarises
its outputs where they live (``value_program``); the summaries come back together at the end, so
no equation waits for a transfer. Calls of a nested jaxpr (an inner ``jit``, ``closed_call``,
``custom_jvp_call`` / ``custom_vjp_call``, ``checkpoint``) are entered and their equations
evaluated too; a ``cond`` runs the branch its index picks; loops (``while``, ``scan``) run whole,
and show what they return. Each output is kept as a ``Summary``: the value itself when small,
otherwise shape, min / mean / max and the count of NaNs and infs.

>>> import jax, jax.numpy as jnp
>>> closed = jax.make_jaxpr(lambda x: jnp.log(x) * 2)(jnp.ones(3))
>>> run = evaluate(closed, [jnp.array([1.0, -1.0, 2.0])])
>>> [v.primitive for v in run.equations]
['log', 'mul']
>>> run.first_nonfinite.primitive, run.first_nonfinite.outputs[0].nans
('log', 1)
"""

from __future__ import annotations

import collections
import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from jax.extend import core as jcore

from jaxmagic import _jax_private
from jaxmagic.tracing import blowups, device_summaries, value_program
from jaxmagic.tracing.listing import line_made_here, name_stack_facts
from jaxmagic.tracing.sources import CellNamer, SourceLine, no_cells

SMALL = value_program.SMALL  # a value with at most this many elements is kept whole
HOST_WINDOW = 4  # on the host, an equation's outputs are summarised once this many more were dispatched
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
        with np.errstate(over="ignore", invalid="ignore"):  # a sum of finite values past the dtype's range
            total = array.sum()
        if np.isfinite(total):  # so is every element: three passes, where counting NaNs and infs takes more
            return Summary(shape, dtype, small, float(array.min()), float(total / array.size), float(array.max()))
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
    equation that made a NaN or inf / a NaN), ``seconds`` (the evaluation's wall time) and
    ``summarised_on`` (``"host"`` or ``"device"``: where each output was summarised); in a
    gradient whose NaN or inf comes from a derivative taken where it is infinite, ``blowup`` (a
    ``blowups.DerivativeBlowup``: the user's forward operation, its line, the point)."""

    equations: list[EquationValue] = field(default_factory=list)
    outputs: list = field(default_factory=list)
    inputs: list[Summary] = field(default_factory=list)
    first_nonfinite: EquationValue | None = None
    first_nan: EquationValue | None = None
    seconds: float = 0.0
    summarised_on: str = "host"
    blowup: blowups.DerivativeBlowup | None = None

    @property
    def by_path(self) -> dict[tuple, EquationValue]:
        return {value.path: value for value in self.equations}

    @property
    def output_summaries(self) -> list[Summary]:
        return [summarise(v) for v in self.outputs]


def evaluate(
    closed_jaxpr, arguments: Sequence[Any], cell_namer: CellNamer = no_cells, *, summaries: str = ""
) -> ValueRun:
    """Run ``closed_jaxpr`` on ``arguments`` (one per input) one equation at a time, as eager code
    runs it. Where the values live in the host's memory (the CPU), each output is summarised
    there as it is made; on an accelerator, on the device (``value_program``), the summaries
    brought back together at the end. ``summaries`` (``"host"`` or ``"device"``) chooses.

    >>> import jax, jax.numpy as jnp
    >>> closed = jax.make_jaxpr(lambda x: jnp.sqrt(x) + 1)(jnp.ones(16))
    >>> run = evaluate(closed, [jnp.arange(16.0) - 1], summaries="device")
    >>> run.first_nan.primitive, run.first_nan.outputs[0].nans, run.outputs[0].tolist()[1]
    ('sqrt', 1, 1.0)
    """
    start = time.perf_counter()
    evaluation = _Evaluation(summaries or _where_values_live(arguments))
    evaluation.compile_ahead(closed_jaxpr.jaxpr, arguments)
    refs = [_Ref("argument", index=i) for i in range(len(arguments))]
    outputs = evaluation.run(closed_jaxpr.jaxpr, closed_jaxpr.consts, list(arguments), refs, (), None)
    run = evaluation.finished(list(arguments), outputs, cell_namer)
    run.seconds = time.perf_counter() - start
    return run


@dataclass(frozen=True)
class _Ref:
    """Where the summary of one value is: ``kind`` ``"step"`` (output ``output`` of step
    ``index``), ``"argument"`` (the program's input ``index``) or ``"value"`` (a constant or a
    literal, held in ``value``)."""

    kind: str
    index: int = 0
    output: int = 0
    value: Any = None


@dataclass(eq=False)
class _Origin:
    """The equation a step came from and the call equation it is nested in: enough to place it
    on the user's line as the listing does, worked out only for a step that needs it."""

    eqn: Any
    parent: "_Origin | None"
    placed: tuple = ()

    def derivative(self) -> str:
        """``forward`` / ``backward`` where JAX's name stack says so, its own or its enclosing
        call's (a library's program nested in a gradient keeps only its own names)."""
        own = name_stack_facts(getattr(self.eqn.source_info, "name_stack", ""))[1]
        return own or (self.parent.derivative() if self.parent is not None else "")

    def source(self, cell_namer: CellNamer) -> SourceLine | None:
        if not self.placed:
            enclosing = self.parent.source(cell_namer) if self.parent is not None else None
            self.placed = (line_made_here(self.eqn.source_info, enclosing, cell_namer),)
        return self.placed[0]


@dataclass(eq=False)
class _Step:
    """One equation as it ran: its outputs' summaries still on the device (``found``, packed), and where
    its inputs' summaries are (``inputs``, a ``_Ref`` each)."""

    path: tuple
    origin: _Origin
    found: Any  # a list of ``Summary`` on the host, a ``device_summaries.Slot`` on the device
    inputs: list


def _where_values_live(arguments: Sequence[Any]) -> str:
    """``"host"`` when the arguments (else JAX's default backend) are on the CPU, else ``"device"``."""
    import jax

    platforms = {
        device.platform for a in arguments if isinstance(a, jax.Array) for device in a.sharding.device_set
    } or {jax.default_backend()}
    return "host" if platforms == {"cpu"} else "device"


class _Evaluation:
    """The equations run so far, in order (a nested call's equations before the call's own);
    ``summaries`` says where outputs are summarised (``"host"`` or ``"device"``)."""

    def __init__(self, summaries: str):
        if summaries not in ("host", "device"):
            raise ValueError(f"summaries is 'host' or 'device', not {summaries!r}")
        self.on_host = summaries == "host"
        self.steps: list[_Step] = []
        self.window = device_summaries.Window(device_summaries.Ahead())
        self.unsummarised: collections.deque[list] = collections.deque()

    def compile_ahead(self, jaxpr, arguments: Sequence[Any]) -> None:
        """On the device, start compiling the summary programs the run will need (each equation's
        outputs, then each argument, in groups: ``device_summaries``) while the equations run."""
        if not self.on_host:

            def foresee() -> tuple[list[list], bool]:
                steps: list[list] = []
                exact = _foreseen_steps(jaxpr, steps)
                return device_summaries.grouped(steps + [[a] for a in arguments]), exact

            self.window = device_summaries.Window(device_summaries.Ahead.planned(jaxpr, foresee))

    def summarised(self, values: list) -> Any:
        """On the host, a list that becomes each value's ``Summary`` once ``HOST_WINDOW`` more
        equations were dispatched (summarising waits for the value: at once, it would stop the
        next operations' dispatch from overlapping this one's work, as eager code's does); on the
        device, where their summaries will be among those packed there (a ``Slot``)."""
        if not self.on_host:
            return self.window.add(values)
        later = list(values)
        self.unsummarised.append(later)
        if len(self.unsummarised) > HOST_WINDOW:
            _summarise_in_place(self.unsummarised.popleft())
        return later

    def run(self, jaxpr, consts, arguments: list, refs: list, path: tuple, parent: _Origin | None) -> list:
        """Run ``jaxpr``'s equations, recording each, and return its outputs; ``refs`` say where
        each argument's summary is, ``parent`` is the call equation it is nested in."""
        env: dict = {}
        where: dict = {}

        def read(var):
            return var.val if isinstance(var, jcore.Literal) else env[var]

        def ref(var) -> _Ref:
            return _Ref("value", value=var.val) if isinstance(var, jcore.Literal) else where[var]

        for var, value in zip(jaxpr.constvars, consts, strict=True):
            env[var], where[var] = value, _Ref("value", value=value)
        for var, value, found in zip(jaxpr.invars, arguments, refs, strict=True):
            env[var], where[var] = value, found
        last_use = _last_uses(jaxpr)
        for index, eqn in enumerate(jaxpr.eqns):
            here = path + (index,)
            origin = _Origin(eqn, parent)
            invals, inrefs = [read(v) for v in eqn.invars], [ref(v) for v in eqn.invars]
            outs, found = self._equation(eqn, invals, inrefs, here, origin)
            number = len(self.steps)
            self.steps.append(_Step(here, origin, found, inrefs))
            for output, (var, out) in enumerate(zip(eqn.outvars, outs, strict=False)):
                if not _jax_private.is_dropped_variable(var):
                    env[var], where[var] = out, _Ref("step", number, output)
            for var in last_use.get(index, ()):  # a value nothing reads again is let go, as eager code would
                env.pop(var, None)
        return [read(v) for v in jaxpr.outvars]

    def _equation(self, eqn, invals: list, inrefs: list, path: tuple, origin: _Origin) -> tuple[list, Any]:
        """``(outputs, their summaries on the device)`` of one equation: a nested call, or the
        branch a ``cond`` takes, is entered (and its outputs summarised as the call's own)."""
        name = eqn.primitive.name
        key = _CALLS.get(name)
        if key is not None and key in eqn.params:
            inner = eqn.params[key]
            body = getattr(inner, "jaxpr", inner)
            if len(body.invars) == len(invals):
                outs = self.run(body, getattr(inner, "consts", ()), invals, inrefs, path + (key,), origin)
                return outs, self.summarised(outs)
        if name == "cond" and "branches" in eqn.params:
            branches = eqn.params["branches"]
            chosen = min(max(int(np.asarray(invals[0])), 0), len(branches) - 1)
            branch = branches[chosen]
            inner_path = path + (f"branches[{chosen}]",)
            outs = self.run(branch.jaxpr, branch.consts, invals[1:], inrefs[1:], inner_path, origin)
            return outs, self.summarised(outs)
        outs = _jax_private.bind_equation(eqn, invals)
        return outs, self.summarised(outs)

    def finished(self, arguments: list, outputs: list, cell_namer: CellNamer) -> ValueRun:
        """The ``ValueRun``: every summary brought back at once, then read in order."""
        kept = [step.found for step in self.steps] + [self.summarised([a]) for a in arguments]
        while self.unsummarised:
            _summarise_in_place(self.unsummarised.popleft())
        if not self.on_host:
            parts = self.window.fetched()
            kept = [slot.taken_from(parts) for slot in kept]
        fetched, fetched_arguments = kept[: len(self.steps)], kept[len(self.steps) :]
        inputs = [self._read(found, [a])[0] for a, found in zip(arguments, fetched_arguments, strict=True)]
        run = ValueRun(outputs=outputs, inputs=inputs, summarised_on="host" if self.on_host else "device")
        made: list[tuple[Summary, ...]] = []
        for step, found in zip(self.steps, fetched, strict=True):
            eqn = step.origin.eqn
            outs = self._read(found, [var.aval for var in eqn.outvars])
            made.append(outs)
            derivative = name_stack_facts(getattr(eqn.source_info, "name_stack", ""))[1]
            value = EquationValue(step.path, eqn.primitive.name, outs, derivative)
            if not value.finite:
                operands = tuple(_summary_of(r, made, inputs) for r in step.inputs)
                value = EquationValue(
                    step.path, eqn.primitive.name, outs, derivative, operands, step.origin.source(cell_namer)
                )
                if run.first_nonfinite is None and value.made_nonfinite:
                    run.first_nonfinite = value
                if run.first_nan is None and value.made_nan:
                    run.first_nan = value
            run.equations.append(value)
        if run.first_nan is not None or run.first_nonfinite is not None:
            run.blowup = blowups.find(self._ran(run, made, inputs, cell_namer))
        return run

    def _ran(self, run: ValueRun, made: list, inputs: list[Summary], cell_namer: CellNamer) -> list[blowups.Ran]:
        """The steps as the search for a derivative that blew up reads them."""
        return [
            blowups.Ran(
                value,
                tuple(_summary_of(r, made, inputs) for r in step.inputs),
                tuple(r.index if r.kind == "step" else None for r in step.inputs),
                step.origin.derivative(),
                lambda origin=step.origin: origin.source(cell_namer),
            )
            for step, value in zip(self.steps, run.equations, strict=True)
        ]

    def _read(self, found, typed: list) -> tuple[Summary, ...]:
        """The summaries of ``typed`` (arrays or abstract values) from what was kept of them."""
        if self.on_host:
            return tuple(found)
        return tuple(from_arrays(t, f) for t, f in zip(typed, value_program.unpacked(found, typed), strict=True))


def _summarise_in_place(values: list) -> None:
    values[:] = [summarise(v) for v in values]


def _foreseen_steps(jaxpr, found: list[list]) -> bool:
    """Append to ``found`` the abstract values of each step's outputs, in the order an evaluation
    of ``jaxpr`` runs its steps (a nested call's before the call's own); ``False`` where that
    order depends on the values (a ``cond``: every branch is listed)."""
    exact = True
    for eqn in jaxpr.eqns:
        inner = eqn.params.get(_CALLS.get(eqn.primitive.name, ""))
        body = getattr(inner, "jaxpr", inner)
        if body is not None and len(body.invars) == len(eqn.invars):
            exact = _foreseen_steps(body, found) and exact
        for branch in eqn.params.get("branches", ()) if eqn.primitive.name == "cond" else ():
            exact = False
            _foreseen_steps(branch.jaxpr, found)
        found.append([var.aval for var in eqn.outvars])
    return exact


def _summary_of(ref: _Ref, made: list, inputs: list[Summary]) -> Summary:
    if ref.kind == "step":
        return made[ref.index][ref.output]
    if ref.kind == "argument":
        return inputs[ref.index]
    return summarise(ref.value)


def from_arrays(typed: Any, found: dict) -> Summary:
    """The ``Summary`` of one array (``typed``: the array or its abstract value) from what the
    device returned of it (``value_program.summary_arrays``): what ``summarise`` says of the
    array itself.

    >>> import jax.numpy as jnp
    >>> x = jnp.array([1.0, jnp.nan, 3.0, jnp.inf] * 4)
    >>> (found,) = value_program.unpacked(value_program.summarised([x]), [x])
    >>> from_arrays(x, found) == summarise(np.asarray(x))
    True
    """
    shape, dtype = tuple(getattr(typed, "shape", ())), str(getattr(typed, "dtype", type(typed).__name__))
    if "value" in found:
        return dataclasses.replace(summarise(found["value"]), shape=shape, dtype=dtype)
    size = int(np.prod(shape, dtype=np.int64))
    count = int(found.get("count", size))  # the finite elements
    nans = int(found.get("nans", 0))
    infs = int(found["infs"]) if "infs" in found else size - count - nans
    if "minimum" not in found:
        return Summary(shape, dtype, nans=nans, infs=infs)
    if count == 0:
        return Summary(shape, dtype, nans=nans, infs=infs)
    mean = float(found["total"]) / count
    return Summary(shape, dtype, None, _number(found["minimum"]), mean, _number(found["maximum"]), nans, infs)


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
