"""``baked-global``: a global number or array a jitted function reads is compiled in as a constant,
so a later assignment to it is not seen by the compiled code.

>>> from jaxmagic.doctor.registry import PITFALLS
>>> PITFALLS["baked-global"].stage
'trace'
"""

from __future__ import annotations

import ast
import numbers
import types
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic import sources, units
from jaxmagic.doctor.clues import Span
from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.registry import describes, pitfall
from jaxmagic.doctor.traced_code import Load, Traced, function_node, global_loads, stored_globals
from jaxmagic.doctor.words import Words, code, place, say


def _is_baked_value(name: str, value: Any) -> bool:
    if isinstance(value, jax.Array):
        return not clues.is_tracer(value)
    if isinstance(value, np.ndarray):
        return True
    if isinstance(value, (numbers.Number, np.generic)) and not isinstance(value, bool):
        # Names in capitals are constants by convention: meant never to change.
        return not (name.isupper() or (name.upper() == name and "_" in name))
    return False


def _array_leaves(value: Any) -> list | None:
    """The arrays of a global pytree of arrays (a dict of parameters, say); ``None`` for anything else."""
    if not isinstance(value, (dict, list, tuple)) or not value:
        return None
    try:
        leaves = jax.tree_util.tree_leaves(value)
    except Exception:
        return None
    if not leaves or not all(isinstance(leaf, (jax.Array, np.ndarray, numbers.Number, np.generic)) for leaf in leaves):
        return None
    arrays = [leaf for leaf in leaves if isinstance(leaf, (jax.Array, np.ndarray))]
    return arrays or None


def _constant_ids(closed_jaxpr: Any) -> set[int] | None:
    consts = getattr(closed_jaxpr, "consts", None)
    if consts is None:
        return None
    return {id(c) for c in consts}


def _describe(value: Any) -> str:
    arrays = _array_leaves(value)
    if arrays is not None:
        return f"a {type(value).__name__} of {len(arrays)} array{'s' * (len(arrays) != 1)}"
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is not None and dtype is not None and shape != ():
        return f"a {dtype}{list(shape)} array"
    text = repr(value.item() if hasattr(value, "item") and shape == () else value)
    return units.shorten(text, 40)


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
            arrays = _array_leaves(value)
            if arrays is not None:
                jax_arrays = [a for a in arrays if isinstance(a, jax.Array)]
                if constant_ids is not None and jax_arrays and not any(id(a) in constant_ids for a in jax_arrays):
                    continue  # none of its arrays is in the compiled code
            elif not _is_baked_value(load.name, value):
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
        described += say("{}{} ({})", ", " if i else "", code(n), _describe(function.__globals__[n]))
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
    if any(getattr(function.__globals__[n], "size", 0) > 1 or _array_leaves(function.__globals__[n]) for n in names):
        explanation += " A large array compiled in as a constant also makes compiling slower and the program bigger."
    fix = _as_parameters(function, names) or ""  # no source to rewrite: the fix in words
    return Diagnosis(
        "baked-global",
        explanation=explanation,
        fix=fix,
        fix_note=f"Pass {'them' if len(names) > 1 else 'it'} as {'arguments' if len(names) > 1 else 'an argument'}: each call then uses the current value.",
        where=where,
        variable=sample,
        function=name,
    )


def _as_parameters(function: types.FunctionType, names: list[str]) -> str | None:
    located = function_node(function)
    if located is None or isinstance(located[1], ast.Lambda):
        return None
    parsed, node = located
    args = node.args
    if args.defaults or args.kw_defaults or args.vararg or args.kwonlyargs or args.kwarg:
        return None
    added = ", ".join(names)
    if args.posonlyargs or args.args:
        last = (args.posonlyargs + args.args)[-1]
        edit = rewrites.Edit(
            Span(last.end_lineno, last.end_lineno, last.end_col_offset, last.end_col_offset), f", {added}"
        )
    else:
        # ``def f():``: the parameters go between the parentheses right after the name.
        line = parsed.lines[node.lineno - 1]
        raw = line.encode()
        at = raw.find(b"(", node.col_offset)
        if at < 0:
            return None
        edit = rewrites.Edit(Span(node.lineno, node.lineno, at + 1, at + 1), added)
    params = [a.arg for a in args.posonlyargs + args.args] + names
    text = rewrites.with_edits(parsed.lines, rewrites.function_first_line(node), node.end_lineno, [edit])
    return f"{text}\n\n# call it with the current values:  {node.name}({', '.join(params)})"
