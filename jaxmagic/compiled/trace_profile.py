"""Device time per source line from a trace already on disk, whoever recorded it and wherever:
``python -m jaxmagic profile TRACE``. Nothing runs again and JAX is not imported.

``jax.profiler.trace(folder)`` writes, per host, the kernels each device ran and, on the
``/host:metadata`` plane, each program's optimized HLO with the stack frames JAX gave its
instructions. Kernels are read by the trace's schema (``device_trace``), tied to their
instruction in their program's HLO (``hlo_proto``), and their time given to the user's lines as
``%jaxpr --profile`` gives it (``attribution``). Figures are totals over the whole trace.

>>> import os
>>> found = read_trace(os.path.join("tests", "fixtures", "tpu", "rnn.xplane.pb"))
>>> found.profile.attributed_share > 0.95, found.programs_without_hlo, found.runs
(True, (), {'jit_rnn': 3})
>>> next(iter(found.profile.line_times))
'models.py:77'
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from typing import ClassVar

from jaxmagic.compiled import device_trace, hlo_proto, roofline, xspace
from jaxmagic.compiled.attribution import Attribution, Profile
from jaxmagic.report import Report
from jaxmagic.tracing.sources import recorded_user_frame


class NoTrace(ValueError):
    """No trace file where one was named."""


@dataclass(frozen=True)
class TraceProfile(Report):
    """A trace's device time by source line (``profile``, totals over the trace), the files read,
    the programs whose HLO the trace lacks (their kernels have no line), each program's runs
    where the trace counts them, and the devices that ran kernels. Shows itself as
    ``%jaxpr --profile`` does (``to_text()``, ``to_html()``, ``to_page()``)."""

    _renderer: ClassVar[str] = "jaxmagic.render.trace_profile"

    profile: Profile
    files: tuple[str, ...]
    programs_without_hlo: tuple[str, ...] = ()
    runs: dict[str, int] = field(default_factory=dict)
    devices: tuple[str, ...] = ()

    def to_page(self) -> str:
        """A standalone HTML page of the view."""
        return importlib.import_module(self._renderer).page(self)


def device_name(planes: list[str]) -> str:
    """The devices a trace's kernels ran on, named for a reader: ``CPU`` for the host's plane.

    >>> device_name(["/host:CPU"]), device_name(["/device:GPU:0", "/device:GPU:1"])
    ('CPU', 'GPU:0, GPU:1')
    """
    return ", ".join("CPU" if p == "/host:CPU" else p.removeprefix("/device:") for p in planes)


def read_trace(path: str, peaks: roofline.Peaks | None = None) -> TraceProfile:
    """The per-line profile of the trace at ``path`` (an ``.xplane.pb`` file, or a folder that
    ``jax.profiler.trace`` wrote: its latest run). ``peaks`` overrides the chip's. Raises
    ``NoTrace`` where there is no trace file, ``xspace.NotATrace`` for a file that is not one,
    ``OSError`` for one that cannot be read."""
    files = xspace.trace_files(path) if os.path.exists(path) else []
    if not files:
        raise NoTrace(path)
    found = _read_all(files)
    device = str(found.device_stats.get("device_type_string", "")) or device_name(found.devices)
    attribution = Attribution(peaks=peaks or roofline.peaks_for(device, found.device_stats), pick=recorded_user_frame)
    by_program: dict[int | None, list[device_trace.KernelTime]] = {}
    for kernel in found.kernels:
        by_program.setdefault(kernel.program_id, []).append(kernel)
    missing = []
    for program, kernels in by_program.items():
        proto = found.hlo_protos.get(program) if program is not None else None
        if not proto:
            missing.append(kernels[0].module or "a program")
        attribution.add(
            hlo_proto.hlo_text(proto) if proto else f"HloModule {kernels[0].module or 'unknown'}\n", kernels
        )
    runs = {found.modules.get(p, str(p)): n for p, n in found.runs.items() if p in by_program}
    spans = [found.program_seconds[p] for p in by_program if p in found.program_seconds]
    profile = attribution.profile(calls=1, device=device, scope="trace", program_seconds=sum(spans) if spans else None)
    return TraceProfile(profile, tuple(files), tuple(sorted(set(missing))), runs, tuple(found.devices))


def _read_all(files: list[str]) -> device_trace.DeviceKernels:
    """The kernels, programs and devices of every file (one per host), together."""
    found = device_trace.DeviceKernels()
    for file in files:
        read = device_trace.read_kernels(xspace.read(file))
        found.kernels += read.kernels
        found.devices += [d for d in read.devices if d not in found.devices]
        found.device_stats = found.device_stats or read.device_stats
        for program, name in read.modules.items():
            found.modules.setdefault(program, name)
        for program, count in read.runs.items():
            found.runs[program] = found.runs.get(program, 0) + count
        for program, seconds in read.program_seconds.items():
            found.program_seconds[program] = found.program_seconds.get(program, 0.0) + seconds
        found.hlo_protos.update(read.hlo_protos)
    return found
