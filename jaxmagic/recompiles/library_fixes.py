"""The way each library documents for not building a jitted function again, read from the object
the user built it with: Optax's ``inject_hyperparams`` (an optimizer's learning rate as part of its
state, for a sweep), BlackJAX's ``build_kernel`` (a sampler's parameters as arguments of one jitted
kernel), NumPyro's ``SVI.update`` (jitted once and called in a loop of the user's, where every
``svi.run`` compiles its loop anew) and ``MCMC``'s ``num_samples`` (every ``mcmc.run`` compiles its
sampling loop anew). Each fix is facts: the code to write, with the user's own arguments, and the
names it takes; the words layer says it.

>>> import optax
>>> fix = documented_fix(optax.adam, "optax.adam", [(None, "lr")])
>>> fix.way, fix.code
('inject_hyperparams', 'optax.inject_hyperparams(optax.adam)(learning_rate=lr)')
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class DocumentedFix:
    """``library`` (``optax``), ``way`` (``inject_hyperparams``, ``build_kernel``, ``jit_update``,
    ``more_samples``),
    ``code`` to write instead of the user's call (``""`` where the fix is not code), ``parameters``
    the names that code takes on each call (a kernel's), ``kind`` the class built (``MCMC``)."""

    library: str
    way: str
    code: str = ""
    parameters: tuple[str, ...] = ()
    kind: str = ""


def documented_fix(maker: Any, maker_text: str, arguments: list[tuple[str | None, str]]) -> DocumentedFix | None:
    """The fix for ``maker(*arguments)`` as the user wrote it (``maker_text``; each argument as
    ``(keyword or None, text)``); ``None`` where its library documents none that jaxmagic knows."""
    module = getattr(maker, "__module__", None) or type(maker).__module__ or ""
    library = module.split(".", 1)[0]
    try:
        if library == "optax":
            return _optax(maker, maker_text, arguments)
        if library == "blackjax" and hasattr(maker, "build_kernel"):
            return _blackjax(maker, maker_text)
        if library == "numpyro" and inspect.isclass(maker) and hasattr(maker, "run"):
            # SVI: its own loop is svi.run; a jitted svi.update, called in a loop, compiles once
            way = "jit_update" if hasattr(maker, "update") and hasattr(maker, "init") else "more_samples"
            return DocumentedFix("numpyro", way, kind=maker.__name__)
    except Exception:  # a library's internals moved: no fix said rather than a wrong one
        return None
    return None


def _blackjax(maker: Any, maker_text: str) -> DocumentedFix:
    """``jax.jit(blackjax.nuts.build_kernel(), static_argnames="logdensity_fn")``: the sampler's
    kernel jitted once, its parameters (step size, mass matrix) passed on each call, the
    log-density function (not an array) static."""
    kernel = maker.build_kernel()
    required = [p for p in inspect.signature(kernel).parameters.values() if p.default is p.empty]
    functions = [p.name for p in required if p.name.endswith("_fn")]
    static = f", static_argnames={functions[0]!r}" if len(functions) == 1 else ""
    if len(functions) > 1:
        static = f", static_argnames={tuple(functions)!r}"
    code = f"jax.jit({maker_text}.build_kernel(){static})"
    return DocumentedFix("blackjax", "build_kernel", code, tuple(p.name for p in required))


def _optax(maker: Any, maker_text: str, arguments: list[tuple[str | None, str]]) -> DocumentedFix | None:
    """``optax.inject_hyperparams(optax.adam)(learning_rate=lr, ...)``, for an optimizer whose first
    parameter is its learning rate, written through the user's own name for ``optax``."""
    if "." not in maker_text or not inspect.isfunction(maker):
        return None
    parameters = list(inspect.signature(maker).parameters)
    if not parameters or parameters[0] != "learning_rate":
        return None
    named = []
    for index, (keyword, text) in enumerate(arguments):
        name = keyword or (parameters[index] if index < len(parameters) else None)
        if name is None:
            return None
        named.append(f"{name}={text}")
    prefix = maker_text.rsplit(".", 1)[0]
    return DocumentedFix(
        "optax", "inject_hyperparams", f"{prefix}.inject_hyperparams({maker_text})({', '.join(named)})"
    )
