"""``max-traces``: ``chex.assert_max_traces`` refused a trace. JAX traces a jitted function again
for each new signature (another shape, dtype or static value) and for each new function object
(``jax.jit`` applied again, the function defined again): which of the two happened, and which
argument changed, is read from JAX's own tracing cache for the function being traced.

>>> import chex, jax, jax.numpy as jnp
>>> @jax.jit
... @chex.assert_max_traces(n=1)
... def normalise(x):
...     return x / x.sum()
>>> _ = normalise(jnp.ones(3))
>>> try:
...     normalise(jnp.ones(4))
... except AssertionError as exc:
...     case = Case(exc, None, lambda filename: None)
>>> found = max_traces(case)
>>> found.function, found.limit, [c.argument for c in found.causes]
('normalise', 1, ['x'])
>>> chex.clear_trace_counter()
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from jaxmagic import _jax_private
from jaxmagic.doctor.case import Case
from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.registry import describes, pitfall
from jaxmagic.recompiles.attribution import call_signature
from jaxmagic.recompiles.causes import Cause
from jaxmagic.recompiles.unwatched import causes_against_traced
from jaxmagic.words import code, say

_TRACED_TOO_OFTEN = re.compile(r"Function '(?P<name>[^']+)' is traced > (?P<limit>\d+) times")


@dataclass(frozen=True)
class TooManyTraces:
    """What ``max_traces`` found: the function, chex's limit, and what JAX traces anew for:
    ``causes`` (the arguments that changed against JAX's earlier traces), or ``new_function``
    when JAX held no earlier trace of this very function object."""

    function: str
    limit: int
    causes: tuple[Cause, ...] = ()
    new_function: bool = False


@pitfall(
    "max-traces",
    "A jitted function traced more often than chex.assert_max_traces allows",
    "error",
    order=85,
    messages=("It often happens when a jitted function is defined inside another",),
)
def max_traces(case: Case) -> TooManyTraces | None:
    """``max-traces``: chex's assertion, with what JAX's tracing cache says changed."""
    if not isinstance(case.exc, AssertionError) or not case.says("max-traces"):
        return None
    said = _TRACED_TOO_OFTEN.search(case.message)
    if said is None:
        return None
    name, limit = said["name"], int(said["limit"])
    call = _jax_private.jit_call_in_progress(_innermost_frame(case.exc))
    if call is None:
        return TooManyTraces(name, limit)
    keys = _jax_private.traced_keys(call.fun)
    if keys is None:
        return TooManyTraces(name, limit)
    causes = causes_against_traced(call_signature(call), keys) if keys else None
    if not causes and len(keys) <= 1:  # JAX holds no trace of this object but the one under way
        return TooManyTraces(name, limit, new_function=True)
    return TooManyTraces(name, limit, tuple(causes or ()))


def _innermost_frame(exc: BaseException):
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame if tb is not None else None


@describes("max-traces")
def describe(case: Case, found: TooManyTraces) -> Diagnosis:
    """Why JAX traced again, in JAX's terms, and what keeps it to the traces allowed."""
    limit = code(f"chex.assert_max_traces(n={found.limit})")
    name = code(found.function)
    where = case.where(case.call_site or case.innermost)
    if found.causes:
        first = found.causes[0]
        return case.diagnosis(
            "max-traces",
            explanation=say(
                "{} would be traced more than {} allows: JAX traces a jitted function again for each "
                "new signature, and this call's differs from the ones JAX traced before: {}.",
                name,
                limit,
                say("; ").join(c.message for c in found.causes),
            ),
            fix="",
            fix_note=first.advice,
            variable=first.argument,
            where=where,
        )
    if found.new_function:
        return case.diagnosis(
            "max-traces",
            explanation=say(
                "{} would be traced more than {} allows: the function JAX is tracing is a new object "
                "(jax.jit applied again, or the function defined again), so JAX holds no earlier trace "
                "of it and traces it anew, with the same arguments.",
                name,
                limit,
            ),
            fix="",
            fix_note=say(
                "Define {} and apply jax.jit to it once, outside the loop or the function called "
                "repeatedly, and call that one object.",
                name,
            ),
            where=where,
        )
    return case.diagnosis(
        "max-traces",
        explanation=say(
            "{} would be traced more than {} allows: JAX traces a jitted function again for each new "
            "signature (another shape, dtype or static value) and for each new function object.",
            name,
            limit,
        ),
        fix="",
        fix_note=say("Watch it with {} to see what changes from one trace to the next.", code("%recompiles")),
        where=where,
    )
