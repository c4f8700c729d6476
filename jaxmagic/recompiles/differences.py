"""Every difference between two calls of a jitted function, as ``Cause`` objects naming parameters.

``differences`` compares two ``CallSignature`` objects: the function object, the jit options,
JAX's settings, then each parameter (how it was passed, its static value, its pytree structure,
each leaf's shape, dtype, weak type, device and sharding), said in the order JAX's own
explanation says them (what changes the program before what changes its types). ``nearest`` picks, among earlier
signatures, the one with the fewest differences: that is what a new compilation is explained
against.

>>> import jax.numpy as jnp
>>> from jaxmagic.recompiles.signatures import describe_call
>>> def f(x, n):
...     return x * n
>>> before = describe_call(f, (jnp.ones(3), 2), {}, static_argnums=(1,))
>>> after = describe_call(f, (jnp.ones(4), 3), {}, static_argnums=(1,))
>>> [(c.kind, c.argument, c.before, c.after) for c in differences(before, after)]
[('static_value', 'n', '2', '3'), ('shape', 'x', 'f32[3]', 'f32[4]')]
"""

from __future__ import annotations

import dataclasses
import re
from typing import Sequence

from jaxmagic.recompiles.attributes import Attribute
from jaxmagic.recompiles.causes import BUILT_AGAIN, Cause, shape_change, shape_change_text
from jaxmagic.recompiles.leaves import LeafType, StaticValue, without_addresses
from jaxmagic.recompiles.redefinitions import redefined
from jaxmagic.recompiles.signatures import CallSignature, ParamSignature, shorten
from jaxmagic.recompiles.value_changes import differing_parts, object_kind, placement_cause, static_value_causes
from jaxmagic.tracing.sources import CellNamer, no_cells

# ----------------------------------------------------------------------------------------------
# Differences


def differences(before: CallSignature, after: CallSignature, cell_namer: CellNamer = no_cells) -> list[Cause]:
    """Every difference between an earlier call and this one, as ``Cause`` objects.

    The function object comes first, then the jit options and JAX's configuration, then each
    parameter in the order of the call. ``cell_namer`` names notebook cells in the places a cause
    mentions (``In [4] line 2``).
    """
    causes: list[Cause] = []
    if not before.is_same_function(after):
        causes.append(redefined(before, after, cell_namer))
        if causes[0].reason == "code_changed":
            # Other code (edited, or another function of that name in another cell): it compiles
            # anew whatever it is passed, and the earlier call's arguments were another function's.
            return causes
    if before.options != after.options:
        causes.extend(_option_causes(before.options, after.options))
    if before.config != after.config:
        causes.extend(_config_causes(before.config, after.config))
    causes.extend(_parameter_causes(before.params, after.params))
    causes = _without_x64_widths(causes)
    return sorted(causes, key=lambda c: _SEVERITY.get(c.kind, 0))


def _parameter_causes(before: tuple[ParamSignature, ...], after: tuple[ParamSignature, ...]) -> list[Cause]:
    """Each parameter's differences, in the order of the call; a parameter passed now and not
    before, or before and not now, as a structure cause."""
    causes: list[Cause] = []
    old_params = {p.name: p for p in before}
    # an argument of ``*args`` is named as each call's line wrote it (``x``, then ``batch``): by position
    old_positions = {i: p for i, p in enumerate(before) if p.passed == "position"}
    names_now = {p.name for p in after}
    seen = set()
    for index, param in enumerate(after):
        seen.add(param.name)
        old = old_params.get(param.name)
        by_position = old_positions.get(index) if param.passed == "position" else None
        if old is None and by_position is not None and by_position.name not in names_now:
            seen.add(by_position.name)
            old = dataclasses.replace(by_position, name=param.name)
        if old is None:
            if param.passed != "default":
                causes.append(
                    Cause(
                        "pytree_structure",
                        argument=param.name,
                        before="(not passed)",
                        after=param.describe(),
                        reason="passed_now",
                    )
                )
            continue
        if old != param:
            found = _param_causes(old, param)
            if param.filtered:  # under eqx.filter_jit all that is not an array is one static value
                found = [
                    dataclasses.replace(c, kind="static_value") if c.kind == "pytree_structure" else c for c in found
                ]
            causes.extend(found)
    for param in before:
        if param.name not in seen and param.passed != "default":
            causes.append(
                Cause(
                    "pytree_structure",
                    argument=param.name,
                    before=param.describe(),
                    after="(not passed)",
                    reason="not_passed_now",
                )
            )
    return causes


# JAX's order when it explains a cache miss: the function, the options and settings, the pytree
# (structure and static values), then the types of its leaves. Said first, it is what JAX says.
_SEVERITY = {"shape": 1, "dtype": 1, "weak_type": 1, "sharding": 2, "device": 2}


# JAX completes positions from names and back: a pair changes together and is reported once.
_OPTION_PAIRS = (("static_argnums", "static_argnames"), ("donate_argnums", "donate_argnames"))


def _option_causes(before, after) -> list[Cause]:
    old, new = dict(before), dict(after)
    causes = []
    paired = {name for pair in _OPTION_PAIRS for name in pair}
    for nums, names in _OPTION_PAIRS:
        if old.get(nums) != new.get(nums) or old.get(names) != new.get(names):
            causes.append(
                Cause(
                    "jit_options",
                    argument=nums if old.get(nums) != new.get(nums) else names,
                    before=_pair_text(old.get(nums), old.get(names)),
                    after=_pair_text(new.get(nums), new.get(names)),
                )
            )
    for name in sorted((set(old) | set(new)) - paired):
        if old.get(name) != new.get(name):
            shown = _option_name(name)
            causes.append(
                Cause(
                    "jit_options",
                    argument=shown,
                    before=shorten(repr(old.get(name))),
                    after=shorten(repr(new.get(name))),
                )
            )
    return causes


def _pair_text(nums, names) -> str:
    """``(1,) · n``: positions, and the parameter names JAX resolved them to."""
    text = repr(tuple(nums or ()))
    return f"{text} · {', '.join(names)}" if names else text


def _option_name(name: str) -> str:
    return {
        "compiler_options_kvs": "compiler_options",
        "in_shardings_leaves": "in_shardings",
        "out_shardings_leaves": "out_shardings",
        "in_layouts_leaves": "in_layouts",
        "out_layouts_leaves": "out_layouts",
    }.get(name, name)


_WIDTHS = {"f32": "f64", "i32": "i64", "u32": "u64", "c64": "c128"}


def _without_x64_widths(causes: list[Cause]) -> list[Cause]:
    """A dtype that only changed width (``f32`` -> ``f64``) follows from ``jax_enable_x64``, when
    that setting changed too: the one cause is the setting, not the Python type passed.

    >>> x64 = Cause("config", argument="jax_enable_x64", before="False", after="True")
    >>> [c.kind for c in _without_x64_widths([x64, Cause("dtype", argument="x", before="f32", after="f64")])]
    ['config']
    """
    if not any(c.kind == "config" and c.argument == "jax_enable_x64" for c in causes):
        return causes

    def widened(cause: Cause) -> bool:
        pair = {str(cause.before).split("[")[0].split()[-1], str(cause.after).split("[")[0].split()[-1]}
        return cause.kind == "dtype" and any(pair == {narrow, wide} for narrow, wide in _WIDTHS.items())

    kept, seen = [], set()
    for cause in causes:
        if widened(cause) or (cause.kind == "config" and cause.argument in seen):
            continue
        seen.add(cause.argument if cause.kind == "config" else None)
        kept.append(cause)
    return kept


def _x64_cause(name: str, old: LeafType, new: LeafType) -> Cause | None:
    """The same Python type passed, its dtype only wider or narrower (``f32`` -> ``f64``): only
    ``jax_enable_x64`` does that, also where JAX does not name its settings (before 0.9)."""
    widths = {(narrow, wide) for narrow, wide in _WIDTHS.items()}
    if old.origin != new.origin or old.origin in ("array", "numpy") or old.shape != new.shape:
        return None
    if (old.dtype, new.dtype) in widths:
        before, after = "False", "True"
    elif (new.dtype, old.dtype) in widths:
        before, after = "True", "False"
    else:
        return None
    return Cause(
        "config",
        argument="jax_enable_x64",
        before=before,
        after=after,
        reason="x64_width",
        facts=(("name", name), ("origin", old.origin), ("was", old.dtype), ("now", new.dtype)),
    )


def _config_causes(before, after) -> list[Cause]:
    old, new = dict(before), dict(after)
    causes = []
    for name in sorted(set(old) & set(new)):
        if old[name] != new[name]:
            causes.append(
                Cause("config", argument=name, before=shorten(repr(old[name])), after=shorten(repr(new[name])))
            )
    return causes


def _param_causes(old: ParamSignature, new: ParamSignature) -> list[Cause]:
    name = new.name
    if old.passed != new.passed and "default" not in (old.passed, new.passed):
        style = {"position": "by position", "keyword": "by keyword"}
        return [
            Cause(
                "pytree_structure",
                argument=name,
                before=style[old.passed],
                after=style[new.passed],
                reason="passing_style",
            )
        ]
    if old.passed == "default" or new.passed == "default":
        if old.passed == new.passed:
            return []
        return [
            Cause(
                "pytree_structure",
                argument=name,
                before=old.describe(),
                after=new.describe(),
                reason="left_at_default" if new.passed == "default" else "passed_explicitly",
            )
        ]
    if old.static != new.static:
        return []  # the jit options changed (static_argnums): reported as jit_options
    if new.static:
        return _static_causes(old, new)
    filtered = any(leaf.static is not None for _, leaf in (*old.leaves, *new.leaves))
    if not filtered and old.attributes and new.attributes and old.attributes != new.attributes:
        causes = _attribute_causes(name, old.attributes, new.attributes)
        if causes:  # a library object, by the attribute paths its user writes
            return causes
    causes = []
    if old.structure != new.structure:
        causes.append(_structure_cause(old, new))
    old_leaves = dict(old.leaves)
    for path, leaf in new.leaves:
        previous = old_leaves.get(path)
        if previous is not None:
            causes.extend(leaf_causes(new.leaf_name(path), previous, leaf))
    return _made_again_together(new, causes)


def _made_again_together(param: ParamSignature, causes: list[Cause]) -> list[Cause]:
    """Several parts of one argument that are each a new object built again (an optimizer's
    ``init`` and ``update`` functions) said once, of the argument: it was built again."""
    again = [c for c in causes if c.kind == "static_value" and c.detail == BUILT_AGAIN]
    if len(again) < 2 or len(again) != len(causes) or not param.text:
        return causes
    kind = object_kind(param.text)
    made = StaticValue(text=kind, key=("before",), full=kind), StaticValue(text=kind, key=("after",), full=kind)
    return static_value_causes(param.name, *made, filtered=True)


def _static_causes(old: ParamSignature, new: ParamSignature) -> list[Cause]:
    """A static argument's new value: where it differs, or that it is a new object unequal to the old."""
    if old.value is None or new.value is None:  # both readings of a static parameter hold its value
        return []
    return static_value_causes(new.name, old.value, new.value)


def _attribute_causes(name: str, old: Sequence[Attribute], new: Sequence[Attribute]) -> list[Cause]:
    """What differs between two readings of a library object, attribute by attribute: what was
    added or removed (the outermost only: a new layer, not each of its weights), a static
    attribute's value, an array's shape or dtype.

    >>> from jaxmagic.recompiles.attributes import Attribute
    >>> old = (Attribute(".drop.deterministic", "False"), Attribute(".drop.rate", "0.5"))
    >>> new = (Attribute(".drop.deterministic", "True"), Attribute(".drop.rate", "0.5"))
    >>> [c.message for c in _attribute_causes("model", old, new)]
    ['attribute `model.drop.deterministic` changed: False → True']
    """
    before = {a.path: a for a in old}
    after = {a.path: a for a in new}
    causes = []
    for path, verb, was, now in [
        *((p, "added", "(absent)", after[p].text) for p in _outermost(p for p in after if p not in before)),
        *((p, "removed", before[p].text, "(absent)") for p in _outermost(p for p in before if p not in after)),
    ]:
        causes.append(
            Cause(
                "pytree_structure",
                argument=name + path,
                before=was,
                after=now,
                detail=f"attribute {verb}",
                reason=f"attribute_{verb}",
            )
        )
    for path, now in after.items():
        was = before.get(path)
        if was is None or was.same_as(now):
            continue
        found = leaf_causes(name + path, was.leaf, now.leaf) if was.leaf and now.leaf else []
        causes.extend(found or [_attribute_change(name + path, was, now)])
    return causes


def _attribute_change(argument: str, old: Attribute, new: Attribute) -> Cause:
    """One attribute's new value, shown where it differs; a new object that differs from the old
    only by where it lives in memory (an optimizer built again, a config object without an
    ``__eq__`` of its own, equal only to itself) is said to be one, by its kind."""
    was, now = old.text, new.text
    if without_addresses(was) == without_addresses(now):
        value = new.value
        kind = value.kind if value is not None and value.kind else object_kind(without_addresses(now))
        identity = value is not None and value.by_identity and kind != "function"
        return Cause(
            "pytree_structure",
            argument=argument,
            before=f"a {kind}",
            after=f"a new {kind}, built again",
            detail=BUILT_AGAIN,
            reason="attribute_built_again",
            facts=(("object", kind), ("by_identity", identity), ("text", _own_text(value))),
        )
    static = old.leaf is None
    before, after = differing_parts(without_addresses(was), without_addresses(now))
    return Cause(
        "pytree_structure",
        argument=argument,
        before=before,
        after=after,
        detail="static attribute" if static else "attribute kind",
        reason="attribute_changed",
    )


def _own_text(value) -> str:
    """A static value's text where its class writes one of its own (``Config(act='relu')``), not
    Python's ``<Config object>``; ``""`` otherwise."""
    text = value.text if value is not None else ""
    return "" if text.startswith("<") else text


def _outermost(paths) -> list[str]:
    """The paths not inside another of them: ``.extra`` but not ``.extra.kernel``."""
    paths = list(paths)
    return [p for p in paths if not any(p != q and p.startswith(q) and p[len(q)] in ".[" for q in paths)]


def _structure_cause(old: ParamSignature, new: ParamSignature) -> Cause:
    old_paths = [p for p, _ in old.leaves]
    new_paths = [p for p, _ in new.leaves]
    added = [p for p in new_paths if p not in old_paths]
    removed = [p for p in old_paths if p not in new_paths]
    parts = []
    if added:
        parts.append("added " + ", ".join(added[:4]) + (" …" if len(added) > 4 else ""))
    if removed:
        parts.append("removed " + ", ".join(removed[:4]) + (" …" if len(removed) > 4 else ""))
    if parts or old.structure == new.structure:
        detail = "; ".join(parts) or "its containers changed type or None entries moved"
        return Cause(
            "pytree_structure",
            argument=new.name,
            before=old.describe(),
            after=new.describe(),
            detail=detail,
            reason="structure_detail",
        )
    # The same leaves: what differs is in the tree's nodes, e.g. a custom node's metadata (its
    # static fields, a Flax module's graph); shown where the two trees differ.
    old_text, new_text = old.describe(limit=10_000), new.describe(limit=10_000)
    if old_text != new_text:  # the containers' kinds: a list before, a tuple now
        before, after = differing_parts(old_text, new_text)
        kinds = _container_kinds(old_text, new_text)
        detail = f"{before} → {after}" + (f" ({kinds})" if kinds else "")
    else:
        before, after = differing_parts(old.structure, new.structure)
        detail = f"node metadata {before} → {after}"
    return Cause(
        "pytree_structure",
        argument=new.name,
        before=before,
        after=after,
        detail=detail,
        reason="structure_detail",
    )


_CONTAINERS = {"[": "a list", "(": "a tuple", "{": "a dict"}


def _container_kinds(old: str, new: str) -> str:
    """``a list before, a tuple now`` when the two texts differ in the kind of their first
    differing container."""
    for a, b in zip(old, new, strict=False):
        if a != b:
            if a in _CONTAINERS and b in _CONTAINERS:
                return f"{_CONTAINERS[a]} before, {_CONTAINERS[b]} now: JAX compiles each kind of container apart"
            return ""
    return ""


def _is_key(leaf: LeafType) -> bool:
    return str(leaf.dtype).startswith("key<")


def _key_causes(name: str, old: LeafType, new: LeafType) -> list[Cause] | None:
    """Random keys: a typed key (``jax.random.key``) against a raw ``uint32`` one (``PRNGKey``), or a
    new number of keys. ``None`` when neither leaf is a typed key."""
    if not (_is_key(old) or _is_key(new)):
        return None
    if _is_key(old) != _is_key(new):
        return [
            Cause(
                "dtype",
                argument=name,
                before=old.type_text,
                after=new.type_text,
                reason="key_kind",
                facts=(("typed_now", _is_key(new)),),
            )
        ]
    if old.shape != new.shape:
        axes, ranks = shape_change(old.shape, new.shape)
        detail = shape_change_text(axes, ranks)
        return [
            Cause(
                "shape",
                argument=name,
                before=old.type_text,
                after=new.type_text,
                reason="key_shape",
                detail=detail,
                axes=axes,
                ranks=ranks,
            )
        ]
    return []


def leaf_causes(name: str, old: LeafType, new: LeafType) -> list[Cause]:
    """What differs between two types of one array leaf named ``name``: shape, dtype, weak type,
    placement; or, for a leaf ``eqx.filter_jit`` makes static, its value."""
    if old.static is not None and new.static is not None:
        return static_value_causes(name, old.static, new.static, filtered=True)
    if (old.static is None) != (new.static is None):
        return [_array_or_not_cause(name, old, new)]
    keys = _key_causes(name, old, new)
    if keys is not None:
        causes = keys
    else:
        causes = [c for c in (_shape_cause(name, old, new), _dtype_cause(name, old, new)) if c is not None]
    if old.weak != new.weak:
        same = old.origin == new.origin == "array" and (old.dtype, old.shape) == (new.dtype, new.shape)
        within = _holder(name) if same else None  # made strongly typed, the one leaf is the other
        causes.append(
            Cause(
                "weak_type",
                argument=name,
                before=old.describe(),
                after=new.describe(),
                reason="weak_kind",
                facts=(("was", old), ("now", new)) + ((("within", within),) if within else ()),
            )
        )
    if old.placement != new.placement:
        causes.append(placement_cause(name, old.placement, new.placement, sharded=old.sharded or new.sharded))
    return causes


def _holder(name: str) -> str | None:
    """The argument that holds the leaf ``name`` (``state`` for ``state[2].info.count``), or ``None``
    for a leaf that is the argument itself.

    >>> _holder("state[2].info.count"), _holder("x")
    ('state', None)
    """
    match = re.match(r"[A-Za-z_]\w*", name)
    return match.group() if match and match.end() < len(name) else None


def _array_or_not_cause(name: str, old: LeafType, new: LeafType) -> Cause:
    """A leaf that is an array on one call and a static value (under ``eqx.filter_jit``) on the other."""
    return Cause(
        "static_value",
        argument=name,
        before=old.describe(),
        after=new.describe(),
        reason="filter_array",
        facts=(("array_now", new.static is None),),
    )


def _shape_cause(name: str, old: LeafType, new: LeafType) -> Cause | None:
    if old.shape == new.shape:
        return None
    axes, ranks = shape_change(old.shape, new.shape)
    return Cause(
        "shape",
        argument=name,
        before=old.type_text,
        after=new.type_text,
        detail=shape_change_text(axes, ranks),
        axes=axes,
        ranks=ranks,
        reason="axes_changed",
    )


def _dtype_cause(name: str, old: LeafType, new: LeafType) -> Cause | None:
    """A new dtype: from ``jax_enable_x64`` where only its width changed, else of the value
    passed (a Python scalar of another type, an array of another dtype)."""
    if old.dtype == new.dtype:
        return None
    x64 = _x64_cause(name, old, new)
    if x64 is not None:
        return x64
    python = not {old.origin, new.origin} <= {"array", "numpy"}
    if python and old.origin != new.origin:  # a Python scalar of another type: said by the kinds of value
        reason, facts = "python_dtype", (("was", old), ("now", new))
    else:
        reason, facts = "python_dtype_changed" if python else "dtype_changed", (("was", old.dtype), ("now", new.dtype))
    return Cause(
        "dtype",
        argument=name,
        before=old.describe() if python else old.type_text,
        after=new.describe() if python else new.type_text,
        reason=reason,
        facts=facts,
    )


def changed_axes(cause: Cause) -> list[int]:
    """The axes a shape cause changed (its ``axes`` facts), for headlines such as "on axis 0".

    >>> changed_axes(Cause("shape", argument="x", before="f32[3,2]", after="f32[4,2]", axes=((0, 3, 4),)))
    [0]
    """
    if cause.kind != "shape":
        return []
    return [axis for axis, _, _ in cause.axes]


# ----------------------------------------------------------------------------------------------
# Choosing what to compare with


def nearest(
    earlier: Sequence[CallSignature], now: CallSignature, cell_namer: CellNamer = no_cells
) -> tuple[CallSignature | None, list[Cause]]:
    """The earlier signature with the fewest differences (the latest among equals), and those
    differences (``cell_namer`` as for ``differences``). ``(None, [])`` when there is nothing earlier.

    >>> import numpy as np
    >>> from jaxmagic.recompiles.signatures import describe_call
    >>> def f(x):
    ...     return x
    >>> calls = [describe_call(f, (np.ones(n, dtype),), {}) for n, dtype in ((3, "f4"), (5, "i4"))]
    >>> closest, causes = nearest(calls, describe_call(f, (np.ones(4, "f4"),), {}))
    >>> closest is calls[0], [c.kind for c in causes]
    (True, ['shape'])
    """
    if not earlier:
        return None, []
    # A cheap count first (each differing value, leaf type or setting once); the causes are
    # worked out only for the closest candidates.
    counts = [difference_count(candidate, now) for candidate in earlier]
    fewest = min(counts)
    closest, closest_causes = None, []
    for candidate, count in zip(earlier, counts, strict=True):
        if count > fewest + 1:
            continue
        causes = differences(candidate, now, cell_namer)
        if closest is None or len(causes) <= len(closest_causes):
            closest, closest_causes = candidate, causes
    return closest, closest_causes


def difference_count(before: CallSignature, after: CallSignature) -> int:
    """About how many ``Cause`` objects ``differences`` would give, without making them: the
    function, each option and setting, each static value, each container structure and each
    leaf whose type, dtype, weak type or placement differs.

    >>> import numpy as np
    >>> from jaxmagic.recompiles.signatures import describe_call
    >>> def f(x, y):
    ...     return x
    >>> a, b = (describe_call(f, (np.ones(n), np.ones(2)), {}) for n in (3, 4))
    >>> difference_count(a, b), len(differences(a, b))
    (1, 1)
    """
    count = 0 if before.is_same_function(after) else 1
    for mine, theirs in ((before.options, after.options), (before.config, after.config)):
        if mine != theirs:
            old, new = dict(mine), dict(theirs)
            count += sum(old.get(k) != new.get(k) for k in {*old, *new})
    old_params = {p.name: p for p in before.params}
    for param in after.params:
        old = old_params.pop(param.name, None)
        if old is None:
            count += param.passed != "default"
        elif old != param:
            count += _param_difference_count(old, param)
    return count + sum(p.passed != "default" for p in old_params.values())


def _param_difference_count(old: ParamSignature, new: ParamSignature) -> int:
    if old.static or new.static or old.passed != new.passed:
        return 1
    count = old.structure != new.structure
    before = dict(old.leaves)
    for path, leaf in new.leaves:
        was = before.get(path)
        if was is not None and was != leaf:
            count += (
                (was.shape != leaf.shape)
                + (was.dtype != leaf.dtype)
                + (was.weak != leaf.weak)
                + (was.placement != leaf.placement)
                + (was.static != leaf.static)
            )
    return max(count, 1)
