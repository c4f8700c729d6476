"""How one value changed between two calls, as causes a reader can compare: a static value (its
differing part, or that it is the same kind of object built again), an array's placement
(committed now, on another device), and long texts cut to where they differ.

>>> from jaxmagic.recompiles.leaves import StaticValue
>>> [c.message for c in static_value_causes("n", StaticValue.of(3), StaticValue.of(4), filtered=True)]
["`n`: 3 → 4 (static under eqx.filter_jit: a non-array is part of the compiled code's key)"]
"""

from __future__ import annotations

from jaxmagic.recompiles.causes import BUILT_AGAIN, Cause
from jaxmagic.recompiles.leaves import StaticValue, made_again, without_addresses

_UNCOMMITTED = "default device (uncommitted)"


def differing_parts(old: str, new: str, *, limit: int = 72, context: int = 24) -> tuple[str, str]:
    """Two long texts cut to where they differ, with a little context on each side.

    >>> differing_parts("Net(" + "w=1, " * 20 + "act='relu')", "Net(" + "w=1, " * 20 + "act='tanh')", limit=30)
    ("…=1, w=1, w=1, w=1, act='relu')", "…=1, w=1, w=1, w=1, act='tanh')")
    """
    if len(old) <= limit and len(new) <= limit:
        return old, new
    start = 0
    while start < min(len(old), len(new)) and old[start] == new[start]:
        start += 1
    end = 0
    while end < min(len(old), len(new)) - start and old[-1 - end] == new[-1 - end]:
        end += 1
    begin = max(0, start - context)
    closing = old.rfind("'", 0, start)
    opening = old.rfind("'", 0, closing) if closing > 0 else -1
    if opening >= 0 and start - opening <= 2 * context:
        begin = opening  # from the start of the quoted name before the difference: 'deterministic'

    def cut(text: str) -> str:
        stop = min(len(text), max(len(text) - end + context, begin + 1))
        part = text[begin:stop]
        return ("…" if begin else "") + part + ("…" if stop < len(text) else "")

    return cut(old), cut(new)


def static_value_causes(name: str, old: StaticValue, new: StaticValue, *, filtered: bool = False) -> list[Cause]:
    """The causes of a static value's change, ``filtered`` when it is static because it is not an
    array (``eqx.filter_jit``): where the two values differ; or that the new one is the same kind
    of object built again (a function, an optimizer made in the loop); or that it is unequal to
    the old one though written alike.

    >>> from jaxmagic.recompiles.leaves import StaticValue
    >>> [c.message for c in static_value_causes("n", StaticValue.of(3), StaticValue.of(4), filtered=True)]
    ["`n`: 3 → 4 (static under eqx.filter_jit: a non-array is part of the compiled code's key)"]
    >>> first, second = (lambda v: v), (lambda v: v)
    >>> [c.after for c in static_value_causes("act", StaticValue.of(first), StaticValue.of(second))]
    ['a new function, built again']
    """
    if old.key == new.key:
        return []
    if made_again(old, new):
        kind = object_kind(new.full or new.text)
        return [
            Cause(
                "static_value",
                argument=name,
                before=f"a {kind}",
                after=f"a new {kind}, built again",
                detail=BUILT_AGAIN,
                reason="built_again",
                facts=(("object", kind), ("filtered", filtered)),
            )
        ]
    if (old.full or old.text) == (new.full or new.text):
        return [
            Cause(
                "static_value",
                argument=name,
                before=old.text,
                after=new.text,
                reason="unequal_alike",
                detail="equal text, unequal objects: give its class __eq__ and __hash__ based on its contents",
            )
        ]
    if "…" in old.text + new.text:  # long values: where they differ
        before, after = differing_parts(
            without_addresses(old.full or old.text), without_addresses(new.full or new.text)
        )
    else:
        before, after = old.text, new.text
    if not filtered:
        return [Cause("static_value", argument=name, before=before, after=after)]
    return [Cause("static_value", argument=name, before=before, after=after, reason="filter_static")]


def object_kind(text: str) -> str:
    """``function``, ``GradientTransformationExtraArgs``: the kind of object a value's text shows.

    >>> object_kind("<function relu at 0x1>"), object_kind("GradientTransformation(init=<function f>)")
    ('function', 'GradientTransformation')
    >>> object_kind("<PjitFunction of <function sin at 0x2>>")
    'PjitFunction'
    """
    head = text.lstrip("<").split("(", 1)[0].split(" ", 1)[0].strip()
    return head or "object"


def placement_cause(name: str, old: str | None, new: str | None, *, sharded: bool = False) -> Cause:
    """A leaf placed otherwise than before: committed where it was not (an array put with
    ``jax.device_put`` or restored from a checkpoint, which JAX compiles for its sharding), on
    another device, or sharded otherwise. ``None`` is an uncommitted array.

    >>> placement_cause("params['w']", None, "cpu:0").message
    "`params['w']` is committed to cpu:0 now and was uncommitted before: JAX compiles for a committed array's sharding"
    >>> placement_cause("x", "cpu:0", "cpu:1").kind
    'device'
    """
    if old is None or new is None:
        return Cause(
            "sharding",
            argument=name,
            before=old or _UNCOMMITTED,
            after=new or _UNCOMMITTED,
            detail="committed: placed with jax.device_put, restored from a checkpoint, or made from a committed array",
            reason="committed_now" if old is None else "uncommitted_now",
        )
    if sharded:
        return Cause("sharding", argument=name, before=old, after=new)
    return Cause("device", argument=name, before=old, after=new)
