"""What a gradient's backward pass keeps, and what each of JAX's checkpoint policies would trade.

The residuals are the values ``jax.vjp`` saves from the forward pass for the backward pass: each
is named by the line of the user's code that made it (or the argument it is). For each policy of
``jax.checkpoint_policies`` the same gradient is compiled with the function under
``jax.checkpoint(f, policy=...)``, and its peak (``peak_memory``) and FLOPs (XLA's cost analysis)
measured: less saved, more recomputed.

>>> import jax, jax.numpy as jnp
>>> def f(w, x):
...     h = jnp.tanh(x @ w)
...     return jnp.sum(h ** 2)
>>> kept = saved_residuals(f, (jnp.ones((4, 4)), jnp.ones((2, 4))), {})
>>> sum(r.bytes for r in kept) > 0
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from jaxmagic.compiled import peak_memory
from jaxmagic.compiled.memory import compiled_memory
from jaxmagic.tracing.sources import CellNamer, SourceLine, no_cells, user_source_line

CAPTURED = "(a captured constant)"
POLICIES = ("nothing_saveable", "dots_saveable", "dots_with_no_batch_dims_saveable", "everything_saveable")


@dataclass(frozen=True)
class Residual:
    """One value saved for the backward pass: ``bytes``, ``shape`` (``f32[128,256]``), ``source``
    (the user's line that made it, where known) and ``label`` (that line's label, or
    ``argument x`` for an argument kept as it is)."""

    bytes: int
    shape: str
    source: SourceLine | None
    label: str


@dataclass(frozen=True)
class PolicyCost:
    """A checkpoint policy measured by compiling with it: ``policy`` (its name in
    ``jax.checkpoint_policies``), ``peak_bytes``, ``flops`` (XLA's estimate, ``None`` where it
    gives none) and ``code`` (the ``jax.checkpoint`` line that asks for it)."""

    policy: str
    peak_bytes: int
    flops: float | None
    code: str


def saved_residuals(
    fn: Callable, args: tuple, kwargs: dict, cell_namer: CellNamer = no_cells, input_names: Sequence[str] = ()
) -> list[Residual]:
    """The values ``jax.vjp`` of ``fn`` with respect to its first argument (what ``jax.grad``
    differentiates) saves for the backward pass, largest first. ``input_names`` names every leaf
    of ``(args, kwargs)``, in order."""
    import jax
    from jax.extend import core as jcore

    first, rest = args[0], args[1:]
    everything = jax.tree_util.tree_leaves((args, kwargs))
    closed, shapes = jax.make_jaxpr(lambda v: jax.vjp(lambda a: fn(a, *rest, **kwargs), v), return_shape=True)(first)
    jaxpr = closed.jaxpr
    count = len(jax.tree_util.tree_leaves(shapes[1]))
    outvars = jaxpr.outvars[len(jaxpr.outvars) - count :] if count else []
    makers = {var: eqn for eqn in jaxpr.eqns for var in eqn.outvars}
    positions = {id(leaf): i for i, leaf in enumerate(everything)}
    inputs = {var: i for i, var in enumerate(jaxpr.invars)}  # the first argument's leaves come first
    inputs.update(
        {var: positions[id(c)] for var, c in zip(jaxpr.constvars, closed.consts, strict=True) if id(c) in positions}
    )
    found, seen = [], set()
    for var in outvars:
        if isinstance(var, jcore.Literal) or var in seen:
            continue
        seen.add(var)
        aval = var.aval
        size = int(getattr(aval, "size", 1)) * getattr(getattr(aval, "dtype", None), "itemsize", 0)
        shape = aval.str_short(short_dtypes=True) if hasattr(aval, "str_short") else str(aval)
        if var in inputs:
            index = inputs[var]
            name = input_names[index] if index < len(input_names) else f"input {index}"
            found.append(Residual(size, shape, None, f"argument {name}"))
            continue
        eqn = makers.get(var)
        if eqn is None:  # a value the function captured (a global array), not made by a line
            found.append(Residual(size, shape, None, CAPTURED))
            continue
        source = user_source_line(eqn.source_info, cell_namer)
        found.append(Residual(size, shape, source, source.label if source else peak_memory.NO_LINE))
    found.sort(key=lambda r: -r.bytes)
    return found


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
        peak = peak_memory.peak_memory(compiled.as_text(), dumped, compiled_memory(compiled))
        costs.append(
            PolicyCost(
                policy,
                peak.peak_bytes if peak.available else peak.reserved_bytes,
                _flops(compiled),
                f"{name} = jax.checkpoint({name}, policy=jax.checkpoint_policies.{policy})",
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
