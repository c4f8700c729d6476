"""``baked-global``: a global number or array a jitted function reads is compiled in as a constant,
so a later assignment to it is not seen by the compiled code.

A JAX array is reported only when ``closed_jaxpr`` holds it as a constant (read for its shape
alone, it is not compiled in); names in capitals are constants by convention.

>>> from jaxmagic.doctor.traced_code import Traced
>>> rate, EPSILON = 0.1, 1e-6
>>> def step(x):
...     return x * rate + EPSILON
>>> (found,) = BAKED_GLOBAL.notice(Traced([step], None, None, lambda filename: None))
>>> found.variable, found.fix.splitlines()[0]
('rate', 'def step(x, rate):')
"""

from __future__ import annotations

import types
from typing import Any, cast

import jax

from jaxmagic.doctor.declared import AsParameters, Declared, Function, joined
from jaxmagic.doctor.traced_code import Load, array_leaves, describe_value, global_loads, is_baked_value, stored_globals
from jaxmagic.tracing import sources
from jaxmagic.words import tell


def _compiled_in(name: str, value: Any, constant_ids: set[int] | None) -> bool:
    """True when JAX compiled ``value`` in: a number, or an array ``closed_jaxpr`` holds as a constant."""
    arrays = array_leaves(value)
    if arrays is not None:
        jax_arrays = [a for a in arrays if isinstance(a, jax.Array)]
        return constant_ids is None or not jax_arrays or any(id(a) in constant_ids for a in jax_arrays)
    if not is_baked_value(name, value):
        return False
    return not (isinstance(value, jax.Array) and constant_ids is not None and id(value) not in constant_ids)


def baked_global(function: Function) -> dict | None:
    """The globals ``function`` reads that JAX compiled in (not those it assigns): named with their values."""
    consts = getattr(function.traced.closed_jaxpr, "consts", None)
    constant_ids = {id(c) for c in consts} if consts is not None else None
    reader, seen = cast(types.FunctionType, function.sourced.function), {}  # a field, not a bound method
    written = stored_globals(reader)  # state the function updates: not a value to pass in
    for load in global_loads(reader):
        value = reader.__globals__.get(load.name)
        if load.name in seen or load.name not in reader.__globals__ or load.name in written:
            continue
        if _compiled_in(load.name, value, constant_ids):
            seen[load.name] = load
    if not seen:
        return None
    names, first = list(seen), next(iter(seen.values()))
    values = [reader.__globals__[name] for name in names]
    large = any(getattr(value, "size", 0) > 1 or array_leaves(value) for value in values)
    described = [
        tell("{name} ({value!s})", {"name": n, "value": describe_value(v)}) for n, v in zip(names, values, strict=True)
    ]
    return {"at": function.node, "where": _place(function, first), "reader": reader, "names": names,
            "sample": names[0], "described": joined(described), "s": "s" if len(names) > 1 else "",
            "kind": ("several" if len(names) > 1 else "") + ("-large" if large else "")}  # fmt: skip


def _place(function: Function, load: Load) -> sources.SourceLine | None:
    code = load.code
    return sources.source_line(code.co_filename, load.line, code.co_name, function.traced.cell_namer)


_EXPLANATION = (
    "{function} reads the global{s!s} {described} at {where}. JAX reads a global once, while it traces {function}, "
    "and compiles its value in as a constant: if you later assign {sample} a new value, the compiled {function} "
    "keeps using the old one (until it happens to be traced again)."
)
_LARGE = {"explanation": _EXPLANATION + " A large array compiled in as a constant also makes compiling slower and "
          "the program bigger."}  # fmt: skip
_SEVERAL = {"fix_note": "Pass them as arguments: each call then uses the current value."}

BAKED_GLOBAL = Declared(
    "baked-global",
    "A global value baked into the compiled code",
    baked_global,
    severity="warning",
    stage="trace",
    order=20,
    explanation=_EXPLANATION,
    rewrite=(AsParameters("reader", "names"),),
    fix_note="Pass it as an argument: each call then uses the current value.",
    kinds={"-large": _LARGE, "several": _SEVERAL, "several-large": {**_LARGE, **_SEVERAL}},
    variable="sample",
    function="function",
)
