"""jaxmagic: IPython/Jupyter magics that make JAX's just-in-time compiler visible.

``%load_ext jaxmagic`` gives ``%jaxpr`` (what JAX traced, lowered and compiled), ``%jitcompare``
(eager versus jit, honestly timed), ``%recompiles`` (every recompilation and its cause) and the
doctor (JAX's classic traps explained). Everything the magics do is also a plain function here.

Importing jaxmagic imports neither IPython nor ipywidgets, nor even JAX: each name below loads
its module when first used.

>>> import jax.numpy as jnp
>>> import jaxmagic
>>> report = jaxmagic.trace(jaxmagic.Call(jnp.cos, (jnp.ones(2),), {}))
>>> report.primitive_counts["cos"]
1
"""

# Each public name is loaded by __getattr__ below, so a type checker reading this file sees none of
# those in __all__: it reads their types from __init__.pyi.
# pyright: reportUnsupportedDunderAll=false

from __future__ import annotations

import importlib

__version__ = "0.1.0"

# Type checkers and editors read __init__.pyi beside this file: the same names, imported eagerly.

_PUBLIC = {
    "Call": "jaxmagic.tracing.call",
    "resolve_call": "jaxmagic.tracing.call",
    "JaxprReport": "jaxmagic.tracing.stages",
    "JaxprView": "jaxmagic.render.jaxpr",
    "trace": "jaxmagic.tracing.stages",
    "Comparison": "jaxmagic.timing",
    "CompileCost": "jaxmagic.timing.stopwatch",
    "Timing": "jaxmagic.timing",
    "compare": "jaxmagic.timing",
    "SourceLine": "jaxmagic.tracing.sources",
    "RecompileLog": "jaxmagic.recompiles",
    "RecompileEvent": "jaxmagic.recompiles",
    "RecompileLimitExceeded": "jaxmagic.recompiles",
    "Cause": "jaxmagic.recompiles.causes",
    "watch_recompiles": "jaxmagic.recompiles.watch",
    "expect_compiles": "jaxmagic.recompiles.budget",
    "CompileBudgetExceeded": "jaxmagic.recompiles.budget",
    "expect_collectives": "jaxmagic.recompiles.collective_budget",
    "CollectiveBudgetExceeded": "jaxmagic.recompiles.collective_budget",
    "UsageProblem": "jaxmagic.errors",
    "UserCodeError": "jaxmagic.errors",
    "Diagnosis": "jaxmagic.doctor",
    "PITFALLS": "jaxmagic.doctor",
    "diagnose": "jaxmagic.doctor",
    "observe_trace": "jaxmagic.doctor",
}

__all__ = [
    "PITFALLS",
    "Call",
    "Cause",
    "CollectiveBudgetExceeded",
    "Comparison",
    "CompileBudgetExceeded",
    "CompileCost",
    "Diagnosis",
    "JaxprReport",
    "JaxprView",
    "RecompileEvent",
    "RecompileLimitExceeded",
    "RecompileLog",
    "SourceLine",
    "Timing",
    "UsageProblem",
    "UserCodeError",
    "compare",
    "diagnose",
    "expect_collectives",
    "expect_compiles",
    "load_ipython_extension",
    "observe_trace",
    "resolve_call",
    "trace",
    "unload_ipython_extension",
    "watch_recompiles",
]


def __getattr__(name: str):
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'jaxmagic' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__():
    return __all__


def load_ipython_extension(ipython) -> None:
    """``%load_ext jaxmagic``: register the magics and hooks on this shell."""
    from jaxmagic.magics import load

    load(ipython)


def unload_ipython_extension(ipython) -> None:
    """``%unload_ext jaxmagic``: remove every magic, hook and listener, restore JAX's config."""
    from jaxmagic.magics import unload

    unload(ipython)
