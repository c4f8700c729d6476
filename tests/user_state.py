"""A snapshot of everything a user's names reach, and what changed between two snapshots.

From each root (a name in the user's namespace) the walk follows what a call can touch: arrays
(their values, dtype, shape, whether deleted), Flax NNX modules, optimizers and variables (their
attributes, the optimizer's step among them), Equinox modules, Flax structs (a ``TrainState``),
containers, ``functools.partial`` (function, arguments, keywords), ``nnx.cached_partial`` and other
closures (each cell by its variable name), bound methods (their object), jitted wrappers (the
function inside) and plain objects (their attributes). Each thing is recorded at the path the user
would write (``optimizer.step.value``, ``step.<closure cached_args>[1]``), and objects by identity
too: a magic that put a copy where the user's object was is caught as well as one that changed a value.
(``outcomes.Snapshot`` checks the namespace's names and JAX's configuration; this, what they reach.)

>>> import numpy as np
>>> state = {"w": np.ones(2), "n": 3}
>>> before = snapshot({"state": state})
>>> state["w"][0] = 5.0
>>> changes(before, snapshot({"state": state}))
["state['w']: array float64[2] [1.0, 1.0] → array float64[2] [5.0, 1.0]"]
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import types
from dataclasses import dataclass
from typing import Any

import numpy as np

MAX_DEPTH = 12
MAX_THINGS = 20_000
_SKIPPED_ATTRIBUTES = ("_object__", "_pytree__", "__")  # NNX's bookkeeping, Python's own


@dataclass(frozen=True)
class Seen:
    """One thing reached: its kind, what it holds, and (for objects) which object it is."""

    kind: str
    value: Any = None
    identity: int | None = None

    def same_as(self, other: "Seen", *, identities: bool) -> bool:
        if self.kind != other.kind or (identities and self.identity != other.identity):
            return False
        if self.kind == "array":
            (dtype, shape, data), (dtype2, shape2, data2) = self.value, other.value
            if (dtype, shape) != (dtype2, shape2):
                return False
            try:
                return bool(np.array_equal(data, data2, equal_nan=data.dtype.kind in "fc"))
            except TypeError:
                return bool(np.array_equal(data, data2))
        return self.value == other.value

    def __str__(self) -> str:
        if self.kind == "array":
            dtype, shape, data = self.value
            flat = data.reshape(-1)[:4].tolist()
            return f"array {dtype}[{','.join(map(str, shape))}] {flat}{' …' if data.size > 4 else ''}"
        if self.kind == "object":
            return f"{self.value} object {self.identity:#x}"
        return f"{self.kind} {self.value}"


def snapshot(roots: dict[str, Any]) -> dict[str, Seen]:
    """Path -> ``Seen`` for everything reachable from ``roots`` (name -> object)."""
    found: dict[str, Seen] = {}
    first_path: dict[int, str] = {}
    keep_alive: list = []  # ids stay unique while the walk runs

    def visit(obj, path: str, depth: int) -> None:
        if len(found) >= MAX_THINGS:
            raise AssertionError(f"more than {MAX_THINGS} things reachable: the snapshot would be partial")
        leaf = _leaf(obj)
        if leaf is not None:
            found[path] = leaf
            return
        if id(obj) in first_path:
            found[path] = Seen("alias", first_path[id(obj)], id(obj))
            return
        first_path[id(obj)] = path
        keep_alive.append(obj)
        found[path] = Seen("object", type(obj).__qualname__, id(obj))
        if depth >= MAX_DEPTH:
            return
        for suffix, child in _children(obj):
            visit(child, path + suffix, depth + 1)

    for name, obj in roots.items():
        visit(obj, name, 0)
    return found


def changes(
    before: dict[str, Seen], after: dict[str, Seen], *, identities: bool = True, arrays_only: bool = False
) -> list[str]:
    """Each difference in words: ``path: before → after`` (or appeared / went away).

    Two snapshots of objects built twice the same way (``identities=False, arrays_only=True``)
    compare the arrays alone, at paths that do not go through an object's address (a cache keyed
    by ``id``) : identities, counters of objects made and addresses differ between the two builds.
    """
    if arrays_only:
        before, after = _arrays(before), _arrays(after)
    said = []
    for path in sorted(before.keys() | after.keys()):
        old, new = before.get(path), after.get(path)
        if old is None:
            said.append(f"{path}: appeared as {new}")
        elif new is None:
            said.append(f"{path}: went away (was {old})")
        elif not old.same_as(new, identities=identities):
            said.append(f"{path}: {old} → {new}")
    return said


def _arrays(seen: dict[str, Seen]) -> dict[str, Seen]:
    import re

    return {
        path: thing
        for path, thing in seen.items()
        if thing.kind in ("array", "deleted array") and not re.search(r"\[\d{7,}\]", path)
    }


def _leaf(obj) -> Seen | None:
    import jax

    if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes)):
        return Seen("value", repr(obj))
    if isinstance(obj, jax.Array):
        if obj.is_deleted():
            return Seen("deleted array", None, id(obj))
        if jax.dtypes.issubdtype(obj.dtype, jax.dtypes.prng_key):
            obj = jax.random.key_data(obj)
        return Seen("array", (str(obj.dtype), tuple(obj.shape), np.array(obj, copy=True)), id(obj))
    if isinstance(obj, np.ndarray):
        return Seen("array", (str(obj.dtype), obj.shape, obj.copy()), id(obj))
    if isinstance(obj, np.generic):
        return Seen("value", repr(obj))
    if isinstance(obj, (types.ModuleType, type, types.BuiltinFunctionType, types.CodeType)) or _is_jax_own(obj):
        return Seen("outside", getattr(obj, "__name__", type(obj).__qualname__))
    return None


def _is_jax_own(obj) -> bool:
    """Devices, shardings, dtypes, tree definitions: JAX's own objects, not the user's state."""
    module = type(obj).__module__ or ""
    return module.startswith(("jaxlib", "jax._src.sharding", "jax._src.mesh", "numpy.dtypes")) or (
        type(obj).__name__ in ("PyTreeDef", "dtype", "Device")
    )


def _children(obj):
    """``(path suffix, child)`` for what ``obj`` holds, as the user would write the path."""
    if isinstance(obj, dict):
        return [(f"[{key!r}]", value) for key, value in list(obj.items())]
    if isinstance(obj, (list, tuple)):
        named = getattr(type(obj), "_fields", None)  # a NamedTuple (optax's states)
        if named:
            return [(f".{name}", value) for name, value in zip(named, obj, strict=False)]
        return [(f"[{i}]", value) for i, value in enumerate(obj)]
    if isinstance(obj, (set, frozenset)):
        return [(f"{{{i}}}", value) for i, value in enumerate(sorted(obj, key=repr))]
    if isinstance(obj, functools.partial):
        return [(".func", obj.func), *((f".args[{i}]", a) for i, a in enumerate(obj.args))] + [
            (f".keywords[{k!r}]", v) for k, v in obj.keywords.items()
        ]
    if inspect.ismethod(obj):
        return [(".__self__", obj.__self__), (".__func__", obj.__func__)]
    if isinstance(obj, types.FunctionType):
        cells = []
        for name, cell in zip(obj.__code__.co_freevars, obj.__closure__ or (), strict=False):
            with contextlib.suppress(ValueError):  # an empty cell
                cells.append((f".<closure {name}>", cell.cell_contents))
        defaults = [(f".__defaults__[{i}]", d) for i, d in enumerate(obj.__defaults__ or ())]
        wrapped = [(".__wrapped__", obj.__wrapped__)] if hasattr(obj, "__wrapped__") else []
        return cells + defaults + wrapped + _attributes(obj)
    wrapped = getattr(obj, "__wrapped__", None)
    held = [(".__wrapped__", wrapped)] if wrapped is not None else []
    if _is_jit_wrapper(obj):  # jax.jit, nnx.jit, eqx.filter_jit: the function inside, not their caches
        return held
    variable_value = _variable_value(obj)
    if variable_value is not None:  # its value; the rest is NNX's bookkeeping of traces
        return [*held, (".value", variable_value)] + [(s, v) for s, v in _attributes(obj) if not s.startswith("._")]
    return held + _attributes(obj)


def _is_jit_wrapper(obj) -> bool:
    module = type(obj).__module__ or ""
    return module.startswith(("jaxlib", "jax.", "flax.nnx.transforms", "equinox._jit"))


def _variable_value(obj):
    """An NNX ``Variable``'s value (``Param``, ``OptState``, ``BatchStat``), read as NNX reads it."""
    nnx = _nnx()
    if nnx is None or not isinstance(obj, nnx.Variable):
        return None
    getter = getattr(obj, "get_value", None)
    return getter() if getter is not None else obj.value


def _attributes(obj) -> list:
    try:
        attributes = vars(obj)
    except TypeError:
        slots = [s for klass in type(obj).__mro__ for s in getattr(klass, "__slots__", ())]
        attributes = {s: getattr(obj, s) for s in slots if isinstance(s, str) and hasattr(obj, s)}
    return [
        (f".{name}", value)
        for name, value in list(attributes.items())
        if isinstance(name, str) and not name.startswith(_SKIPPED_ATTRIBUTES)
    ]


def _nnx():
    import sys

    return sys.modules.get("flax.nnx")
