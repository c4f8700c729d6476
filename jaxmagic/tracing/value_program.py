"""What ``--values`` runs on an accelerator beside each equation: a summary of each of its outputs,
computed on the device where the output lives, packed into one small byte array and brought back
with all the others at the end.

Eager code dispatches one compiled program per operation and compiles each distinct operation
once. ``--values`` does the same: each equation is bound as eager code binds it (JAX's own
per-operation programs, shared with the user's eager calls), and after every few equations one
jitted summary program of their outputs (``device_summaries``), compiled once per list of types:
NaNs, infs, min / max / sum of the finite elements (the value itself when it has at most
``SMALL`` elements). No equation waits for a transfer. (One program for the whole jaxpr was
measured too: XLA's compile time grows with every equation and every summary in it, so a Python
loop unrolled 300 times cost seconds to compile where its eager call compiles two kernels.)

>>> import jax.numpy as jnp
>>> x = jnp.log(jnp.full(16, -1.0))
>>> int(unpacked(jax.device_get(summarised([x])), [x])[0]["nans"])
16
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import numpy as np

SMALL = 8  # a value with at most this many elements is returned whole


PACKED = jax.jit(lambda values: packed(values))
MOST_CONCATENATED = 256  # more packed summaries than this come back one by one (one program would compile slowly)
CONCATENATED = jax.jit(lambda parts: jax.numpy.concatenate(parts))


def summarised(values: list) -> Any:
    """The summaries of ``values`` packed into one byte array on the device (``packed``), by a
    program compiled once per list of output types.

    >>> import jax.numpy as jnp
    >>> found = unpacked(jax.device_get(summarised([jnp.arange(20.0), 2.0])), [jnp.arange(20.0), 2.0])
    >>> int(found[0]["maximum"]), found[1]["value"].item()
    (19, 2.0)
    """
    return PACKED([v if hasattr(v, "dtype") else np.asarray(v) for v in values])


def fetched(parts: list) -> list:
    """The packed summaries ``parts`` (``summarised``'s arrays) brought back to the host, as NumPy
    arrays in the same order: concatenated on the device and sent in one transfer where they share
    one device (on a TPU v5e, the MLP's 24: 15% less than bringing each back, warm). A program
    compiles once per list of sizes.

    >>> import jax.numpy as jnp
    >>> parts = [summarised([jnp.arange(20.0)]), summarised([jnp.ones(3, jnp.int32)])]
    >>> [part.nbytes for part in fetched(parts)] == [part.size for part in parts]
    True
    """
    if not parts:
        return []
    devices = {frozenset(part.sharding.device_set) for part in parts}
    if len(parts) > MOST_CONCATENATED or len(devices) != 1 or len(next(iter(devices))) != 1:
        return [np.asarray(part) for part in jax.device_get(parts)]
    whole = np.asarray(jax.device_get(CONCATENATED(parts)))
    return np.split(whole, np.cumsum([part.shape[0] for part in parts])[:-1])


def packed_size(typed: list) -> int:
    """The bytes ``packed`` makes of values of these types (arrays, abstract values or Python
    numbers, as JAX would see them).

    >>> import jax.numpy as jnp
    >>> typed = [jnp.arange(20.0), jnp.ones(3, jnp.int32), 2.0]
    >>> packed_size(typed) == summarised(typed).size
    True
    """
    return sum(_packed_bytes(tuple(np.shape(value)), seen_dtype(value)) for value in typed)


@functools.lru_cache(maxsize=4096)
def _packed_bytes(shape: tuple, dtype) -> int:
    size = int(np.prod(shape, dtype=np.int64))
    return sum(f.itemsize * (size if name == "value" else 1) for name, f in _fields(dtype, size))


def seen_dtype(value: Any):
    """The dtype a jitted program sees for ``value`` (NumPy's float64 is float32 without x64;
    a JAX array's or an abstract value's is already so)."""
    dtype = getattr(value, "dtype", None)
    if dtype is not None and hasattr(value, "weak_type"):
        return dtype
    if dtype is None:
        dtype = np.asarray(value).dtype
    return dtype if _kind(dtype) == "opaque" else jax.dtypes.canonicalize_dtype(dtype)


@functools.lru_cache(maxsize=4096)
def _fields(dtype, size: int) -> tuple[tuple[str, Any], ...]:
    """The summary of one array of ``dtype`` with ``size`` elements, as ``(name, NumPy dtype)``
    in the order they are packed (``value``: the ``size`` elements themselves)."""
    kind = _kind(dtype)
    if kind == "opaque":
        return ()
    if size <= SMALL:
        return (("value", np.dtype(np.uint8) if np.dtype(dtype) == np.bool_ else np.dtype(dtype)),)
    counts = np.dtype(np.int32)
    if kind == "complex":
        return (("nans", counts), ("infs", counts))
    if kind == "int":
        wide = counts if np.dtype(dtype) == np.bool_ else np.dtype(dtype)
        return (("minimum", wide), ("maximum", wide), ("total", np.dtype(np.float32)))
    wide = np.dtype(np.float32) if np.dtype(dtype).itemsize < 4 else np.dtype(dtype)
    return (("nans", counts), ("count", counts), ("minimum", wide), ("maximum", wide), ("total", wide))


def packed(values: list):
    """Every array's summary (``summary_arrays``) as the bytes of one ``uint8`` array: one
    transfer per equation, whatever it computed."""
    import jax.numpy as jnp
    from jax import lax

    pieces = []
    for value in values:
        found = summary_arrays(value)
        for name, dtype in _fields(value.dtype, int(np.prod(value.shape, dtype=np.int64))):
            field = jnp.asarray(found[name]).astype(dtype).reshape(-1)
            pieces.append(lax.bitcast_convert_type(field, jnp.uint8).reshape(-1))
    return jnp.concatenate(pieces) if pieces else jnp.zeros((0,), jnp.uint8)


def unpacked(data, typed: list) -> list[dict]:
    """The summaries ``packed`` wrote, read back from its bytes (``typed``: the arrays, or their
    abstract values, in the same order)."""
    data = np.asarray(data)
    found, start = [], 0
    for value in typed:
        dtype = seen_dtype(value)
        shape = tuple(np.shape(value))
        size = int(np.prod(shape, dtype=np.int64))
        one: dict = {}
        for name, field in _fields(dtype, size):
            count = size if name == "value" else 1
            end = start + count * field.itemsize
            read = np.frombuffer(data[start:end].tobytes(), dtype=field)
            start = end
            one[name] = read.reshape(shape).astype(np.dtype(dtype)) if name == "value" else read[0]
        found.append(one)
    return found


@functools.lru_cache(maxsize=1024)
def _kind(dtype) -> str:
    """How an array is summarised: ``float``, ``complex``, ``int`` (integers and booleans) or
    ``opaque`` (PRNG keys and other extended types: shape and dtype only)."""
    import jax.numpy as jnp

    try:
        if jnp.issubdtype(dtype, jax.dtypes.extended):
            return "opaque"
        kind = np.dtype(dtype).kind
    except TypeError:
        return "opaque"
    return {"f": "float", "V": "float", "c": "complex", "i": "int", "u": "int", "b": "int"}.get(kind, "opaque")


def summary_arrays(value: Any) -> dict:
    """What the device returns of one array: the ``value`` itself when it has at most ``SMALL``
    elements (summarised where it arrives); otherwise ``nans``, ``count`` (finite elements; the
    rest are infs), ``minimum``, ``maximum`` and ``total`` (of the finite elements) of a float;
    ``nans`` and ``infs`` of a complex; ``minimum``, ``maximum`` and ``total`` of an integer."""
    import jax.numpy as jnp

    kind = _kind(value.dtype)
    if kind == "opaque":
        return {}
    size = int(np.prod(value.shape, dtype=np.int64))
    if size <= SMALL:
        return {"value": value}
    if kind == "complex":
        return {"nans": jnp.count_nonzero(jnp.isnan(value)), "infs": jnp.count_nonzero(jnp.isinf(value))}
    if kind == "int":
        wide = value.astype(jnp.int32) if value.dtype == jnp.bool_ else value
        return {"minimum": wide.min(), "maximum": wide.max(), "total": wide.astype(jnp.float32).sum()}
    wide = value.astype(jnp.float32) if value.dtype.itemsize < 4 else value
    nans, count, minimum, maximum, total = _float_summary(wide)
    return {"nans": nans, "count": count, "minimum": minimum, "maximum": maximum, "total": total}


def _float_summary(value):
    """``(nans, finite elements, min, max, sum of the finite elements)``: the plain sum, min and
    max (which XLA computes fast) when the sum is finite, so is every element; the count of NaNs
    and infs, masked, only where it is not."""
    import jax.numpy as jnp
    from jax import lax

    total, minimum, maximum = value.sum(), value.min(), value.max()
    size = int(np.prod(value.shape, dtype=np.int64))

    def all_finite(_):
        return jnp.int32(0), jnp.int32(size), minimum, maximum, total

    return lax.cond(jnp.isfinite(total), all_finite, lambda _: _float_reduction(value), None)


def _float_reduction(value):
    """``(nans, finite elements, min, max, sum of the finite elements)`` in one pass: one kernel."""
    import jax.numpy as jnp
    from jax import lax

    finite = jnp.isfinite(value)
    count_type = jnp.int32
    operands = (
        jnp.isnan(value).astype(count_type),
        finite.astype(count_type),
        jnp.where(finite, value, jnp.inf),
        jnp.where(finite, value, -jnp.inf),
        jnp.where(finite, value, 0),
    )
    dtype = value.dtype
    starts = (
        np.array(0, count_type),
        np.array(0, count_type),
        np.array(np.inf, dtype),
        np.array(-np.inf, dtype),
        np.array(0, dtype),
    )

    def combine(a, b):
        return (a[0] + b[0], a[1] + b[1], jnp.minimum(a[2], b[2]), jnp.maximum(a[3], b[3]), a[4] + b[4])

    return lax.reduce(operands, starts, combine, tuple(range(value.ndim)))
