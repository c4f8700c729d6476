"""Where a jitted call spends its device time, by the user's source line: line_profiler for jitted code.

The compiled call runs a few times under ``jax.profiler.trace`` (its files in a temporary folder,
removed afterwards); ``jax.profiler.ProfileData`` reads back every XLA kernel it ran (``hlo_op``,
``hlo_module``), and the optimized HLO's stack frames say which source lines each kernel holds
(``hlo_sources``). A kernel that fused several lines shares its time among them in proportion
to the instructions each line contributed.

>>> import jax, jax.numpy as jnp
>>> def f(x):
...     y = jnp.sin(x) @ x.T
...     return jnp.tanh(y).sum()
>>> result = profile(jax.jit(f), (jnp.ones((64, 64)),), {}, calls=2)
>>> result.calls, result.device_seconds > 0, sorted(result.line_times)[0].endswith(":2")
(2, True, True)
"""

from __future__ import annotations

import glob
import os
import re
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable

from jaxmagic import _jax_private
from jaxmagic.compiled import hlo_sources
from jaxmagic.errors import UsageProblem, UserCodeError
from jaxmagic.tracing.jitting import own_work
from jaxmagic.tracing.sources import CellNamer, no_cells

UNATTRIBUTED = "(no source line)"
DISABLED_JIT = (
    "jit is disabled (jax.disable_jit() or JAX_DISABLE_JIT), so the call runs op by op and no compiled "
    "program of it runs; profile it outside jax.disable_jit()"
)
NO_KERNEL = (
    "the profiler saw no kernel of the compiled call: the call runs a program of its own "
    "(jax.pmap, or a function that dispatches its own compiled code); profile the function it wraps"
)
_CONTAINERS = ("while", "conditional", "call")  # their bodies' kernels are reported on their own
_MODULE_NAME = re.compile(r"^HloModule ([\w.\-]+)")


@dataclass(frozen=True)
class Kernel:
    """One kernel XLA ran for the call: a fusion or a single instruction of the optimized HLO.

    ``seconds`` is its device time per call; ``lines`` the labels of the source lines fused into
    it, the line with the most instructions first.
    """

    name: str
    seconds: float
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Profile:
    """The device time of one jitted call, per source line and per kernel, hottest first.

    ``line_times`` maps a source line's label (``In [3] line 2``, ``model.py:12``) to seconds per
    call; time in kernels with no known line is under ``(no source line)``. ``texts`` holds each
    line's source text; ``wall_seconds`` the time per call measured around the calls.
    """

    line_times: dict[str, float]
    kernels: tuple[Kernel, ...]
    calls: int
    device_seconds: float
    wall_seconds: float
    texts: dict[str, str] = field(default_factory=dict)
    nothing_compiled: str = ""  # why no compiled kernel of the call could be measured ("" when some were)

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
    durations, wall = _measure(run_once, calls, _module_name(hlo))
    if not durations:
        return Profile({}, (), calls, 0.0, wall / calls, nothing_compiled=NO_KERNEL)
    return summarise(durations, hlo, calls=calls, wall_seconds=wall, cell_namer=cell_namer, jaxpr=jaxpr)


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
    sites = hlo_sources.CallSites(jaxpr) if jaxpr is not None else None
    instructions = hlo_sources.parse(hlo, sites)
    lines_of = hlo_sources.kernel_lines(hlo, cell_namer, sites)
    durations = _without_containers(durations, instructions)
    kernels, line_times, texts = [], defaultdict(float), {}
    for name, total in durations.items():
        seconds = total / calls
        lines = lines_of.get(name, [])
        kernels.append(Kernel(name, seconds, tuple(line.label for line in lines)))
        texts.update((line.label, line.text) for line in lines)
        weights = hlo_sources.line_weights(hlo, name, cell_namer, sites) if name in instructions else {}
        if not weights:
            line_times[UNATTRIBUTED] += seconds
        for label, weight in weights.items():
            line_times[label] += seconds * weight
    kernels.sort(key=lambda k: -k.seconds)
    ordered = dict(sorted(line_times.items(), key=lambda item: -item[1]))
    return Profile(ordered, tuple(kernels), calls, sum(k.seconds for k in kernels), wall_seconds / calls, texts)


def _measure(run: Callable[[], Any], calls: int, module: str) -> tuple[dict[str, float], float]:
    """Seconds per HLO instruction of ``module`` over ``calls`` runs, and the wall time they took."""
    import jax
    from jax.profiler import ProfileData

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
        files = glob.glob(os.path.join(folder, "**", "*.xplane.pb"), recursive=True)
        if not files:
            return {}, wall
        data = ProfileData.from_file(files[0])
        durations: dict[str, float] = defaultdict(float)
        for plane in data.planes:
            for line in plane.lines:
                for event in line.events:
                    stats = dict(event.stats)
                    if stats.get("hlo_module") == module and "hlo_op" in stats:
                        durations[str(stats["hlo_op"])] += event.duration_ns * 1e-9
    return dict(durations), wall


def _without_containers(durations: dict[str, float], instructions: dict) -> dict[str, float]:
    """A loop or branch is timed through the kernels of its body: leave out its own event when
    those kernels were seen, so that no time counts twice."""
    kept = {}
    for name, seconds in durations.items():
        instruction = instructions.get(name)
        inner = (
            instruction is not None
            and instruction.opcode in _CONTAINERS
            and any(
                other.computation in instruction.calls for other in (instructions.get(n) for n in durations) if other
            )
        )
        if not inner:
            kept[name] = seconds
    return kept


def _module_name(hlo: str) -> str:
    found = _MODULE_NAME.match(hlo)
    return found.group(1) if found else ""


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
