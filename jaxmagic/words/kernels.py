"""Sentences about XLA's kernels in the HLO view: what each one is (a fusion of its kind, an
asynchronous operation and what runs while it is in flight, a custom call and what it runs) and
the lines XLA fused into it. Facts come from ``jaxmagic.compiled.hlo_kernels``.

>>> from jaxmagic.compiled.custom_calls import CustomCall
>>> what_it_runs(CustomCall("tpu_custom_call", "add_kernel", "Pallas (Mosaic TPU)"))
'Pallas (Mosaic TPU) kernel `add_kernel`'
>>> what_it_runs(CustomCall("__cublas$gemm", "", "cuBLAS"))
'cuBLAS call `__cublas$gemm`'
>>> str(overlap_note("copy-start.1", "copy-done.1", ("fusion.2",)))
'asynchronous: starts at `copy-start.1`, waited for at `copy-done.1`; overlaps `fusion.2`'
"""

from __future__ import annotations

from typing import Sequence

from jaxmagic.compiled.custom_calls import CustomCall
from jaxmagic.words import Words, code, names, say

MAX_OVERLAPS = 4  # kernels named as overlapping an asynchronous operation; the rest counted


def what_it_runs(called: CustomCall) -> Words:
    """A custom call named by what it runs: a Pallas kernel by its name, a library call by its target."""
    if called.name:
        return say("{} kernel {}", called.library or "custom", code(called.name))
    if called.library:
        return say("{} call {}", called.library, code(called.target))
    return say("the backend's {}", code(called.target)) if called.target else say("a custom call")


def kind_words(opcode: str, kind: str, called: CustomCall | None, is_async: bool) -> Words:
    """What a kernel is: ``fusion (kLoop)``, ``asynchronous copy``, ``custom-call: cuBLAS call `…```."""
    if called is not None:
        return say("custom-call: {}", what_it_runs(called))
    if is_async:
        operation = opcode.removesuffix("-start")
        return say("asynchronous {}", operation if operation != "async" else "operation")
    return say("{} ({})", opcode, kind) if kind else say("{}", opcode)


def overlap_note(start: str, done: str, overlaps: Sequence[str]) -> Words:
    """Where an asynchronous operation starts and is waited for, and the kernels it overlaps."""
    said = say("asynchronous: starts at {}, waited for at {}", code(start), code(done))
    if not overlaps:
        return say("{}; nothing runs while it is in flight", said)
    shown = list(overlaps[:MAX_OVERLAPS])
    more = len(overlaps) - MAX_OVERLAPS
    if more > 0:
        return say("{}; overlaps {} and {} more kernels", said, names(shown), more)
    return say("{}; overlaps {}", said, names(shown))


def fused_lines_note(lines: Sequence[str]) -> str:
    """``XLA fused In [3] line 2, In [3] line 3 into one kernel`` for a kernel of several lines."""
    return f"XLA fused {', '.join(lines)} into one kernel" if len(lines) > 1 else ""


def headline(count: int) -> str:
    return (
        f"XLA's optimized HLO: {count} kernel{'s' * (count != 1)} (fusions and single "
        f"instructions) in the order XLA runs them, each with the source lines fused into it"
    )
