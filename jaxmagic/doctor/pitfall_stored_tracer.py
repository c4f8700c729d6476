"""``stored-tracer``: a traced function that assigns a global (``global g; g = x``). While JAX traces,
the value is a tracer, so the global now holds a stand-in with no value: using it later fails with
``UnexpectedTracerError`` (``tracer-leak``, the same trap when it bites). Found right after tracing,
before anything uses the global; the fix hands the value back through the return value.

>>> import jax, jax.numpy as jnp
>>> g = 0.0
>>> def keep(x):
...     global g
...     g = x * 2
...     return x
>>> closed = jax.make_jaxpr(keep)(1.0)
>>> traced = Traced([keep], closed, None, lambda filename: None)
>>> (found,) = describe(traced, stored_tracers(traced))
>>> found.variable, found.fix.splitlines()[1:3]
('g', ['    g = x * 2', '    return x, g  # hand `g` back instead of storing it'])
"""

from __future__ import annotations

import ast
import types
from dataclasses import dataclass

import jax

import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.registry import describes, pitfall
from jaxmagic.doctor.traced_code import Traced, function_node, stored_globals
from jaxmagic.tracing import sources
from jaxmagic.words import code, place, say


@dataclass(frozen=True)
class StoredTracer:
    """A global that a traced function assigned and that now holds a tracer."""

    function: types.FunctionType
    name: str
    value_text: str  # how the tracer prints: JitTracer(~float32[])


@pitfall("stored-tracer", "A traced value stored in a global", "warning", stage="trace", order=15)
def stored_tracers(traced: Traced) -> list[StoredTracer]:
    """``stored-tracer``: each global a traced function assigns (``global g``) that holds a tracer now."""
    found = []
    for function in traced.functions:
        for name in sorted(stored_globals(function)):
            value = function.__globals__.get(name)
            if isinstance(value, jax.core.Tracer):
                found.append(StoredTracer(function, name, _text(value)))
    return found


def _text(value) -> str:
    try:
        return repr(value)[:80]
    except Exception:
        return "a tracer"


@describes("stored-tracer")
def describe(traced: Traced, found: list[StoredTracer]) -> list[Diagnosis]:
    """One warning per global: what it holds now, and the value handed back instead."""
    return [_describe_one(traced, stored) for stored in found]


def _describe_one(traced: Traced, stored: StoredTracer) -> Diagnosis:
    function, name = stored.function, stored.name
    located = function_node(function)
    line = _store_line(located, name) if located else None
    where = sources.source_line(
        function.__code__.co_filename, line or function.__code__.co_firstlineno, function.__name__, traced.cell_namer
    )
    explanation = say(
        "{} assigns the global {} ({}) while JAX traces it, so {} now holds a tracer ({}): a stand-in for a value "
        "that exists only inside the compiled code. Using {} outside fails with {}.",
        code(function.__name__),
        code(name),
        place(where),
        code(name),
        code(stored.value_text),
        code(name),
        code("UnexpectedTracerError"),
    )
    fix = ""
    if located is not None and not isinstance(located[1], ast.Lambda):
        parsed, node = located
        edits = rewrites.ungloballed(node, name) + rewrites.handed_back(parsed, node, name)
        fix = rewrites.with_edits(parsed.lines, rewrites.function_first_line(node), node.end_lineno, edits)
        fix += f"\n\n# the caller keeps it:  result, {name} = {function.__name__}(...)"
    return Diagnosis(
        "stored-tracer",
        explanation=explanation,
        fix=fix,
        fix_note=say(
            "Return {} from {} (a jitted function hands back everything through its return value).",
            code(name),
            code(function.__name__),
        ),
        where=where,
        variable=name,
        function=function.__name__,
        reference="https://docs.jax.dev/en/latest/errors.html#jax.errors.UnexpectedTracerError",
    )


def _store_line(located, name: str) -> int | None:
    """The line of the function's first assignment to ``name``."""
    for node in sorted(ast.walk(located[1]), key=lambda n: getattr(n, "lineno", 0)):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
            return node.lineno
    return None
