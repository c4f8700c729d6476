"""Donated arguments, shared by the donation pitfalls: whether a value holds an array JAX deleted
(a plain array, any pytree of them, a Flax NNX model or state), which parameters a jitted callee
donates (``jax.jit``, ``nnx.jit``, ``eqx.filter_jit``), and the call in the user's code that donated
a name (this cell first, then the ones run before it).

>>> import jax, jax.numpy as jnp
>>> p = jnp.ones(2)
>>> _ = jax.jit(lambda p: p * 2, donate_argnums=0)(p)
>>> has_deleted(p), has_deleted({"w": p}), has_deleted(jnp.ones(2))
(True, True, False)
"""

from __future__ import annotations

import ast
import linecache
import sys
from typing import Any, Callable

import jax

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic import _jax_private
from jaxmagic.doctor.clues import ParsedSource, UserFrame
from jaxmagic.tracing import callables

MAX_SEARCHED_FILES = 60  # cells and files searched for the call that donated an array
MAX_SEARCHED_LINES = 5000


def has_deleted(value: Any) -> bool:
    """True when ``value`` is, or holds, an array JAX deleted: a pytree of arrays (an ``nnx.State``
    too), or a Flax NNX object (a model, an optimizer) whose Variables hold one."""
    if isinstance(value, jax.Array):
        try:
            return value.is_deleted()
        except Exception:
            return False
    if value is None or isinstance(value, (str, bytes, int, float, complex)):
        return False
    try:
        leaves = jax.tree_util.tree_leaves(nnx_arrays(value) if is_nnx_object(value) else value)
    except Exception:
        return False
    return any(isinstance(leaf, jax.Array) and has_deleted(leaf) for leaf in leaves)


def is_nnx_object(value: Any) -> bool:
    """True for a Flax NNX graph node (a module, an optimizer, ``Rngs``): never imports Flax."""
    graph = sys.modules.get("flax.nnx.graph")
    if graph is None:
        return False
    try:
        return bool(graph.is_graph_node(value))
    except Exception:
        return False


def nnx_arrays(node: Any) -> Any:
    """The arrays a Flax NNX object's Variables hold, as a pytree (``nnx.state``)."""
    from flax import nnx  # the object exists, so Flax is imported already

    return nnx.state(node)


def nnx_jit(fn: Any) -> bool:
    """True for a function wrapped in Flax's ``nnx.jit``."""
    return (type(fn).__module__, type(fn).__qualname__) == ("flax.nnx.transforms.compilation", "JitWrapped")


def is_donating_jit(fn: Any) -> bool:
    """True for a jitted callee that may donate: ``jax.jit``, ``nnx.jit`` or ``eqx.filter_jit``."""
    return _jax_private.is_jitted(fn) or nnx_jit(fn) or eqx_jit(fn)


def eqx_jit(fn: Any) -> bool:
    """True for a function wrapped in ``eqx.filter_jit`` (Equinox's own donation options)."""
    return type(fn).__name__ == "_JitWrapper" and type(fn).__module__.startswith("equinox")


def donation_option(fn: Any) -> str:
    """How the user asked for donation, as written: ``donate_argnums`` or Equinox's ``donate=...``."""
    if eqx_jit(fn):
        return 'donate="all"' if getattr(fn, "donate_first", False) else 'donate="all-except-first"'
    return "donate_argnums"


def donated_positions(fn: Any) -> tuple[set[int], set[str]]:
    """The positions and parameter names ``fn`` donates."""
    sig = rewrites.signature_of(fn)
    params = list(sig.parameters) if sig else []
    if eqx_jit(fn):
        donated = {i for i in range(len(params)) if (fn.donate_first if i == 0 else fn.donate_rest)}
        return donated, {params[i] for i in donated}
    options = _jax_private.jit_options(fn.jitted_fn if nnx_jit(fn) else fn)  # NNX hands its options to jax.jit
    names = {*options.donate_argnames, *(params[i] for i in options.donate_argnums if i < len(params))}
    return set(options.donate_argnums), names


def assignment_of(case, frame: UserFrame, name: str, accept) -> tuple[ParsedSource, ast.Assign] | None:
    """The last ``name = <value>`` whose value ``accept(value)`` takes, in ``candidate_sources``
    (this cell first, then the others the user ran): where a callee the failing line calls by name
    was made (``g = jax.vmap(f, ...)``, ``grad_fn = jax.grad(loss)``)."""
    for parsed in candidate_sources(case, frame):
        for assign in reversed(list(clues.nodes_in(parsed.tree, ast.Assign))):
            if [t.id for t in assign.targets if isinstance(t, ast.Name)] == [name] and accept(assign.value):
                return parsed, assign
    return None


def candidate_sources(case, frame: UserFrame) -> list[ParsedSource]:
    """Where a donation may have been written: this file or cell first, then the notebook's other
    cells and the user's other code Python has seen, the most recently run first."""
    found = []
    here = case.parsed(frame)
    if here is not None:
        found.append(here)
    ordered = []  # the most recently run first: Python's line cache keeps the order code ran in
    for filename in reversed(list(linecache.cache)):
        if filename == frame.file:
            continue
        entry = linecache.cache[filename]  # (size, mtime, lines, name), or a lazy loader not read yet
        small = len(entry) == 4 and len(entry[2]) <= MAX_SEARCHED_LINES
        if case.cell_namer(filename) or (clues.is_user_file(filename) and small):
            ordered.append(filename)
    for filename in ordered[:MAX_SEARCHED_FILES]:
        parsed = clues.parse_file(filename)
        if parsed is not None:
            found.append(parsed)
    return found


def find_donation(
    case, frame: UserFrame, passed: str | Callable[[ast.expr], bool]
) -> tuple[ParsedSource, ast.Call, Any, str] | None:
    """``(source, call, callee, parameter)``: the latest call that passed ``passed`` (a name, or
    any argument it accepts) to a jitted function at a donated position."""
    matches = passed if callable(passed) else lambda node: isinstance(node, ast.Name) and node.id == passed
    for index, parsed in enumerate(candidate_sources(case, frame)):
        best = None
        for call in (node for node in ast.walk(parsed.tree) if isinstance(node, ast.Call)):
            if index == 0 and parsed.file == frame.file and call.lineno >= frame.line:
                continue
            callee = clues.resolve(call.func, frame.lookup)
            if not is_donating_jit(callee):
                continue
            _, names = donated_positions(callee)
            for name, node in rewrites.call_parameters(call, callee).items():
                if name in names and matches(node) and (best is None or call.lineno > best[1].lineno):
                    best = (parsed, call, callee, name)
        if best is not None:
            return best
    return None


def callee_name(call: ast.Call | None, callee: Any) -> str:
    """The name the user calls the function by (``step``), else its Python name."""
    if call is not None and isinstance(call.func, (ast.Name, ast.Attribute)):
        return ast.unparse(call.func)
    inner = callables.python_function(callee)
    return inner.__name__ if inner is not None else "the jitted function"
