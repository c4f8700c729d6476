"""Which of the user's source lines hold a compiled program's memory at its peak.

XLA's buffer assignment says, for the compiled program, which buffers are live at the point of
the schedule where the most bytes are live (its ``HloLiveRange`` "Live ranges at N (peak)"), and
in which allocation each buffer sits (a parameter: an argument; maybe-live-out: an output;
preallocated-temp: a temporary; constant). XLA writes it when asked to dump the module
(``xla_dump_to``, a compile option); each buffer's instruction in the optimized HLO carries the
source line that made it (``hlo_sources``). ``compile_with_buffers`` compiles once that way;
``peak_memory`` reads the result.

>>> import jax, jax.numpy as jnp
>>> def f(x):
...     y = jnp.sin(x) @ x
...     return jnp.tanh(y).sum()
>>> compiled, dumped = compile_with_buffers(jax.jit(f).trace(jnp.ones((64, 64))).lower())
>>> peak = peak_memory(compiled.as_text(), dumped, compiled_memory(compiled))
>>> peak.peak_bytes == sum(b.bytes for b in peak.live_at_peak)
True
>>> {b.kind for b in peak.live_at_peak} <= {"argument", "constant", "output", "temporary"}
True
"""

from __future__ import annotations

import atexit
import glob
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from jaxmagic.compiled.hlo_sources import parse
from jaxmagic.compiled.memory import compiled_memory
from jaxmagic.tracing.sources import CellNamer, SourceLine, no_cells, pick_user_frame, source_line

__all__ = ["compile_with_buffers", "peak_memory", "compiled_memory", "PeakMemory", "LiveBuffer", "LineShare"]

_ALLOCATION = re.compile(r"^allocation (\d+): size (\d+), (.*):\s*$")
_VALUE = re.compile(r"^\s*value: <\d+ ([\w.\-]+?)(\{[\d,]*\})? @\d+> \(size=(\d+),offset=\d+\): (.*)$")
_OFFSET = re.compile(r"offset=(\d+)")
_PEAK = re.compile(r"^\s*Live ranges at (\d+) \(peak\):\s*$")
_PEAK_VALUE = re.compile(r"^\s+([\w.\-]+?)(\{[\d,]*\}): (\d+) bytes")
_SEQUENCE = re.compile(r"^\s+(\d+):([\w.\-]+)\s*$")
_LAYOUT = re.compile(r"\{[\d,]*(?::[^}]*)?\}")
_OP_NAME = re.compile(r'op_name="((?:[^"\\]|\\.)*)"')
NO_LINE = "(no source line)"
TUPLE_TABLE = "(XLA's tables of tuple elements)"


@dataclass(frozen=True)
class LiveBuffer:
    """One buffer live at the peak: ``name`` (XLA's value, ``dot.3{}``), ``bytes``, ``shape``
    (``f32[128,256]``), ``kind`` (``argument``, ``output``, ``temporary`` or ``constant``),
    ``source`` (the user's ``SourceLine`` that made it, where known) and ``label`` (that line's
    label, ``argument x`` for an argument, ``(no source line)`` otherwise)."""

    name: str
    bytes: int
    shape: str
    kind: str
    source: SourceLine | None
    label: str

    @property
    def attributed(self) -> bool:
        return self.label not in (NO_LINE, TUPLE_TABLE)

    @property
    def is_tuple_table(self) -> bool:
        """A tuple's own buffer: XLA's table of pointers to its elements' buffers (a few bytes each)."""
        return self.shape.startswith("(")


@dataclass(frozen=True)
class LineShare:
    """The buffers one source line (or one argument) holds at the peak, with their total ``bytes``."""

    label: str
    source: SourceLine | None
    bytes: int
    buffers: tuple[LiveBuffer, ...]

    @property
    def kinds(self) -> list[str]:
        return sorted({b.kind for b in self.buffers})

    @property
    def shapes(self) -> list[str]:
        return [b.shape for b in self.buffers]


@dataclass
class PeakMemory:
    """The peak of one compiled program: ``peak_bytes`` (the bytes live at once at the peak, as
    XLA's live ranges count them), ``live_at_peak`` (each ``LiveBuffer``, largest first),
    ``by_line`` (a ``LineShare`` per source line or argument, largest first), ``at`` (the
    instruction scheduled at the peak), ``phase`` (``backward`` when it belongs to a gradient's
    backward pass, ``forward`` when the program has one and the peak comes before it, else empty),
    ``totals`` (XLA's ``memory_analysis`` sizes: ``arguments``, ``outputs``, ``temporaries``, ...),
    and ``available`` (False where XLA wrote no buffer assignment)."""

    peak_bytes: int = 0
    live_at_peak: list[LiveBuffer] = field(default_factory=list)
    by_line: list[LineShare] = field(default_factory=list)
    at: str = ""
    phase: str = ""
    totals: dict[str, int] = field(default_factory=dict)
    available: bool = True

    @property
    def reserved_bytes(self) -> int:
        """What XLA reserves for the call: arguments, outputs and temporaries, less what is aliased."""
        t = self.totals
        return t.get("arguments", 0) + t.get("outputs", 0) + t.get("temporaries", 0) - t.get("aliased", 0)

    @property
    def attributed_share(self) -> float:
        """The share of the peak's bytes held by buffers with a source line or argument name."""
        if not self.peak_bytes:
            return 1.0
        return sum(b.bytes for b in self.live_at_peak if b.attributed) / self.peak_bytes


def compile_with_buffers(lowered) -> tuple:
    """Compile ``lowered`` once, asking XLA to write out its buffer assignment; returns the
    ``Compiled`` and the text of the buffer-assignment and live-range files (``""`` where XLA
    wrote none, for instance when the program came from a compilation cache)."""
    folder = tempfile.mkdtemp(prefix=f"jaxmagic-buffers-{os.getpid()}-")
    _LEFT.add(folder)  # a Ctrl-C that stops the cleanup below: removed at exit
    try:
        compiled = lowered.compile(compiler_options={"xla_dump_to": folder, "xla_dump_hlo_as_text": True})
        paths = sorted(
            glob.glob(os.path.join(folder, "*after_optimizations-buffer-assignment.txt"))
            + glob.glob(os.path.join(folder, "*after_optimizations-live-range.txt"))
        )
        dumped = []
        for path in paths:
            with open(path, encoding="utf-8", errors="replace") as handle:
                dumped.append(handle.read())
    except BaseException:  # a Ctrl-C: XLA may go on writing a while
        remove_folder(folder, patience=INTERRUPTED_PATIENCE_S)
        raise
    finally:
        remove_folder(folder)
        if not os.path.exists(folder):
            _LEFT.discard(folder)
    return compiled, "\n".join(dumped)


_LEFT: set[str] = set()  # buffer folders not yet removed
INTERRUPTED_PATIENCE_S = 10.0  # the longest an interrupted compile's folder is waited for
QUIET_S = 0.5  # how long a removed folder must stay gone
atexit.register(lambda: [remove_folder(folder, patience=INTERRUPTED_PATIENCE_S) for folder in list(_LEFT)])


def remove_folder(folder: str, *, patience: float = 0.0) -> None:
    """Remove ``folder`` and what is in it, never raising. After a Ctrl-C, XLA may still be
    compiling in its own threads and writing into the folder (making it anew): with
    ``patience`` (seconds), wait until it has stayed gone for a moment.

    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> remove_folder(folder); os.path.exists(folder)
    False
    """
    deadline = time.monotonic() + patience
    gone_since = None
    while True:
        shutil.rmtree(folder, ignore_errors=True)
        now = time.monotonic()
        if os.path.exists(folder):
            gone_since = None
        elif gone_since is None:
            gone_since = now
        if now >= deadline or (gone_since is not None and (patience == 0 or now - gone_since > QUIET_S)):
            return
        time.sleep(0.02)


def peak_memory(
    hlo_text: str,
    dumped: str,
    totals: dict[str, int],
    cell_namer: CellNamer = no_cells,
    input_names: list[str] | None = None,
    jaxpr: Any = None,
) -> PeakMemory:
    """The peak and its live buffers by source line, from the optimized HLO and XLA's buffer
    assignment text (``compile_with_buffers``). An argument is named by ``input_names`` (one per
    input of the program, as the user writes it) where every input reached the compiled program,
    by the name JAX gave its parameter otherwise. ``jaxpr``, the traced program, keeps each
    buffer's line to a line of this call (``hlo_sources.parse``)."""
    lines = dumped.splitlines()
    peak_index, live = _peak(lines)
    if peak_index is None:
        return PeakMemory(totals=dict(totals), available=False)
    kinds, shapes, places = _allocations(lines)
    sequence = dict((int(m.group(1)), m.group(2)) for m in map(_SEQUENCE.match, lines) if m)
    instructions = parse(hlo_text, jaxpr)
    texts = _instruction_lines(hlo_text)
    parameters = _entry_parameters(hlo_text)
    live = _counted_once(live, parameters, places)
    named = input_names if input_names and len(input_names) == len(parameters) else None
    buffers = []
    for name, index, size in live:
        key = name + index
        origin = _origin(name, instructions, texts, parameters)
        kind, source, label = _labelled(
            kinds.get(key, "temporary"), origin, _source(instructions.get(origin), cell_namer),
            shapes.get(key, ""), parameters, named, texts,
        )  # fmt: skip
        buffers.append(LiveBuffer(key, size, shapes.get(key, ""), kind, source, label))
    # Largest first; equal sizes in the order of the user's lines, so the order is the same on every
    # JAX release (XLA's own order of equal buffers differs between them).
    buffers.sort(key=lambda b: (-b.bytes, b.source is None, b.source.line if b.source else 0, b.label, b.name))
    groups: dict[str, list[LiveBuffer]] = {}
    for buffer in buffers:
        groups.setdefault(buffer.label, []).append(buffer)
    by_line = sorted(
        (
            LineShare(label, group[0].source, sum(b.bytes for b in group), tuple(group))
            for label, group in groups.items()
        ),
        key=lambda share: (-share.bytes, share.label),
    )
    at = sequence.get(peak_index, "")
    return PeakMemory(
        peak_bytes=sum(b.bytes for b in buffers),
        live_at_peak=buffers,
        by_line=by_line,
        at=at,
        phase=_phase(texts, at),
        totals=dict(totals),
    )


def _labelled(
    kind: str, origin: str, source: SourceLine | None, shape: str, parameters: dict, named, texts: dict
) -> tuple[str, SourceLine | None, str]:
    """A live buffer's kind, source line and label: an argument by the user's name for it, a
    value by the line that made it (a value written into a donated argument's buffer too)."""
    if kind == "argument" and origin not in parameters and source is not None:
        kind = "output"  # a value written into a donated argument's buffer: the line that made it
    if kind == "argument" or origin in parameters:  # an argument, or XLA's copy of one
        number = parameters.get(origin)
        written = named[number] if named and number is not None else _op_name(texts.get(origin, "")) or origin
        return kind, None, f"argument {written}"
    if source is None and shape.startswith("("):
        return kind, None, TUPLE_TABLE
    return kind, source, source.label if source is not None else NO_LINE


def _counted_once(live: list[tuple[str, str, int]], parameters: dict, places: dict) -> list[tuple[str, str, int]]:
    """The buffers live at the peak, each place in memory once: XLA lists a value written in
    place into a donated argument's buffer beside the argument it replaces, at the instruction
    that writes it; the bytes are the argument's until then, so the argument is kept."""
    ordered = sorted(live, key=lambda item: item[0] not in parameters)
    seen, kept = set(), set()
    for name, index, _ in ordered:
        place = places.get(name + index, (name, index))
        if place not in seen:
            seen.add(place)
            kept.add(name + index)
    return [item for item in live if item[0] + item[1] in kept]


def _peak(lines: list[str]) -> tuple[int | None, list[tuple[str, str, int]]]:
    """XLA's peak: the schedule position, and ``(instruction, shape index, bytes)`` of each buffer live there."""
    for number, line in enumerate(lines):
        found = _PEAK.match(line)
        if not found:
            continue
        live = []
        for row in lines[number + 1 :]:
            value = _PEAK_VALUE.match(row)
            if not value:
                break
            live.append((value.group(1), value.group(2), int(value.group(3))))
        return int(found.group(1)), live
    return None, []


def _allocations(lines: list[str]) -> tuple[dict[str, str], dict[str, str], dict[str, tuple[str, str]]]:
    """Each buffer's kind (from its allocation), shape (layout left out) and place: its allocation
    and offset, which an update in place (into a donated argument) shares with what it replaces."""
    kinds, shapes, places, kind, number = {}, {}, {}, "temporary", ""
    for line in lines:
        allocation = _ALLOCATION.match(line)
        if allocation:
            number, what = allocation.group(1), allocation.group(3)
            kind = (
                "argument"
                if "parameter" in what
                else "output"
                if "maybe-live-out" in what or "output shape" in what
                else "constant"
                if "constant" in what
                else "temporary"
            )
            continue
        value = _VALUE.match(line)
        if value:
            key = value.group(1) + (value.group(2) or "{}")
            kinds.setdefault(key, kind)
            shapes.setdefault(key, _LAYOUT.sub("", value.group(4)).strip())
            offset = _OFFSET.search(line)
            places.setdefault(key, (number, offset.group(1) if offset else key))
    return kinds, shapes, places


def _instruction_lines(hlo_text: str) -> dict[str, str]:
    found = {}
    for line in hlo_text.splitlines():
        head = re.match(r"^\s*(?:ROOT )?%?([\w.\-]+) = ", line)
        if head:
            found.setdefault(head.group(1), line)
    return found


def _origin(name: str, instructions: dict, texts: dict[str, str], parameters: dict[str, int]) -> str:
    """The instruction whose source line a buffer belongs to: its own where it has one; for a copy
    XLA made without a source (a layout change of a value or of an argument), what it copies."""
    seen = set()
    while name not in seen:
        seen.add(name)
        instruction = instructions.get(name)
        if name in parameters or (instruction is not None and pick_user_frame(instruction.frames)):
            return name
        operands = _operands(texts.get(name, ""))
        if len(operands) != 1:
            return name
        name = operands[0]
    return name


def _operands(line: str) -> list[str]:
    """The instructions an HLO instruction reads (not the computations it calls)."""
    body = line.split(" = ", 1)[-1]
    start = body.find("(", body.find(" ") + 1) if body.startswith("(") else body.find("(")
    end = body.find(")", start)
    return re.findall(r"%([\w.\-]+)", body[start:end]) if start >= 0 and end > start else []


def _entry_parameters(hlo_text: str) -> dict[str, int]:
    """The entry computation's parameters: instruction name -> parameter number."""
    found, inside = {}, False
    for line in hlo_text.splitlines():
        if line.startswith("ENTRY "):
            inside = True
            continue
        if inside and line.startswith("}"):
            break
        parameter = re.match(r"^\s*%?([\w.\-]+) = .*? parameter\((\d+)\)", line) if inside else None
        if parameter:
            found[parameter.group(1)] = int(parameter.group(2))
    return found


def _opcode(line: str) -> str:
    found = re.search(r"= \S+ ([\w\-]+)\(", line) or re.search(r"= \([^)]*\) ([\w\-]+)\(", line)
    return found.group(1) if found else ""


def _op_name(line: str) -> str:
    found = _OP_NAME.search(line)
    return found.group(1).replace("\\'", "'").replace('\\"', '"') if found else ""


def _source(instruction, cell_namer: CellNamer) -> SourceLine | None:
    if instruction is None:
        return None
    frame = pick_user_frame(instruction.frames)
    return source_line(frame[0], frame[1], frame[2], cell_namer=cell_namer) if frame else None


def _phase(texts: dict[str, str], at: str) -> str:
    """``backward`` when the instruction at the peak was made by a gradient's backward pass,
    ``forward`` by its forward pass; ``""`` in a program without a gradient, and for work outside
    both (the update a training step makes with the gradient)."""
    backward = any("transpose(" in _op_name(line) for line in texts.values())
    if not backward:
        return ""
    name = _op_name(texts.get(at, ""))
    return "backward" if "transpose(" in name else "forward" if "jvp(" in name else ""
