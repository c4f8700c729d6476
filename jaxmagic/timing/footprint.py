"""What an uncompiled run of a call does, read from its jaxpr: the arrays it writes out one by one
(the intermediates that XLA's fusion keeps away under jit) and how many operations it dispatches on
their own (what makes a first call long before it starts). ``op_by_op`` is ``jax.disable_jit()``,
which runs the bodies of inner jits and of loops equation by equation; without it (the user's own
eager call), an inner ``jit`` and a loop are each one compiled program.

>>> import jax, jax.numpy as jnp
>>> closed = jax.make_jaxpr(lambda x: jnp.sum(jnp.sin(x) * 2))(jnp.ones(1000))
>>> intermediate_bytes(closed)  # sin and mul: 4000 bytes each; the sum is the output
8000
>>> scanned = jax.make_jaxpr(lambda x: jax.lax.scan(lambda c, _: (jnp.sin(c) * 2, None), x, length=50)[0])(1.0)
>>> dispatches(scanned, op_by_op=False), dispatches(scanned, op_by_op=True)
(1, 100)
"""

from __future__ import annotations

import numpy as np

import jaxmagic.timing.stopwatch as stopwatch
from jaxmagic.tracing.listing import all_equations, sub_jaxprs

MOST_A_DISPATCH_COSTS = 1e-3  # seconds: no dispatch of one operation costs more, even op by op

# Primitives whose body runs equation by equation even with jit on (called, not compiled).
_INLINE_CALLS = {
    "closed_call",
    "core_call",
    "remat",
    "checkpoint",
    "custom_jvp_call",
    "custom_vjp_call",
    "custom_vjp_call_jaxpr",
}
# An inner jit: one compiled program with jit on, equation by equation under ``jax.disable_jit()``.
_JIT_CALLS = {"pjit", "jit"}


def intermediate_bytes(closed_jaxpr, *, op_by_op: bool = True) -> int:
    """Bytes of every array the jaxpr's equations produce besides its outputs, as an uncompiled run
    writes each one out; bodies that run equation by equation (inner jits only ``op_by_op``) are
    counted by their equations, loop and conditional bodies by their outputs only (so this is a
    lower bound).

    >>> import jax, jax.numpy as jnp
    >>> inner = jax.jit(lambda v: jnp.sin(v) * 2)
    >>> closed = jax.make_jaxpr(lambda v: inner(v) + 1)(jnp.ones(100))
    >>> intermediate_bytes(closed), intermediate_bytes(closed, op_by_op=False)
    (800, 400)
    """
    top = getattr(closed_jaxpr, "jaxpr", closed_jaxpr)
    outputs = {id(var) for var in top.outvars}

    def into(eqn) -> bool:
        return _runs_its_body(eqn, op_by_op)

    total = 0
    for eqn in all_equations(top, into=into):
        if into(eqn) and sub_jaxprs(eqn.params):
            continue  # its body's equations are counted instead
        total += sum(_aval_bytes(var.aval) for var in eqn.outvars if id(var) not in outputs)
    return total


def dispatches(closed_jaxpr, *, op_by_op: bool) -> int:
    """How many operations one uncompiled run dispatches on their own: each equation, inner calls'
    bodies where they run equation by equation, and ``op_by_op`` a ``scan``'s body once per step and
    a ``while`` loop's body once (its steps are not known before it runs: a lower bound)."""
    return _dispatches(getattr(closed_jaxpr, "jaxpr", closed_jaxpr), op_by_op)


def dispatch_estimate(closed_jaxpr, *, op_by_op: bool, within_s: float) -> dict | None:
    """What one uncompiled call costs at the least: the operations it dispatches one by one times
    the least a dispatch costs here (``dispatches``, ``floor_s``, ``estimate_s``); ``None`` without
    a jaxpr, or where so few that they could not outlast ``within_s`` whatever a dispatch costs.

    >>> import jax, jax.numpy as jnp
    >>> dispatch_estimate(jax.make_jaxpr(jnp.sin)(1.0), op_by_op=True, within_s=0.1) is None
    True
    """
    if closed_jaxpr is None:
        return None
    try:
        count = dispatches(closed_jaxpr, op_by_op=op_by_op)
    except Exception:  # an estimate is a bonus; the timing must not fail for it
        return None
    if count * MOST_A_DISPATCH_COSTS <= within_s:
        return None  # however dear a dispatch is here, these would fit: not worth measuring one
    floor = stopwatch.dispatch_floor()
    return {"dispatches": count, "floor_s": floor, "estimate_s": count * floor}


def _dispatches(jaxpr, op_by_op: bool) -> int:
    total = 0
    for eqn in jaxpr.eqns:
        bodies = [getattr(j, "jaxpr", j) for _, j in sub_jaxprs(eqn.params)]
        name = eqn.primitive.name
        if bodies and _runs_its_body(eqn, op_by_op):
            total += sum(_dispatches(body, op_by_op) for body in bodies)
        elif bodies and op_by_op and name == "scan":
            total += int(eqn.params.get("length", 1)) * sum(_dispatches(body, op_by_op) for body in bodies)
        elif bodies and op_by_op and name == "cond":  # the predicate, then the cheapest branch
            total += 1 + min(_dispatches(body, op_by_op) for body in bodies)
        elif bodies and op_by_op:  # a while loop (at least one step), or another body that runs
            total += 1 + sum(_dispatches(body, op_by_op) for body in bodies)
        else:
            total += 1
    return total


def donated_inputs(closed_jaxpr) -> tuple[bool, bool]:
    """``(arguments, held)``: whether running the jaxpr's equations one by one with jit on (the
    user's eager call) hands an inner jit one of the call's arguments to donate, or an array the
    call holds (a constant of the jaxpr: captured in a partial, a closure, a global). Either is
    consumed by that call; only values passed straight through count (a value computed first is
    the call's own).

    >>> import functools, jax, jax.numpy as jnp
    >>> step = jax.jit(lambda p, g: p - g, donate_argnums=0)
    >>> donated_inputs(jax.make_jaxpr(lambda p, g: step(p, g))(jnp.ones(2), jnp.ones(2)))
    (True, False)
    >>> held = functools.partial(step, jnp.ones(2))
    >>> donated_inputs(jax.jit(lambda g: held(g)).trace(jnp.ones(2)).jaxpr)
    (False, True)
    """
    top = getattr(closed_jaxpr, "jaxpr", closed_jaxpr)
    arguments, held = {id(v) for v in top.invars}, {id(v) for v in top.constvars}
    found_argument = found_held = False
    for eqn in all_equations(top, into=lambda e: e.primitive.name in _INLINE_CALLS):
        if eqn.primitive.name not in _JIT_CALLS:
            continue
        for var, donated in zip(eqn.invars, eqn.params.get("donated_invars", ()), strict=False):
            found_argument |= bool(donated) and id(var) in arguments
            found_held |= bool(donated) and id(var) in held
    return found_argument, found_held


def _runs_its_body(eqn, op_by_op: bool) -> bool:
    name = eqn.primitive.name
    return name in _INLINE_CALLS or (op_by_op and name in _JIT_CALLS)


def _aval_bytes(aval) -> int:
    shape = getattr(aval, "shape", None)
    dtype = getattr(aval, "dtype", None)
    if shape is None or dtype is None:
        return 0
    try:
        return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    except TypeError:  # extended dtypes (PRNG keys) have no NumPy item size
        return 0
