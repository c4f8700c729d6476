"""How a kernel's measured time divides among the source lines fused into it: by XLA's cost of
each line's instructions (``hlo_cost``), as the time each would take at the chip's peaks.

A kernel is timed whole; the lines inside it are not. Where a kernel holds one line, that line
gets all of its time (measured). Where XLA fused several lines into one kernel, each gets the
share its instructions would take at the chip's peak compute rate and memory bandwidth (the
slower of the two, instruction by instruction): an estimate inside one kernel, and said to be one.
A matrix product fused with the elementwise work on its result takes nearly all of the kernel's
time, as it does when the lines are timed apart; counting instructions would give each line the
same weight.

>>> import jax, jax.numpy as jnp
>>> from jaxmagic.compiled import hlo_sources
>>> def f(a, b):
...     c = a @ b
...     return jnp.tanh(c + 1.0).sum()
>>> hlo = jax.jit(f).trace(jnp.ones((256, 256)), jnp.ones((256, 256))).lower().compile().as_text()
>>> instructions = hlo_sources.parse(hlo)
>>> shares = [line_shares(instructions, name) for name, i in instructions.items() if i.computation.startswith("main")]
>>> biggest = max(shares, key=lambda s: len(s.fractions))
>>> max(biggest.fractions, key=biggest.fractions.get).endswith(":2")
True
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jaxmagic.compiled import hlo_cost, roofline
from jaxmagic.compiled.hlo_sources import FramePicker, HloInstruction, by_computation_of
from jaxmagic.tracing.sources import CellNamer, no_cells, source_line, traced_user_frame


@dataclass(frozen=True)
class LineShares:
    """A kernel's lines: each one's ``fractions`` of its time (adding up to 1), each one's cost per
    run (``costs``), and whether the fractions are estimated (several lines in one kernel)."""

    fractions: dict[str, float] = field(default_factory=dict)
    costs: dict[str, hlo_cost.Cost] = field(default_factory=dict)
    estimated: bool = False
    texts: dict[str, str] = field(default_factory=dict)
    places: dict[str, tuple[str, int]] = field(default_factory=dict)  # label -> (file, line)


def line_shares(
    instructions: dict[str, HloInstruction],
    kernel: str,
    *,
    cell_namer: CellNamer = no_cells,
    pick: FramePicker = traced_user_frame,
    peaks: roofline.Peaks | None = None,
    by_computation: dict[str, list[HloInstruction]] | None = None,
    expand: bool = False,
) -> LineShares:
    """The lines of ``kernel`` (an instruction of the parsed module) and the share of its time
    each takes; no lines where none of its instructions has one. ``expand``: the kernel is a loop
    or branch timed whole (its body's kernels were not), shared among everything it runs."""
    found = instructions.get(kernel)
    if found is None:
        return LineShares()
    grouped = by_computation if by_computation is not None else by_computation_of(instructions)
    costs: dict[str, hlo_cost.Cost] = {}
    weights: dict[str, float] = {}
    texts: dict[str, str] = {}
    places: dict[str, tuple[str, int]] = {}
    own = found.frames if found.fused else ()  # a fusion with no source inside: its insides take its line
    for instruction, cost in _costs(found, instructions, grouped, expand):
        frame = pick(instruction.frames or own)
        if frame is None:
            continue
        line = source_line(frame[0], frame[1], "", cell_namer=cell_namer)
        costs[line.label] = costs.get(line.label, hlo_cost.Cost()) + cost
        texts[line.label] = line.text
        places[line.label] = (line.file, line.line)
        seconds = roofline.estimated_seconds(cost.flops, cost.transcendentals, cost.bytes, peaks)
        weights[line.label] = weights.get(line.label, 0.0) + seconds
    if not costs:
        return LineShares()
    if len(costs) == 1:
        return LineShares({label: 1.0 for label in costs}, costs, False, texts, places)
    total = sum(weights.values())
    if total <= 0:  # nothing to tell them apart by: equal parts
        fractions = {label: 1.0 / len(costs) for label in costs}
    else:
        fractions = {label: weight / total for label, weight in weights.items()}
    return LineShares(fractions, costs, True, texts, places)


def _costs(kernel: HloInstruction, instructions: dict, grouped: dict, expand: bool):
    """``hlo_cost.fused_costs`` of the kernel; of everything a loop or branch runs where ``expand``."""
    if not expand or not kernel.calls:
        return hlo_cost.fused_costs(kernel, instructions, grouped)
    found, pending, seen = [], list(kernel.calls), set()
    while pending:
        computation = pending.pop()
        if computation in seen:
            continue
        seen.add(computation)
        for inner in grouped.get(computation, ()):
            if inner.opcode in ("while", "conditional", "call"):
                pending.extend(inner.calls)
            else:
                found += hlo_cost.fused_costs(inner, instructions, grouped)
    return found
