"""What changed since a compilation nobody watched: jax.jit's tracing cache still holds every
signature it traced for a function, so a function first seen by the watch is compared with
those, and "first compilation" is said only when JAX had traced none.

>>> import jax, jax.numpy as jnp
>>> from jaxmagic import _jax_private
>>> from jaxmagic.recompiles.signatures import describe_call
>>> @jax.jit
... def double(x):
...     return x * 2
>>> _ = double(jnp.ones(3)), double(jnp.ones(4))  # both compiled before anything watched
>>> now = describe_call(double, (jnp.ones(4),), {})
>>> [str(c.message) for c in causes_since_unwatched(now, _jax_private.traced_keys(double.__wrapped__))]
['shape of `x` changed: f32[3] → f32[4] (axis 0: 3 → 4), compared with a compilation made while nothing watched']
"""

from __future__ import annotations

import dataclasses
from typing import Iterator

from jaxmagic.recompiles.causes import Cause
from jaxmagic.recompiles.differences import leaf_causes
from jaxmagic.recompiles.leaves import MAX_FULL_TEXT, LeafType, device_text, sharding_text, short_dtype
from jaxmagic.recompiles.signatures import CallSignature
from jaxmagic.recompiles.value_changes import placement_cause

_PYTHON_SCALAR = {"f": "float", "i": "int", "c": "complex", "b": "bool"}  # weak types come from these


def causes_since_unwatched(signature: CallSignature, keys) -> list[Cause] | None:
    """The causes of compiling ``signature`` when JAX's tracing cache (``keys``, from
    ``_jax_private.traced_keys``) shows earlier signatures of the function; ``None`` when it
    shows none (a first compilation) or cannot be read."""
    found = _current_key(signature, keys) if keys else None
    if found is None:
        return None  # none, or jaxmagic's reading of the arguments and JAX's disagree: say nothing false
    current, leaves, now = found
    # A key traced while the watch listened (another thread's call, compiling now) is no unwatched one.
    earlier = [key for key in keys if key is not current and key.traced_before]
    if not earlier:
        return None
    alike = [key for key in earlier if _alike(key, current, len(now))]
    if not alike:
        return (
            _static_causes(signature, current, earlier)
            or _structure_causes(signature, current, earlier)
            or [_changed_otherwise(signature.function)]
        )
    return _marked(_type_causes(leaves, alike, now)) or None


def _current_key(signature: CallSignature, keys) -> tuple | None:
    """The key JAX traced for this call, with the call's array leaves (in the order that matched)
    and their types; ``None`` when no key matches them."""
    for leaves in _array_leaves(signature):
        now = tuple((leaf.shape, leaf.dtype, leaf.weak) for _, leaf in leaves)
        current = next((key for key in keys if _types(key) == now and _same_static(key, signature)), None)
        if current is not None:
            return current, leaves, now
    return None


def _alike(key, current, inputs: int) -> bool:
    """Whether an earlier key differs from the current one at most in its leaves' types."""
    return key.jit_info == current.jit_info and key.arguments == current.arguments and len(key.avals) == inputs


def _type_causes(leaves: list, keys: list, now: tuple) -> list[Cause]:
    """How the leaves' types differ from the closest of ``keys`` (all with as many inputs)."""
    closest = min(keys, key=lambda key: sum(a != b for a, b in zip(_types(key), now, strict=True)))
    causes = []
    for (name, leaf), old, new in zip(leaves, _types(closest), now, strict=True):
        if old != new:
            shape, dtype, weak = old
            was = dataclasses.replace(
                leaf,
                shape=shape,
                dtype=dtype,
                weak=weak,
                origin=_PYTHON_SCALAR.get(dtype[:1], "float") if weak else "array",
            )
            causes.extend(leaf_causes(name, was, leaf))
    return causes


def causes_against_traced(signature: CallSignature, keys) -> list[Cause] | None:
    """What differs between a call whose trace is under way (or failed) and the other
    signatures JAX's tracing cache (``keys``) holds for the function: the closest
    one's differing leaf types, else its differing static values. ``None`` when JAX holds none
    (the jitted function is new) or none compares.

    >>> import jax, jax.numpy as jnp
    >>> from jaxmagic import _jax_private
    >>> from jaxmagic.recompiles.signatures import describe_call
    >>> @jax.jit
    ... def halve(x):
    ...     return x / 2
    >>> _ = halve(jnp.ones(3))
    >>> now = describe_call(halve, (jnp.ones(4),), {})
    >>> [c.message for c in causes_against_traced(now, _jax_private.traced_keys(halve.__wrapped__))]
    ['shape of `x` changed: f32[3] → f32[4] (axis 0: 3 → 4)']
    """
    if not keys:
        return None
    for leaves in _array_leaves(signature):
        now = tuple((leaf.shape, leaf.dtype, leaf.weak) for _, leaf in leaves)
        # the trace under way may be among them already (JAX keeps the key of a trace that failed)
        alike = [
            key for key in keys if len(key.avals) == len(now) and _same_static(key, signature) and _types(key) != now
        ]
        if alike:
            return _type_causes(leaves, alike, now) or None
    for key in keys:
        labels = _static_labels(signature, key)
        if labels is None:
            continue
        mine = {p.name: p.value for p in signature.params if p.static and p.value is not None}
        changed = [
            Cause("static_value", argument=label, before=_text(old), after=mine[label].text)
            for label, old in zip(labels, key.static_values[0], strict=True)
            if label in mine and _text(old) != (mine[label].full or mine[label].text)
        ]
        if changed:
            return changed
    return None


def causes_since_lowered(signature: CallSignature, lowerings) -> list[Cause] | None:
    """The causes of compiling ``signature`` again when jax.jit traced nothing new: its lowering
    cache (``lowerings``, from ``_jax_private.lowered_input_shardings``) holds the same program
    lowered for other input shardings, so what differs is which arrays are committed, or where.
    ``None`` when no earlier lowering tells it.

    >>> import jax, jax.numpy as jnp
    >>> from jaxmagic import _jax_private
    >>> from jaxmagic.recompiles.signatures import describe_call
    >>> @jax.jit
    ... def total(x):
    ...     return x.sum()
    >>> _ = total(jnp.ones(3))
    >>> placed = jax.device_put(jnp.ones(3), jax.devices()[0])
    >>> _ = total(placed)
    >>> jaxpr = total.trace(placed).jaxpr
    >>> [c.kind for c in causes_since_lowered(describe_call(total, (placed,), {}), _jax_private.lowered_input_shardings(jaxpr))]
    ['sharding']
    """
    if not lowerings or len(lowerings) < 2:
        return None
    for leaves in _array_leaves(signature):
        now = tuple(leaf.placement for _, leaf in leaves)
        if any(len(lowered) != len(leaves) for lowered in lowerings):
            continue
        texts = [tuple(_placement_text(s) for s in lowered) for lowered in lowerings]
        if now not in texts:
            continue
        others = [t for t in texts if t != now]
        if not others:
            return None
        closest = min(others, key=lambda t: sum(a != b for a, b in zip(t, now, strict=True)))
        causes = [
            placement_cause(name, old, new, sharded=leaf.sharded)
            for (name, leaf), old, new in zip(leaves, closest, now, strict=True)
            if old != new
        ]
        return _marked(causes) or None
    return None


def _placement_text(sharding) -> str | None:
    """A lowering's input sharding as ``LeafType.placement`` writes it: ``None`` (uncommitted),
    ``cpu:0``, or a sharding's text."""
    if sharding is None:
        return None
    devices = getattr(sharding, "device_set", ())
    if len(devices) == 1 and type(sharding).__name__ == "SingleDeviceSharding":
        return device_text(next(iter(devices)))
    return sharding_text(sharding)


def _static_labels(signature: CallSignature, key) -> list[str] | None:
    """The parameter names of a key's static values: those passed by position, then by keyword."""
    values, names = key.static_values
    positional = [p.name for p in signature.params if p.static and p.passed == "position"]
    return positional + list(names) if len(positional) + len(names) == len(values) else None


def _same_static(key, signature: CallSignature) -> bool:
    """Whether a key's static values are this call's (as far as their text tells)."""
    labels = _static_labels(signature, key)
    if labels is None:
        return False
    mine = {p.name: p.value.full or p.value.text for p in signature.params if p.static and p.value is not None}
    return all(_text(value) == mine.get(label) for label, value in zip(labels, key.static_values[0], strict=True))


def _text(value) -> str:
    try:
        return repr(value)[:MAX_FULL_TEXT]
    except Exception:
        return ""


def _static_causes(signature: CallSignature, current, earlier) -> list[Cause]:
    """Where an earlier key differs from this call's only in static values: those values."""
    values, names = current.static_values
    labels = _static_labels(signature, current)
    if labels is None:
        return []
    same_otherwise = (current.jit_info, current.structure, current.avals, names, len(values))
    for key in earlier:
        old_values, old_names = key.static_values
        if (key.jit_info, key.structure, key.avals, old_names, len(old_values)) == same_otherwise:
            changed = [
                Cause("static_value", argument=label, before=_text(old), after=_text(new))
                for label, old, new in zip(labels, old_values, values, strict=True)
                if not _same(old, new)
            ]
            return _marked(changed)
    return []


def _structure_causes(signature: CallSignature, current, earlier) -> list[Cause]:
    """Where an earlier key differs from this call's only in the pytree structure of some
    arguments: each such argument, before → after."""
    names, treedefs = current.structure
    dynamic = [p.name for p in signature.params if not p.static and p.passed != "default"]
    positional = [p.name for p in signature.params if not p.static and p.passed == "position"]
    labels = positional + list(names) if len(positional) + len(names) == len(treedefs) else None
    if labels is None or sorted(labels) != sorted(dynamic):
        return []
    for key in earlier:
        old_names, old_treedefs = key.structure
        if (key.jit_info, key.static_values, old_names) != (current.jit_info, current.static_values, names):
            continue
        return _marked(
            [
                Cause("pytree_structure", argument=label, before=_tree_text(old), after=_tree_text(new))
                for label, old, new in zip(labels, old_treedefs, treedefs, strict=True)
                if old != new
            ]
        )
    return []


def _tree_text(treedef) -> str:
    """``{'a': *, 'b': *}``: a structure as JAX writes it, without ``PyTreeDef(...)``."""
    text = str(treedef)
    return text[len("PyTreeDef(") : -1] if text.startswith("PyTreeDef(") and text.endswith(")") else text


def _marked(causes: list[Cause]) -> list[Cause]:
    """Each cause marked as found against a compilation made while nothing watched."""
    return [dataclasses.replace(c, unwatched=True) for c in causes]


def _same(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return a is b


def _array_leaves(signature: CallSignature) -> Iterator[list[tuple[str, LeafType]]]:
    """The leaves JAX traces as inputs, named as the user would: in the order of the call, then
    with the keyword arguments sorted by name (as some JAX versions order them)."""
    params = [p for p in signature.params if not p.static and p.passed != "default"]
    by_position = [p for p in params if p.passed != "keyword"]
    by_keyword = [p for p in params if p.passed == "keyword"]
    for order in (params, by_position + sorted(by_keyword, key=lambda p: p.name)):
        yield [
            (param.leaf_name(path), leaf) for param in order for path, leaf in param.leaves if leaf.shape is not None
        ]


def _types(key) -> tuple:
    return tuple((tuple(shape), short_dtype(dtype), weak) for shape, dtype, weak in key.avals)


def _changed_otherwise(function: str) -> Cause:
    return Cause("unknown", reason="compiled_unwatched", facts=(("function", function),))
