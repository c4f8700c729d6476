"""What a function object is made of, where JAX's caches see only the object: its code, the values
its closure captures, its defaults, what a ``functools.partial`` binds, the object a bound method
belongs to, the plain values and arrays of the globals the user's own code reads (jit takes a
global's value once, when it traces; a library's module-level counters are its own business), and
the same of every function it holds in turn. Two readings of "the same" function
compared say what differs between them: ``lr``: 0.1 → 0.01.

A reading keeps text, plain values and weak references, never the user's objects themselves.

>>> def make_step(lr):
...     def step(w, g):
...         return w - lr * g
...     return step
>>> [(c.name, c.role, c.before, c.after) for c in what_differs(made_of(make_step(0.1)), made_of(make_step(0.01)))]
[('lr', 'captured', '0.1', '0.01')]
>>> what_differs(made_of(make_step(0.1)), made_of(make_step(0.1)))
[]
"""

from __future__ import annotations

import contextlib
import dis
import functools
import hashlib
import inspect
import weakref
from dataclasses import dataclass, field
from typing import Any

from jaxmagic.recompiles.leaves import describe_leaf, is_simple, without_addresses
from jaxmagic.tracing.sources import is_users_code
from jaxmagic.words.units import shorten

MAX_PARTS = 160  # values read from one function, nested functions included
MAX_DEPTH = 12  # functions inside functions (and containers) followed
MAX_ITEMS = 32  # items of one container followed
MAX_ARRAY_BYTES = 4096  # arrays up to this size are compared by their values, larger ones by identity
TEXT = 40  # longest text kept for one value


@dataclass(frozen=True)
class Part:
    """One value a function holds: ``path`` from the function (``("lr",)``; ``("optimizer", ".update",
    "step_size")`` for a value held by a function held by a named tuple the closure captured),
    ``role`` (``captured``, ``default``, ``bound`` by a partial, ``self`` of a bound method, or
    ``code`` for the code of the function at that path), a ``text`` a reader compares and a ``key``
    (equal keys: the same value for JAX's purposes and the reader's)."""

    path: tuple[str, ...]
    role: str
    text: str
    key: Any
    ref: Any = field(default=None, compare=False, repr=False)  # weak reference, for an object kept by identity

    @property
    def name(self) -> str:
        """The name a reader knows the value by: the last of its path that is not an index."""
        named = [p for p in self.path if not p.startswith("[")]
        return (named[-1] if named else "".join(self.path)).lstrip(".")

    def same_as(self, other: "Part") -> bool:
        """Whether ``other`` (a later reading at the same path) holds the same value: an object
        kept by identity is the same only while the first one is still alive (Python reuses the
        addresses of objects gone)."""
        if self.key != other.key:
            return False
        if self.ref is None:
            return True
        return self.ref() is not None and self.ref() is (other.ref() if other.ref is not None else None)


@dataclass(frozen=True)
class Change:
    """One value that differs between two readings: ``path``, ``role``, and its ``before`` /
    ``after`` texts (``"(none)"`` where one reading held nothing at that path)."""

    path: tuple[str, ...]
    role: str
    before: str
    after: str

    @property
    def name(self) -> str:
        return Part(self.path, self.role, "", None).name


def made_of(fun: Any) -> tuple[Part, ...]:
    """What ``fun`` is made of, as ``Part`` objects (its own code first); ``()`` for something
    that is not a Python function, a partial, a bound method or a wrapper of one."""
    reader = _Reader()
    with contextlib.suppress(Exception):  # an exotic callable: what was read stands
        reader.function(fun, (), 0)
    return tuple(reader.parts)


def what_differs(before: tuple[Part, ...], after: tuple[Part, ...]) -> list[Change]:
    """Every value that differs between two readings (``made_of``), in the order of ``after``;
    where a function's code changed, what it holds is not compared further.

    >>> def make(n):
    ...     return lambda x, k=n: x + k * n
    >>> [(c.name, c.role, c.before, c.after) for c in what_differs(made_of(make(1)), made_of(make(2)))]
    [('n', 'captured', '1', '2'), ('k', 'default', '1', '2')]
    """
    old = {(p.path, p.role): p for p in before}
    new = {(p.path, p.role): p for p in after}
    changed_code = [
        p.path for p in after if p.role == "code" and (p.path, "code") in old and not old[p.path, "code"].same_as(p)
    ]
    changes = []
    for place in [*new, *(k for k in old if k not in new)]:
        path, role = place
        if any(path[: len(c)] == c and (len(path) > len(c) or role != "code") for c in changed_code):
            continue  # inside a function whose code changed: that is the difference
        was, now = old.get(place), new.get(place)
        if was is not None and now is not None and was.same_as(now):
            continue
        changes.append(Change(path, role, was.text if was else "(none)", now.text if now else "(none)"))
    return changes


def code_digest(code: Any) -> str:
    """A short digest of a code object: its bytecode, the names and constants it uses (nested
    code included), so that a function defined again with other code is told from one made
    again from the same code.

    >>> code_digest((lambda x: x + 1).__code__) == code_digest((lambda x: x + 1).__code__)
    True
    >>> code_digest((lambda x: x + 1).__code__) == code_digest((lambda x: x + 2).__code__)
    False
    """
    digest = hashlib.blake2b(digest_size=8)
    stack = [code]
    while stack:
        item = stack.pop()
        digest.update(item.co_code)
        digest.update(repr(item.co_names).encode())
        for constant in item.co_consts:
            if inspect.iscode(constant):
                stack.append(constant)
            else:
                digest.update(repr(constant).encode())
    return digest.hexdigest()


_UNSET = object()
_LOADS = ("LOAD_GLOBAL", "LOAD_NAME")


def _globals_read(code: Any) -> list[str]:
    """The globals ``code`` and the functions defined in it read, in order (not the attributes it
    reads, whose names the code object keeps beside them).

    >>> t = 2
    >>> _globals_read((lambda v: v.t * t).__code__)
    ['t']
    >>> _globals_read((lambda v: v.mean()).__code__)
    []
    """
    names = list(dict.fromkeys(i.argval for i in dis.get_instructions(code) if i.opname in _LOADS))
    for const in code.co_consts:
        if inspect.iscode(const):
            names += [n for n in _globals_read(const) if n not in names]
    return names


class _Reader:
    def __init__(self):
        self.parts: list[Part] = []
        self.seen: set[int] = set()

    def add(self, path, role, text, key, ref=None) -> None:
        if len(self.parts) < MAX_PARTS:
            self.parts.append(Part(tuple(path), role, shorten(text, TEXT), key, ref))

    def function(self, fun: Any, path: tuple, depth: int) -> None:
        """A callable at ``path``: its code and what it holds (a partial's function and what it
        binds, a bound method's function and object, a wrapper's wrapped function)."""
        if id(fun) in self.seen or depth > MAX_DEPTH or len(self.parts) >= MAX_PARTS:
            return
        self.seen.add(id(fun))
        if isinstance(fun, functools.partial):
            self.function(fun.func, path, depth + 1)
            for index, value in enumerate(fun.args):
                self.value(value, (*path, f"argument {index + 1}"), "bound", depth + 1)
            for name, value in fun.keywords.items():
                self.value(value, (*path, name), "bound", depth + 1)
        elif inspect.ismethod(fun):
            self.function(fun.__func__, path, depth + 1)
            self.value(fun.__self__, (*path, "self"), "self", depth + 1)
        elif inspect.isfunction(fun):
            self._python_function(fun, path, depth)
        elif getattr(fun, "__wrapped__", None) is not None:  # jax.jit's wrapper and functools.wraps
            self.function(fun.__wrapped__, path, depth + 1)

    def _python_function(self, fun, path: tuple, depth: int) -> None:
        code = fun.__code__
        self.add(path, "code", _function_text(fun), ("code", code_digest(code)))
        for name, cell in zip(code.co_freevars, fun.__closure__ or (), strict=False):
            try:
                value = cell.cell_contents
            except ValueError:  # a cell not filled yet
                continue
            self.value(value, (*path, name), "captured", depth + 1)
        positional = code.co_varnames[: code.co_argcount]
        defaults = fun.__defaults__ or ()
        for name, value in zip(positional[len(positional) - len(defaults) :], defaults, strict=True):
            self.value(value, (*path, name), "default", depth + 1)
        for name, value in (fun.__kwdefaults__ or {}).items():
            self.value(value, (*path, name), "default", depth + 1)
        for name in _globals_read(code) if is_users_code(code, fun.__globals__.get("__name__")) else ():
            value = fun.__globals__.get(name, _UNSET)
            if is_simple(value) or (hasattr(value, "shape") and hasattr(value, "dtype")):
                self.value(value, (*path, name), "global", depth + 1)

    def value(self, value: Any, path: tuple, role: str, depth: int) -> None:
        """A value held at ``path``: a plain value as itself, an array by its type (and its values,
        when small), a function by what it is made of, a container by its items, any other object
        by its identity."""
        if is_simple(value):
            self.add(path, role, repr(value), ("value", type(value).__name__, value))
        elif hasattr(value, "shape") and hasattr(value, "dtype"):
            self._array(value, path, role)
        elif inspect.isfunction(value) or inspect.ismethod(value) or isinstance(value, functools.partial):
            self.add(path, role, _function_text(value), ("function",))
            self.function(value, path, depth)
        elif depth <= MAX_DEPTH and _items(value) is not None and id(value) not in self.seen:
            self.seen.add(id(value))
            self.add(path, role, type(value).__name__, ("container", type(value).__qualname__))
            for key, item in (_items(value) or [])[:MAX_ITEMS]:
                self.value(item, (*path, key), role, depth + 1)
        else:
            self.add(path, role, _object_text(value), ("object", type(value).__qualname__, id(value)), _weak(value))

    def _array(self, value: Any, path: tuple, role: str) -> None:
        text = describe_leaf(value).type_text
        contents = _array_digest(value)
        if contents is not None:
            self.add(path, role, text, ("array", text, contents))
        else:
            self.add(path, role, text, ("array", text, id(value)), _weak(value))


def _items(value: Any) -> list[tuple[str, Any]] | None:
    """The items of a container a closure holds, each with its place (``[0]``, ``.update``,
    ``['w']``); ``None`` for anything else."""
    fields = getattr(type(value), "_fields", None)
    if isinstance(value, tuple) and isinstance(fields, tuple):  # a named tuple: an optax transformation
        return [(f".{name}", item) for name, item in zip(fields, value, strict=False)]
    if type(value) in (tuple, list):
        return [(f"[{index}]", item) for index, item in enumerate(value)]
    if type(value) is dict:
        return [(f"[{key!r}]", item) for key, item in value.items()]
    return None


def _array_digest(value: Any) -> str | None:
    """A digest of a small concrete array's values; ``None`` for a large one or a traced one."""
    try:
        import numpy as np
        from jax.core import Tracer

        if isinstance(value, Tracer) or value.size * value.dtype.itemsize > MAX_ARRAY_BYTES:
            return None
        return hashlib.blake2b(np.asarray(value).tobytes(), digest_size=8).hexdigest()
    except Exception:
        return None


def _function_text(fun: Any) -> str:
    name = getattr(fun, "__qualname__", None) or getattr(fun, "__name__", None) or type(fun).__name__
    return f"function {str(name).rsplit('.<locals>.', 1)[-1]}"


def _object_text(value: Any) -> str:
    """An object by its kind: ``Config``; a short text where it has one of its own (no address)."""
    try:
        text = without_addresses(repr(value))
    except Exception:
        text = ""
    kind = type(value).__name__
    return text if text and not text.startswith("<") and len(text) <= TEXT else kind


def _weak(value: Any):
    try:
        return weakref.ref(value)
    except TypeError:
        return None
