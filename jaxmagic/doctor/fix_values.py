"""The values a fix is checked by: a second set of arguments where the user's are degenerate (all
zeros, all equal), and the first difference between what the original and the fix return.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

import jaxmagic.doctor.clues as clues
from jaxmagic.doctor.donations import has_deleted, is_nnx_object
from jaxmagic.timing.agreement import mismatch, tolerance

SMALL = 8  # outputs of at most this many elements are shown whole where they differ


def _is_graph_node(value: Any) -> bool:
    """A Flax NNX object that is not one ``Variable`` (a model, an optimizer: not an input to vary)."""
    return is_nnx_object(value) and not isinstance(value, sys.modules["flax.nnx"].Variable)


def _leaves(args: tuple, kwargs: dict) -> list:
    return jax.tree_util.tree_leaves((args, kwargs), is_leaf=_is_graph_node)


def degenerate(args: tuple, kwargs: dict) -> str:
    """Why the arguments could hide a difference: ``"shapes"`` (only their shapes are known),
    ``"zeros"`` (an array holds a 0, what a padding fills with), ``"repeated"`` (an array holds one
    value only, so a mask keeps all or nothing); ``""`` otherwise.

    >>> degenerate((np.arange(3.0),), {}), degenerate((np.ones(3),), {}), degenerate((np.array([2.0, 3.0]),), {})
    ('zeros', 'repeated', '')
    """
    leaves = _leaves(args, kwargs)
    if any(clues.is_tracer(leaf) or (isinstance(leaf, jax.Array) and has_deleted(leaf)) for leaf in leaves):
        return "shapes"
    for leaf in leaves:
        if (
            not isinstance(leaf, (jax.Array, np.ndarray))
            or leaf.ndim == 0
            or leaf.size > 1_000_000
            or leaf.dtype.kind not in "fcb"
        ):
            continue
        values = np.asarray(leaf)
        if values.dtype.kind != "b" and (values == 0).any():
            return "zeros"
        if values.size > 1 and (values == values.flat[0]).all():
            return "repeated"
    return ""


def generated(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """Arguments of the same shapes and dtypes, float and boolean arrays filled with varied values
    (no two equal, no zeros); integer arrays (indices, sizes, labels) and other values as they are
    (those JAX no longer holds, as arrays of the same shape in the range 0..3).

    >>> import jax.numpy as jnp
    >>> (x,), _ = generated((jnp.zeros(3),), {})
    >>> x.shape, len(set(x.tolist())), 0.0 in x.tolist()
    ((3,), 3, False)
    """
    rng = np.random.default_rng(0)

    def fill(leaf):
        unreadable = clues.is_tracer(leaf) or (isinstance(leaf, jax.Array) and has_deleted(leaf))
        dtype, shape = getattr(leaf, "dtype", None), getattr(leaf, "shape", None)
        if unreadable and dtype is not None and shape is not None and jax.numpy.issubdtype(dtype, jax.dtypes.prng_key):
            keys = jax.random.split(jax.random.key(0), max(1, math.prod(shape)))
            return keys[0] if not shape else keys.reshape(shape)  # a key JAX no longer holds: a new one
        if dtype is None or shape is None or (not shape and not unreadable) or np.dtype(dtype).kind not in "fcbiu":
            return leaf
        if np.dtype(dtype).kind in "iu":
            if not unreadable:
                return leaf
            values = rng.integers(0, 4, size=shape)
        elif np.dtype(dtype).kind == "b":
            values = rng.permutation(np.arange(int(np.prod(shape))) % 2 == 0).reshape(shape)
        else:
            values = np.sign(rng.uniform(-1, 1, shape)) * rng.uniform(0.5, 3.0, shape)
        made = values.astype(dtype)
        return made if isinstance(leaf, np.ndarray) else jax.numpy.asarray(made)

    made_args, made_kwargs = jax.tree_util.tree_map(fill, (args, kwargs), is_leaf=_is_graph_node)
    return tuple(made_args), made_kwargs


def shown(value: Any) -> str:
    """A result as text where it is small (at most ``SMALL`` elements, all arrays); else ``""``."""
    leaves = jax.tree_util.tree_leaves(value)
    if not leaves or sum(int(np.size(leaf)) for leaf in leaves) > SMALL:
        return ""
    try:
        shown = jax.tree_util.tree_map(lambda leaf: np.asarray(leaf).tolist(), value)
    except Exception:
        return ""
    return repr(shown)


@dataclass(frozen=True)
class Difference:
    """Where a fix's result first differs from the user's: ``where`` (the output's path, ``[0]``),
    ``kind`` (``structure``, ``shape`` or ``value``), and what each side has there (text: how many
    values, a shape, an element; ``index``: the element's, for a value).

    >>> first_difference(np.ones(2), np.array([1.0, 3.0]))
    Difference(where='', kind='value', original='1.0', fixed='3.0', index=(1,))
    """

    where: str
    kind: str
    original: str
    fixed: str
    index: tuple = ()


def first_difference(original: Any, fixed: Any) -> Difference | None:
    """The first place ``fixed`` differs from ``original`` beyond each dtype's tolerance (``None``:
    the same values)."""
    if mismatch(original, fixed) is None:
        return None
    left, right = jax.tree_util.tree_flatten_with_path(original), jax.tree_util.tree_flatten_with_path(fixed)
    if left[1] != right[1]:
        return Difference("", "structure", str(len(left[0])), str(len(right[0])))
    for (path, a), (_, b) in zip(left[0], right[0], strict=True):
        if mismatch(a, b) is None:
            continue
        where, a, b = jax.tree_util.keystr(path), np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return Difference(where, "shape", str(a.shape), str(b.shape))
        rtol, atol = max(tolerance(a.dtype), tolerance(b.dtype))
        close = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True) if a.dtype.kind in "biufc" else a == b
        index = tuple(int(i) for i in np.argwhere(~np.asarray(close))[0]) if a.ndim else ()
        return Difference(where, "value", repr(a[index].item()), repr(b[index].item()), index)
    return None


def compared(original: Any, fixed: Any) -> tuple[Difference | None, int]:
    """Where ``fixed`` first differs from ``original`` (``None``: same values), and how many values
    the fix hands back after the original's (``return y, kept``: the original's values first).

    >>> import jax.numpy as jnp
    >>> compared(jnp.ones(2), (jnp.ones(2), jnp.zeros(1)))
    (None, 1)
    >>> compared(jnp.ones(2), jnp.zeros(2))[0].kind
    'value'
    """
    found = first_difference(original, fixed)
    if found is None or not isinstance(fixed, tuple) or len(fixed) < 2:
        return found, 0
    count = len(original) if isinstance(original, tuple) else 1
    head = fixed[:count] if isinstance(original, tuple) else fixed[0]
    if count < len(fixed) and first_difference(original, head) is None:
        return None, len(fixed) - count
    return found, 0


def error_text(exc: BaseException) -> str:
    try:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    except Exception:
        first = ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__
