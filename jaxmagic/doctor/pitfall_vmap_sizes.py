"""``vmap-sizes``: ``jax.vmap`` over arguments whose mapped axes have different sizes. ``vmap``
runs the function once per element of the mapped axes, so every mapped axis must have as many
elements; an argument that is the same for every element is not mapped (``None`` in ``in_axes``).

The fix maps each argument whose size disagrees over its own axis of the size the others share
(or not at all, where it has none), and is shown only once ``jax.vmap`` with those axes traces on
the user's arguments.

>>> import jax, jax.numpy as jnp
>>> from jaxmagic.doctor.case import Case
>>> def total(a, b):
...     return jnp.sum(a) + jnp.sum(b)
>>> X, U = jnp.ones((10, 4)), jnp.ones((10, 2))
>>> try:
...     jax.vmap(total, in_axes=(0, 1))(X, U)
... except ValueError as exc:
...     found = VMAP_SIZES.diagnose(Case(exc, None, lambda filename: None))
>>> found.fix.strip()
'jax.vmap(total, in_axes=(0, 0))(X, U)'
>>> str(found.fix_note)
'Map `U` over its axis 0 instead, so that every mapped axis has 10 elements (`None`: not mapped, the same value for every element): `in_axes=(0, 0)`.'
"""

from __future__ import annotations

import ast
from typing import Any, TypeGuard

import jax

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.donations as donations
import jaxmagic.doctor.fix_safety as fix_safety
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.clues import MISSING
from jaxmagic.doctor.declared import AddKeyword, Declared, Given, Line, Replace
from jaxmagic.tracing.transform_misuse import axis_size, mapped_axes
from jaxmagic.words import doctor as words


def _is_vmap(node: ast.AST, lookup) -> TypeGuard[ast.Call]:
    return isinstance(node, ast.Call) and bool(node.args) and clues.resolve(node.func, lookup) is jax.vmap


def _written_axes(vmap: ast.Call, lookup) -> tuple[ast.AST | None, Any]:
    """The ``in_axes`` node as written (``None``: left to its default, 0) and its value."""
    node = next((k.value for k in vmap.keywords if k.arg == "in_axes"), vmap.args[1] if len(vmap.args) > 1 else None)
    if node is None:
        return None, 0
    try:
        return node, ast.literal_eval(node)
    except (ValueError, SyntaxError):
        value = clues.resolve(node, lookup)
        return node, MISSING if value is MISSING else value


def vmap_sizes(line: Line) -> dict | None:
    """The mapped call that failed (``jax.vmap(f, ...)(x, y)``, or ``g(x, y)`` for a ``g = jax.vmap(f, ...)``
    the user ran) with the axes that trace."""
    call = line.expression(ast.Call)
    lookup = line.frame.lookup
    if call is None or call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    arguments = [fix_safety.evaluated(a, line.frame) for a in call.args]
    if any(a is MISSING for a in arguments):
        return None
    if _is_vmap(call.func, lookup):
        return _facts(line, call.func, call.args, arguments, lookup, defined=None)
    if not isinstance(call.func, ast.Name):
        return None
    found = donations.assignment_of(line.case, line.frame, call.func.id, lambda value: _is_vmap(value, lookup))
    if found is None:
        return None
    vmap = found[1].value
    assert isinstance(vmap, ast.Call)  # as accepted
    return _facts(line, vmap, call.args, arguments, lookup, defined=(*found, call.func.id))


def _facts(line: Line, vmap: ast.Call, written: list, arguments: list, lookup, defined) -> dict | None:
    function = clues.resolve(vmap.args[0], lookup)
    node, value = _written_axes(vmap, lookup)
    axes = (
        tuple(value) if isinstance(value, (tuple, list)) else (value,) * len(arguments) if value is not MISSING else ()
    )
    if function is MISSING or len(axes) != len(arguments) or not all(a is None or isinstance(a, int) for a in axes):
        return None
    fixed = mapped_axes(function, arguments, axes)
    if fixed is None:
        return None
    texts = [line.text(a) for a in written]
    where_defined = line.text if defined is None else lambda node: clues.source_of(defined[0], node)
    facts = {
        "vmap": where_defined(vmap),
        "mapped": words.mapped_axes([(a, t, axis_size(v, a)) for a, t, v in zip(axes, texts, arguments, strict=True) if a is not None]),
        "changes": words.moved_axes([(a, t) for a, t, old in zip(fixed, texts, axes, strict=True) if a != old]),
        "axes": f"in_axes={fixed!r}",
        "size": next(str(axis_size(v, a)) for a, v in zip(fixed, arguments, strict=True) if a is not None),
        "function": where_defined(vmap.args[0]),
    }  # fmt: skip
    text = repr(fixed)
    if defined is not None:
        parsed, assign, name = defined
        edit = (
            rewrites.Edit(clues.Span.of(node), text)
            if node is not None
            else rewrites.keyword_edit(vmap, f"in_axes={text}")
        )
        fixed = rewrites.definition_with_edits(parsed.lines, assign, [edit])
        return {**facts, "kind": "defined", "fixed": fixed, "name": name}
    if node is None:
        return {**facts, "kind": "added", "call": vmap}
    return {**facts, "in_axes": node, "new_axes": text}


VMAP_SIZES = Declared(
    "vmap-sizes",
    "jax.vmap over axes of different sizes",
    vmap_sizes,
    raised=ValueError,
    messages=("vmap got inconsistent sizes for array axes to be mapped",),
    order=15,
    explanation="{vmap} ({where}) maps {mapped}: `vmap` runs {function} once per element of the mapped axes, so "
    "they must all have the same size.",
    rewrite=(Replace("in_axes", "{new_axes}"),),
    shown="statement",
    fix_note="Map {changes} instead, so that every mapped axis has {size!s} elements (`None`: not mapped, the same "
    "value for every element): `{axes}`.",
    kinds={
        "defined": {
            "rewrite": (Given("fixed"),),
            "explanation": "{name} ({where}) is {vmap}, which maps {mapped}: `vmap` runs {function} once per element "
            "of the mapped axes, so they must all have the same size.",
        },
        "added": {"rewrite": (AddKeyword("call", "{axes}"),)},
    },
    function="function",
)
