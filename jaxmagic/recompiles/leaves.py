"""One array (or scalar) inside an argument, the way JAX's compilation cache sees it: shape,
dtype, weak type and placement (``LeafType``).

>>> import jax.numpy as jnp
>>> describe_leaf(jnp.ones((2, 3))).type_text, describe_leaf(2.0).describe()
('f32[2,3]', 'Python float (weak f32[])')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jaxmagic.units import shorten

MAX_TEXT = 72  # longest text kept for one placement


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

    @property
    def type_text(self) -> str:
        """``f32[3,4]`` (JAX's short notation); the type name for a non-array leaf."""
        if self.shape is None:
            return self.dtype
        return f"{self.dtype}[{','.join(str(d) for d in self.shape)}]"

    def describe(self) -> str:
        """The leaf as a reader should see it: ``f32[3]``, ``Python float (weak f32[])``."""
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

    >>> import jax.numpy as jnp
    >>> describe_leaf(jnp.ones((2, 3))).type_text, describe_leaf(1.5).describe()
    ('f32[2,3]', 'Python float (weak f32[])')
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
    """Where a committed array lives: one device (``cpu:1``) or a sharding; ``None`` if uncommitted."""
    import jax

    if not isinstance(value, jax.Array) or not getattr(value, "committed", False):
        return None, False
    try:
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
