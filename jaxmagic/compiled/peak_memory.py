"""Which of the user's source lines hold a compiled program's memory at its peak.

The peak is XLA's own (``memory_analysis().peak_memory_in_bytes``) on the backends that report one
counting the temporaries (TPU, GPU). What is live at it is counted as XLA counts it
(``peak_step``): what is held for the whole call (the arguments, the outputs and the constants,
each allocation in full) plus, at the step of the schedule where it is largest, the temporary
values XLA's peak counts on the platform, each block of bytes once (``buffer_dump``: two values at
the same bytes while both live are one buffer, a value updated in place, a loop's carried value).
On a TPU that is the temporaries of one memory space, the one whose own peak is the largest, with
a loop body's write over the loop's carried value, and a kernel's write over an argument's copy
prefetched into ``S(1)``, counted beside what they replace. On the CPU, whose own peak
leaves the temporaries out, that sum is the peak. Each buffer's instruction in the optimized HLO
carries the source line that made it (``hlo_sources``).
``compile_with_buffers`` compiles once with XLA's buffer assignment written out; ``peak_memory``
reads the result.

>>> import jax, jax.numpy as jnp
>>> def f(x):
...     y = jnp.sin(x) @ x
...     return jnp.tanh(y).sum()
>>> compiled, dumped = compile_with_buffers(jax.jit(f).trace(jnp.ones((64, 64))).lower())
>>> peak = peak_memory(compiled.as_text(), dumped, compiled_memory(compiled))
>>> peak.peak_bytes == peak.live_bytes == sum(b.bytes for b in peak.live_at_peak) <= peak.reserved_bytes
True
>>> {b.kind for b in peak.live_at_peak} <= {"argument", "constant", "output", "temporary"}
True
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from jaxmagic.compiled.buffer_dump import BufferDump, Value, dumped_text, read_dump
from jaxmagic.compiled.collectives import output_feeds
from jaxmagic.compiled.hlo_sources import computation_frames, parse, result_shape
from jaxmagic.compiled.memory import compiled_memory
from jaxmagic.compiled.peak_step import peak_step
from jaxmagic.tracing.sources import CellNamer, SourceLine, no_cells, source_line, traced_user_frame

__all__ = ["compile_with_buffers", "peak_memory", "compiled_memory", "PeakMemory", "LiveBuffer", "LineShare"]

_OP_NAME = re.compile(r'op_name="((?:[^"\\]|\\.)*)"')
_OWN_FRAMES = re.compile(r"\bstack_frame_id=\d+|\bsource_file=")
NO_LINE = "(no source line)"
TUPLE_TABLE = "(XLA's tables of tuple elements)"
CAPTURED = "captured constant"


@dataclass(frozen=True)
class LiveBuffer:
    """One buffer live at the peak: ``name`` (XLA's value, ``dot.3{}``), ``bytes``, ``shape``
    (``f32[128,256]``), ``kind`` (``argument``, ``output``, ``temporary`` or ``constant``),
    ``source`` (the user's ``SourceLine`` that made it, where known), ``label`` (that line's
    label, ``argument x`` for an argument, ``captured constant `w``` for an array the function
    read from outside, ``(no source line)`` otherwise) and ``space`` (its memory space: 0 for the
    device's main memory, 1 for a TPU's ``S(1)``)."""

    name: str
    bytes: int
    shape: str
    kind: str
    source: SourceLine | None
    label: str
    space: int = 0

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
    """The peak of one compiled program: ``peak_bytes`` (XLA's own peak where the backend gives one
    that counts the temporaries, else the bytes in use at once at the busiest step of XLA's
    schedule), ``live_bytes`` (those bytes in use at once, what ``live_at_peak`` adds up to),
    ``live_at_peak`` (each ``LiveBuffer``, largest first, each block of memory once), ``by_line`` (a ``LineShare`` per source line or argument, largest first), ``at`` (the
    instruction scheduled at the peak), ``phase`` (``backward`` when it belongs to a gradient's
    backward pass, ``forward`` when the program has one and the peak comes before it, else
    empty), ``totals`` (XLA's ``memory_analysis`` sizes: ``arguments``, ``outputs``,
    ``temporaries``, ...), ``xla_peak_bytes`` (XLA's own peak where the backend counts the
    program's temporaries in it, ``None`` elsewhere), ``constant_bytes`` (the program's constants,
    held for the whole call) and ``available`` (False where XLA wrote no buffer assignment)."""

    peak_bytes: int = 0
    live_bytes: int = 0
    live_at_peak: list[LiveBuffer] = field(default_factory=list)
    by_line: list[LineShare] = field(default_factory=list)
    at: str = ""
    phase: str = ""
    totals: dict[str, int] = field(default_factory=dict)
    available: bool = True
    xla_peak_bytes: int | None = None
    constant_bytes: int = 0  # the constants XLA's buffer assignment holds: memory_analysis has no size for them

    @property
    def reserved_bytes(self) -> int:
        """What XLA reserves for the call: arguments, outputs and temporaries, less what is aliased,
        and the constants it holds beside them (``memory_analysis`` counts those in no size of its
        own; its CPU peak counts them with the arguments and outputs)."""
        t = self.totals
        return (
            t.get("arguments", 0)
            + t.get("outputs", 0)
            + t.get("temporaries", 0)
            - t.get("aliased", 0)
            + (self.constant_bytes if t else 0)
        )

    @property
    def attributed_share(self) -> float:
        """The share of the peak's bytes held by buffers with a source line or argument name."""
        if not self.live_bytes:
            return 1.0
        return sum(b.bytes for b in self.live_at_peak if b.attributed) / self.live_bytes

    def bytes_of(self, *kinds: str) -> int:
        """The bytes at the peak held by buffers of these kinds (``argument``, ``output``, ...)."""
        return sum(b.bytes for b in self.live_at_peak if b.kind in kinds)

    @property
    def by_space(self) -> dict[int, int]:
        """The bytes at the peak in each memory space (0: the device's main memory)."""
        spaces: dict[int, int] = {}
        for buffer in self.live_at_peak:
            spaces[buffer.space] = spaces.get(buffer.space, 0) + buffer.bytes
        return dict(sorted(spaces.items()))


def compile_with_buffers(lowered) -> tuple:
    """Compile ``lowered`` once, asking XLA to write out its buffer assignment; returns the
    ``Compiled`` and the text of the buffer-assignment and live-range files (``""`` where XLA
    wrote none, for instance when the program came from a compilation cache)."""
    # Named and kept for removal at exit before it exists: a Ctrl-C between making it and keeping
    # it (tempfile.mkdtemp, then add) left an empty folder behind.
    folder = os.path.join(tempfile.gettempdir(), f"jaxmagic-buffers-{os.getpid()}-{uuid.uuid4().hex}")
    _LEFT.add(folder)
    try:
        os.mkdir(folder, 0o700)
        compiled = lowered.compile(compiler_options={"xla_dump_to": folder, "xla_dump_hlo_as_text": True})
        dumped = dumped_text(folder, _module_name(compiled.as_text()))
    except BaseException:  # a Ctrl-C: XLA may go on writing a while
        remove_folder(folder, patience=INTERRUPTED_PATIENCE_S)
        raise
    finally:
        remove_folder(folder)
        if not os.path.exists(folder):
            _LEFT.discard(folder)
    return compiled, dumped


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


def _module_name(hlo_text: str) -> str:
    found = re.match(r"HloModule ([\w.\-]+)", hlo_text)
    return found.group(1) if found else ""


@dataclass(frozen=True)
class Reading:
    """What a buffer is named against: the optimized module's instructions and lines, the entry
    parameters, the user's names for them and for captured constants, how cells are named."""

    instructions: dict
    texts: dict[str, str]
    parameters: dict[str, int]
    named: list[str] | None
    constants: dict[str, str]
    cell_namer: CellNamer
    inner_frames: dict[str, tuple]  # computation -> the frames of its last instruction that has some
    outputs: dict[str, str] = field(default_factory=dict)  # instruction -> the user's name of the output it is


def reading(
    hlo_text: str,
    cell_namer: CellNamer = no_cells,
    input_names: list[str] | None = None,
    jaxpr: Any = None,
    constants: dict[str, str] | None = None,
    output_names: list[str] | None = None,
    before: str = "",
) -> Reading:
    """The ``Reading`` of an optimized module (see ``peak_memory`` for the arguments)."""
    parameters = _entry_parameters(hlo_text)
    named = input_names if input_names and len(input_names) == len(parameters) else None
    instructions = parse(hlo_text, jaxpr, before)
    inner = computation_frames(instructions)
    texts = _instruction_lines(hlo_text)
    feeds = output_feeds(hlo_text)  # what becomes each output, back through copies
    outputs = {}
    if output_names and len(set(feeds.values())) == len(output_names):
        outputs = {name: output_names[index] for name, index in feeds.items()}
    return Reading(instructions, texts, parameters, named, dict(constants or {}), cell_namer, inner, outputs)


def peak_memory(
    hlo_text: str,
    dumped: str,
    totals: dict[str, int],
    cell_namer: CellNamer = no_cells,
    input_names: list[str] | None = None,
    jaxpr: Any = None,
    *,
    xla_peak: int | None = None,
    constants: dict[str, str] | None = None,
    platform: str = "",
    output_names: list[str] | None = None,
    before: str = "",
) -> PeakMemory:
    """The peak and its live buffers by source line, from the optimized HLO and XLA's buffer
    assignment text (``compile_with_buffers``). An argument is named by ``input_names`` (one per
    input of the program, as the user writes it) where every input reached the compiled program,
    by the name JAX gave its parameter otherwise; a constant XLA holds with no line of its own by
    ``constants`` (its shape, ``f32[4,4]``, to the name of the array the function read, where one
    array has that shape). ``jaxpr``, the traced program, keeps each buffer's line to a line of
    this call (``hlo_sources.parse``); ``xla_peak`` is XLA's own figure, the peak where given;
    ``platform`` (``tpu``, ...) says how XLA counts the temporaries in it (``peak_step``);
    ``before``, the module before XLA's optimizations, places what a lowering JAX caches made
    (``hlo_sources.lowering_frames``)."""
    dump = read_dump(dumped)
    if not dump.available:
        return PeakMemory(totals=dict(totals), available=False, xla_peak_bytes=xla_peak)
    step, live = peak_step(dump, platform)
    names = reading(hlo_text, cell_namer, input_names, jaxpr, constants, output_names, before)
    buffers = [named_buffer(value, size, dump, names) for value, size in live]
    # Largest first; equal sizes in the order of the user's lines, so the order is the same on every
    # JAX release (XLA's own order of equal buffers differs between them).
    buffers.sort(key=lambda b: (-b.bytes, b.source is None, b.source.line if b.source else 0, b.label, b.name))
    at = dump.sequence[step] if step is not None and 0 <= step < len(dump.sequence) else ""
    live_bytes = sum(b.bytes for b in buffers)
    return PeakMemory(
        peak_bytes=xla_peak or live_bytes,
        live_bytes=live_bytes,
        live_at_peak=buffers,
        by_line=by_line(buffers),
        at=at,
        phase=_phase(names.instructions, at),
        totals=dict(totals),
        xla_peak_bytes=xla_peak,
        constant_bytes=sum(a.size for a in dump.allocations.values() if a.kind == "constant"),
    )


def by_line(buffers: list[LiveBuffer]) -> list[LineShare]:
    """The buffers grouped by their label (a source line, an argument), largest group first."""
    groups: dict[str, list[LiveBuffer]] = {}
    for buffer in buffers:
        groups.setdefault(buffer.label, []).append(buffer)
    return sorted(
        (
            LineShare(label, group[0].source, sum(b.bytes for b in group), tuple(group))
            for label, group in groups.items()
        ),
        key=lambda share: (-share.bytes, share.label),
    )


# -- naming each buffer ------------------------------------------------------------------------
def named_buffer(value: Value, size: int, dump: BufferDump, reading: Reading) -> LiveBuffer:
    """A value (``size`` of its bytes) as a ``LiveBuffer``: its kind, line and label."""
    kind = dump.allocations[value.allocation].kind
    origin_name = origin(_async_owner(value.name, dump, reading), reading)
    source = _source(reading.instructions.get(origin_name), reading)
    kind, source, label = _labelled(kind, origin_name, source, value.shape, reading)
    return LiveBuffer(value.key, size, value.shape, kind, source, label, value.space)


def _async_owner(name: str, dump: BufferDump, reading: Reading) -> str:
    """For a value made inside the computation an asynchronous start wraps (``slice.1``, the
    slice a ``slice-start`` prefetches into another memory space), which the module's text does
    not print: that start, which XLA schedules right after it; ``name`` itself otherwise.

    >>> dump = BufferDump(sequence=["slice.1", "slice-start", "fusion"])
    >>> texts = {"slice-start": "%slice-start = (f32[8]) slice-start(%p.1), slice={[0:8]}"}
    >>> _async_owner("slice.1", dump, Reading({}, texts, {"p.1": 0}, None, {}, no_cells, {}))
    'slice-start'
    """
    if name in reading.texts or name not in dump.sequence:
        return name
    step = dump.sequence.index(name) + 1
    following = dump.sequence[step] if step < len(dump.sequence) else ""
    text = reading.texts.get(following, "")
    _, after = result_shape(text.split(" = ", 1)[-1]) if text else ("", "")
    return following if re.match(r"\s*[\w\-]+-start\(", after) else name


def _constant_name(shape: str, constants: dict[str, str]) -> str | None:
    """The user's array a constant of ``shape`` is: by its shape, else by its dimensions alone where
    one array has them (a TPU keeps an f32 array a matrix product reads as a bf16 constant).

    >>> _constant_name("bf16[4,4]", {"f32[4,4]": "w", "f32[8]": "b"}), _constant_name("f32[2]", {"f32[4,4]": "w"})
    ('w', None)
    """
    if shape in constants:
        return constants[shape]
    dims = shape[shape.find("[") :]
    named = {name for written, name in constants.items() if written[written.find("[") :] == dims}
    return named.pop() if len(named) == 1 else None


def _labelled(kind: str, origin: str, source: SourceLine | None, shape: str, reading: Reading):
    """A live buffer's kind, source line and label: an argument by the user's name for it, a
    value by the line that made it (a value written into a donated argument's buffer too), a
    constant with no line of its own by the array the function read."""
    parameters = reading.parameters
    if kind == "argument" and origin not in parameters and source is not None:
        kind = "output"  # a value written into a donated argument's buffer: the line that made it
    if kind == "argument" or origin in parameters:  # an argument, or XLA's copy of one
        number = parameters.get(origin)
        named = reading.named
        written = named[number] if named and number is not None else _op_name(reading.texts.get(origin, "")) or origin
        return kind, None, f"argument {written}"
    if _is_captured(origin, reading):
        name = _constant_name(shape, reading.constants)
        return kind, source, f"{CAPTURED} `{name}`" if name else CAPTURED
    if source is None and shape.startswith("("):
        return kind, None, TUPLE_TABLE
    if source is None and origin in reading.outputs:  # a literal returned (Equinox's marker): by its name
        return kind, None, f"output {reading.outputs[origin]}"
    return kind, source, source.label if source is not None else NO_LINE


def _is_captured(origin: str, reading: Reading) -> bool:
    """A constant XLA holds that no line of the traced function made: an array read from outside."""
    instruction = reading.instructions.get(origin)
    return (
        instruction is not None
        and instruction.opcode == "constant"
        and not instruction.op_name
        and "{...}" in reading.texts.get(origin, "")
    )


def _instruction_lines(hlo_text: str) -> dict[str, str]:
    found = {}
    for line in hlo_text.splitlines():
        head = re.match(r"^\s*(?:ROOT )?%?([\w.\-]+) = ", line)
        if head:
            found.setdefault(head.group(1), line)
    return found


def origin(name: str, reading: Reading) -> str:
    """The instruction whose source line a buffer belongs to: its own where it has one; for a copy
    XLA made without a source of its own (a layout change, a copy into another memory space, of a
    value or of an argument), what it copies."""
    seen = set()
    while name not in seen:
        seen.add(name)
        instruction = reading.instructions.get(name)
        if name in reading.parameters or (instruction is not None and _has_own_line(instruction, reading)):
            return name
        read = operands(reading.texts.get(name, ""))
        if len(read) != 1:
            return name
        name = read[0]
    return name


def operands(line: str) -> list[str]:
    """The instructions an HLO instruction reads (not the computations it calls).

    >>> operands("%c = (f32[8]{0:T(8)S(1)}, u32[]{:S(2)}) copy-start(%p.1), cross_program_prefetch_index=0")
    ['p.1']
    """
    _, after = result_shape(line.split(" = ", 1)[-1])
    start = after.find("(")
    end = after.find(")", start)
    return re.findall(r"%([\w.\-]+)", after[start:end]) if start >= 0 and end > start else []


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


def _op_name(line: str) -> str:
    found = _OP_NAME.search(line)
    return found.group(1).replace("\\'", "'").replace('\\"', '"') if found else ""


def _source(instruction, reading: Reading) -> SourceLine | None:
    if instruction is None:
        return None
    frame = traced_user_frame(_frames(instruction, reading))
    return source_line(frame[0], frame[1], frame[2], cell_namer=reading.cell_namer) if frame else None


def _has_own_line(instruction, reading: Reading) -> bool:
    """Whether a user's line made the instruction itself (its own metadata, or a fused kernel's
    inside), not only the instructions that read it."""
    own = _OWN_FRAMES.search(reading.texts.get(instruction.name, ""))
    inner = any(c in reading.inner_frames for c in instruction.calls)
    return bool((own or inner) and traced_user_frame(_frames(instruction, reading)))


def _frames(instruction, reading: Reading) -> tuple:
    """An instruction's frames; a fusion XLA left without its own, those of the last instruction
    inside it that has some (its result is that of the fused computation's root)."""
    if instruction.frames or not instruction.calls:
        return instruction.frames
    return next((reading.inner_frames[c] for c in instruction.calls if c in reading.inner_frames), ())


def in_pass(instructions: dict, name: str) -> str:
    """``backward`` for an instruction a gradient's backward pass made, ``forward`` for one its
    forward pass made, ``""`` otherwise (a program without a gradient, the update a training step
    makes with the gradient)."""
    instruction = instructions.get(name)
    op_name = instruction.op_name if instruction is not None else ""
    return "backward" if "transpose(" in op_name else "forward" if "jvp(" in op_name else ""


def _phase(instructions: dict, at: str) -> str:
    """The pass of the instruction at the peak, in a program with a backward pass; ``""`` otherwise."""
    if not any("transpose(" in i.op_name for i in instructions.values()):
        return ""
    return in_pass(instructions, at)
