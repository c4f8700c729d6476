"""XLA's buffer assignment of a compiled program, read from the text XLA writes when asked to dump it.

``Lowered.compile(compiler_options={"xla_dump_to": folder})`` makes XLA write, beside the optimized
module, its buffer assignment (``*after_optimizations-buffer-assignment.txt``) and the live range
of every value in its schedule (``HloLiveRange``, in ``*-live-range.txt`` or at the end of the
buffer-assignment file on older releases). The format is XLA's own and the same on every backend:

- ``allocation 3: size 65536, color 1, parameter 0, shape |f32[64,256]| at ShapeIndex {}:`` opens an
  allocation (a block of memory; ``color`` is its memory space, 0 when left out) with what it
  holds: an entry parameter, a ``constant``, ``maybe-live-out`` (an output), ``thread-local``
  (a scalar inside a kernel, never in device memory), otherwise the program's temporaries;
- `` value: <27 add_tanh_fusion{1} (phi) @0> (size=65536,offset=0): f32[64,256]{1,0:T(8,128)S(1)}``
  places one value (an instruction's result, or one element of a tuple) in it, at an offset;
- ``InstructionSequence:`` lists the schedule (``12:fusion.3``), every computation flattened into
  one order, a loop's body once;
- ``BufferLiveRange:`` gives each value's first and last step in that order (``fusion.3{}:12-15``).

Two values placed at the same bytes of one allocation while both are live are one buffer (a value
written in place over its input, a loop's carried value and its body's parameter): they are one
``slice``.

>>> text = '''allocation 0: size 16, parameter 0, shape |f32[4]| at ShapeIndex {}:
...  value: <1 x.1 @0> (size=16,offset=0): f32[4]{0}
... allocation 1: size 16, preallocated-temp:
...  value: <2 sine @0> (size=16,offset=0): f32[4]{0}
...  value: <3 cosine @0> (size=16,offset=0): f32[4]{0}
... '''
>>> dump = read_dump(text)
>>> dump.allocations[1].kind, dump.values["sine{}"].slice == dump.values["cosine{}"].slice
('temporary', True)
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass, field

_ALLOCATION = re.compile(r"^allocation (\d+): size (\d+)(.*):\s*$")
_VALUE = re.compile(r"^\s*value: <\d+ ([\w.\-]+?)(\{[\d,]*\})?(?: \(phi\))? @\d+> \(size=(\d+),offset=(\d+)\): (.*)$")
_SEQUENCE = re.compile(r"^\s+(\d+):([\w.\-]+)\s*$")
_RANGE = re.compile(r"^\s+([\w.\-]+?)(\{[\d,]*\}):(\d+)-(\d+)\s*$")
_COLOR = re.compile(r"\bcolor (\d+)")
_SPACE = re.compile(r"S\((\d+)\)")
_LAYOUT = re.compile(r"\{[\d,]*(?::[^}]*)?\}")
_MODULE = re.compile(r"^(module_\d+)\.")


@dataclass(frozen=True)
class Allocation:
    """One block of memory: ``index``, ``size``, ``color`` (the memory space) and ``kind``
    (``argument``, ``output``, ``constant``, ``thread-local`` or ``temporary``)."""

    index: int
    size: int
    color: int
    kind: str

    @property
    def held(self) -> bool:
        """Held for the whole call, as XLA counts it: the arguments, outputs and constants."""
        return self.kind in ("argument", "output", "constant")


@dataclass(frozen=True)
class Value:
    """One value placed in an allocation: ``key`` (``fusion.3{}``, the instruction and the tuple
    index), ``size``, ``offset``, ``allocation``, ``shape`` (layout left out) and ``space`` (the
    memory space its layout names, ``S(1)``; 0 when it names none)."""

    key: str
    name: str
    size: int
    offset: int
    allocation: int
    shape: str
    space: int
    phi: bool

    @property
    def slice(self) -> tuple[int, int, int]:
        """Where its bytes are: allocation, offset and size."""
        return (self.allocation, self.offset, self.size)


@dataclass
class BufferDump:
    """A program's allocations, values, schedule (``sequence``: step -> instruction) and live
    ranges (value key -> first and last step); ``peak_listed`` is the list XLA prints under "Live
    ranges at N (peak)", kept for dumps without live ranges."""

    allocations: dict[int, Allocation] = field(default_factory=dict)
    values: dict[str, Value] = field(default_factory=dict)
    sequence: list[str] = field(default_factory=list)
    ranges: dict[str, tuple[int, int]] = field(default_factory=dict)
    peak_listed: list[str] = field(default_factory=list)

    @property
    def available(self) -> bool:
        return bool(self.values) and bool(self.ranges or self.peak_listed)

    def values_in(self, allocation: int) -> list[Value]:
        """The values placed in one allocation, in the order XLA lists them."""
        if not hasattr(self, "_by_allocation"):
            self._by_allocation: dict[int, list[Value]] = {}
            for value in self.values.values():
                self._by_allocation.setdefault(value.allocation, []).append(value)
        return self._by_allocation.get(allocation, [])


def _kind(flags: str) -> str:
    if "parameter" in flags:
        return "argument"
    if "maybe-live-out" in flags or "output shape" in flags:
        return "output"
    if "constant" in flags:
        return "constant"
    if "thread-local" in flags:
        return "thread-local"
    return "temporary"


def read_dump(text: str) -> BufferDump:
    """The allocations, values, schedule and live ranges in the text of XLA's dump files."""
    dump = BufferDump()
    allocation, section = None, ""
    for line in text.splitlines():
        head = _ALLOCATION.match(line)
        if head:
            color = _COLOR.search(head.group(3))
            allocation = Allocation(int(head.group(1)), int(head.group(2)), int(color.group(1)) if color else 0,
                                    _kind(head.group(3)))  # fmt: skip
            dump.allocations[allocation.index] = allocation
            continue
        value = _VALUE.match(line)
        if value and allocation is not None:
            _add_value(dump, value, allocation)
            continue
        section = _section(line, section)
        if section:
            _read_schedule_line(dump, section, line)
    return dump


def _add_value(dump: BufferDump, found: re.Match, allocation: Allocation) -> None:
    key = found.group(1) + (found.group(2) or "{}")
    if key in dump.values:
        return
    layout = found.group(5)
    space = _SPACE.search(layout)
    dump.values[key] = Value(
        key, found.group(1), int(found.group(3)), int(found.group(4)), allocation.index,
        _LAYOUT.sub("", layout).strip(), int(space.group(1)) if space else allocation.color, "(phi)" in found.group(0),
    )  # fmt: skip


def _section(line: str, section: str) -> str:
    stripped = line.strip()
    if stripped == "InstructionSequence:":
        return "sequence"
    if stripped == "BufferLiveRange:":
        return "ranges"
    if stripped.startswith("Live ranges at ") and stripped.endswith("(peak):"):
        return "peak"
    if section and (not line.startswith(" ") or stripped.startswith("Stack trace")):
        return ""
    return section


def _read_schedule_line(dump: BufferDump, section: str, line: str) -> None:
    if section == "sequence":
        step = _SEQUENCE.match(line)
        if step:
            dump.sequence.append(step.group(2))
    elif section == "ranges":
        found = _RANGE.match(line)
        if found:
            dump.ranges[found.group(1) + found.group(2)] = (int(found.group(3)), int(found.group(4)))
    elif section == "peak":
        listed = re.match(r"^\s+([\w.\-]+?)(\{[\d,]*\}): \d+ bytes", line)
        if listed:
            dump.peak_listed.append(listed.group(1) + listed.group(2))


def dumped_text(folder: str, module_name: str = "") -> str:
    """The buffer-assignment and live-range text XLA wrote into ``folder`` for one module: the
    one named ``module_name`` (``jit_f``) where XLA wrote several, the last it wrote otherwise."""
    paths = glob.glob(os.path.join(folder, "*after_optimizations-buffer-assignment.txt")) + glob.glob(
        os.path.join(folder, "*after_optimizations-live-range.txt")
    )
    modules: dict[str, list[str]] = {}
    for path in sorted(paths):
        found = _MODULE.match(os.path.basename(path))
        modules.setdefault(found.group(1) if found else "", []).append(path)
    if not modules:
        return ""
    named = [m for m, files in modules.items() if any(f".{module_name}." in os.path.basename(f) for f in files)]
    chosen = sorted(named or modules)[-1]
    texts = []
    for path in modules[chosen]:
        with open(path, encoding="utf-8", errors="replace") as handle:
            texts.append(handle.read())
    return "\n".join(texts)
