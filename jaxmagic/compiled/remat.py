"""What a gradient's backward pass keeps, and what each of JAX's checkpoint policies would trade.

The residuals are read from the compiled gradient itself: the buffers a forward-pass instruction
made that are still in use while the backward pass runs (at its step where they add up to the
most), with the arguments and constants the backward pass reads. All are in use at that one step,
so together they never exceed the peak. Each is named by the line of the user's code that made it
(or the argument it is). For each policy of ``jax.checkpoint_policies`` the same gradient is
compiled with the function under ``jax.checkpoint(f, policy=...)``, and its peak
(``peak_memory``) and FLOPs (XLA's cost analysis) measured: less saved, more recomputed.

>>> import jax, jax.numpy as jnp
>>> from jaxmagic.compiled.memory import compiled_memory
>>> def f(w, x):
...     h = jnp.tanh(x @ w)
...     return jnp.sum(h ** 2)
>>> lowered = jax.jit(jax.grad(f)).trace(jnp.ones((64, 64)), jnp.ones((32, 64))).lower()
>>> compiled, dumped = peak_memory.compile_with_buffers(lowered)
>>> kept = kept_for_backward(compiled.as_text(), dumped)
>>> peak = peak_memory.peak_memory(compiled.as_text(), dumped, compiled_memory(compiled))
>>> 0 < sum(r.bytes for r in kept) <= peak.peak_bytes
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from jaxmagic.compiled import peak_memory
from jaxmagic.compiled.buffer_dump import BufferDump, Value, read_dump
from jaxmagic.compiled.memory import compiled_memory, platform, xla_peak
from jaxmagic.compiled.peak_step import once
from jaxmagic.tracing.sources import CellNamer, SourceLine, no_cells

POLICIES = ("nothing_saveable", "dots_saveable", "dots_with_no_batch_dims_saveable", "everything_saveable")


@dataclass(frozen=True)
class Residual:
    """One buffer the backward pass keeps from the forward pass: ``bytes`` (XLA's, in the compiled
    gradient), ``shape`` (``f32[128,256]``), ``source`` (the user's line that made it, where known)
    and ``label`` (that line's label, ``argument x`` for an argument the backward pass reads,
    ``captured constant `w``` for an array the function read from outside)."""

    bytes: int
    shape: str
    source: SourceLine | None
    label: str


@dataclass(frozen=True)
class PolicyCost:
    """A checkpoint policy measured by compiling with it: ``policy`` (its name in
    ``jax.checkpoint_policies``), ``peak_bytes`` (the peak as ``peak_memory`` counts it),
    ``xla_peak_bytes`` (XLA's own, where the backend gives one that counts temporaries), ``flops``
    (XLA's estimate, ``None`` where it gives none) and ``code`` (the ``jax.checkpoint`` line that
    asks for it)."""

    policy: str
    peak_bytes: int
    flops: float | None
    code: str
    xla_peak_bytes: int | None = None


def kept_for_backward(
    hlo_text: str,
    dumped: str,
    cell_namer: CellNamer = no_cells,
    input_names: list[str] | None = None,
    jaxpr: Any = None,
    constants: dict[str, str] | None = None,
    output_names: list[str] | None = None,
    before: str = "",
) -> list[Residual]:
    """What the backward pass of a compiled gradient keeps, largest first (``[]`` for a program
    with no backward pass or no buffer assignment): see the module's docstring."""
    dump = read_dump(dumped)
    names = peak_memory.reading(hlo_text, cell_namer, input_names, jaxpr, constants, output_names, before)
    backward = [
        t for t, name in enumerate(dump.sequence) if peak_memory.in_pass(names.instructions, name) == "backward"
    ]
    if not backward or not dump.ranges:
        return []
    made = [v for v in dump.values.values() if v.key in dump.ranges and _made_by_forward(v, dump, names)]
    step = max(backward, key=lambda t: sum(v.size for v in made if _live(dump, v, t)))
    kept = [v for v in made if _live(dump, v, step)]
    held = {v.allocation for v in kept if dump.allocations[v.allocation].held}
    read = [v for v in _read_by_backward(dump, names) if v.allocation not in held]
    buffers = [peak_memory.named_buffer(v, size, dump, names) for v, size in once(kept)]
    buffers += [peak_memory.named_buffer(v, dump.allocations[v.allocation].size, dump, names) for v in read]
    found = [Residual(b.bytes, b.shape, b.source, b.label) for b in buffers if not b.is_tuple_table]
    return sorted(found, key=lambda r: (-r.bytes, r.label))


def _live(dump: BufferDump, value: Value, step: int) -> bool:
    first, last = dump.ranges[value.key]
    return first < step <= last


def _made_by_forward(value: Value, dump: BufferDump, names: peak_memory.Reading) -> bool:
    kind = dump.allocations[value.allocation].kind
    if kind in ("argument", "constant", "thread-local"):
        return False
    return peak_memory.in_pass(names.instructions, peak_memory.origin(value.name, names)) == "forward"


def _read_by_backward(dump: BufferDump, names: peak_memory.Reading) -> list[Value]:
    """The arguments and constants (one value per allocation) a backward-pass instruction reads."""
    by_name = {v.name: v for v in dump.values.values()}
    found: dict[int, Value] = {}
    for name, text in names.texts.items():
        if peak_memory.in_pass(names.instructions, name) != "backward":
            continue
        for operand in peak_memory.operands(text):
            value = by_name.get(peak_memory.origin(operand, names))
            if value is not None and dump.allocations[value.allocation].kind in ("argument", "constant"):
                found.setdefault(value.allocation, value)
    return list(found.values())


def policy_costs(build: Callable[[Callable], object], name: str = "f") -> list[PolicyCost]:
    """Each policy of ``POLICIES`` measured: ``build(wrap)`` returns the lowered gradient with the
    function wrapped by ``wrap`` (``jax.checkpoint`` with the policy); ``name`` is the function's
    name, for the code line."""
    import jax

    costs = []
    for policy in POLICIES:
        chosen = getattr(jax.checkpoint_policies, policy)
        # JAX 0.8 exports ``checkpoint`` under another name, which a type checker does not count as exported.
        lowered = build(lambda f, chosen=chosen: jax.checkpoint(f, policy=chosen))  # pyright: ignore[reportPrivateImportUsage]
        compiled, dumped = peak_memory.compile_with_buffers(lowered)
        peak = peak_memory.peak_memory(
            compiled.as_text(),
            dumped,
            compiled_memory(compiled),
            xla_peak=xla_peak(compiled),
            platform=platform(compiled),
        )
        costs.append(
            PolicyCost(
                policy,
                peak.peak_bytes if peak.available else peak.reserved_bytes,
                _flops(compiled),
                f"{name} = jax.checkpoint({name}, policy=jax.checkpoint_policies.{policy})",
                xla_peak(compiled),
            )
        )
    return costs


def _flops(compiled) -> float | None:
    try:
        analysis = compiled.cost_analysis()
    except Exception:  # some backends give none
        return None
    if isinstance(analysis, (list, tuple)):  # older JAX: one dict per device
        analysis = analysis[0] if analysis else {}
    return float(analysis["flops"]) if analysis and "flops" in analysis else None
