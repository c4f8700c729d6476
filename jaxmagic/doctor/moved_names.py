"""JAX's moved and removed names, as data: each entry the old dotted name, its new spelling, the
JAX versions that deprecated and removed it, and a one-line note; with what an entry's import
reads (``Moved.imported``) and which module a dotted name is in (``module_of``). Read by
``pitfall_moved_name``; the versions come from JAX's CHANGELOG.

``new`` is a dotted name that exists on every JAX this package supports (a test resolves each
one). ``call`` is set where the new spelling takes the arguments differently: the call written
anew, ``{0}``, ``{1}``... its arguments as the user wrote them, ``{jax}`` the user's name for
``jax``. ``drop_in`` is ``False`` where no mechanical rewrite is right (the fix is then words).

>>> MOVED["jax.tree_map"].new, MOVED["jax.tree_map"].removed
('jax.tree.map', '0.6.0')
>>> MOVED["jax.numpy.softmax"].removed is None  # never part of jax.numpy
True
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Moved:
    """One old name and what replaces it (see the module docstring)."""

    old: str
    new: str
    deprecated: str | None  # the JAX version that deprecated it (None: never deprecated / never existed)
    removed: str | None  # the JAX version that removed it (None: never existed there)
    note: str
    call: str | None = None  # the call rewritten, for a change of arguments
    drop_in: bool = True  # False: the new spelling needs more than a rename (the fix is words)
    spelling: str = ""  # how the new spelling reads, where it is more than ``new`` (a call)

    @property
    def shown(self) -> str:
        """The new spelling as the words show it.

        >>> MOVED["jax.ops.index_update"].shown, MOVED["jax.tree_map"].shown
        ('x.at[idx].set(y)', 'jax.tree.map')
        """
        return self.spelling or self.new

    @property
    def history(self) -> str:
        """``never`` (never part of its module), ``removed`` or ``deprecated`` (then removed)."""
        return "never" if self.removed is None else "deprecated" if self.deprecated else "removed"

    def imported(self, module: str, name: str, asname: str | None) -> str | None:
        """The import of the new spelling for ``from <module> import <name> as <asname>``
        (``None``: no rename does it).

        >>> MOVED["jax.tree_map"].imported("jax", "tree_map", "tm")
        'from jax.tree import map as tm'
        """
        if not self.drop_in or self.call is not None:
            return None
        if self.old == f"{module}.{name}":  # the name itself moved: ``jax.tree_map`` -> ``jax.tree.map``
            place, _, new_name = self.new.rpartition(".")
            return f"from {place} import {aliased(new_name, asname or name)}" if place else None
        return f"from {self.new} import {aliased(name, asname)}"  # the module moved


def module_of(path: str) -> str:
    """The longest importable module ``path`` starts with (``jax.nn`` for ``jax.nn.softmax``).

    >>> module_of("jax.nn.softmax"), module_of("jax.example_libraries.optimizers")
    ('jax.nn', 'jax.example_libraries.optimizers')
    """
    for name in [path.rsplit(".", n)[0] for n in range(path.count(".") + 1)]:
        try:
            if name in sys.modules or importlib.util.find_spec(name) is not None:
                return name
        except (ImportError, ValueError):
            continue
    return path.split(".")[0]


def aliased(name: str, asname: str | None) -> str:
    """``name as asname`` where the two differ.

    >>> aliased("map", "tm"), aliased("jit", None)
    ('map as tm', 'jit')
    """
    return name if not asname or asname == name else f"{name} as {asname}"


_NN = "jax.numpy follows NumPy, which has no neural-network functions; JAX keeps them in jax.nn."
_TREE = "JAX's pytree functions live in jax.tree (jax.tree_util keeps the long names)."
_NUMPY_125 = "Removed with NumPy's own alias (NumPy 1.25 deprecated it)."
_AT = "JAX arrays are immutable; .at[...] returns the updated copy (in place under jit)."
_HOST = "host_callback is gone; JAX's external callbacks replace it."

ENTRIES: tuple[Moved, ...] = (
    # Never in jax.numpy: the first error of many a tutorial.
    Moved("jax.numpy.softmax", "jax.nn.softmax", None, None, _NN),
    Moved("jax.numpy.log_softmax", "jax.nn.log_softmax", None, None, _NN),
    Moved("jax.numpy.sigmoid", "jax.nn.sigmoid", None, None, _NN),
    Moved("jax.numpy.relu", "jax.nn.relu", None, None, _NN),
    Moved("jax.numpy.one_hot", "jax.nn.one_hot", None, None, _NN),
    Moved("jax.numpy.logsumexp", "jax.nn.logsumexp", None, None, "jax.scipy.special.logsumexp is the same function."),
    # Pytrees.
    Moved("jax.tree_map", "jax.tree.map", "0.4.26", "0.6.0", _TREE),
    Moved("jax.tree_flatten", "jax.tree.flatten", "0.3.15", "0.6.0", _TREE),
    Moved("jax.tree_leaves", "jax.tree.leaves", "0.3.15", "0.6.0", _TREE),
    Moved("jax.tree_unflatten", "jax.tree.unflatten", "0.3.15", "0.6.0", _TREE),
    Moved("jax.tree_structure", "jax.tree.structure", "0.3.15", "0.6.0", _TREE),
    Moved("jax.tree_transpose", "jax.tree.transpose", "0.3.15", "0.6.0", _TREE),
    Moved("jax.treedef_is_leaf", "jax.tree_util.treedef_is_leaf", "0.3.15", "0.6.0", _TREE),
    Moved("jax.tree_util.tree_multimap", "jax.tree_util.tree_map", "0.3.5", "0.3.16", "tree_map takes several trees."),
    # jax.numpy aliases NumPy dropped.
    Moved("jax.numpy.product", "jax.numpy.prod", "0.4.12", "0.4.16", _NUMPY_125),
    Moved("jax.numpy.cumproduct", "jax.numpy.cumprod", "0.4.12", "0.4.16", _NUMPY_125),
    Moved("jax.numpy.alltrue", "jax.numpy.all", "0.4.12", "0.4.16", _NUMPY_125),
    Moved("jax.numpy.sometrue", "jax.numpy.any", "0.4.12", "0.4.16", _NUMPY_125),
    Moved("jax.numpy.round_", "jax.numpy.round", "0.4.32", "0.4.38", "Removed with NumPy 2.0's round_."),
    Moved("jax.numpy.row_stack", "jax.numpy.vstack", None, "0.4.24", "Removed with NumPy 2.0's row_stack."),
    Moved("jax.numpy.trapz", "jax.scipy.integrate.trapezoid", None, "0.4.24", "Removed with NumPy 2.0's trapz."),
    Moved(
        "jax.numpy.in1d",
        "jax.numpy.isin",
        None,
        "0.4.24",
        "isin keeps the first argument's shape where in1d flattened it (add .ravel() for the old result).",
        drop_in=False,
    ),
    Moved("jax.numpy.fix", "jax.numpy.trunc", "0.9.0", "0.10.0", "trunc is a drop-in replacement."),
    # Array types.
    Moved("jax.numpy.DeviceArray", "jax.Array", "0.4.7", "0.4.14", "jax.Array is the one array type."),
    Moved("jax.interpreters.xla.DeviceArray", "jax.Array", "0.4.4", "0.4.11", "jax.Array is the one array type."),
    Moved("jax.interpreters.xla.Device", "jax.Device", "0.4.4", "0.4.11", "Devices are jax.Device."),
    Moved("jax.interpreters.xla.device_put", "jax.device_put", "0.4.7", "0.4.11", "jax.device_put is public."),
    Moved("jax.random.KeyArray", "jax.Array", "0.4.16", "0.4.24", "A key, typed or raw, is a jax.Array."),
    Moved("jax.random.PRNGKeyArray", "jax.Array", "0.4.16", "0.4.24", "A key, typed or raw, is a jax.Array."),
    Moved("jax.abstract_arrays.ShapedArray", "jax.core.ShapedArray", "0.4.12", "0.4.17", "It lives in jax.core."),
    Moved("jax.abstract_arrays", "jax.core", "0.4.12", "0.4.17", "Its ShapedArray lives in jax.core.", drop_in=False),
    # Functions whose call changed.
    Moved(
        "jax.xla_computation",
        "jax.jit",
        "0.4.30",
        "0.4.34",
        "jit(f).lower(*args) is the ahead-of-time API; its .as_text() prints what .as_hlo_text() printed.",
        call="{jax}.jit({0}).lower",
        spelling="jax.jit(f).lower(*args)",
    ),
    *(  # jax.ops' index updates, now methods of ``x.at[idx]``
        Moved(
            f"jax.ops.index_{op}",
            "jax.Array.at",
            "0.2.22",
            "0.3.2",
            _AT,
            call=f"{{0}}.at[{{1}}].{method}({{2}})",
            spelling=f"x.at[idx].{method}(y)",
        )
        for op, method in (("update", "set"), ("add", "add"), ("mul", "multiply"), ("min", "min"), ("max", "max"))
    ),
    Moved(
        "jax.lax.tie_in",
        "jax.lax",
        "0.4.24",
        "0.4.29",
        "tie_in(x, y) has returned y since JAX 0.2.0.",
        call="{1}",
        spelling="y",
    ),
    Moved(
        "jax.random.shuffle",
        "jax.random.permutation",
        "0.1.66",
        "0.4.31",
        "permutation with independent=True shuffles as shuffle did.",
        call="{jax}.random.permutation({0}, {1}, independent=True)",
        spelling="jax.random.permutation(key, x, independent=True)",
    ),
    Moved("jax.nn.normalize", "jax.nn.standardize", "0.3.5", "0.4.29", "standardize is the same function."),
    Moved("jax.lax.zeros_like_array", "jax.numpy.zeros_like", "0.7.1", "0.9.0", "jax.numpy.zeros_like does it."),
    Moved(
        "jax.scipy.special.sph_harm",
        "jax.scipy.special.sph_harm_y",
        "0.7.0",
        "0.10.0",
        "sph_harm_y takes (n, m, theta, phi): degree first, and theta is the polar angle, as in SciPy.",
        drop_in=False,
    ),
    Moved(
        "jax.device_put_replicated",
        "jax.device_put",
        "0.8.1",
        "0.10.0",
        "Pass a sharding: jax.device_put(x, NamedSharding(mesh, P())) replicates x over the mesh.",
        drop_in=False,
    ),
    Moved(
        "jax.device_put_sharded",
        "jax.device_put",
        "0.8.1",
        "0.10.0",
        "Stack the shards and pass a sharding: jax.device_put(jnp.stack(shards), NamedSharding(mesh, P('x'))).",
        drop_in=False,
    ),
    # Modules.
    Moved(
        "jax.experimental.optimizers",
        "jax.example_libraries.optimizers",
        "0.2.25",
        "0.3.16",
        "An example library, kept as it was; Optax is the maintained optimizer library.",
    ),
    Moved(
        "jax.experimental.stax",
        "jax.example_libraries.stax",
        "0.2.25",
        "0.3.16",
        "An example library, kept as it was; Flax and Equinox are the maintained model libraries.",
    ),
    Moved("jax.experimental.maps.Mesh", "jax.sharding.Mesh", "0.4.4", "0.4.11", "Meshes live in jax.sharding."),
    Moved(
        "jax.experimental.maps.xmap",
        "jax.shard_map",
        "0.4.26",
        "0.4.31",
        "shard_map (or jax.vmap with spmd_axis_name) expresses what xmap did.",
        drop_in=False,
    ),
    Moved(
        "jax.experimental.maps",
        "jax.sharding",
        "0.4.26",
        "0.4.31",
        "Its Mesh lives in jax.sharding; jax.shard_map replaces xmap.",
        drop_in=False,
    ),
    Moved(
        "jax.experimental.host_callback.id_print",
        "jax.debug.print",
        "0.4.26",
        "0.8.0",
        "jax.debug.print takes a format string, jax.debug.print('{}', x), and returns None.",
        drop_in=False,
    ),
    Moved(
        "jax.experimental.host_callback.id_tap",
        "jax.debug.callback",
        "0.4.26",
        "0.8.0",
        "jax.debug.callback(fn, x) calls fn with the values; it returns None.",
        drop_in=False,
    ),
    Moved(
        "jax.experimental.host_callback.call",
        "jax.pure_callback",
        "0.4.26",
        "0.8.0",
        "jax.pure_callback(fn, result_shape_dtypes, *args) declares the shape of what fn returns.",
        drop_in=False,
    ),
    Moved(
        "jax.experimental.host_callback",
        "jax.debug.callback",
        "0.4.26",
        "0.8.0",
        _HOST + " jax.debug.print / jax.debug.callback observe values, jax.pure_callback computes one.",
        drop_in=False,
    ),
)

MOVED: dict[str, Moved] = {entry.old: entry for entry in ENTRIES}
