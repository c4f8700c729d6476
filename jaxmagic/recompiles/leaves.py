"""One array (or scalar) inside an argument, the way JAX's compilation cache sees it: shape,
dtype, weak type and placement (``LeafType``); or a value that is part of the compiled code's key
itself (``StaticValue``): a static argument, or any non-array under ``eqx.filter_jit``.

>>> import jax.numpy as jnp
>>> describe_leaf(jnp.ones((2, 3))).type_text, describe_leaf(2.0).describe()
('f32[2,3]', 'Python float (weak f32[])')
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from typing import Any

from jaxmagic.words.units import shorten
from jaxmagic.words.untrusted import value_text

MAX_TEXT = 72  # longest text kept for one placement or one value
MAX_FULL_TEXT = 4096  # longest text of a static value compared (its differing part is shown)
_SIMPLE_TYPES = (bool, int, float, complex, str, bytes, type(None), enum.Enum)
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def without_addresses(text: str) -> str:
    """A value's text without the memory addresses Python writes in it: what a reader can compare.

    >>> without_addresses("<function relu at 0x7f3a2c1d>")
    '<function relu>'
    """
    return _ADDRESS.sub("", text)


@dataclass(frozen=True)
class StaticValue:
    """A static value, kept as text plus what equality needs, never the object itself unless it
    is a plain immutable scalar (``2``, ``'relu'``, ``(64, 64)``). ``text`` is what a reader sees
    (no memory addresses); ``full`` the whole ``repr``, compared.

    >>> StaticValue.of(3), StaticValue.of((64, 64)).text
    (StaticValue(text='3', key=('value', 3)), '(64, 64)')
    >>> def relu(v):
    ...     return v
    >>> StaticValue.of(relu).text
    'relu'
    """

    text: str
    key: Any
    full: str = field(default="", compare=False, repr=False)  # the whole repr (up to MAX_FULL_TEXT)
    kind: str = field(default="", compare=False, repr=False)  # its class's name: Config, function
    by_identity: bool = field(default=False, compare=False, repr=False)  # equal only to itself (no __eq__ of its own)

    @classmethod
    def of(cls, value: Any) -> "StaticValue":
        """The ``StaticValue`` of ``value``."""
        full = value_text(value, MAX_FULL_TEXT)
        text = shorten(_function_name(value, full) or without_addresses(full), MAX_TEXT)
        if is_simple(value):
            return cls(text, ("value", value), full)
        try:
            hashed = hash(value)
        except Exception:
            hashed = None
        # A custom object: equal when JAX would find it equal as far as we can tell without
        # keeping it alive: same type, same hash, same text.
        kind = type(value)
        by_identity = kind.__eq__ is object.__eq__ and kind.__hash__ is object.__hash__
        return cls(text, ("object", kind.__qualname__, hashed, full), full, kind.__name__, by_identity)


def _function_name(value: Any, full: str) -> str | None:
    """A function as its user names it (``relu``, ``<lambda>``) rather than by its ``repr``
    (``<PjitFunction of <function relu at 0x7f...>>``); ``None`` for anything else.

    >>> import jax
    >>> _function_name(jax.nn.relu, repr(jax.nn.relu)), _function_name(3, "3")
    ('relu', None)
    """
    if not callable(value) or isinstance(value, type) or not full.startswith("<"):
        return None
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    return name.rsplit(".<locals>.", 1)[-1] if isinstance(name, str) else None


def made_again(old: StaticValue, new: StaticValue) -> bool:
    """Whether ``new`` is another object alike in every visible part to ``old`` (a function or an
    optimizer built again): unequal for JAX, equal to a reader.

    >>> first, second = (lambda v: v), (lambda v: v)
    >>> made_again(StaticValue.of(first), StaticValue.of(second))
    True
    >>> made_again(StaticValue.of(2), StaticValue.of(3))
    False
    """
    return old.key != new.key and without_addresses(old.full or old.text) == without_addresses(new.full or new.text)


def is_simple(value: Any, depth: int = 0) -> bool:
    """A plain immutable value kept as it is: a number, a string, ``None``, a tuple of those.

    >>> is_simple((64, "relu")), is_simple([1])
    (True, False)
    """
    if isinstance(value, _SIMPLE_TYPES):
        return True
    if isinstance(value, (tuple, frozenset)) and depth < 3 and len(value) <= 64:
        return all(is_simple(v, depth + 1) for v in value)
    return False


def is_array(value: Any) -> bool:
    """An array as ``eqx.filter_jit`` tells them (``eqx.is_array``): a ``jax.Array`` or a NumPy
    array or scalar; everything else it makes static.

    >>> import numpy as np
    >>> is_array(np.ones(2)), is_array(2.0)
    (True, False)
    """
    import jax

    return isinstance(value, jax.Array) or _is_numpy(value)


@dataclass(frozen=True)
class LeafType:
    """What JAX keys its cache on for one array leaf: shape, dtype, weak type and placement.

    ``origin`` is ``"array"`` (a ``jax.Array``), ``"numpy"``, or the Python type of a scalar
    (``"float"``, ``"int"``...). ``placement`` is ``None`` for an uncommitted value (JAX picks
    the default device), ``"cpu:1"`` for an array committed to one device, or a sharding's text.

    >>> LeafType(shape=(3,), dtype="f32").describe(), LeafType((), "f32", weak=True, origin="float").describe()
    ('f32[3]', 'Python float (weak f32[])')
    """

    shape: tuple[int, ...] | None
    dtype: str
    weak: bool = False
    origin: str = "array"
    placement: str | None = None
    sharded: bool = False  # True when ``placement`` is a multi-device sharding, not one device
    static: StaticValue | None = None  # a non-array that eqx.filter_jit makes part of the key

    @classmethod
    def of_static(cls, value: Any) -> "LeafType":
        """A non-array leaf that ``eqx.filter_jit`` makes static: its value is part of the key.

        >>> LeafType.of_static(3).describe(), LeafType.of_static(True).type_text
        ('3', 'bool')
        """
        return cls(shape=None, dtype=type(value).__name__, origin="static", static=StaticValue.of(value))

    @property
    def type_text(self) -> str:
        """``f32[3,4]`` (JAX's short notation); the type name for a non-array leaf."""
        if self.shape is None:
            return self.dtype
        return f"{self.dtype}[{','.join(str(d) for d in self.shape)}]"

    def describe(self) -> str:
        """The leaf as a reader should see it: ``f32[3]``, ``Python float (weak f32[])``."""
        if self.static is not None:
            return self.static.text
        if self.origin not in ("array", "numpy") and self.shape is not None:
            return (
                f"Python {self.origin} (weak {self.type_text})"
                if self.weak
                else f"Python {self.origin} ({self.type_text})"
            )
        return f"weak {self.type_text}" if self.weak else self.type_text


def short_dtype(dtype: Any) -> str:
    """JAX's short dtype names: ``float32`` -> ``f32``, ``bfloat16`` -> ``bf16``, ``bool`` -> ``bool``.

    >>> import numpy as np
    >>> short_dtype(np.dtype("float32")), short_dtype(np.dtype("uint8")), short_dtype(np.dtype("bool"))
    ('f32', 'u8', 'bool')
    """
    name = getattr(dtype, "name", str(dtype))
    for long, short in (("bfloat", "bf"), ("complex", "c"), ("float", "f"), ("uint", "u"), ("int", "i")):
        if name.startswith(long) and name[len(long) : len(long) + 1].isdigit():
            return short + name[len(long) :]
    return name


def describe_leaf(value: Any) -> LeafType:
    """The ``LeafType`` of one argument leaf (an array, a NumPy array or a Python scalar).

    A traced value (a ``.trace``, ``.lower`` or ``jax.eval_shape`` inside another trace, such as
    ``eqx.filter_eval_shape``'s) is read by its abstract type alone: it has no placement, and
    asking it for one would try to make it concrete.

    >>> import jax, jax.numpy as jnp
    >>> describe_leaf(jnp.ones((2, 3))).type_text, describe_leaf(1.5).describe()
    ('f32[2,3]', 'Python float (weak f32[])')
    >>> seen = []
    >>> _ = jax.jit(lambda x: seen.append(describe_leaf(x)) or x)(jnp.ones(2))
    >>> seen[0].type_text, seen[0].placement
    ('f32[2]', None)
    """
    import jax

    origin = "array" if isinstance(value, jax.Array) else "numpy" if _is_numpy(value) else type(value).__name__
    try:
        aval = jax.typeof(value)
        shape = tuple(int(d) if isinstance(d, int) else d for d in aval.shape)
        dtype = short_dtype(aval.dtype)
        weak = bool(getattr(aval, "weak_type", False))
    except Exception:  # not an array-like: JAX will reject it itself; describe it by its type
        return LeafType(shape=None, dtype=type(value).__name__, origin=origin)
    placement, sharded = _placement(value)
    return LeafType(shape=shape, dtype=dtype, weak=weak, origin=origin, placement=placement, sharded=sharded)


def _is_numpy(value: Any) -> bool:
    import numpy as np

    return isinstance(value, (np.ndarray, np.generic))


def _placement(value: Any) -> tuple[str | None, bool]:
    """Where a committed array lives: one device (``cpu:1``) or a sharding; ``None`` if
    uncommitted, or traced (a tracer's ``committed`` raises ``ConcretizationTypeError``: never
    asked)."""
    import jax
    from jax.core import Tracer

    if not isinstance(value, jax.Array) or isinstance(value, Tracer):
        return None, False
    try:
        if not value.committed:
            return None, False
        sharding = value.sharding
        devices = sharding.device_set
    except Exception:
        return None, False
    if len(devices) == 1 and type(sharding).__name__ == "SingleDeviceSharding":
        return device_text(next(iter(devices))), False
    return sharding_text(sharding), True


def device_text(device: Any) -> str:
    """``cpu:0``, ``gpu:1``: a device as its platform and id."""
    return f"{getattr(device, 'platform', 'device')}:{getattr(device, 'id', '?')}"


def sharding_text(sharding: Any) -> str:
    """A sharding in a few words: ``P('i') over mesh i=8``, or its shortened repr."""
    spec = getattr(sharding, "spec", None)
    mesh = getattr(sharding, "mesh", None)
    if spec is not None and mesh is not None:
        try:
            axes = " ".join(f"{name}={size}" for name, size in dict(mesh.shape).items())
        except Exception:
            axes = "?"
        return f"{spec} over mesh {axes}"
    return shorten(repr(sharding), MAX_TEXT)
