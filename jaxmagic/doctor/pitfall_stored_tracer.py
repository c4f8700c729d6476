"""``stored-tracer``: a traced function that assigns a global (``global g; g = x``). While JAX traces,
the value is a tracer, so the global now holds a stand-in with no value: using it later fails with
``UnexpectedTracerError`` (``tracer-leak``, the same trap when it bites). Found right after tracing,
before anything uses the global; the fix hands the value back through the return value.

>>> import jax, jax.numpy as jnp
>>> from jaxmagic.doctor.traced_code import Traced
>>> g = 0.0
>>> def keep(x):
...     global g
...     g = x * 2
...     return x
>>> closed = jax.make_jaxpr(keep)(1.0)
>>> (found,) = STORED_TRACER.notice(Traced([keep], closed, None, lambda filename: None))
>>> found.variable, found.fix.splitlines()[1:3]
('g', ['    g = x * 2', '    return x, g  # hand `g` back instead of storing it'])
"""

from __future__ import annotations

import ast
from typing import Any

import jax

import jaxmagic.doctor.clues as clues
from jaxmagic.doctor.declared import Declared, Function, HandedBack


def stored_tracers(function: Function) -> list[dict[str, Any]]:
    """Each global the function assigns (``global g``) that holds a tracer now: its first
    assignment, and how the tracer prints."""
    declared = {name for node in ast.walk(function.node) if isinstance(node, ast.Global) for name in node.names}
    first: dict[str, ast.Name] = {}
    for node in clues.in_order(n for n in clues.nodes_in(function.node, ast.Name) if isinstance(n.ctx, ast.Store)):
        if node.id in declared:
            first.setdefault(node.id, node)
    return [
        {"at": at, "name": name, "value": _text(value), "located": function.sourced.located,
         "key": jax.numpy.issubdtype(getattr(value, "dtype", None) or bool, jax.dtypes.prng_key)}
        for name, at in sorted(first.items())
        if clues.is_tracer(value := function.lookup(name))
    ]  # fmt: skip


def _text(value) -> str:
    try:
        return repr(value)[:80]
    except Exception:
        return "a tracer"


STORED_TRACER = Declared(
    "stored-tracer",
    "A traced value stored in a global",
    lambda function: [found for found in stored_tracers(function) if not found["key"]],
    severity="warning",
    stage="trace",
    order=15,
    explanation="{function} assigns the global {name} ({where}) while JAX traces it, so {name} now holds a tracer "
    "({value}): a stand-in for a value that exists only inside the compiled code. Using {name} outside fails with "
    "`UnexpectedTracerError`.",
    rewrite=(HandedBack(),),
    fix_note="Return {name} from {function} (a jitted function hands back everything through its return value).",
    variable="name",
    reference="https://docs.jax.dev/en/latest/errors.html#jax.errors.UnexpectedTracerError",
)

GLOBAL_KEY = Declared(
    "global-key",
    "A global random key split inside a jitted function",
    lambda function: [found for found in stored_tracers(function) if found["key"]],
    severity="warning",
    stage="trace",
    order=14,
    explanation="{function} takes a new key from the global {name} ({where}) while JAX traces it: the compiled code "
    "keeps the key {name} held then, so every call draws the same numbers; and {name} now holds a tracer ({value}), "
    "which fails when used outside.",
    rewrite=(HandedBack(),),
    fix_note="Pass {name} in and return the new one: the caller carries the key from call to call, and each call "
    "draws new numbers.",
    variable="name",
)
