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
from typing import Any, Callable

from jaxmagic import _jax_private
from jaxmagic.compiled import device_trace, hlo_sources, roofline, xspace
from jaxmagic.compiled.attribution import UNATTRIBUTED, Attribution, Kernel, Profile
from jaxmagic.errors import UsageProblem, UserCodeError
from jaxmagic.tracing.jitting import own_work
from jaxmagic.tracing.sources import CellNamer, no_cells

__all__ = ["UNATTRIBUTED", "Kernel", "Profile", "profile", "summarise"]

DISABLED_JIT = (
    "jit is disabled (jax.disable_jit() or JAX_DISABLE_JIT), so the call runs op by op and no compiled "
    "program of it runs; profile it outside jax.disable_jit()"
)
NO_KERNEL = (
    "the profiler saw no kernel of the compiled call: the call runs a program of its own "
    "(jax.pmap, or a function that dispatches its own compiled code); profile the function it wraps"
)


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
    unprofiled = _unprofiled_call(run_once, wall / calls)
    module = hlo_sources.module_name(hlo)
    mine = [k for k in found.kernels if k.module == module]
    if not mine:
        return Profile({}, (), calls, 0.0, wall / calls, nothing_compiled=NO_KERNEL)
    kind = jax.devices()[0].device_kind
    kind = "CPU" if kind == "cpu" else kind
    try:
        peaks = roofline.peaks_for(kind, found.device_stats)
    except ValueError as exc:
        raise UsageProblem(f"{roofline.ENVIRONMENT}: {exc}", example=f"{roofline.ENVIRONMENT}=197e12,819e9") from None
    attribution = Attribution(peaks=peaks, cell_namer=cell_namer)
    attribution.add(hlo, mine, jaxpr=jaxpr, per=calls)
    spans = [seconds for program, seconds in found.program_seconds.items() if found.modules.get(program) == module]
    return attribution.profile(
        calls=calls,
        wall_seconds=wall,
        device=kind,
        program_seconds=sum(spans) / calls if spans else None,
        unprofiled_seconds=unprofiled,
    )


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


UNPROFILED_S = 0.2  # at most this long of calls timed without the profiler, to see what it costs


def _unprofiled_call(run: Callable[[], Any], profiled_s: float) -> float | None:
    """The median wall time of a call with no profiler running, from up to 5 calls (fewer where the
    profiled ones say 5 would take longer than ``UNPROFILED_S``; none where one would)."""
    count = min(5, int(UNPROFILED_S / max(profiled_s, 1e-9)))
    if count < 1:
        return None
    times = []
    for _ in range(count):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


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
            found.modules.update(space.modules)
            found.program_seconds.update(space.program_seconds)
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
