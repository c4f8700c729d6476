"""``stale-global``: a global a jitted function read was bound to another value after JAX compiled
the function; the compiled code silently keeps the old value. No error is raised: it is noticed
after the cell that changed the global (``global_watch`` notes the values while JAX traces).

>>> import jax
>>> from jaxmagic.doctor.global_watch import CellEnd, GlobalWatch
>>> rate = 0.5
>>> def scaled(x):
...     return x * rate
>>> step = jax.jit(scaled)
>>> watch = GlobalWatch(); watch.traced(scaled)
>>> rate = 2.0
>>> (found,) = STALE_GLOBAL.after_cell(CellEnd(tuple(watch.changed({"step": step})), lambda filename: None))
>>> found.variable, found.function, found.fix.splitlines()[0]
('rate', 'step', 'def scaled(x, rate):')
"""

from __future__ import annotations

from jaxmagic.doctor.declared import AsParameters, Changed, Declared
from jaxmagic.doctor.traced_code import describe_value


def stale_global(changed: Changed) -> dict:
    """The global, the jitted function and its reader, the value compiled in and the value now."""
    stale = changed.stale
    reader = stale.read.load.function
    return {"name": stale.read.name, "jitted": stale.jitted, "reader": reader, "reader_name": reader.__name__,
            "then": describe_value(stale.read.value), "now": describe_value(stale.now),
            "kind": "helper" if reader is not stale.function else ""}  # fmt: skip


_WHY = (
    "JAX compiled {jitted} while {name} was {then}, and keeps that value in the compiled code as a constant. {name} "
    "is now {now}, but calls of {jitted} with arguments of the same shapes and dtypes do not trace again: they "
    "silently keep using {then}."
)

STALE_GLOBAL = Declared(
    "stale-global",
    "A global changed after the function was compiled",
    stale_global,
    severity="warning",
    stage="cell",
    order=10,
    explanation="{jitted} reads the global {name} at {where}. " + _WHY,
    kinds={"helper": {"explanation": "{jitted} reads the global {name} at {where} (through {reader_name}). " + _WHY}},
    rewrite=(AsParameters("reader", "name"),),
    fix_note="Pass {name} as an argument: each call then uses the value you pass.",
    variable="name",
    function="jitted",
)
