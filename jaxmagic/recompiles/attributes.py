"""Library objects read by attribute path, as their users write them: a Flax NNX module (also as
``nnx.jit`` hands it to JAX, split into a graph and its states), an Equinox module, a Flax struct
or any other dataclass registered as a pytree. Each attribute becomes ``(".drop.deterministic",
"False")`` or ``(".linear.kernel", "Param f32[3,3]")``, so that a recompilation can say
``model.dropout.deterministic: False → True`` rather than where two flattened trees differ.

>>> import dataclasses, jax, jax.numpy as jnp
>>> @jax.tree_util.register_dataclass
... @dataclasses.dataclass
... class Layer:
...     weight: jax.Array
...     activation: str = dataclasses.field(metadata=dict(static=True), default="relu")
>>> [(a.path, a.text) for a in attributes_of(Layer(jnp.ones((2, 3))))]
[('', 'Layer'), ('.weight', 'f32[2,3]'), ('.activation', "'relu'")]
>>> object_text(attributes_of(Layer(jnp.ones((2, 3)))))
'Layer(weight: f32[2,3])'
>>> attributes_of({"w": jnp.ones(3)})  # a plain container: its key paths already say it
()
"""

from __future__ import annotations

import dataclasses
import itertools
import sys
from typing import Any, Iterator, Protocol, TypeGuard

from jaxmagic.recompiles.leaves import LeafType, StaticValue, describe_leaf
from jaxmagic.words.units import shorten

MAX_ATTRIBUTES = 2000  # larger objects are not read by attribute
MAX_DEPTH = 12
ATTRIBUTE_TEXT = 60  # an attribute's text as a signature shows it
FULL_TEXT = 2000  # an attribute's text as compared (its differing part is shown)


@dataclasses.dataclass(frozen=True)
class Attribute:
    """One attribute: its ``path`` from the object (``.linear.kernel``, ``.layers[0].bias``), its
    ``text`` (``Param f32[3,3]``, ``False``, ``Linear``) and, for an array, its ``leaf``; for a
    static value, its ``value`` as JAX compares it. The object itself has the path ``""``."""

    path: str
    text: str
    leaf: LeafType | None = None
    value: StaticValue | None = None  # a static value as JAX compares it (== and hash), with its kind

    def same_as(self, other: "Attribute") -> bool:
        """Whether ``other`` (a later reading at the same path) is the same for JAX: the same text,
        and for a static value an equal key (an object hashed by identity, built again, is not)."""
        if self.text != other.text:
            return False
        return self.value is None or other.value is None or self.value.key == other.value.key


def attributes_of(value: Any) -> tuple[Attribute, ...]:
    """``value``'s attributes by path, when it is a library object read that way; ``()`` for
    anything else, or past ``MAX_ATTRIBUTES``."""
    try:
        node = _nnx_node(value)
        found = _nnx_attributes(node) if node is not None else _dataclass_attributes(value, "", 0)
        if node is not None:
            root = type(node).__name__
            root = f"GraphDef of a {root}" if _is_nnx(value, "GraphDef") else root
            found = itertools.chain([Attribute("", root)], found)
        out = []
        for attribute in found:
            out.append(attribute)
            if len(out) > MAX_ATTRIBUTES:
                return ()
        return tuple(out)
    except Exception:  # a library's internals moved: the pytree's own description stands
        return ()


def _nnx_node(value: Any) -> Any:
    """The NNX graph node ``value`` is, or that ``nnx.jit`` split into ``NodeStates``."""
    nnx = sys.modules.get("flax.nnx")
    if nnx is None:
        return None
    if nnx.graph.is_graph_node(value):
        return value
    if _is_nnx(value, "NodeStates"):
        return nnx.merge(value.graphdef, *value.states)
    if _is_nnx(value, "GraphDef"):  # nnx.split's graph alone: its modules, with empty Variables
        return nnx.merge(value, [None] * value.num_leaves)
    return None


def _is_nnx(value: Any, name: str) -> bool:
    kind = type(value)
    return kind.__name__ == name and kind.__module__.startswith("flax.nnx")


def _nnx_attributes(node: Any, where: str = "", seen: set | None = None) -> Iterator[Attribute]:
    """An NNX graph node's attributes, each graph node once (a shared layer under its first path).
    NNX keeps everything but its Variables (and arrays held as data) static."""
    nnx = sys.modules["flax.nnx"]
    seen = set() if seen is None else seen
    seen.add(id(node))
    for key, item in nnx.graph.get_node_impl(node).node_dict(node).items():
        if isinstance(key, str) and key.startswith("_"):
            continue  # NNX's own bookkeeping
        path = f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}"
        if isinstance(item, nnx.Variable) and item.get_value() is None:  # a GraphDef's: its kind alone
            yield Attribute(path, type(item).__name__)
        elif isinstance(item, nnx.Variable):
            leaf = describe_leaf(item.get_value())
            yield Attribute(path, f"{type(item).__name__} {leaf.type_text}", leaf)
        elif nnx.graph.is_graph_node(item):
            yield Attribute(path, type(item).__name__)
            if id(item) not in seen:
                yield from _nnx_attributes(item, path, seen)
        else:
            yield from _dataclass_attributes(item, path, 1, static=True)


def _dataclass_attributes(value: Any, where: str, depth: int, static: bool = False) -> Iterator[Attribute]:
    """A dataclass pytree's fields, and inside them lists, tuples, named tuples, dicts and other
    dataclasses. Inside a static field (``eqx.field(static=True)``, ``struct.field(pytree_node=False)``)
    a value is read as text; elsewhere a number is a traced leaf, read by its type only."""
    if depth == 0 and not _is_dataclass_instance(value):
        return
    if depth > MAX_DEPTH or (static and depth and _plain_static(value)):
        yield from _leaves(where, value, static)
    elif _is_dataclass_instance(value):
        yield Attribute(where, type(value).__name__)
        for item in dataclasses.fields(value):
            if hasattr(value, item.name):
                inner = static or _is_static_field(item)
                yield from _dataclass_attributes(getattr(value, item.name), f"{where}.{item.name}", depth + 1, inner)
    elif _is_named_tuple(value):  # an optax state
        yield Attribute(where, type(value).__name__)
        for name in value._fields:
            yield from _dataclass_attributes(getattr(value, name), f"{where}.{name}", depth + 1, static)
    elif type(value) in (list, tuple):
        for index, item in enumerate(value):
            yield from _dataclass_attributes(item, f"{where}[{index}]", depth + 1, static)
    elif type(value) is dict:
        for key, item in value.items():
            yield from _dataclass_attributes(item, f"{where}[{key!r}]", depth + 1, static)
    else:
        yield from _leaves(where, value, static)


def _is_dataclass_instance(value: Any) -> bool:
    """A dataclass's instance (not the class itself)."""
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


class _NamedTuple(Protocol):
    _fields: tuple[str, ...]


def _is_named_tuple(value: Any) -> TypeGuard[_NamedTuple]:
    """A named tuple: a tuple whose class names its fields."""
    return isinstance(value, tuple) and hasattr(value, "_fields")


def _is_static_field(item: dataclasses.Field) -> bool:
    """Equinox and ``jax.tree_util.register_dataclass`` say ``static=True``; Flax structs say
    ``pytree_node=False``."""
    return bool(item.metadata.get("static", False)) or item.metadata.get("pytree_node", True) is False


def _leaves(where: str, value: Any, static: bool = True) -> Iterator[Attribute]:
    """An array (or, outside a static field, a number) as its type (``f32[3]``); an NNX Variable
    as its kind and type; any other pytree holding arrays by its leaves' paths (never their
    values); anything else as its text."""
    nnx = sys.modules.get("flax.nnx")
    if nnx is not None and isinstance(value, nnx.Variable):
        leaf = describe_leaf(value.get_value())
        yield Attribute(where, f"{type(value).__name__} {leaf.type_text}", leaf)
    elif (not static and isinstance(value, (bool, int, float, complex))) or (
        hasattr(value, "shape") and hasattr(value, "dtype")
    ):
        leaf = describe_leaf(value)
        yield Attribute(where, leaf.type_text, leaf)
    elif _holds_arrays(value):
        import jax

        yield Attribute(where, type(value).__name__)
        for path, leaf in jax.tree_util.tree_flatten_with_path(value)[0]:
            yield from _leaves(where + jax.tree_util.keystr(path), leaf, static=False)
    else:
        read = StaticValue.of(value)
        yield Attribute(where, shorten(read.full or read.text, FULL_TEXT), value=read)


def _plain_static(value: Any) -> bool:
    """A static container with no array inside (``()``, an optax transformation): read whole, as
    its text, the way JAX compares it."""
    return isinstance(value, (list, tuple, dict)) and not _holds_arrays(value)


def _holds_arrays(value: Any) -> bool:
    """A pytree node (not a leaf) with an array among its leaves."""
    jax = sys.modules.get("jax")
    if jax is None:
        return False
    leaves = jax.tree_util.tree_leaves(value)
    return not (len(leaves) == 1 and leaves[0] is value) and any(hasattr(leaf, "dtype") for leaf in leaves)


def object_text(attributes: tuple[Attribute, ...], limit: int = ATTRIBUTE_TEXT + 40) -> str:
    """The object as a signature shows it: its type and its arrays by path,
    ``Net(linear.kernel: Param f32[3,3], linear.bias: Param f32[3])``."""
    root = next((a.text for a in attributes if a.path == ""), "?")
    arrays = ", ".join(f"{a.path.lstrip('.')}: {a.text}" for a in attributes if a.leaf is not None)
    return shorten(f"{root}({arrays})" if arrays else root, limit)
