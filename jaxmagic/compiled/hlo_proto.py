"""An HLO program as the profiler records it (an ``HloProto``, ``xla/service/hlo.proto``), written
as the HLO text ``Compiled.as_text()`` gives, so that one set of readers (``hlo_sources``,
``hlo_cost``) serves the programs a trace holds and the ones jaxmagic compiles itself.

A trace names each program it ran on its ``/host:metadata`` plane (``jit_mlp(1715…)``) with the
optimized module XLA made: its computations, instructions (name, opcode, shape, operands, the
computations they call, the source metadata JAX gave them) and the stack-frame table. Only what
the readers use is written: no layouts, no constants' values.

>>> import os
>>> from jaxmagic.compiled import xspace
>>> plane = xspace.read(os.path.join("tests", "fixtures", "tpu", "mlp.xplane.pb")).plane("/host:metadata")
>>> name, stats = plane.metadata()[0]
>>> text = hlo_text(stats["Hlo Proto"])
>>> text.splitlines()[0], "convolution(" in text, 'source_file=' in text or "stack_frame_id=" in text
('HloModule jit_mlp', True, True)
"""

from __future__ import annotations

from collections import defaultdict

from jaxmagic.compiled import protowire
from jaxmagic.compiled.protowire import Value

# xla_data.proto's PrimitiveType, as HLO text spells each one
_TYPES = {
    1: "pred", 2: "s8", 3: "s16", 4: "s32", 5: "s64", 6: "u8", 7: "u16", 8: "u32", 9: "u64",
    10: "f16", 11: "f32", 12: "f64", 14: "opaque", 15: "c64", 16: "bf16", 17: "token", 18: "c128",
    19: "f8e5m2", 20: "f8e4m3fn", 21: "s4", 22: "u4", 23: "f8e4m3b11fnuz", 24: "f8e5m2fnuz",
    25: "f8e4m3fnuz", 26: "s2", 27: "u2", 28: "f8e4m3", 29: "f8e3m4", 30: "s1", 31: "u1",
    32: "f4e2m1fn", 33: "f8e8m0fnu",
}  # fmt: skip
_TUPLE = 13
# the keyword under which HLO text names the computations an opcode calls
_CALLED = {"fusion": "calls", "while": "", "conditional": "", "call": "to_apply", "async-start": "calls"}


def _repeated(items: dict[int, list[Value]], number: int) -> list[int]:
    return [n for value in items.get(number, ()) for n in protowire.packed(value)]


def _one(items: dict[int, list[Value]], number: int, default: Value = b"") -> Value:
    found = items.get(number)
    return found[-1] if found else default


def _message(value: Value) -> dict[int, list[Value]]:
    grouped: dict[int, list[Value]] = defaultdict(list)
    if isinstance(value, bytes):
        for number, item in protowire.fields(value):
            grouped[number].append(item)
    return grouped


def shape_text(value: Value) -> str:
    """A ``ShapeProto`` as HLO text writes it, without layout: ``f32[600,600]``, ``(f32[], s32[4])``.

    >>> shape_text(bytes([0x10, 11, 0x1A, 0x02, 0x04, 0x08]))
    'f32[4,8]'
    """
    shape = _message(value)
    kind = _one(shape, 2, 0)
    if kind == _TUPLE:
        return "(" + ", ".join(shape_text(inner) for inner in shape.get(4, ())) + ")"
    name = _TYPES.get(kind if isinstance(kind, int) else 0, "opaque")
    return f"{name}[{','.join(str(d) for d in _repeated(shape, 3))}]"


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _metadata(value: Value) -> str:
    fields = _message(value)
    parts = []
    if fields.get(2):
        parts.append(f"op_name={_quoted(protowire.text(_one(fields, 2)))}")
    if fields.get(3):
        parts.append(f"source_file={_quoted(protowire.text(_one(fields, 3)))}")
        parts.append(f"source_line={_one(fields, 4, 0)}")
    if fields.get(15):
        parts.append(f"stack_frame_id={_one(fields, 15, 0)}")
    return f"metadata={{{' '.join(parts)}}}" if parts else ""


def _dims(numbers: list[int]) -> str:
    return "{" + ",".join(str(n) for n in numbers) + "}"


def _dot_dimensions(value: Value) -> list[str]:
    dot = _message(value)
    named = (("lhs_batch_dims", 3), ("lhs_contracting_dims", 1), ("rhs_batch_dims", 4), ("rhs_contracting_dims", 2))
    return [f"{name}={_dims(_repeated(dot, number))}" for name, number in named if dot.get(number)]


def _dim_labels(value: Value, ranks: tuple[int, int, int]) -> str:
    """``ConvolutionDimensionNumbers`` as ``b01f_01io->b01f``."""
    numbers = _message(value)

    def labels(rank: int, first: tuple[str, int], second: tuple[str, int], spatial: int) -> str:
        spelled = ["?"] * rank
        for index, dim in enumerate(_repeated(numbers, spatial)):
            if 0 <= dim < rank:
                spelled[dim] = str(index)
        for letter, number in (first, second):
            dim = int(_one(numbers, number, 0))
            if 0 <= dim < rank:
                spelled[dim] = letter
        return "".join(spelled)

    lhs, rhs, out = ranks
    return f"{labels(lhs, ('b', 7), ('f', 8), 11)}_{labels(rhs, ('i', 3), ('o', 4), 6)}->{labels(out, ('b', 9), ('f', 10), 12)}"


def _window(value: Value) -> str:
    sizes, strides = [], []
    for dimension in _message(value).get(1, ()):
        fields = _message(dimension)
        sizes.append(str(_one(fields, 1, 1)))
        strides.append(str(_one(fields, 2, 1)))
    if not sizes:
        return ""
    return f"window={{size={'x'.join(sizes)} stride={'x'.join(strides)}}}"


def _rank(shape: str) -> int:
    inside = shape[shape.find("[") + 1 : shape.rfind("]")]
    return len(inside.split(",")) if inside else 0


class _Module:
    """The names the instructions refer to by id: instructions, computations, shapes."""

    def __init__(self, module: dict[int, list[Value]]):
        self.computations = [_message(c) for c in module.get(3, ())]
        self.names: dict[int, str] = {}
        self.shapes: dict[int, str] = {}
        self.computation_names: dict[int, str] = {}
        for computation in self.computations:
            self.computation_names[int(_one(computation, 5, 0))] = protowire.text(_one(computation, 1))
            for raw in computation.get(2, ()):
                instruction = _message(raw)
                key = int(_one(instruction, 35, 0))
                self.names[key] = protowire.text(_one(instruction, 1))
                self.shapes[key] = shape_text(_one(instruction, 3))

    def instruction(self, raw: Value) -> str:
        fields = _message(raw)
        name, opcode = protowire.text(_one(fields, 1)), protowire.text(_one(fields, 2))
        shape = shape_text(_one(fields, 3))
        operand_ids = _repeated(fields, 36)
        operands = ", ".join(f"%{self.names.get(i, i)}" for i in operand_ids)
        attributes = self._called(opcode, [self.computation_names.get(i, str(i)) for i in _repeated(fields, 38)])
        if fields.get(11):
            attributes.insert(0, f"kind={protowire.text(_one(fields, 11))}")
        if fields.get(14):
            attributes.append(f"dimensions={_dims(_repeated(fields, 14))}")
        if fields.get(30):
            attributes += _dot_dimensions(_one(fields, 30))
        if fields.get(15):
            attributes.append(_window(_one(fields, 15)))
        if fields.get(16) and len(operand_ids) >= 2:
            ranks = (
                _rank(self.shapes.get(operand_ids[0], "")),
                _rank(self.shapes.get(operand_ids[1], "")),
                _rank(shape),
            )
            attributes.append(f"dim_labels={_dim_labels(_one(fields, 16), ranks)}")
        for number, keyword in ((50, "feature_group_count"), (58, "batch_group_count")):
            if int(_one(fields, number, 0)) > 1:
                attributes.append(f"{keyword}={_one(fields, number, 0)}")
        if fields.get(28):
            attributes.append(f"custom_call_target={_quoted(protowire.text(_one(fields, 28)))}")
        attributes.append(_metadata(_one(fields, 7)))
        written = ", ".join(a for a in attributes if a)
        return f"%{name} = {shape} {opcode}({operands}){', ' + written if written else ''}"

    @staticmethod
    def _called(opcode: str, called: list[str]) -> list[str]:
        if not called:
            return []
        if opcode == "while" and len(called) == 2:  # XLA keeps a loop's body first, its condition second
            return [f"condition=%{called[1]}", f"body=%{called[0]}"]
        if opcode == "conditional":
            return ["branch_computations={" + ", ".join(f"%{c}" for c in called) + "}"]
        keyword = _CALLED.get(opcode, "to_apply")
        return [f"{keyword or 'calls'}=" + ", ".join(f"%{c}" for c in called)]


def _stack_tables(value: Value) -> list[str]:
    """The stack-frame index as the text's four tables (a frame's parent written plus one, as XLA does)."""
    index = _message(value)
    if not index.get(4):
        return []
    lines = ["FileNames"] + [f"{n} {_quoted(protowire.text(v))}" for n, v in enumerate(index.get(1, ()), 1)]
    lines += [""] + ["FunctionNames"] + [f"{n} {_quoted(protowire.text(v))}" for n, v in enumerate(index.get(2, ()), 1)]
    lines += ["", "FileLocations"]
    for n, raw in enumerate(index.get(3, ()), 1):
        location = _message(raw)
        lines.append(
            f"{n} {{file_name_id={_one(location, 1, 0)} function_name_id={_one(location, 2, 0)} "
            f"line={_one(location, 3, 0)} column={_one(location, 4, 0)}}}"
        )
    lines += ["", "StackFrames"]
    for n, raw in enumerate(index.get(4, ()), 1):
        frame = _message(raw)
        lines.append(f"{n} {{file_location_id={_one(frame, 1, 0)} parent_frame_id={int(_one(frame, 2, 0)) + 1}}}")
    return lines + [""]


def hlo_text(data: bytes) -> str:
    """The HLO text of an ``HloProto`` (or of a bare ``HloModuleProto``): the module's name, its
    stack-frame tables, and every computation with its instructions, the entry marked ``ENTRY``."""
    outer = _message(data)
    module = outer if outer.get(2) or outer.get(6) else _message(_one(outer, 1))  # a module names its entry
    reader = _Module(module)
    entry = int(_one(module, 6, 0))
    lines = [f"HloModule {protowire.text(_one(module, 1))}", ""]
    lines += _stack_tables(_one(module, 17))
    for computation in reader.computations:
        key = int(_one(computation, 5, 0))
        name = protowire.text(_one(computation, 1))
        lines.append(f"{'ENTRY ' if key == entry else ''}%{name} () -> () {{")
        root = int(_one(computation, 6, 0))
        for raw in computation.get(2, ()):
            is_root = int(_one(_message(raw), 35, 0)) == root
            lines.append(f"  {'ROOT ' if is_root else ''}{reader.instruction(raw)}")
        lines += ["}", ""]
    return "\n".join(lines)
