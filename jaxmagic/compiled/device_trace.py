"""The kernels a profiler trace saw, each tied to its HLO instruction and program, whichever
device ran them: one reader of the trace's schema for TPUs, GPUs and the CPU.

Where a device keeps its kernels, by the names XLA's profilers give planes and lines:

- **TPU**: plane ``/device:TPU:N``, line ``XLA Ops``; an event is named by its instruction's text
  (``%fusion.13 = bf16[…] fusion(…)``) and its metadata carries ``program_id``, ``flops``,
  ``bytes_accessed``, ``source``; ``XLA Modules`` holds the programs' runs (``jit_mlp(<id>)``),
  ``Async XLA Ops`` repeats the asynchronous copies (not read: they overlap the kernels). A
  ``while`` event contains its body's kernels.
- **GPU**: plane ``/device:GPU:N``, lines ``Stream #N(...)``; an event is a CUDA kernel (named as
  the compiler named it) whose stats carry ``hlo_op``, ``hlo_module`` and ``program_id`` from XLA's
  annotations; one instruction may launch several kernels. A trace XProf has processed may add an
  ``XLA Ops`` line, read as on a TPU.
- **CPU**: plane ``/host:CPU``, a line per thread; XLA's events carry ``hlo_op``, ``hlo_module``,
  ``program_id`` and ``run_id`` (which call of the program ran them). A kernel's time there is its
  thread's wall time, so one call the machine paused would count for several: where a kernel ran
  in at least ``ROBUST_RUNS`` calls, its time is the median of its calls' times, once per call.

A line whose events nest (a loop and its body) counts each event's own time only, so nothing is
counted twice. The programs' HLO is on ``/host:metadata``: one ``Hlo Proto`` per program run,
named ``jit_f(<id>)``.

>>> import os
>>> found = read_kernels(xspace.read(os.path.join("tests", "fixtures", "tpu", "mlp.xplane.pb")))
>>> found.devices, sorted(found.modules.values())
(['/device:TPU:0'], ['jit_mlp'])
>>> hottest = max(found.kernels, key=lambda k: k.seconds)
>>> hottest.instruction, hottest.runs, hottest.flops > 1e9
('fusion.2', 3, True)
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from jaxmagic.compiled import protowire, xspace

XLA_OPS, XLA_MODULES = "XLA Ops", "XLA Modules"
_INSTRUCTION_NAME = re.compile(r"^%?([\w.\-]+)(?: = |$)")
_PROGRAM = re.compile(r"^(.*)\((\d+)\)$")
ROBUST_RUNS = 3  # calls of a program, each timed apart, from which a kernel's time is their median


@dataclass
class KernelTime:
    """One HLO instruction's kernels as the trace saw them: its program, its device time (summed
    over every run, each event's own time only; see ``ROBUST_RUNS`` for the CPU's), how many
    times it ran, and XLA's count of its
    floating-point operations and bytes of main memory (HBM) moved per run where the trace
    records them (a TPU's)."""

    device: str
    program_id: int | None
    module: str
    instruction: str
    seconds: float = 0.0
    runs: int = 0
    flops: float | None = None
    bytes_accessed: float | None = None


@dataclass
class DeviceKernels:
    """What a trace says about the compiled programs it ran: their kernels, each program's module
    name, runs and time on the device (where the trace lists the runs: ``XLA Modules``), the HLO of each (``Hlo Proto``, by program id), the devices, and the device
    plane's own stats (its kind, its peaks)."""

    kernels: list[KernelTime] = field(default_factory=list)
    modules: dict[int, str] = field(default_factory=dict)
    runs: dict[int, int] = field(default_factory=dict)
    program_seconds: dict[int, float] = field(default_factory=dict)  # each program's runs on the device, summed
    hlo_protos: dict[int, bytes] = field(default_factory=dict)
    devices: list[str] = field(default_factory=list)
    device_stats: dict[str, Any] = field(default_factory=dict)

    @property
    def total_seconds(self) -> float:
        return sum(k.seconds for k in self.kernels)


def program_name(event_name: str) -> tuple[str, int | None]:
    """``jit_mlp(1715)`` -> ``("jit_mlp", 1715)``; a name without an id stays whole."""
    found = _PROGRAM.match(event_name)
    return (found.group(1), int(found.group(2))) if found else (event_name, None)


def instruction_name(event: xspace.Event) -> str:
    """The HLO instruction an event ran: its ``hlo_op`` stat, else its name's ``%name = …``."""
    stated = event.stats.get("hlo_op")
    if isinstance(stated, str) and stated:
        return stated
    found = _INSTRUCTION_NAME.match(event.name)
    return found.group(1) if found else event.display_name or event.name


def own_times(events: list[xspace.Event]) -> list[tuple[xspace.Event, int]]:
    """Each event with its own time: its duration less that of the events nested in it (a loop's
    body in the loop), in picoseconds."""
    ordered = sorted(events, key=lambda e: (e.start_ps, -e.duration_ps))
    own = [e.duration_ps for e in ordered]
    open_: list[int] = []
    for index, event in enumerate(ordered):
        while open_ and ordered[open_[-1]].end_ps <= event.start_ps:
            open_.pop()
        if open_:
            own[open_[-1]] -= event.duration_ps
        open_.append(index)
    return [(event, max(seconds, 0)) for event, seconds in zip(ordered, own, strict=True)]


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


HBM = 1  # MemoryAccessed.memory_space of the chip's main memory (xprof's op_metrics.proto)


def _memory_bytes(stats: dict[str, Any]) -> float | None:
    """The bytes a kernel moves to and from the chip's main memory (HBM) per run: from its
    ``memory_access_breakdown`` where the trace has one (a TPU's: on-chip memory excluded, as XProf's
    roofline does), else its ``bytes_accessed``."""
    breakdown = stats.get("memory_access_breakdown")
    if isinstance(breakdown, bytes) and breakdown:
        total = 0
        try:
            for number, access in protowire.fields(breakdown):
                if number == 1 and isinstance(access, bytes):
                    fields = dict(protowire.fields(access))
                    moved = fields.get(3)
                    if fields.get(2) == HBM and isinstance(moved, int):
                        total += moved
        except protowire.WireError:
            return _number(stats.get("bytes_accessed"))
        return float(total)
    return _number(stats.get("bytes_accessed"))


def _kernel_lines(plane: xspace.Plane) -> list[xspace.Line]:
    """The lines of a plane that hold XLA's kernels: ``XLA Ops`` where there is one, else every
    line (a GPU's streams, the host's threads), of which the events with an ``hlo_op`` are read."""
    ops = plane.line(XLA_OPS)
    return [ops] if ops is not None else list(plane.lines)


def _read_program_runs(modules: xspace.Line, found: DeviceKernels) -> None:
    """The programs' runs an ``XLA Modules`` line lists: each program's name, runs and time."""
    for event in modules.events:
        name, program = program_name(event.name)
        if program is not None:
            found.modules.setdefault(program, name)
            found.runs[program] = found.runs.get(program, 0) + 1
            found.program_seconds[program] = found.program_seconds.get(program, 0.0) + event.duration_ps * 1e-12


def _read_plane(plane: xspace.Plane, found: DeviceKernels) -> None:
    modules = plane.line(XLA_MODULES)
    if modules is not None:
        _read_program_runs(modules, found)
    times: dict[tuple, KernelTime] = {}
    run_ids: dict[int, set] = defaultdict(set)  # where no line lists the programs' runs (the CPU)
    by_run: dict[tuple, dict] = defaultdict(lambda: defaultdict(int))  # a kernel's own time in each call
    for line in _kernel_lines(plane):
        events = line.events if line.name == XLA_OPS else line.events_with("hlo_op")
        for event, own in own_times(events):
            program = event.stats.get("program_id")
            program = int(program) if isinstance(program, (int, float)) else None
            module = str(
                event.stats.get("hlo_module") or (found.modules.get(program, "") if program is not None else "")
            )
            run = event.stats.get("run_id")
            if program is not None and modules is None and run is not None:
                run_ids[program].add(run)
            instruction = instruction_name(event)
            key = (program, module, instruction)
            kernel = times.get(key)
            if kernel is None:
                kernel = times[key] = KernelTime(plane.name, program, module, instruction)
                kernel.flops = _number(event.stats.get("flops"))
                kernel.bytes_accessed = _memory_bytes(event.stats)
            kernel.seconds += own * 1e-12
            kernel.runs += 1
            if run is not None:
                by_run[key][run] += own
    for program, ids in run_ids.items():
        found.runs[program] = found.runs.get(program, 0) + len(ids)
    for key, calls in by_run.items():
        if len(calls) >= ROBUST_RUNS:
            times[key].seconds = statistics.median(calls.values()) * 1e-12 * len(calls)
    if times:
        found.kernels += times.values()
        found.devices.append(plane.name)
        if not found.device_stats:
            found.device_stats = dict(plane.stats)


def read_kernels(space: xspace.Space) -> DeviceKernels:
    """Every kernel of a trace, by device, program and instruction; the programs' names, runs and
    HLO. The devices' planes first; the host's threads where no device ran a kernel (the CPU)."""
    found = DeviceKernels()
    metadata = space.plane("/host:metadata")
    for name, stats in metadata.metadata() if metadata is not None else ():
        module, program = program_name(name)
        program = stats.get("program_id", program)
        if isinstance(program, int):
            found.modules.setdefault(program, module)
            if isinstance(stats.get("Hlo Proto"), bytes):
                found.hlo_protos[program] = stats["Hlo Proto"]
    for plane in space.planes_named("/device:"):
        if not plane.name.startswith("/device:CUSTOM"):
            _read_plane(plane, found)
    if not found.kernels:
        for plane in space.planes_named("/host:CPU"):
            _read_plane(plane, found)
    for kernel in found.kernels:  # a module named on its events only (the CPU's, a GPU's)
        if kernel.program_id is not None and kernel.module:
            found.modules.setdefault(kernel.program_id, kernel.module)
    for kernel in found.kernels:
        if not kernel.module and kernel.program_id is not None:
            kernel.module = found.modules.get(kernel.program_id, "")
    return found
