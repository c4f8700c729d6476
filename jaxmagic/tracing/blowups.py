"""Which derivative blew up: in a gradient's program, the first NaN is usually made by JAX's own
equations (a ``mul`` of the backward pass), from an infinite derivative of an operation the user
wrote, taken where it is not finite (``sqrt`` at 0). Read from the values each equation held:
the NaN's operands, the equation that made the infinite one, and the forward operation on the same
line of the user's whose input sits on a point where its derivative is infinite.

>>> import numpy as np
>>> from jaxmagic.tracing.values import EquationValue, summarise
>>> zero, half, inf = summarise(np.float32(0.0)), summarise(np.float32(0.5)), summarise(np.float32(np.inf))
>>> steps = [
...     Ran(EquationValue((0,), "sqrt", (zero,)), (zero,), (None,), "forward", lambda: None),
...     Ran(EquationValue((1,), "div", (inf,)), (half, zero), (None, 0), "forward", lambda: None),
...     Ran(EquationValue((2,), "mul", (summarise(np.float32(np.nan)),)), (zero, inf), (None, 1), "backward", lambda: None),
... ]
>>> found = find(steps)
>>> found.forward, found.at, found.derivative, found.nan_from
('sqrt', 0.0, 'inf', '0 · inf')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

# Forward primitive -> the points where its derivative is not finite, the operands that must all
# reach one of them, and what the derivative is there.
SINGULAR: dict[str, tuple[tuple[float, ...], tuple[int, ...], str]] = {
    "sqrt": ((0.0,), (0,), "inf"),
    "rsqrt": ((0.0,), (0,), "inf"),
    "cbrt": ((0.0,), (0,), "inf"),
    "log": ((0.0,), (0,), "inf"),
    "pow": ((0.0,), (0,), "inf"),
    "asin": ((-1.0, 1.0), (0,), "inf"),
    "acos": ((-1.0, 1.0), (0,), "inf"),
    "atanh": ((-1.0, 1.0), (0,), "inf"),
    "erf_inv": ((-1.0, 1.0), (0,), "inf"),
    "atan2": ((0.0,), (0, 1), "undefined"),
}


@dataclass(frozen=True)
class Ran:
    """One equation as it ran, for this search: its ``value`` (an ``EquationValue``), its
    ``operands`` (a ``Summary`` each), which earlier step made each operand (``producers``: an
    index into the steps, or ``None`` for an argument or a constant), whether it computes a
    derivative (``derivative``: ``forward`` / ``backward`` / ``""``, its enclosing call's where
    its own says nothing) and ``place()``, the user's ``SourceLine``."""

    value: Any
    operands: tuple
    producers: tuple
    derivative: str
    place: Callable[[], Any]


@dataclass(frozen=True)
class DerivativeBlowup:
    """The derivative that blew up: the forward operation (``forward``, a primitive name) the user
    wrote at ``source``, taken at ``at``, where its derivative is ``derivative`` (``inf``); the
    equation that computed it (``derivative_path``; ``derivative`` is ``undefined`` where it has
    no value, as ``atan2``'s at the origin) and the one that then made the first NaN
    (``nan_path``, ``nan_from``: ``0 · inf``, ``inf − inf``, ``inf / inf``; ``None`` when the
    run made no NaN from it)."""

    forward: str
    at: float
    derivative: str
    source: Any
    forward_path: tuple
    derivative_path: tuple
    nan_path: tuple | None = None
    nan_from: str | None = None


def find(steps: Sequence[Ran]) -> DerivativeBlowup | None:
    """The derivative that blew up in these steps (in the order they ran), or ``None``: the
    equation of a derivative that made the first NaN's infinite operand (or the NaN itself, as
    ``0 / 0`` does), and the forward operation it is the derivative of. Whether the forward value
    itself was finite, which makes the derivative the cause, is for the caller to check."""
    nan = next((i for i, s in enumerate(steps) if s.value.made_nan), None)
    if nan is not None:
        producer = _infinite_operand(steps, nan)
        made = _innermost(steps, _maker(steps, producer)) if producer is not None else nan
    else:
        made = next((i for i, s in enumerate(steps) if s.value.made_nonfinite and _infs(s)), None)
        made = _innermost(steps, made) if made is not None else None
    if made is None or not steps[made].derivative:
        return None
    forward = _forward(steps, made)
    if forward is None:
        return None
    found, at = forward
    step = steps[found]
    nan_from = _nan_from(steps[nan]) if nan is not None else None
    return DerivativeBlowup(
        forward=step.value.primitive,
        at=at,
        derivative=SINGULAR[step.value.primitive][2],
        source=step.place(),
        forward_path=step.value.path,
        derivative_path=steps[made].value.path,
        nan_path=steps[nan].value.path if nan is not None and nan_from is not None else None,
        nan_from=nan_from,
    )


def _innermost(steps: Sequence[Ran], index: int) -> int:
    """For a call whose outputs hold the inf, the equation inside it that made it."""
    path = steps[index].value.path
    inside = [
        i
        for i in range(index)
        if steps[i].value.path[: len(path)] == path and steps[i].value.made_nonfinite and _infs(steps[i])
    ]
    return inside[0] if inside else index


def _infs(step: Ran) -> bool:
    return any(s.infs for s in step.value.outputs)


def _infinite_operand(steps: Sequence[Ran], nan: int) -> int | None:
    """The step that made the infinite operand of the equation that made the first NaN."""
    step = steps[nan]
    for summary, producer in zip(step.operands, step.producers, strict=False):
        if summary.infs and producer is not None:
            return producer
    return None


def _maker(steps: Sequence[Ran], index: int) -> int:
    """Back along the infinite operands to the step that made the inf out of finite values."""
    seen = 0
    while not steps[index].value.made_nonfinite and seen < len(steps):
        step = steps[index]
        earlier = [p for s, p in zip(step.operands, step.producers, strict=False) if s.infs and p is not None]
        if not earlier:
            break
        index, seen = earlier[0], seen + 1
    return index


def _forward(steps: Sequence[Ran], made: int) -> tuple[int, float] | None:
    """The forward operation whose derivative ``steps[made]`` computed: on the same line, the
    last before it with an operand on a point where the derivative is infinite (else the one
    whose output ``steps[made]`` reads)."""
    line = _label(steps[made].place())
    readers = set(p for p in steps[made].producers if p is not None)
    for same_line in (True, False):
        for index in range(made, -1, -1):
            step = steps[index]
            if step.value.primitive not in SINGULAR:
                continue
            if same_line and (line is None or _label(step.place()) != line):
                continue
            if not same_line and index not in readers:
                continue
            at = _singular_point(step)
            if at is not None:
                return index, at
    return None


def _singular_point(step: Ran) -> float | None:
    """The point of ``SINGULAR`` that the operands' values all reach, or ``None``."""
    points, operands, _ = SINGULAR[step.value.primitive]
    if max(operands) >= len(step.operands):
        return None
    for point in points:
        if all(_reaches(step.operands[i], point) for i in operands):
            return point
    return None


def _reaches(summary, point: float) -> bool:
    if summary.value is not None:
        try:
            import numpy as np

            return bool(np.any(np.asarray(summary.value) == point))
        except (TypeError, ValueError):
            return False
    return summary.minimum is not None and summary.minimum <= point <= summary.maximum


def _label(source) -> str | None:
    return getattr(source, "label", None)


def _nan_from(step: Ran) -> str | None:
    """How the NaN was made from an inf: ``0 · inf``, ``inf − inf`` or ``inf / inf``."""
    primitive = step.value.primitive
    operands = step.operands
    if primitive == "mul" and any(s.infs for s in operands) and any(_holds_zero(s) for s in operands):
        return "0 · inf"
    if primitive in ("add", "add_any", "sub") and sum(1 for s in operands if s.infs) >= 1:
        return "inf − inf"
    if primitive == "div" and all(s.infs for s in operands):
        return "inf / inf"
    if primitive == "div" and all(_holds_zero(s) for s in operands):
        return "0 / 0"
    return None


def _holds_zero(summary) -> bool:
    return _reaches(summary, 0.0)
