"""``numpy-random``: NumPy's random numbers drawn inside a traced function. NumPy draws them while
JAX traces, once; the compiled code keeps them as constants, so every call gives the same
"random" numbers. The fix draws with ``jax.random`` from a key passed in.

>>> import numpy as np
>>> def noisy(x):
...     return x + np.random.normal()
>>> traced = Traced([noisy], None, None, lambda filename: None)
>>> (found,) = describe(traced, numpy_random(traced))
>>> found.severity, found.fix.splitlines()[:2]
('warning', ['def noisy(x, key):', '    return x + jax.random.normal(key)'])
"""

from __future__ import annotations

import ast
import types
from dataclasses import dataclass

import numpy as np

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.clues import Span
from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.registry import describes, pitfall
from jaxmagic.doctor.traced_code import Traced, function_node, parameter_edit
from jaxmagic.tracing import sources
from jaxmagic.words import code, place, say

# NumPy's samplers that have a jax.random counterpart: numpy name -> (jax name, numpy's parameters
# in order, how each maps: "shape", a jax keyword, or "" for one with no counterpart).
_SAMPLERS = {
    "rand": ("uniform", None),  # rand(d0, d1, ...): the shape as separate numbers
    "randn": ("normal", None),
    "random": ("uniform", ("size",)),
    "random_sample": ("uniform", ("size",)),
    "standard_normal": ("normal", ("size",)),
    "uniform": ("uniform", ("low", "high", "size")),
    "normal": ("normal", ("loc", "scale", "size")),
    "randint": ("randint", ("low", "high", "size")),
    "integers": ("randint", ("low", "high", "size")),  # a Generator's randint
}


@dataclass(frozen=True)
class NumpyDraw:
    """One draw of NumPy's random numbers in a traced function: the function, its parsed source and
    definition node, and the call."""

    function: types.FunctionType
    located: tuple
    call: ast.Call
    name: str  # the NumPy sampler: "normal", "uniform"...


# What NumPy's random module and Generators offer besides draws.
_NOT_DRAWS = {"seed", "get_state", "set_state", "default_rng", "Generator", "RandomState", "SeedSequence", "spawn"}
_NOT_DRAWS |= {"bit_generator", "PCG64", "MT19937", "Philox", "SFC64", "BitGenerator"}


def _is_numpy_random(value) -> bool:
    return value is np.random or isinstance(value, (np.random.Generator, np.random.RandomState))


@pitfall("numpy-random", "NumPy's random numbers drawn while JAX traces", "warning", stage="trace", order=35)
def numpy_random(traced: Traced) -> list[NumpyDraw]:
    """``numpy-random``: calls of ``np.random.*`` (or of a NumPy ``Generator`` the function reads as
    a global) in the traced function and its helpers."""
    found = []
    for function in traced.functions:
        located = function_node(function)
        if located is None:
            continue
        lookup = rewrites.lookup_in(function.__globals__)
        for node in clues.nodes_in(located[1], ast.Call):
            if (
                isinstance(node.func, ast.Attribute)
                and node.func.attr not in _NOT_DRAWS
                and _is_numpy_random(clues.resolve(node.func.value, lookup))
            ):
                found.append(NumpyDraw(function, located, node, node.func.attr))
    return sorted(found, key=lambda draw: (draw.call.lineno, draw.call.col_offset))


@describes("numpy-random")
def describe(traced: Traced, found: list[NumpyDraw]) -> list[Diagnosis]:
    """One warning per function: its NumPy draws become ``jax.random`` draws from a ``key`` parameter."""
    by_function: dict[types.FunctionType, list[NumpyDraw]] = {}
    for draw in found:
        by_function.setdefault(draw.function, []).append(draw)
    return [_describe_function(traced, draws) for draws in by_function.values()]


def _describe_function(traced: Traced, draws: list[NumpyDraw]) -> Diagnosis:
    first = draws[0]
    function, (parsed, node) = first.function, first.located
    jn = rewrites.jax_names(function.__globals__)
    shown = clues.source_of(parsed, first.call)
    where = sources.source_line(function.__code__.co_filename, first.call.lineno, function.__name__, traced.cell_namer)
    explanation = say(
        "{} ({}) runs while JAX traces {}: NumPy draws its numbers once, then, and the compiled code keeps them as "
        "constants. Every call of {} with arguments of the same shapes and dtypes gives the same numbers.",
        code(shown),
        place(where),
        code(function.__name__),
        code(function.__name__),
    )
    fix, call_hint = _fix(parsed, node, draws, jn.jax)
    return Diagnosis(
        "numpy-random",
        explanation=explanation,
        fix=fix or "",  # a sampler with no jax.random counterpart: the fix in words
        fix_note=say(
            "Draw with {} from a key passed in, a new key for each call ({}): the numbers are then drawn by the "
            "compiled code, on every call.",
            code(f"{jn.jax}.random"),
            code(call_hint),
        ),
        where=where,
        function=function.__name__,
        reference="https://docs.jax.dev/en/latest/random-numbers.html",
    )


def _fix(parsed, node, draws: list[NumpyDraw], jax_name: str) -> tuple[str | None, str]:
    """The function with a ``key`` parameter and each draw made from its own key, and how to call it."""
    hint = f"key, subkey = {jax_name}.random.split(key)"
    added = parameter_edit(parsed, node, ["key"])
    if added is None:
        return None, hint
    keys = ["key"] if len(draws) == 1 else [f"key_{i}" for i in range(1, len(draws) + 1)]
    edits = [added]
    for draw, key in zip(draws, keys, strict=True):
        replacement = _jax_draw(parsed, draw, key, jax_name)
        if replacement is None:
            return None, hint
        edits.append(rewrites.Edit(Span.of(draw.call), replacement))
    if len(draws) > 1:
        # key_1, key_2 = jax.random.split(key, 2) as the body's first line
        body = node.body[0]
        split = f"{', '.join(keys)} = {jax_name}.random.split(key, {len(keys)})\n"
        edits.append(rewrites.Edit(Span(body.lineno, body.lineno, body.col_offset, body.col_offset), split))
    text = rewrites.with_edits(parsed.lines, rewrites.function_first_line(node), node.end_lineno, edits)
    return text, hint


def _jax_draw(parsed, draw: NumpyDraw, key: str, jax_name: str) -> str | None:
    """``jax.random.normal(key, (3,))`` for ``np.random.normal(size=3)``; ``None`` where the
    arguments have no plain counterpart."""
    if draw.name not in _SAMPLERS:
        return None
    jax_sampler, parameters = _SAMPLERS[draw.name]
    call = draw.call
    text = [clues.source_of(parsed, a) for a in call.args]
    if parameters is None:  # rand(2, 3)
        return _shaped_draw(jax_sampler, text, key, jax_name) if not call.keywords else None
    if len(call.args) > len(parameters) or any(k.arg not in parameters for k in call.keywords):
        return None
    given = dict(zip(parameters, text, strict=False))
    given.update({k.arg: clues.source_of(parsed, k.value) for k in call.keywords})
    shape = _shape(given.pop("size", None), call, parameters)
    if shape is False:
        return None
    return _DRAWN.get(jax_sampler, _randint)(f"{jax_name}.random.{jax_sampler}", key, shape, given)


def _shaped_draw(jax_sampler: str, text: list[str], key: str, jax_name: str) -> str:
    """``rand(2, 3)`` as ``jax.random.uniform(key, (2, 3))``."""
    shape = f"({', '.join(text)}{',' if len(text) == 1 else ''})" if text else None
    return f"{jax_name}.random.{jax_sampler}({key}{f', {shape}' if shape else ''})"


def _normal(sampler: str, key: str, shape: str | None, given: dict) -> str:
    drawn = f"{sampler}({key}{f', {shape}' if shape else ''})"
    loc, scale = given.get("loc"), given.get("scale")
    drawn = f"{scale} * {drawn}" if scale else drawn
    return f"{loc} + {drawn}" if loc else drawn


def _uniform(sampler: str, key: str, shape: str | None, given: dict) -> str:
    low, high = given.get("low"), given.get("high")
    bounds = (f", minval={low}" if low else "") + (f", maxval={high}" if high else "")
    return f"{sampler}({key}{f', {shape}' if shape else ''}{bounds})"


def _randint(sampler: str, key: str, shape: str | None, given: dict) -> str:
    low, high = given.get("low"), given.get("high")  # randint(low, high): [low, high); randint(n): [0, n)
    low, high = ("0", low) if high is None else (low, high)
    return f"{sampler}({key}, {shape or '()'}, {low}, {high})"


_DRAWN = {"normal": _normal, "uniform": _uniform}


def _shape(size: str | None, call: ast.Call, parameters) -> str | None | bool:
    """A ``size`` written as a shape jax.random takes: ``(3,)`` for ``3``; ``False`` where it cannot
    be told from the text (a name that may hold a number or a tuple)."""
    if size is None:
        return None
    node = next((k.value for k in call.keywords if k.arg == "size"), None)
    if node is None and len(call.args) > parameters.index("size"):
        node = call.args[parameters.index("size")]
    if isinstance(node, ast.Tuple):
        return size
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return f"({size},)"
    return False
