"""What each instruction of an optimized HLO module costs, counted as XLA's cost analysis counts
it (``xla/service/hlo_cost_analysis.cc``): floating-point operations, transcendental functions,
and bytes read and written.

An elementwise instruction costs one operation per element of its result (a transcendental one,
``exp``, ``tanh``, ``log``..., one transcendental instead); a ``dot`` two per multiply-add
(output elements × contracted size); a convolution two per multiply-add of its window; a reduction
one per element folded away; data movement (``broadcast``, ``reshape``, ``copy``, ``slice``...)
none. Bytes are what an instruction reads and writes: its operands and result; inside a fusion
only what crosses its boundary (its parameters, read by the instructions that use them, and its
result, written by its root), since what stays inside never reaches memory. The sum over a
module's instructions is ``Compiled.cost_analysis()``'s ``flops`` (checked in the tests).

>>> import jax, jax.numpy as jnp
>>> hlo = jax.jit(lambda a, b: a @ b).trace(jnp.ones((8, 16)), jnp.ones((16, 4))).lower().compile().as_text()
>>> from jaxmagic.compiled import hlo_sources
>>> instructions = hlo_sources.parse(hlo)
>>> grouped = hlo_sources.by_computation_of(instructions)
>>> entry = [i for i in instructions.values() if i.computation.startswith("main")]
>>> sum(cost.flops for kernel in entry for _, cost in fused_costs(kernel, instructions, grouped))
1024.0
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from jaxmagic.compiled.hlo_sources import HloInstruction

_ARRAY = re.compile(r"\b([a-z]+[0-9]*[a-z0-9]*)\[([0-9,]*)\]")
_BITS = re.compile(r"(\d+)")
_CONTRACTING = re.compile(r"\blhs_contracting_dims=\{([0-9,]*)\}")
_DIM_LABELS = re.compile(r"\bdim_labels=([0-9a-z]+)_([0-9a-z]+)->([0-9a-z]+)")
_WINDOW_SIZE = re.compile(r"\bwindow=\{[^}]*\bsize=([0-9x]+)")
_GROUPS = re.compile(r"\bbatch_group_count=(\d+)")

TRANSCENDENTAL = frozenset(
    {
        "exponential", "exponential-minus-one", "log", "log-plus-one", "tanh", "logistic", "sine", "cosine", "tan",
        "sqrt", "rsqrt", "cbrt", "power", "atan2", "erf", "erf-inv",
    }
)  # fmt: skip
# Elementwise instructions that cost one operation per element of their result.
ELEMENTWISE = frozenset(
    {
        "add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "negate", "abs", "sign", "floor",
        "ceil", "round-nearest-afz", "round-nearest-even", "compare", "select", "clamp", "and", "or", "xor", "not",
        "shift-left", "shift-right-arithmetic", "shift-right-logical", "is-finite", "real", "imag", "complex",
        "popcnt", "count-leading-zeros", "stochastic-convert", "convert", "reduce-precision",
    }
)  # fmt: skip
_NO_BYTES = frozenset({"parameter", "constant", "tuple", "get-tuple-element", "bitcast"})


@dataclass(frozen=True)
class Cost:
    """Floating-point operations, transcendental functions, and bytes read and written."""

    flops: float = 0.0
    transcendentals: float = 0.0
    bytes: float = 0.0

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.flops + other.flops, self.transcendentals + other.transcendentals, self.bytes + other.bytes)

    def scaled(self, factor: float) -> Cost:
        return Cost(self.flops * factor, self.transcendentals * factor, self.bytes * factor)

    @property
    def is_zero(self) -> bool:
        return not (self.flops or self.transcendentals or self.bytes)


def arrays(shape: str) -> list[tuple[str, list[int]]]:
    """The arrays of a shape (one, or a tuple's): ``(element type, dimensions)``.

    >>> arrays("(f32[2,3]{1,0}, s32[])")
    [('f32', [2, 3]), ('s32', [])]
    """
    return [(kind, [int(d) for d in dims.split(",") if d]) for kind, dims in _ARRAY.findall(shape)]


def elements(shape: str) -> int:
    """Elements of the shape's first array (its only one, unless a tuple)."""
    found = arrays(shape)
    return math.prod(found[0][1]) if found else 0


def byte_size(shape: str) -> float:
    """Bytes of every array of a shape: ``f32[600,600]`` is 1,440,000; ``pred`` a byte each.

    >>> byte_size("(bf16[4,4], pred[8])")
    40.0
    """
    total = 0.0
    for kind, dims in arrays(shape):
        if kind in ("token", "opaque"):
            continue
        bits = _BITS.search(kind)
        size = 8 if kind == "pred" or bits is None else int(bits.group(1))
        total += math.prod(dims) * size / 8
    return total


def _dot_flops(instruction: HloInstruction, shapes: dict[str, str]) -> float:
    contracting = _CONTRACTING.search(instruction.attributes)
    lhs = arrays(shapes.get(instruction.operands[0], "")) if instruction.operands else []
    if not lhs:
        return 0.0
    dims = lhs[0][1]
    size = math.prod(dims[int(d)] for d in contracting.group(1).split(",") if d) if contracting else 1
    return 2.0 * elements(instruction.shape) * size


def _convolution_flops(instruction: HloInstruction, shapes: dict[str, str]) -> float:
    """Two operations per multiply-add: each output element takes the kernel's elements per
    output feature (its window times the input features it reads)."""
    labels = _DIM_LABELS.search(instruction.attributes)
    kernel = arrays(shapes.get(instruction.operands[1], "")) if len(instruction.operands) > 1 else []
    if not kernel:
        return 0.0
    dims = kernel[0][1]
    out_features = dims[labels.group(2).index("o")] if labels and "o" in labels.group(2) else 1
    groups = _GROUPS.search(instruction.attributes)
    per_output = math.prod(dims) / max(out_features, 1) / (int(groups.group(1)) if groups else 1)
    return 2.0 * elements(instruction.shape) * per_output


def _own_operations(instruction: HloInstruction, shapes: dict[str, str]) -> Cost:
    """An instruction's own operations, not those of what it calls (a fusion's are its insides')."""
    opcode, out = instruction.opcode, elements(instruction.shape)
    if opcode in TRANSCENDENTAL:
        return Cost(transcendentals=float(out))
    if opcode in ELEMENTWISE:
        return Cost(flops=float(out))
    if opcode == "dot":
        return Cost(flops=_dot_flops(instruction, shapes))
    if opcode == "convolution":
        return Cost(flops=_convolution_flops(instruction, shapes))
    if opcode in ("reduce", "all-reduce", "reduce-scatter"):
        folded = sum(
            elements(shapes.get(o, "")) for o in instruction.operands[: max(1, len(instruction.operands) // 2)]
        )
        return Cost(flops=float(max(folded - out, 0)))
    if opcode == "reduce-window":
        window = _WINDOW_SIZE.search(instruction.attributes)
        size = math.prod(int(s) for s in window.group(1).split("x")) if window else 1
        return Cost(flops=float(out * max(size - 1, 1)))
    if opcode == "sort":
        return Cost(flops=float(out * max(math.log2(out), 1) if out else 0))
    return Cost()


def instruction_cost(instruction: HloInstruction, instructions: dict[str, HloInstruction]) -> Cost:
    """One instruction's cost on its own (a fusion's insides are counted by ``fused_costs``):
    its operations, and the bytes of its operands and result (of a slice, the slice; of an update
    in place, the update)."""
    shapes = {name: instructions[name].shape for name in instruction.operands if name in instructions}
    cost = _own_operations(instruction, shapes)
    if instruction.opcode in _NO_BYTES:
        return cost
    read = sum(
        _bytes_read(instruction, index, instructions[name])
        for index, name in enumerate(instruction.operands)
        if name in instructions
    )
    return cost + Cost(bytes=read + _bytes_written(instruction, instructions))


_SLICING = frozenset({"slice", "dynamic-slice", "gather"})


def _bytes_read(reader: HloInstruction, index: int, source: HloInstruction) -> float:
    """What ``reader`` reads of its ``index``-th operand: a slice only its result's worth; a
    ``dynamic-update-slice`` nothing of the buffer it updates in place; else all of it."""
    if reader.opcode in _SLICING and index == 0:
        return min(byte_size(reader.shape), byte_size(source.shape))
    if reader.opcode == "dynamic-update-slice" and index == 0:
        return 0.0
    return byte_size(source.shape)


def _bytes_written(instruction: HloInstruction, instructions: dict[str, HloInstruction]) -> float:
    """What an instruction writes: its result; of an update in place, the update only."""
    if instruction.opcode == "dynamic-update-slice" and len(instruction.operands) > 1:
        update = instructions.get(instruction.operands[1])
        return byte_size(update.shape) if update is not None else 0.0
    return byte_size(instruction.shape)


def fused_costs(
    kernel: HloInstruction,
    instructions: dict[str, HloInstruction],
    by_computation: dict[str, list[HloInstruction]],
) -> list[tuple[HloInstruction, Cost]]:
    """Each instruction a kernel runs, with its part of the kernel's cost: a single instruction,
    its own; a fusion, each fused instruction's operations, the bytes of each parameter to the
    instructions that read it (in equal parts) and the result's bytes to the root. (A fusion with no
    source inside, which ``hlo_sources.parse`` gives its user's line, lists its insides all the same.)"""
    if kernel.opcode != "fusion":
        return [(kernel, instruction_cost(kernel, instructions))]
    found: list[tuple[HloInstruction, Cost]] = []
    for computation in kernel.calls or kernel.fused:
        inside = by_computation.get(computation, [])
        readers: dict[str, list[HloInstruction]] = {}
        for item in inside:
            for operand in item.operands:
                readers.setdefault(operand, []).append(item)
        root = inside[-1] if inside else None  # XLA writes a computation's root last
        written = set(root.operands) if root is not None and root.opcode == "tuple" else {root.name if root else ""}
        for item in inside:
            if item.opcode == "fusion":  # a fusion nested in a fusion: its own insides
                found += fused_costs(item, instructions, by_computation)
                continue
            shapes = {name: instructions[name].shape for name in item.operands if name in instructions}
            cost = _own_operations(item, shapes)
            for index, operand in enumerate(item.operands):
                source = instructions.get(operand)
                if source is not None and source.opcode == "parameter":
                    cost += Cost(bytes=_bytes_read(item, index, source) / len(readers[operand]))
            if item.name in written:
                cost += Cost(bytes=_bytes_written(item, instructions))  # a result the fusion writes
            found.append((item, cost))
    return found
