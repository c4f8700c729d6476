"""Code users write, in the shapes JAX's documentation, JAX's issue tracker and the libraries'
documented examples teach (written here in our own words), as notebook cells and calls.

Each :class:`Case` is one cell (``setup``: what the call needs, imports included) and one call
expression (``call``: what follows ``%jaxpr`` / ``%jitcompare``). A case either runs, or raises the
exception named by ``raises`` (a trap, for the doctor). Cases from one page share their setup
string, so a test can run each setup once::

    from tests.corpus import CASES, Case, running, traps
    for case in running():
        ns = {}
        exec(case.setup, ns)
        eval(case.call, ns)

Tags say what a case exercises; the words in use are listed in :data:`TAGS`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import linecache
import sys
import types
from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    id: str  # stable, e.g. "jax-docs/faq/sum-logistic", "jax-issue/1249-...", "numpyro/svi-run"
    library: str  # "jax", "flax-nnx", "flax-linen", "equinox", "optax", "diffrax", "optimistix", ...
    origin: str  # a docs page path in jax-ml/jax, an issue "jax-ml/jax#NNNN", or a library's docs page
    setup: str  # a notebook cell's source defining what the call needs (imports included)
    call: str  # a call expression, as it follows %jaxpr / %jitcompare, e.g. "sum_logistic(x)"
    raises: str = ""  # "" for code that runs; else the exception class name the call raises
    needs: tuple[str, ...] = ()  # modules it imports (cases are skipped where one is missing)
    tags: frozenset[str] = frozenset()  # e.g. "grad", "nan", "eager-control-flow", "random", ...

    @property
    def available(self) -> bool:
        """Whether every module the case imports is installed here."""
        return all(importlib.util.find_spec(name) is not None for name in self.needs)


# What each tag means (a case may carry several).
TAGS = {
    "grad": "the call differentiates (jax.grad, value_and_grad, jacfwd/jacrev, a library's grad)",
    "nan": "the call's value holds a NaN or inf that the user did not intend (a derivative at a singular point)",
    "eager-control-flow": "lax.scan / while_loop / fori_loop / cond / switch called outside any jit",
    "random": "draws random numbers from a key",
    "training-step": "one step of training: loss, gradient and parameter update",
    "scan": "the program holds a lax.scan (or a library loop built on one)",
    "loop": "the program holds a while_loop / fori_loop",
    "cond": "the program holds lax.cond / lax.switch / jnp.where on a predicate",
    "memory": "a case whose memory matters (large intermediates, residuals, checkpoint policies)",
    "checkpoint": "jax.checkpoint / remat with or without a policy",
    "static": "an argument must be static under jax.jit (a Python value used for a shape, a loop count or a branch)",
    "method": "the callee is a bound method or a callable object",
    "closure": "the callee closes over values defined in the cell (or an earlier one)",
    "captured-constant": "the callee captures an array from the cell as a constant",
    "factory": "the callee is built by a function (a closure factory, a library's builder)",
    "recompile": "the call compiles more than once (new shapes, values, closures or objects each time)",
    "sweep": "the call loops over settings (learning rates, sizes) and rebuilds or recompiles",
    "jitted": "the callee is already jitted (jax.jit, nnx.jit, eqx.filter_jit)",
    "vmap": "the call maps over a batch with jax.vmap",
    "fusion": "a program XLA fuses into few kernels (what --profile shares out)",
    "no-jit": "the call cannot be wrapped in an outer jax.jit (Python side effects, Python objects returned, loops on values on the host)",
    "side-effect": "the callee prints, appends to a list or changes an object",
    "unhashable-static": "a static argument of an unhashable type (dict, list, dataclass, slice, array)",
    "dynamic-shape": "an output shape that depends on values (boolean masks, nonzero, arange(n))",
    "numpy": "NumPy (not jax.numpy) inside a traced function",
    "index": "indexing with traced values",
    "key-reuse": "a PRNG key used twice",
    "leak": "a tracer that escapes its transformation",
    "mcmc": "a Markov chain Monte Carlo step or run",
    "svi": "stochastic variational inference",
    "ode": "an ODE solve",
    "solver": "a root find, least squares, minimisation or linear solve",
    "checkify": "jax.experimental.checkify",
    "callback": "a host callback (pure_callback, io_callback, debug.print)",
    "sharding": "device placement or sharding",
    "precision": "dtypes, x64, weak types, numerics",
    "pytree": "pytrees of parameters (dicts, lists, custom nodes)",
    "compile-time": "a program whose compile time matters (an unrolled Python loop)",
}


def _cases() -> list[Case]:
    from tests.corpus import (
        blackjax,
        chex_orbax,
        diffrax,
        equinox,
        flax_linen,
        flax_nnx,
        jax_docs,
        jax_issues,
        numpyro,
        optax,
    )

    modules = (jax_docs, jax_issues, flax_nnx, flax_linen, equinox, optax, diffrax, chex_orbax, numpyro, blackjax)
    return [case for module in modules for case in module.CASES]


class Cell:
    """One notebook cell from a source, and the cases that call into it.

    >>> cell = Cell("jax", "docs/faq.rst", "jax-docs/faq", "import jax.numpy as jnp\\nx = jnp.ones(3)")
    >>> cell.case("sum", "jnp.sum(x)", tags={"grad"}).id
    'jax-docs/faq/sum'
    """

    def __init__(self, library: str, origin: str, prefix: str, setup: str, *, needs=(), tags=()):
        self.library, self.origin, self.prefix, self.setup = library, origin, prefix, setup
        self.needs, self.tags = tuple(needs), frozenset(tags)

    def case(self, name: str, call: str, raises: str = "", *, tags=(), origin: str = "") -> Case:
        return Case(
            id=f"{self.prefix}/{name}",
            library=self.library,
            origin=origin or self.origin,
            setup=self.setup,
            call=call,
            raises=raises,
            needs=self.needs,
            tags=self.tags | frozenset(tags),
        )


CASES: list[Case] = _cases()


def running() -> list[Case]:
    """The cases whose call runs."""
    return [case for case in CASES if not case.raises]


def traps() -> list[Case]:
    """The cases whose call raises (the doctor's traps)."""
    return [case for case in CASES if case.raises]


def by_id(case_id: str) -> Case:
    """The case with this id."""
    for case in CASES:
        if case.id == case_id:
            return case
    raise KeyError(case_id)


_namespaces: dict[str, dict] = {}


def namespace_of(case: Case) -> dict:
    """The namespace the case's cell leaves, shared by every case of the same cell (run once in
    this process): a module of its own, as a notebook's ``__main__`` is (dataclasses look their
    module up), its source known to linecache, as IPython makes a cell's (chex reads a function's
    source). A case whose libraries are missing is skipped."""
    import pytest

    if not case.available:
        pytest.skip(f"needs {', '.join(case.needs)}")
    if case.setup not in _namespaces:
        module = types.ModuleType(f"corpus_cell_{len(_namespaces)}")
        sys.modules[module.__name__] = module
        filename = f"<corpus cell {len(_namespaces)}>"
        linecache.cache[filename] = (len(case.setup), None, case.setup.splitlines(True), filename)
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(case.setup, filename, "exec"), module.__dict__)
        _namespaces[case.setup] = module.__dict__
    return _namespaces[case.setup]
