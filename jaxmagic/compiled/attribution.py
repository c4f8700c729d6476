"""Device time given to the user's source lines: each kernel's measured time to the lines fused
into it (all of it to a kernel's one line; by estimated cost among several: ``kernel_shares``),
each line's FLOPs and bytes beside it (``roofline``), one program or several at a time. Shared by
``%jaxpr --profile`` (``profiling``) and ``python -m jaxmagic profile TRACE`` (``trace_profile``),
and free of JAX: a trace from another machine is read without it.

>>> from jaxmagic.compiled.device_trace import KernelTime
>>> hlo = "\\n".join([
...     "HloModule jit_f",
...     "ENTRY %main () -> () {",
...     '  %a = f32[8]{0} parameter(0), metadata={op_name="a"}',
...     '  ROOT %sine.1 = f32[8]{0} sine(%a), metadata={op_name="jit(f)/sin" source_file="/home/me/f.py" source_line=3}',
...     "}",
... ])
>>> attribution = Attribution()
>>> attribution.add(hlo, [KernelTime("/host:CPU", 1, "jit_f", "sine.1", seconds=2e-6, runs=2)], per=2)
>>> attribution.profile(calls=2).line_times
{'f.py:3': 1e-06}
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from jaxmagic.compiled import device_trace, hlo_cost, hlo_sources, kernel_shares, roofline
from jaxmagic.compiled.hlo_sources import FramePicker
from jaxmagic.tracing.sources import CellNamer, no_cells, traced_user_frame

UNATTRIBUTED = "(no source line)"
CONTAINERS = ("while", "conditional", "call")  # their bodies' kernels are timed on their own


@dataclass(frozen=True)
class Kernel:
    """One kernel XLA ran for the call: a fusion or a single instruction of the optimized HLO.

    ``seconds`` is its device time per call; ``lines`` the labels of the source lines fused into
    it, the one with the largest share first; ``shares`` each line's fraction of its time,
    ``estimated`` when several lines share it (by estimated cost: see ``kernel_shares``);
    ``flops`` and ``bytes`` its work per call (XLA's count where the trace has it, else
    ``hlo_cost``'s).
    """

    name: str
    seconds: float
    lines: tuple[str, ...]
    shares: tuple[tuple[str, float], ...] = ()
    estimated: bool = False
    flops: float = 0.0
    bytes: float = 0.0


PROFILER_INFLATES = 2.0  # a profiled call this many times slower than an unprofiled one is said


@dataclass(frozen=True)
class Profile:
    """The device time of one jitted call, per source line and per kernel, hottest first.

    ``line_times`` maps a source line's label (``In [3] line 2``, ``model.py:12``) to seconds per
    call; time in kernels with no known line is under ``(no source line)``. ``texts`` holds each
    line's source text; ``wall_seconds`` the time per call measured around the calls;
    ``line_work`` each line's FLOPs and bytes per call; ``peaks`` the chip's, where known;
    ``scope`` is ``"call"`` (figures per call) or ``"trace"`` (totals over a trace read from a file).
    """

    line_times: dict[str, float]
    kernels: tuple[Kernel, ...]
    calls: int
    device_seconds: float
    wall_seconds: float
    texts: dict[str, str] = field(default_factory=dict)
    nothing_compiled: str = ""  # why no compiled kernel of the call could be measured ("" when some were)
    line_work: dict[str, tuple[float, float]] = field(default_factory=dict)
    peaks: roofline.Peaks | None = None
    device: str = ""
    scope: str = "call"
    programs: tuple[str, ...] = ()
    places: dict[str, tuple[str, int]] = field(default_factory=dict)  # label -> (file, line)
    program_seconds: float | None = None  # the programs' own span on the device, where the trace lists it
    unprofiled_seconds: float | None = None  # one call's wall time with no profiler running (its median)

    @property
    def profiler_inflated(self) -> bool:
        """Whether the profiler's own cost made the calls it traced much slower than a call without
        it (more than ``PROFILER_INFLATES`` times): many small kernels, as a loop runs them, are each
        traced. The shares between lines stay what to read; the absolute times are not a call's.

        >>> Profile({}, (), 5, 3e-3, 4e-3, unprofiled_seconds=5e-4).profiler_inflated
        True
        """
        unprofiled = self.unprofiled_seconds
        return bool(unprofiled) and self.wall_seconds > PROFILER_INFLATES * unprofiled

    @property
    def attributed_share(self) -> float:
        """The share of device time that lies on known source lines (0 to 1)."""
        if not self.device_seconds:
            return 0.0
        return 1 - self.line_times.get(UNATTRIBUTED, 0.0) / self.device_seconds

    def kernel_groups(self) -> list[tuple[tuple[str, ...], tuple[Kernel, ...]]]:
        """The kernels grouped by the source lines fused into them, the group with the most device
        time first: a Python loop unrolled at trace time makes one group of many kernels.

        >>> ks = (Kernel("a", 3.0, ("l1",)), Kernel("b", 2.0, ("l2",)), Kernel("c", 2.0, ("l1",)))
        >>> [(lines, len(group)) for lines, group in Profile({}, ks, 1, 7.0, 7.0).kernel_groups()]
        [(('l1',), 2), (('l2',), 1)]
        """
        groups: dict[tuple[str, ...], list[Kernel]] = defaultdict(list)
        for kernel in self.kernels:
            groups[kernel.lines].append(kernel)
        ordered = sorted(groups.items(), key=lambda item: -sum(k.seconds for k in item[1]))
        return [(lines, tuple(kernels)) for lines, kernels in ordered]

    def usage(self, label: str) -> roofline.Usage:
        """What a line achieved: its FLOP/s and bytes/s, against the chip's peaks where known."""
        flops, moved = self.line_work.get(label, (0.0, 0.0))
        return roofline.usage(flops, moved, self.line_times.get(label, 0.0), self.peaks)

    def total_usage(self) -> roofline.Usage:
        """What the whole program achieved over its device time."""
        flops = sum(k.flops for k in self.kernels)
        moved = sum(k.bytes for k in self.kernels)
        return roofline.usage(flops, moved, self.device_seconds, self.peaks)

    def estimated_kernels(self) -> list[Kernel]:
        """The kernels whose time several lines share by estimated cost, hottest first."""
        return [k for k in self.kernels if k.estimated]


class Attribution:
    """Kernels of one or more programs, their time given to source lines as they are added."""

    def __init__(
        self,
        *,
        peaks: roofline.Peaks | None = None,
        cell_namer: CellNamer = no_cells,
        pick: FramePicker = traced_user_frame,
    ):
        self.peaks, self.cell_namer, self.pick = peaks, cell_namer, pick
        self.kernels: list[Kernel] = []
        self.line_times: dict[str, float] = defaultdict(float)
        self.line_work: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
        self.texts: dict[str, str] = {}
        self.places: dict[str, tuple[str, int]] = {}
        self.programs: list[str] = []

    def add(self, hlo: str, measured: list[device_trace.KernelTime], *, jaxpr: Any = None, per: int = 1) -> None:
        """The kernels ``measured`` of the program ``hlo``, their seconds and work divided by ``per``
        (the calls measured)."""
        instructions = hlo_sources.parse(hlo, jaxpr)
        grouped = hlo_sources.by_computation_of(instructions)
        timed = {k.instruction for k in measured}
        self.programs.append(hlo_sources.module_name(hlo))
        for kernel in measured:
            instruction = instructions.get(kernel.instruction)
            expand = instruction is not None and _body_unseen(instruction, grouped, timed)
            shares = _shares(instructions, grouped, kernel.instruction, expand, self)
            if instruction is not None and instruction.opcode in CONTAINERS and not expand:
                kernel = dataclasses.replace(kernel, flops=0.0, bytes_accessed=0.0)  # its body's, counted there
            self._add_kernel(kernel, shares, per)

    def _add_kernel(self, kernel: device_trace.KernelTime, shares: kernel_shares.LineShares, per: int) -> None:
        """A kernel's time, and its work (XLA's count in the trace, else ``hlo_cost``'s), to its
        lines by their shares: a line's FLOP/s is then that of the kernels it made."""
        seconds = kernel.seconds / per
        estimated = sum((c for c in shares.costs.values()), hlo_cost.Cost())
        runs = kernel.runs / per if kernel.runs else 1.0
        flops = kernel.flops * runs if kernel.flops is not None else estimated.flops
        moved = kernel.bytes_accessed * runs if kernel.bytes_accessed is not None else estimated.bytes
        ordered = sorted(shares.fractions.items(), key=lambda item: -item[1])
        self.kernels.append(
            Kernel(
                kernel.instruction,
                seconds,
                tuple(label for label, _ in ordered),
                tuple(ordered),
                shares.estimated,
                flops,
                moved,
            )
        )
        self.texts.update(shares.texts)
        self.places.update(shares.places)
        if not ordered:
            self.line_times[UNATTRIBUTED] += seconds
        for label, fraction in ordered:
            self.line_times[label] += seconds * fraction
            work = self.line_work[label]
            work[0] += flops * fraction
            work[1] += moved * fraction

    def profile(
        self,
        *,
        calls: int,
        wall_seconds: float = 0.0,
        device: str = "",
        scope: str = "call",
        program_seconds: float | None = None,
        unprofiled_seconds: float | None = None,
    ) -> Profile:
        kernels = tuple(sorted(self.kernels, key=lambda k: -k.seconds))
        ordered = dict(sorted(self.line_times.items(), key=lambda item: -item[1]))
        return Profile(
            ordered,
            kernels,
            calls,
            sum(k.seconds for k in kernels),
            wall_seconds / calls if scope == "call" else wall_seconds,
            dict(self.texts),
            line_work={label: (w[0], w[1]) for label, w in self.line_work.items()},
            peaks=self.peaks,
            device=device,
            scope=scope,
            programs=tuple(self.programs),
            places=dict(self.places),
            program_seconds=program_seconds,
            unprofiled_seconds=unprofiled_seconds,
        )


def _body_unseen(instruction: hlo_sources.HloInstruction, grouped: dict, timed: set[str]) -> bool:
    """A loop or branch none of whose body's kernels the trace timed: it stands for its body."""
    if instruction.opcode not in CONTAINERS:
        return False
    pending, seen = list(instruction.calls), set()
    while pending:
        computation = pending.pop()
        if computation in seen:
            continue
        seen.add(computation)
        for inner in grouped.get(computation, ()):
            if inner.name in timed:
                return False
            if inner.opcode in CONTAINERS:
                pending.extend(inner.calls)
    return True


def _shares(instructions, grouped, name: str, expand: bool, attribution: Attribution) -> kernel_shares.LineShares:
    return kernel_shares.line_shares(
        instructions,
        name,
        cell_namer=attribution.cell_namer,
        pick=attribution.pick,
        peaks=attribution.peaks,
        by_computation=grouped,
        expand=expand,
    )
