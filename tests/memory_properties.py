"""The properties every ``--memory`` report keeps, each checked against XLA's own account of the
compiled program (never against what jaxmagic printed before):

- the peak is XLA's: within 5% of ``memory_analysis().peak_memory_in_bytes`` where the backend
  counts the program's temporaries in it (TPU, GPU), and never above what XLA reserves for the call
  (arguments + outputs + temporaries - aliased; the constants it holds beside) where it does not
  (the CPU, whose figure is the arguments and outputs alone);
- every buffer once: no two rows of the table share bytes of one allocation (read from XLA's
  buffer-assignment dump, parsed here on its own);
- what the backward pass keeps is never more than the peak;
- each checkpoint policy's figure is the peak of the gradient compiled with that policy.
"""

from __future__ import annotations

import glob
import os
import re
import tempfile

import jax

_VALUE = re.compile(r"^\s*value: <\d+ ([\w.\-]+?)(\{[\d,]*\})?(?: \(phi\))? @\d+> \(size=(\d+),offset=(\d+)\)")
_ALLOCATION = re.compile(r"^allocation (\d+): size (\d+)")
TOLERANCE = 0.05


def reports_program_peak() -> bool:
    """Whether XLA's ``peak_memory_in_bytes`` counts the program's temporaries on this backend."""
    return jax.default_backend() != "cpu"


def xla_slices(lowered) -> dict[str, tuple[int, int, int, bool]]:
    """Each value of XLA's buffer assignment -> (allocation, offset, size, whether a loop's carried
    value: ``(phi)``), from its own dump."""
    with tempfile.TemporaryDirectory() as folder:
        lowered.compile(compiler_options={"xla_dump_to": folder, "xla_dump_hlo_as_text": True})
        paths = glob.glob(os.path.join(folder, "*after_optimizations-buffer-assignment.txt"))
        texts = []
        for path in paths:
            with open(path) as handle:
                texts.append(handle.read())
        text = "".join(texts)
    slices, allocation = {}, -1
    for line in text.splitlines():
        head = _ALLOCATION.match(line)
        if head:
            allocation = int(head.group(1))
        value = _VALUE.match(line)
        if value:
            slices.setdefault(
                value.group(1) + (value.group(2) or "{}"),
                (allocation, int(value.group(4)), int(value.group(3)), "(phi)" in line),
            )
    return slices


def reserved(stats) -> int:
    return (
        stats.argument_size_in_bytes + stats.output_size_in_bytes + stats.temp_size_in_bytes - stats.alias_size_in_bytes
    )


def check_within_xla(peak_bytes: int, constants: int, stats) -> None:
    """A peak shown is XLA's where XLA counts the program's temporaries (a TPU, a GPU: within
    ``TOLERANCE`` of ``peak_memory_in_bytes``), and never above what XLA reserves, but for the
    constants it keeps apart, where it does not (the CPU)."""
    if reports_program_peak():
        xla = stats.peak_memory_in_bytes
        assert abs(peak_bytes - xla) <= TOLERANCE * xla, (peak_bytes, xla)
    else:
        assert peak_bytes - constants <= reserved(stats), (peak_bytes, constants, reserved(stats))


def check_peak_is_xla_s(report) -> None:
    stats = report.compiled.memory_analysis()
    peak = report.peak_bytes
    live = report.peak.live_bytes
    if reports_program_peak():  # the peak shown is XLA's; the buffers by line add up close to it
        xla = stats.peak_memory_in_bytes
        assert peak == xla and abs(live - xla) <= TOLERANCE * xla, (report.name, peak, live, xla)
    else:
        held_beside = sum(b.bytes for b in report.live_at_peak if b.kind == "constant")
        assert peak == live and peak - held_beside <= reserved(stats), (report.name, peak, held_beside, reserved(stats))
    assert live == sum(b.bytes for b in report.live_at_peak)


def check_each_buffer_once(report) -> None:
    """No two buffers listed share bytes of one allocation; but on a TPU, a loop's carried value
    and the value its body writes over it, or a copy XLA prefetched (``copy-start…{0}``) and the
    value written over it, both of which XLA's peak counts at the step of the write."""
    slices = xla_slices(report.lowered)
    taken: dict[int, list[tuple[int, int, str, bool]]] = {}
    for buffer in report.live_at_peak:
        allocation, offset, size, phi = slices[buffer.name]
        for start, end, other, other_phi in taken.get(allocation, []):
            replaced = phi != other_phi or any(
                n.startswith("copy-start") and n.endswith("{0}") for n in (other, buffer.name)
            )
            rewritten = reports_program_peak() and (start, end) == (offset, offset + size) and replaced
            assert offset + size <= start or end <= offset or rewritten, (
                report.name,
                buffer.name,
                other,
                "share bytes",
            )
        taken.setdefault(allocation, []).append((offset, offset + size, buffer.name, phi))


def check_residuals_within_peak(report) -> None:
    if report.residuals is not None:
        assert sum(r.bytes for r in report.residuals) <= report.peak_bytes, (report.name, report.residuals)
