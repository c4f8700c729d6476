"""``stale-global``: a global a jitted function read was bound to another value after JAX compiled
the function; the compiled code silently keeps the old value. No error is raised: it is noticed
after the cell that changed the global (``global_watch`` notes the values while JAX traces).

>>> from jaxmagic.doctor.registry import PITFALLS
>>> PITFALLS["stale-global"].stage, PITFALLS["stale-global"].severity
('cell', 'warning')
"""

from __future__ import annotations

from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.global_watch import CellEnd, StaleGlobal
from jaxmagic.doctor.registry import describes, pitfall
from jaxmagic.doctor.traced_code import as_parameters, describe_value
from jaxmagic.tracing import sources
from jaxmagic.words import code, place, say


@pitfall("stale-global", "A global changed after the function was compiled", "warning", stage="cell", order=10)
def stale_globals(cell: CellEnd) -> list[StaleGlobal] | None:
    """``stale-global``: each global bound to a new value since its jitted function was traced.

    >>> import jax
    >>> rate = 0.5
    >>> def scaled(x):
    ...     return x * rate
    >>> step = jax.jit(scaled)
    >>> from jaxmagic.doctor.global_watch import GlobalWatch
    >>> watch = GlobalWatch(); watch.traced(scaled)
    >>> rate = 2.0
    >>> cell = CellEnd(tuple(watch.changed({"step": step})), lambda filename: None)
    >>> (found,) = describe(cell, stale_globals(cell))
    >>> found.variable, found.function, found.fix.splitlines()[0]
    ('rate', 'step', 'def scaled(x, rate):')
    """
    return list(cell.changes) or None


@describes("stale-global")
def describe(cell: CellEnd, found: list[StaleGlobal]) -> list[Diagnosis]:
    """One warning per changed global: the value compiled in, the value now, the global as a parameter."""
    return [_describe_one(cell, stale) for stale in found]


def _describe_one(cell: CellEnd, stale: StaleGlobal) -> Diagnosis:
    read = stale.read
    function = read.load.function
    where = sources.source_line(function.__code__.co_filename, read.load.line, read.load.code.co_name, cell.cell_namer)
    reader = say(" (through {})", code(function.__name__)) if function is not stale.function else ""
    explanation = say(
        "{} reads the global {} at {}{}. JAX compiled {} while {} was {}, and keeps that value in the compiled "
        "code as a constant. {} is now {}, but calls of {} with arguments of the same shapes and dtypes do not "
        "trace again: they silently keep using {}.",
        code(stale.jitted),
        code(read.name),
        place(where),
        reader,
        code(stale.jitted),
        code(read.name),
        code(describe_value(read.value)),
        code(read.name),
        code(describe_value(stale.now)),
        code(stale.jitted),
        code(describe_value(read.value)),
    )
    fix = as_parameters(function, [read.name]) or ""  # no source to rewrite: the fix in words
    return Diagnosis(
        "stale-global",
        explanation=explanation,
        fix=fix,
        fix_note=say("Pass {} as an argument: each call then uses the value you pass.", code(read.name)),
        where=where,
        variable=read.name,
        function=stale.jitted,
    )
