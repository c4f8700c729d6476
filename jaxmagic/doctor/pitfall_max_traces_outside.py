r"""``max-traces-outside``: ``chex.assert_max_traces`` written above the jit of a library that builds on
``jax.jit`` (``@chex.assert_max_traces(n=1)`` over ``@eqx.filter_jit`` or ``@nnx.jit``). chex counts
the calls of the function it wraps that are given tracers. Above the jit, it wraps the jitted
function, whose calls are given the user's arrays: it counts nothing and never fires, however often
JAX traces. (Above ``jax.jit``, chex refuses at once.) Noticed when JAX traces the function; the fix
puts chex under the jit, where it wraps the function JAX traces.

>>> import chex, equinox as eqx, jax.numpy as jnp, linecache
>>> from jaxmagic.doctor.traced_code import Traced
>>> cell = "@chex.assert_max_traces(n=1)\n@eqx.filter_jit\ndef step(x):\n    return x * 2\n"
>>> linecache.cache["<example>"] = (len(cell), None, cell.splitlines(keepends=True), "<example>")
>>> exec(compile(cell, "<example>", "exec"), namespace := {"chex": chex, "eqx": eqx})
>>> step = namespace["step"].__wrapped__.__wrapped__  # the function JAX traces
>>> (found,) = MAX_TRACES_OUTSIDE.notice(Traced([step], None, None, lambda filename: None, (jnp.ones(2),)))
>>> print(found.fix)
@eqx.filter_jit
@chex.assert_max_traces(n=1)
def step(x):
    return x * 2
"""

from __future__ import annotations

import ast

import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.clues import MISSING
from jaxmagic.doctor.declared import Declared, Function, Rewritten


def _counts_traces(decorator: ast.expr, function: Function) -> bool:
    """True for ``chex.assert_max_traces(...)`` (or ``(n=...)``), however chex was imported."""
    called = decorator.func if isinstance(decorator, ast.Call) else decorator
    value = function.resolve(called)
    return (
        value is not MISSING
        and getattr(value, "__name__", "") == "assert_max_traces"
        and (getattr(value, "__module__", "") or "").startswith("chex")
    )


def max_traces_outside(function: Function) -> dict | None:
    """chex's decorator above a library's jit among the decorators of the traced function: the
    decorators from chex's to the jit's, reordered so that chex's comes right under the jit."""
    decorators = list(getattr(function.node, "decorator_list", []))
    jit_at = next((i for i, d in enumerate(decorators) if rewrites.jit_use(d, function.lookup)), None)
    if jit_at is None:
        return None
    chex_at = next((i for i in range(jit_at) if _counts_traces(decorators[i], function)), None)
    if chex_at is None:
        return None
    reordered = decorators[chex_at + 1 : jit_at + 1] + [decorators[chex_at]]
    texts = [function.text(d) for d in reordered]
    return {
        "at": decorators[chex_at],
        "chex": function.text(decorators[chex_at]),
        "jit": function.text(decorators[jit_at]),
        "order": list(zip(decorators[chex_at : jit_at + 1], texts, strict=True)),
    }


MAX_TRACES_OUTSIDE = Declared(
    "max-traces-outside",
    "chex.assert_max_traces above the jit: it never fires",
    max_traces_outside,
    severity="warning",
    stage="trace",
    order=36,
    explanation="`@{chex}` is written above `@{jit}` on {function} ({where}): it wraps the jitted function, whose "
    "calls are given your arrays, not tracers. chex counts only calls given tracers, so it counts no trace of "
    "{function} and never fires, however often JAX traces it again.",
    rewrite=(Rewritten("order"),),
    fix_note="Put `@{chex}` under `@{jit}`: it then wraps the function JAX traces, and counts each trace.",
)
