"""Where a jitted call spends its device time, by the user's source line: line_profiler for jitted code.

The compiled call runs a few times under ``jax.profiler.trace`` (its files in a temporary folder,
removed afterwards); the trace is read by its schema (``xspace``, ``device_trace``: a TPU's ``XLA
Ops``, a GPU's streams, the CPU's threads), each kernel tied to its instruction of the optimized
HLO, whose stack frames say which source lines it holds (``hlo_sources``). A kernel of one line
gives that line its measured time; a kernel that fused several lines shares its time among them
by XLA's cost of each line's instructions (``kernel_shares``), an estimate the view names. Each
line's FLOPs and bytes, over its time, say how well it uses the chip (``roofline``).

>>> import jax, jax.numpy as jnp
>>> def f(x):
...     y = jnp.sin(x) @ x.T
...     return jnp.tanh(y).sum()
>>> result = profile(jax.jit(f), (jnp.ones((64, 64)),), {}, calls=2)
>>> result.calls, result.device_seconds > 0, sorted(result.line_times)[0].endswith(":2")
(2, True, True)
"""

from __future__ import annotations

import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable

from jaxmagic import _jax_private
from jaxmagic.compiled import device_trace, hlo_cost, hlo_sources, kernel_shares, roofline, xspace
from jaxmagic.compiled.hlo_sources import FramePicker
from jaxmagic.errors import UsageProblem, UserCodeError
from jaxmagic.tracing.jitting import own_work
from jaxmagic.tracing.sources import CellNamer, no_cells, traced_user_frame

UNATTRIBUTED = "(no source line)"
DISABLED_JIT = (
    "jit is disabled (jax.disable_jit() or JAX_DISABLE_JIT), so the call runs op by op and no compiled "
    "program of it runs; profile it outside jax.disable_jit()"
)
NO_KERNEL = (
    "the profiler saw no kernel of the compiled call: the call runs a program of its own "
    "(jax.pmap, or a function that dispatches its own compiled code); profile the function it wraps"
)
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


@own_work()
def profile(
    jitted: Any,
    args: tuple,
    kwargs: dict,
    *,
    name: str = "the call",
    calls: int = 5,
    cell_namer: CellNamer = no_cells,
    copy_arguments: bool = False,
    jaxpr: Any = None,
) -> Profile:
    """Compile ``jitted`` for ``args``/``kwargs``, run it once to warm up, then ``calls`` times under
    the profiler. ``copy_arguments``: pass copies of the arrays each time (the callee donates them).
    ``jaxpr``, the program traced, keeps the kernels' lines to lines of this call (``hlo_sources.parse``)."""
    import jax

    if calls < 1:
        raise UsageProblem("--profile needs at least one call to measure.", example="%jaxpr --profile 5 f(x)")
    if _jax_private.jit_disabled():
        return Profile({}, (), calls, 0.0, 0.0, nothing_compiled=DISABLED_JIT)
    fresh = _fresh_arguments(args, kwargs, copy_arguments)

    def run_once():
        call_args, call_kwargs = fresh()
        jax.block_until_ready(jitted(*call_args, **call_kwargs))

    try:
        hlo = jitted.lower(*args, **kwargs).compile().as_text()
        run_once()
    except Exception as exc:
        raise UserCodeError(exc, during=f"compiling and running {name} to profile it") from None
    found, wall = _measure(run_once, calls)
    module = hlo_sources.module_name(hlo)
    mine = [k for k in found.kernels if k.module == module]
    if not mine:
        return Profile({}, (), calls, 0.0, wall / calls, nothing_compiled=NO_KERNEL)
    kind = jax.devices()[0].device_kind
    peaks = roofline.peaks_for(kind, found.device_stats)
    attribution = Attribution(peaks=peaks, cell_namer=cell_namer)
    attribution.add(hlo, mine, jaxpr=jaxpr, per=calls)
    return attribution.profile(calls=calls, wall_seconds=wall, device=kind)


def summarise(
    durations: dict[str, float],
    hlo: str,
    *,
    calls: int,
    wall_seconds: float = 0.0,
    cell_namer: CellNamer = no_cells,
    jaxpr: Any = None,
) -> Profile:
    """A ``Profile`` from the total seconds each HLO instruction ran (over ``calls`` calls); lines
    of this call where ``jaxpr``, the program traced, is given (``hlo_sources.parse``)."""
    attribution = Attribution(cell_namer=cell_namer)
    measured = [device_trace.KernelTime("", None, "", name, seconds, calls) for name, seconds in durations.items()]
    attribution.add(hlo, measured, jaxpr=jaxpr, per=calls)
    return attribution.profile(calls=calls, wall_seconds=wall_seconds)


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
            self._add_kernel(kernel, shares, per)

    def _add_kernel(self, kernel: device_trace.KernelTime, shares: kernel_shares.LineShares, per: int) -> None:
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
        if not ordered:
            self.line_times[UNATTRIBUTED] += seconds
        for label, fraction in ordered:
            self.line_times[label] += seconds * fraction
            cost = shares.costs[label]
            work = self.line_work[label]
            work[0] += flops * _part(cost.flops, estimated.flops, fraction)
            work[1] += moved * _part(cost.bytes, estimated.bytes, fraction)

    def profile(self, *, calls: int, wall_seconds: float = 0.0, device: str = "", scope: str = "call") -> Profile:
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
        )


def _part(line: float, whole: float, fraction: float) -> float:
    """A line's part of a kernel's work: its share of the estimated work, else of the time."""
    return line / whole if whole > 0 else fraction


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


def _measure(run: Callable[[], Any], calls: int) -> tuple[device_trace.DeviceKernels, float]:
    """The kernels the profiler saw over ``calls`` runs, and the wall time they took."""
    import jax

    with tempfile.TemporaryDirectory(prefix="jaxmagic-profile-") as folder:
        try:
            with jax.profiler.trace(folder):
                start = time.perf_counter()
                for _ in range(calls):
                    run()
                wall = time.perf_counter() - start
        except RuntimeError as exc:
            if "already" in str(exc).lower():
                raise UsageProblem(
                    "--profile cannot start: another jax.profiler trace is running. "
                    "Stop it (jax.profiler.stop_trace()) first."
                ) from None
            raise
        found = device_trace.DeviceKernels()
        for path in xspace.trace_files(folder):
            space = device_trace.read_kernels(xspace.read(path))
            found.kernels += space.kernels
            found.device_stats = found.device_stats or space.device_stats
    return found, wall


def _fresh_arguments(args: tuple, kwargs: dict, copy: bool) -> Callable[[], tuple[tuple, dict]]:
    """The arguments for one more call; copies of the arrays when the callee donates them, so
    that profiling never deletes the user's arrays."""
    import jax
    import jax.numpy as jnp

    if not copy:
        return lambda: (args, kwargs)
    return lambda: jax.tree_util.tree_map(
        lambda v: jnp.array(v, copy=True) if isinstance(v, jax.Array) else v, (args, kwargs)
    )
