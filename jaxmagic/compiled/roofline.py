"""How well work uses the chip: its achieved floating-point operations and bytes per second
against the chip's peaks, and which of the two bounds it (the roofline XProf draws per program).

A chip's peaks come, first, from what the user set (``JAXMAGIC_PEAKS="197e12,819e9"``: FLOP/s and
bytes/s); then from the trace (a TPU's device plane carries ``peak_teraflops_per_second`` and
``peak_hbm_bw_gigabytes_per_second``); then from ``KNOWN_CHIPS``, by the device's kind as JAX
names it (``jax.devices()[0].device_kind``), which a user may extend. A CPU has none: its peak
depends on cores, vector units and clock that neither JAX nor the trace records.

Work is bound by compute when its operations would take longer at the peak rate than its bytes at
the peak bandwidth (its arithmetic intensity, FLOPs per byte, is above the chip's ridge point),
else by memory.

>>> peaks = known_peaks("TPU v5 lite")
>>> peaks.flops_per_second, peaks.bytes_per_second
(197000000000000.0, 819000000000.0)
>>> usage(2e12, 1e9, 0.02, peaks).bound
'compute'
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping

ENVIRONMENT = "JAXMAGIC_PEAKS"
TRANSCENDENTAL_FLOPS = 8  # an exp or tanh counted as this many operations when time is estimated
NOMINAL_FLOPS_PER_BYTE = 8.0  # where no peak is known: a CPU core's usual ridge point, for estimates only

# device kind (as jax.devices()[0].device_kind writes it, lower case) -> (peak FLOP/s, peak bytes/s),
# dense bf16 (TPU, tensor cores) and HBM bandwidth, from the vendors' data sheets.
KNOWN_CHIPS: dict[str, tuple[float, float]] = {
    "tpu v2": (45e12, 700e9),
    "tpu v3": (123e12, 900e9),
    "tpu v4": (275e12, 1228e9),
    "tpu v5 lite": (197e12, 819e9),
    "tpu v5e": (197e12, 819e9),
    "tpu v5p": (459e12, 2765e9),
    "tpu v5": (459e12, 2765e9),
    "tpu v6 lite": (918e12, 1640e9),
    "tpu v6e": (918e12, 1640e9),
    "nvidia a100-sxm4-40gb": (312e12, 1555e9),
    "nvidia a100-sxm4-80gb": (312e12, 2039e9),
    "nvidia a100 80gb pcie": (312e12, 1935e9),
    "nvidia h100 80gb hbm3": (989e12, 3350e9),
    "nvidia h100 pcie": (756e12, 2000e9),
    "nvidia h200": (989e12, 4800e9),
    "nvidia l4": (121e12, 300e9),
    "nvidia a10g": (125e12, 600e9),
    "tesla v100-sxm2-16gb": (125e12, 900e9),
    "tesla t4": (65e12, 320e9),
}


@dataclass(frozen=True)
class Peaks:
    """A chip's peak FLOP/s and bytes/s, and where they came from (``"trace"``, ``"table"``,
    ``"JAXMAGIC_PEAKS"``)."""

    flops_per_second: float
    bytes_per_second: float
    source: str

    @property
    def ridge(self) -> float:
        """FLOPs per byte above which work is bound by compute."""
        return self.flops_per_second / self.bytes_per_second


@dataclass(frozen=True)
class Usage:
    """What some work achieved: FLOP/s and bytes/s, their fractions of the peaks (None where no
    peak is known) and what bounds it (``"compute"``, ``"memory"``, "" where unknown)."""

    flops_per_second: float
    bytes_per_second: float
    flops_fraction: float | None
    bytes_fraction: float | None
    bound: str


def parse_peaks(text: str) -> Peaks:
    """``"197e12,819e9"`` (FLOP/s, bytes/s) as peaks; ``ValueError`` for anything else.

    >>> parse_peaks("1e12, 2e11").ridge
    5.0
    """
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2:
        raise ValueError(f"peaks are two numbers, FLOP/s and bytes/s (e.g. 197e12,819e9), not {text!r}")
    flops, bandwidth = (float(p) for p in parts)
    if not (flops > 0 and bandwidth > 0) or flops == float("inf") or bandwidth == float("inf"):
        raise ValueError(f"peaks must be positive finite numbers, not {text!r}")
    return Peaks(flops, bandwidth, ENVIRONMENT)


def known_peaks(device_kind: str) -> Peaks | None:
    """The table's peaks for a device kind (``TPU v5 lite``, ``NVIDIA H100 80GB HBM3``), or None."""
    found = KNOWN_CHIPS.get(device_kind.strip().lower())
    return Peaks(found[0], found[1], "table") if found else None


def trace_peaks(device_stats: Mapping[str, Any]) -> Peaks | None:
    """The peaks a device plane records (a TPU's), or None."""
    flops = device_stats.get("peak_teraflops_per_second")
    bandwidth = device_stats.get("peak_hbm_bw_gigabytes_per_second") or device_stats.get("peak_bw_gigabytes_per_second")
    if isinstance(flops, (int, float)) and isinstance(bandwidth, (int, float)) and flops > 0 and bandwidth > 0:
        return Peaks(float(flops) * 1e12, float(bandwidth) * 1e9, "trace")
    return None


def peaks_for(device_kind: str = "", device_stats: Mapping[str, Any] | None = None) -> Peaks | None:
    """The peaks to measure against: the user's (``JAXMAGIC_PEAKS``), the trace's, the table's;
    None where none is known (a CPU). A malformed ``JAXMAGIC_PEAKS`` raises ``ValueError``."""
    override = os.environ.get(ENVIRONMENT, "").strip()
    if override:
        return parse_peaks(override)
    return trace_peaks(device_stats or {}) or known_peaks(
        device_kind or str((device_stats or {}).get("device_type_string", ""))
    )


def usage(flops: float, bytes_moved: float, seconds: float, peaks: Peaks | None) -> Usage:
    """What ``flops`` operations and ``bytes_moved`` bytes done in ``seconds`` achieved."""
    if seconds <= 0:
        return Usage(0.0, 0.0, None, None, "")
    achieved_flops, achieved_bytes = flops / seconds, bytes_moved / seconds
    if peaks is None:
        return Usage(achieved_flops, achieved_bytes, None, None, "")
    if not flops and not bytes_moved:
        bound = ""
    else:
        bound = "compute" if flops / peaks.flops_per_second >= bytes_moved / peaks.bytes_per_second else "memory"
    return Usage(
        achieved_flops,
        achieved_bytes,
        achieved_flops / peaks.flops_per_second,
        achieved_bytes / peaks.bytes_per_second,
        bound,
    )


def estimated_seconds(flops: float, transcendentals: float, bytes_moved: float, peaks: Peaks | None) -> float:
    """How long work would take at the chip's peaks, the slower of compute and memory (a roofline
    estimate, used to share a kernel's measured time among the lines fused into it). Where no
    peak is known, in units of a nominal chip whose ridge point is ``NOMINAL_FLOPS_PER_BYTE``."""
    operations = flops + TRANSCENDENTAL_FLOPS * transcendentals
    if peaks is None:
        return max(operations / NOMINAL_FLOPS_PER_BYTE, bytes_moved)
    return max(operations / peaks.flops_per_second, bytes_moved / peaks.bytes_per_second)
