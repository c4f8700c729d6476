"""``max-traces``: ``chex.assert_max_traces`` refused a trace. JAX traces a jitted function again
for each new signature (another shape, dtype or static value) and for each new function object
(``jax.jit`` applied again, the function defined again): which of the two happened, and which
argument changed, is read from JAX's own tracing cache for the function being traced.

>>> import chex, jax, jax.numpy as jnp
>>> from jaxmagic.doctor.case import Case
>>> @jax.jit
... @chex.assert_max_traces(n=1)
... def normalise(x):
...     return x / x.sum()
>>> _ = normalise(jnp.ones(3))
>>> try:
...     normalise(jnp.ones(4))
... except AssertionError as exc:
...     case = Case(exc, None, lambda filename: None)
>>> found = MAX_TRACES.diagnose(case)
>>> found.variable, "`chex.assert_max_traces(n=1)`" in found.explanation
('x', True)
>>> chex.clear_trace_counter()
"""

from __future__ import annotations

import re

from jaxmagic import _jax_private
from jaxmagic.doctor.declared import Declared, Line, joined
from jaxmagic.recompiles.attribution import call_signature
from jaxmagic.recompiles.unwatched import causes_against_traced

_TRACED_TOO_OFTEN = re.compile(r"Function '(?P<name>[^']+)' is traced > (?P<limit>\d+) times")


def max_traces(line: Line) -> dict | None:
    """chex's function and limit, with what JAX's tracing cache says changed: the arguments
    (``causes``), or a new function object (JAX held no earlier trace of it), or not known."""
    said = _TRACED_TOO_OFTEN.search(line.message)
    if said is None:
        return None
    case = line.case
    found = {"name": said["name"], "limit": int(said["limit"]), "where": case.where(case.call_site or case.innermost)}
    call = _jax_private.jit_call_in_progress(_innermost_frame(case.exc))
    keys = _jax_private.traced_keys(call.fun) if call is not None else None
    causes = causes_against_traced(call_signature(call), keys) if call is not None and keys else None
    if causes:
        changes = joined([cause.message for cause in causes], "; ")
        return {
            **found,
            "kind": "changed",
            "changes": changes,
            "advice": causes[0].advice,
            "argument": causes[0].argument,
        }
    return {
        **found,
        "kind": "new" if keys is not None and len(keys) <= 1 else "",
    }  # JAX holds none but the one under way


def _innermost_frame(exc: BaseException):
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame if tb is not None else None


_TOO_MANY = "{name} would be traced more than `chex.assert_max_traces(n={limit})` allows: "

MAX_TRACES = Declared(
    "max-traces",
    "A jitted function traced more often than chex.assert_max_traces allows",
    max_traces,
    raised=AssertionError,
    messages=("It often happens when a jitted function is defined inside another",),
    order=85,
    explanation=_TOO_MANY + "JAX traces a jitted function again for each new signature (another shape, dtype or "
    "static value) and for each new function object.",
    fix_note="Watch it with `%recompiles` to see what changes from one trace to the next.",
    kinds={
        "changed": {
            "explanation": _TOO_MANY + "JAX traces a jitted function again for each new signature, and this call's "
            "differs from the ones JAX traced before: {changes}.",
            "fix_note": "{advice}",
        },
        "new": {
            "explanation": _TOO_MANY + "the function JAX is tracing is a new object (jax.jit applied again, or the "
            "function defined again), so JAX holds no earlier trace of it and traces it anew, with the same arguments.",
            "fix_note": "Define {name} and apply jax.jit to it once, outside the loop or the function called "
            "repeatedly, and call that one object.",
        },
    },
    variable="argument",
)
