"""``baked-global``: a global number or array a jitted function reads is compiled in as a constant,
so a later assignment to it is not seen by the compiled code.

>>> from jaxmagic.doctor.registry import PITFALLS
>>> PITFALLS["baked-global"].stage
'trace'
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any

import jax

from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.registry import describes, pitfall
from jaxmagic.doctor.traced_code import (
    Load,
    Traced,
    array_leaves,
    as_parameters,
    describe_value,
    global_loads,
    is_baked_value,
    stored_globals,
)
from jaxmagic.tracing import sources
from jaxmagic.words import Words, code, place, say


def _constant_ids(closed_jaxpr: Any) -> set[int] | None:
    consts = getattr(closed_jaxpr, "consts", None)
    if consts is None:
        return None
    return {id(c) for c in consts}


@dataclass(frozen=True)
class BakedGlobals:
    """What ``baked_globals`` found in one function: where it reads each global compiled in."""

    function: types.FunctionType
    loads: tuple[Load, ...]


@pitfall("baked-global", "A global value baked into the compiled code", "warning", stage="trace", order=20)
def baked_globals(traced: Traced) -> list[BakedGlobals]:
    """``baked-global``: global numbers and arrays a function reads (one warning per function).

    A JAX array is reported only when ``closed_jaxpr`` holds it as a constant (read for its
    shape alone, it is not compiled in); names in capitals are constants by convention.

    >>> rate, EPSILON = 0.1, 1e-6
    >>> def step(x):
    ...     return x * rate + EPSILON
    >>> traced = Traced([step], None, None, lambda filename: None)
    >>> (found,) = describe(traced, baked_globals(traced))
    >>> found.variable, found.fix.splitlines()[0]
    ('rate', 'def step(x, rate):')
    """
    constant_ids = _constant_ids(traced.closed_jaxpr)
    found = []
    for function in traced.functions:
        seen: dict[str, Load] = {}
        written = stored_globals(function)  # state the function updates: not a value to pass in
        for load in global_loads(function):
            if load.name in seen or load.name not in function.__globals__ or load.name in written:
                continue
            value = function.__globals__[load.name]
            arrays = array_leaves(value)
            if arrays is not None:
                jax_arrays = [a for a in arrays if isinstance(a, jax.Array)]
                if constant_ids is not None and jax_arrays and not any(id(a) in constant_ids for a in jax_arrays):
                    continue  # none of its arrays is in the compiled code
            elif not is_baked_value(load.name, value):
                continue
            elif isinstance(value, jax.Array) and constant_ids is not None and id(value) not in constant_ids:
                continue  # read for its shape only, say: not in the compiled code
            seen[load.name] = load
        if seen:
            found.append(BakedGlobals(function, tuple(seen.values())))
    return found


@describes("baked-global")
def describe(traced: Traced, found: list[BakedGlobals]) -> list[Diagnosis]:
    """One warning per function: the globals named with their values, the fix passing them in."""
    diagnoses = []
    for facts in found:
        function, seen = facts.function, {load.name: load for load in facts.loads}
        diagnoses.append(_describe_one(traced, function, seen))
    return diagnoses


def _describe_one(traced: Traced, function: types.FunctionType, seen: dict[str, Load]) -> Diagnosis:
    """The warning for one function's globals."""
    names = list(seen)
    first = seen[names[0]]
    where = sources.source_line(function.__code__.co_filename, first.line, first.code.co_name, traced.cell_namer)
    name = function.__name__
    described = Words()
    for i, n in enumerate(names):
        described += say("{}{} ({})", ", " if i else "", code(n), describe_value(function.__globals__[n]))
    sample = names[0]
    explanation = say(
        "{} reads the global{} {} at {}. JAX reads a global once, while it traces {}, and compiles its value in "
        "as a constant: if you later assign {} a new value, the compiled {} keeps using the old one (until it "
        "happens to be traced again).",
        code(name),
        "s" if len(names) > 1 else "",
        described,
        place(where),
        code(name),
        code(sample),
        code(name),
    )
    if any(getattr(function.__globals__[n], "size", 0) > 1 or array_leaves(function.__globals__[n]) for n in names):
        explanation += " A large array compiled in as a constant also makes compiling slower and the program bigger."
    fix = as_parameters(function, names) or ""  # no source to rewrite: the fix in words
    return Diagnosis(
        "baked-global",
        explanation=explanation,
        fix=fix,
        fix_note=f"Pass {'them' if len(names) > 1 else 'it'} as {'arguments' if len(names) > 1 else 'an argument'}: each call then uses the current value.",
        where=where,
        variable=sample,
        function=name,
    )
