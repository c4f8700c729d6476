"""``numpy-random``: NumPy's random numbers drawn inside a traced function. NumPy draws them while
JAX traces, once; the compiled code keeps them as constants, so every call gives the same
"random" numbers. The fix draws with ``jax.random`` from a key passed in.

>>> import numpy as np
>>> from jaxmagic.doctor.traced_code import Traced
>>> def noisy(x):
...     return x + np.random.normal()
>>> (found,) = NUMPY_RANDOM.notice(Traced([noisy], None, None, lambda filename: None))
>>> found.severity, found.fix.splitlines()[:2]
('warning', ['def noisy(x, key):', '    return x + jax.random.normal(key)'])
"""

from __future__ import annotations

import ast

import numpy as np

import jaxmagic.doctor.clues as clues
from jaxmagic.doctor.declared import AddParameters, Declared, Function, InsertBefore, Rewritten
from jaxmagic.doctor.traced_code import parameter_edit

# NumPy's samplers that have a jax.random counterpart: numpy name -> (jax name, numpy's parameters
# in order: "size" is the shape; ``None``: the shape as separate numbers, ``rand(d0, d1, ...)``).
_SAMPLERS = {
    "rand": ("uniform", None),
    "randn": ("normal", None),
    "random": ("uniform", ("size",)),
    "random_sample": ("uniform", ("size",)),
    "standard_normal": ("normal", ("size",)),
    "uniform": ("uniform", ("low", "high", "size")),
    "normal": ("normal", ("loc", "scale", "size")),
    "randint": ("randint", ("low", "high", "size")),
    "integers": ("randint", ("low", "high", "size")),  # a Generator's randint
}

# What NumPy's random module and Generators offer besides draws.
_NOT_DRAWS = {"seed", "get_state", "set_state", "default_rng", "Generator", "RandomState", "SeedSequence", "spawn"}
_NOT_DRAWS |= {"bit_generator", "PCG64", "MT19937", "Philox", "SFC64", "BitGenerator"}


def _is_numpy_random(value) -> bool:
    return value is np.random or isinstance(value, (np.random.Generator, np.random.RandomState))


def numpy_random(function: Function) -> dict | None:
    """The calls of ``np.random.*`` (or of a NumPy ``Generator`` read as a global) in the function,
    each made a ``jax.random`` draw from its own key (none where one has no plain counterpart)."""
    draws = [
        c
        for c in clues.in_order(clues.nodes_in(function.node, ast.Call))
        if isinstance(c.func, ast.Attribute)
        and c.func.attr not in _NOT_DRAWS
        and _is_numpy_random(function.resolve(c.func.value))
    ]
    if not draws:
        return None
    keys = ["key"] if len(draws) == 1 else [f"key_{i}" for i in range(1, len(draws) + 1)]
    drawn = [(call, _jax_draw(function, call, key)) for call, key in zip(draws, keys, strict=True)]
    found = {"at": draws[0], "draw": draws[0], "keys": ", ".join(keys), "count": len(keys)}
    if any(text is None for _, text in drawn) or parameter_edit(function.parsed, function.node, ["key"]) is None:
        return found  # the fix in words
    body = getattr(function.node, "body", [None])[0] if len(draws) > 1 else None
    return {**found, "definition": function.node, "drawn": drawn, "body": body}


def _jax_draw(function: Function, call: ast.Call, key: str) -> str | None:
    """``jax.random.normal(key, (3,))`` for ``np.random.normal(size=3)``; ``None`` where the
    arguments have no plain counterpart."""
    name, parameters = _SAMPLERS.get(getattr(call.func, "attr", ""), (None, None))
    if name is None:
        return None
    sampler = f"{function.jax_names.jax}.random.{name}"
    text = [function.text(a) for a in call.args]
    if parameters is None:  # rand(2, 3): the shape as separate numbers
        shape = f"({', '.join(text)}{',' if len(text) == 1 else ''})" if text else None
        return None if call.keywords else _drawn(name, sampler, key, shape, {})
    if len(call.args) > len(parameters) or any(k.arg not in parameters for k in call.keywords):
        return None
    given: dict = dict(zip(parameters, text, strict=False))
    given.update({k.arg: function.text(k.value) for k in call.keywords})
    shape = _shape(given.pop("size", None), call, parameters)
    return None if shape is False else _drawn(name, sampler, key, shape, given)


def _drawn(name: str, sampler: str, key: str, shape: str | None | bool, given: dict) -> str:
    """The ``jax.random`` call: NumPy's bounds as ``minval``/``maxval`` (``randint``'s as arguments),
    its ``loc`` and ``scale`` applied to a standard normal draw."""
    low, high, loc, scale = given.get("low"), given.get("high"), given.get("loc"), given.get("scale")
    if name == "randint":  # randint(low, high): [low, high); randint(n): [0, n)
        low, high = ("0", low) if high is None else (low, high)
        return f"{sampler}({key}, {shape or '()'}, {low}, {high})"
    drawn = f"{sampler}({key}{f', {shape}' if shape else ''}"
    if name == "uniform":
        return drawn + (f", minval={low}" if low else "") + (f", maxval={high}" if high else "") + ")"
    drawn = f"{scale} * {drawn})" if scale else drawn + ")"
    return f"{loc} + {drawn}" if loc else drawn


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


NUMPY_RANDOM = Declared(
    "numpy-random",
    "NumPy's random numbers drawn while JAX traces",
    numpy_random,
    severity="warning",
    stage="trace",
    order=35,
    explanation="{draw} ({where}) runs while JAX traces {function}: NumPy draws its numbers once, then, and the "
    "compiled code keeps them as constants. Every call of {function} with arguments of the same shapes and dtypes "
    "gives the same numbers.",
    rewrite=(
        AddParameters("definition", "key"),
        Rewritten("drawn"),
        InsertBefore("body", "{keys} = {jax}.random.split(key, {count})"),
    ),
    fix_note="Draw with `{jax}.random` from a key passed in, a new key for each call (`key, subkey = "
    "{jax}.random.split(key)`): the numbers are then drawn by the compiled code, on every call.",
    reference="https://docs.jax.dev/en/latest/random-numbers.html",
)
