"""Do two modes give the same result? Outputs are compared leaf by leaf, within a tolerance that
suits each dtype (XLA's fusion may reorder float arithmetic, so bit equality is not expected).

>>> import jax.numpy as jnp
>>> mismatch({"y": jnp.ones(3)}, {"y": jnp.ones(3) + 1e-7}) is None
True
>>> print(mismatch({"y": jnp.ones(3)}, {"y": jnp.array([1.0, 2.0, 1.0])}))
output['y']: values differ by up to 1 (at index (1,)): 1 vs 2, beyond rtol=0.0001, atol=1e-05
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import numpy as np

from jaxmagic.words import units

# dtype kind / item size -> (rtol, atol)
_TOLERANCES = {
    ("f", 2): (1e-2, 1e-2),  # float16, bfloat16
    ("f", 4): (1e-4, 1e-5),
    ("f", 8): (1e-9, 1e-12),
    ("c", 8): (1e-4, 1e-5),
    ("c", 16): (1e-9, 1e-12),
}


def tolerance(dtype) -> tuple[float, float]:
    """``(rtol, atol)`` for comparing arrays of ``dtype``; integers and booleans must be equal.

    >>> tolerance("float32"), tolerance("int32")
    ((0.0001, 1e-05), (0.0, 0.0))
    """
    dtype = np.dtype(dtype)
    kind = _kind(dtype)
    if kind in "fc":
        return _TOLERANCES.get((kind, dtype.itemsize), (1e-2, 1e-2))
    return 0.0, 0.0


def _kind(dtype) -> str:
    """``f`` / ``c`` / ``i`` (integers, booleans) / ``o`` (other), bfloat16 and friends included."""
    if jax.numpy.issubdtype(dtype, jax.numpy.complexfloating):
        return "c"
    if jax.numpy.issubdtype(dtype, jax.numpy.floating):
        return "f"
    if jax.numpy.issubdtype(dtype, jax.numpy.integer) or jax.numpy.issubdtype(dtype, jax.numpy.bool_):
        return "i"
    return "o"


@dataclass(frozen=True)
class Mismatch:
    """Where two outputs first differ, and how.

    >>> str(Mismatch("output[0]", "the shape differs: (3,) vs (4,)"))
    'output[0]: the shape differs: (3,) vs (4,)'
    """

    where: str
    detail: str

    def __str__(self) -> str:
        return f"{self.where}: {self.detail}"


def mismatch(reference, output, *, rtol: float | None = None, atol: float | None = None) -> Mismatch | None:
    """The first difference between ``output`` and ``reference`` beyond tolerance, or ``None``.

    Leaves of ``reference`` that are ``None`` are not compared. ``rtol`` / ``atol`` override the
    per-dtype defaults of ``tolerance``.
    """
    reference, output = _readable(reference), _readable(output)
    ref_leaves, _ = jax.tree_util.tree_flatten_with_path(reference, is_leaf=lambda x: x is None)
    out_leaves, _ = jax.tree_util.tree_flatten_with_path(output, is_leaf=lambda x: x is None)
    if len(ref_leaves) != len(out_leaves) or [p for p, _ in ref_leaves] != [p for p, _ in out_leaves]:
        return Mismatch("output", f"the structure differs: {_structure(reference)} vs {_structure(output)}")
    for (path, expected), (_, actual) in zip(ref_leaves, out_leaves, strict=True):
        if expected is None:
            continue
        where = "output" + jax.tree_util.keystr(path)
        found = _leaf_mismatch(expected, actual, rtol, atol)
        if found is not None:
            return Mismatch(where, found)
    return None


def _readable(tree):
    """``tree`` with each ``checkify`` error as what the user reads of it: ``err.get()``, its message
    or ``None``. Its leaves are bookkeeping (error codes numbered per trace), which eager and jit
    number differently for the same outcome.

    >>> import jax.numpy as jnp
    >>> from jax.experimental import checkify
    >>> def f(x):
    ...     checkify.check(x > 0, "x must be positive")
    ...     return x
    >>> err, out = checkify.checkify(f)(jnp.float32(1.0))
    >>> _readable((err, out))[0] is None
    True
    """
    from jax.experimental import checkify

    def read(leaf):
        return leaf.get() if isinstance(leaf, checkify.Error) else leaf

    return jax.tree_util.tree_map(read, tree, is_leaf=lambda x: isinstance(x, checkify.Error) or x is None)


def _structure(tree) -> str:
    return units.shorten(jax.tree.structure(tree, is_leaf=lambda x: x is None), 80)


def _key_data(value):
    """A typed PRNG key's raw bits (what two keys are compared by); any other value as it is."""
    dtype = getattr(value, "dtype", None)
    try:
        if dtype is not None and jax.numpy.issubdtype(dtype, jax.dtypes.prng_key):
            return jax.random.key_data(value)
    except TypeError:
        pass
    return value


def _leaf_mismatch(expected, actual, rtol, atol) -> str | None:
    expected, actual = _key_data(expected), _key_data(actual)
    try:
        want = np.asarray(expected)
        got = np.asarray(actual)
    except Exception:
        try:
            same = bool(expected == actual)
        except Exception:
            same = expected is actual
        return None if same else f"{expected!r} vs {actual!r}"
    if want.shape != got.shape:
        return f"the shape differs: {want.shape} vs {got.shape}"
    kinds = _kind(want.dtype), _kind(got.dtype)
    if "o" in kinds:
        return None if np.array_equal(want, got) else "the values differ"
    # The less precise of the two dtypes sets the tolerance (a Python float against a float32).
    (rtol_a, atol_a), (rtol_b, atol_b) = tolerance(want.dtype), tolerance(got.dtype)
    default_rtol, default_atol = max(rtol_a, rtol_b), max(atol_a, atol_b)
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    wide = np.complex128 if "c" in kinds else np.float64
    want64 = want.astype(wide)
    got64 = got.astype(wide)
    close = np.isclose(got64, want64, rtol=rtol, atol=atol, equal_nan=True)
    if close.all():
        return None
    gaps = np.where(close, 0.0, np.abs(got64 - want64))
    gaps = np.where(np.isnan(gaps), np.inf, gaps)
    worst = np.unravel_index(int(np.argmax(gaps)), gaps.shape) if gaps.ndim else ()
    largest = gaps[worst] if gaps.ndim else gaps
    at = f" (at index {tuple(int(i) for i in worst)})" if gaps.ndim else ""
    both = f"{_scalar(want64[worst] if gaps.ndim else want64)} vs {_scalar(got64[worst] if gaps.ndim else got64)}"
    if np.isinf(largest):  # one side is inf or NaN where the other is not: show both values
        return f"values differ{at}: {both}"
    return f"values differ by up to {float(largest):.4g}{at}: {both}, beyond rtol={rtol:g}, atol={atol:g}"


def _scalar(value) -> str:
    """One element as a person reads it: ``NaN``, ``inf``, ``-inf`` or the number."""
    if np.iscomplexobj(value):
        return str(complex(value))
    value = float(value)
    return "NaN" if np.isnan(value) else f"{value:.6g}"
