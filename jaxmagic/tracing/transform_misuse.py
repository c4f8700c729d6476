"""A transform asked with ``-t`` that does not apply to the call: what JAX's error means for it,
and a call where it applies.

When ``-t vmap`` fails because the arguments' leading sizes differ, the example is the user's own
call with ``jax.vmap(f, in_axes=...)`` written out: the arguments that share the most common
leading size mapped (``0``), the others not (``None``), and only once ``jax.eval_shape`` has
traced that mapping on the user's arguments.

>>> import jax.numpy as jnp
>>> from jaxmagic.tracing.call import resolve_call
>>> def scale(xs, w):
...     return xs * w
>>> call = resolve_call("scale(xs, w)", {"scale": scale, "xs": jnp.ones((8, 3)), "w": jnp.ones(3)})
>>> vmap_axes(call)
(0, None)
>>> vmap_example(call, (0, None))
'%jaxpr jax.vmap(scale, in_axes=(0, None))(xs, w)'
"""

from __future__ import annotations

import ast
import collections
from typing import Any, Sequence

from jaxmagic.errors import UsageProblem
from jaxmagic.tracing.call import Call

_GRAD_EXAMPLE = "%jaxpr -t grad loss(params, x)   # loss returns a scalar"
_GRAD_INPUT_EXAMPLE = "%jaxpr -t grad loss(params, x)   # params: a float array, or a pytree of them"
_VMAP_EXAMPLE = "%jaxpr -t vmap f(xs, ys)   # xs and ys: arrays with the same leading size, mapped over"
_VMAP_SIZES = "vmap got inconsistent sizes for array axes to be mapped"
# What JAX says -> (what it means for the transform asked for, a call where it applies)
MISUSE = {
    "Gradient only defined for scalar-output functions": (
        "grad needs a function whose output is a scalar",
        _GRAD_EXAMPLE,
    ),
    "grad requires real- or complex-valued inputs": (
        "grad differentiates with respect to the first argument, which must be a float array",
        _GRAD_INPUT_EXAMPLE,
    ),
    "vmap was requested to map its argument along axis 0": (
        "vmap maps over the leading axis of every positional argument, and one of them has no axes",
        _VMAP_EXAMPLE,
    ),
    _VMAP_SIZES: (
        "vmap maps over the leading axis of every positional argument, and their leading sizes differ",
        _VMAP_EXAMPLE,
    ),
}
_MAP_SOME = "; to map some of them only, give `in_axes` (None for an argument that is the same for every element)"


def transform_problem(exc: Exception, transforms: Sequence[str], call: Call | None = None) -> UsageProblem | None:
    """A ``UsageProblem`` when ``exc`` says a requested transform does not apply to this call,
    with an example of the transform that failed (for ``vmap`` over arguments of different
    leading sizes, the user's call with the ``in_axes`` that trace)."""
    if not transforms:
        return None
    message = str(exc)
    for needle, (explanation, example) in MISUSE.items():
        if needle in message:
            first_line = message.strip().splitlines()[0].rstrip(":")
            if needle == _VMAP_SIZES:
                sizes = _sizes(call) if call is not None else ""
                explanation += (f" ({sizes})" if sizes else "") + _MAP_SOME
                axes = vmap_axes(call) if call is not None and list(transforms) == ["vmap"] else None
                example = vmap_example(call, axes) if call is not None and axes is not None else example
            return UsageProblem(
                f"-t {' -t '.join(transforms)} does not apply here: {explanation}. JAX says: {first_line}",
                example=example,
            )
    return None


def _leading_size(value: Any) -> int | None:
    import jax

    leaves = jax.tree_util.tree_leaves(value)
    sizes = {leaf.shape[0] for leaf in leaves if getattr(leaf, "ndim", 0) >= 1}
    if not leaves or len(sizes) != 1 or any(getattr(leaf, "ndim", 0) < 1 for leaf in leaves):
        return None
    return sizes.pop()


def axis_size(argument: Any, axis: int | None) -> int | None:
    """The size of ``axis`` in every leaf of ``argument`` (``None``: not one size, or not mapped)."""
    import jax

    if axis is None:
        return None
    leaves = jax.tree_util.tree_leaves(argument)
    sizes = {leaf.shape[axis] for leaf in leaves if -getattr(leaf, "ndim", 0) <= axis < getattr(leaf, "ndim", 0)}
    return sizes.pop() if leaves and len(sizes) == 1 else None


def _axes_of_size(argument: Any, size: int) -> list[int]:
    import jax

    ndim = min((getattr(leaf, "ndim", 0) for leaf in jax.tree_util.tree_leaves(argument)), default=0)
    return [axis for axis in range(ndim) if axis_size(argument, axis) == size]


def mapped_axes(function: Any, arguments: list, axes: tuple) -> tuple | None:
    """``in_axes`` mapping every argument over an axis of the size most of the mapped ones share
    (the first argument's among equals): one whose size differs over its own axis of that size
    (its first, where several have it), or not at all where it has none; ``None`` where nothing
    changes or ``jax.vmap`` with them does not trace on ``arguments``."""
    import jax

    sizes = [axis_size(argument, axis) for argument, axis in zip(arguments, axes, strict=True)]
    counted = collections.Counter(size for size in sizes if size is not None)
    if not counted:
        return None
    common = max(counted, key=lambda size: (counted[size], -sizes.index(size)))
    fixed = []
    for argument, axis, size in zip(arguments, axes, sizes, strict=True):
        if axis is None or size == common:
            fixed.append(axis)
            continue
        found = _axes_of_size(argument, common)
        fixed.append(found[0] if found else None)
    if tuple(fixed) == tuple(axes):
        return None
    try:
        jax.eval_shape(jax.vmap(function, in_axes=tuple(fixed)), *arguments)
    except Exception:
        return None
    return tuple(fixed)


def vmap_axes(call: Call) -> tuple | None:
    """``in_axes`` for ``jax.vmap`` of the callee on the call's positional arguments (``mapped_axes``
    from every argument's leading axis); ``None`` where none trace."""
    if call.kwargs or call.static or not call.args:
        return None
    return mapped_axes(call.function, list(call.args), (0,) * len(call.args))


def _written(call: Call) -> tuple[str, list[str]] | None:
    """The callee and the positional arguments as the user wrote them, where the call reads so."""
    text = call.source.strip()
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(node, ast.Call) or call.receiver is not None or len(node.args) != len(call.args):
        return None
    callee = ast.get_source_segment(text, node.func)
    arguments = [ast.get_source_segment(text, arg) or "" for arg in node.args]
    return (callee, arguments) if callee and all(arguments) else None


def _sizes(call: Call) -> str:
    """``points: 8, offset: 3``: each positional argument's leading size, as written."""
    written = _written(call)
    if written is None:
        return ""
    return ", ".join(
        f"`{text}`: {'no leading axis' if size is None else size}"
        for text, size in zip(written[1], (_leading_size(arg) for arg in call.args), strict=True)
    )


def vmap_example(call: Call, axes: tuple) -> str | None:
    """The call as the user wrote it, with ``jax.vmap(f, in_axes=axes)`` in place of ``f``."""
    written = _written(call)
    if written is None or len(written[1]) != len(axes):
        return None
    return f"%jaxpr jax.vmap({written[0]}, in_axes={axes!r})({', '.join(written[1])})"
