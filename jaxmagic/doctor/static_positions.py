"""A setting passed through a library's jitted function: Flax Linen's ``apply_jit =
jax.jit(model.apply)`` called as ``apply_jit(variables, x, False)`` hands ``False`` on to the
model's ``__call__(self, x, train)`` through ``apply``'s ``*args``, so no parameter of the jitted
function is named ``train`` and ``static_argnames`` cannot reach it. JAX's message names the
argument by its place (``args[1]``); the fix marks that place static with ``static_argnums`` on
the user's own ``jax.jit`` line.

>>> import inspect
>>> def apply(variables, *args, rngs=None, **kwargs):
...     pass
>>> call_positions(inspect.signature(apply), ["args[1]"])
[2]
>>> call_positions(inspect.signature(apply), ["rngs"]) is None
True
"""

from __future__ import annotations

import ast
import inspect
import re
from dataclasses import dataclass
from typing import Any

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic import _jax_private
from jaxmagic.doctor.case import Case, jit_assignment
from jaxmagic.doctor.clues import MISSING
from jaxmagic.words import Words
from jaxmagic.words import doctor as words

_ITEM = re.compile(r"(?P<name>[A-Za-z_]\w*)\[(?P<index>\d+)\]")
_SETTING = (bool, int, str)


def call_positions(signature: inspect.Signature, paths: list[str]) -> list[int] | None:
    """The positions in a call of the arguments JAX names (``args[1]``: the second of ``*args``;
    a positional parameter by its name); ``None`` where one is not a position."""
    positional = [p for p in signature.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    rest = next((p.name for p in signature.parameters.values() if p.kind == p.VAR_POSITIONAL), None)
    found = []
    for path in paths:
        item = _ITEM.fullmatch(path)
        if item is not None and item["name"] == rest:
            found.append(len(positional) + int(item["index"]))
        elif path in [p.name for p in positional]:
            found.append([p.name for p in positional].index(path))
        else:
            return None
    return found


@dataclass(frozen=True)
class Placed:
    """The fix: ``positions`` of the call made static on the line that jits ``jitted`` (``fixed``,
    that line rewritten), the arguments as the call writes them (``written``)."""

    positions: tuple[int, ...]
    jitted: str
    written: tuple[str, ...]
    fixed: str

    def label(self, why: Words) -> Words:
        return words.mark_positions_static(self.positions, self.jitted, self.written, why)


def placed_settings(case: Case) -> Placed | None:
    """The fix where the traced function is a library's, jitted by the user (``g =
    jax.jit(library_function)``) and every argument JAX names was passed to ``g`` as a Python
    bool, int or string: ``static_argnums`` added to that line. ``None`` otherwise."""
    found = _library_call(case)
    if found is None:
        return None
    node, callee, signature = found
    positions = call_positions(signature, list(clues.argument_paths(case.message)))
    if not positions or not _settings_at(case, node, positions):
        return None
    assignment = jit_assignment(case, callee)
    if assignment is not None and assignment[2].library != "jax":
        assignment = None
    edit = rewrites.add_static_argnums_edit(assignment[2], positions) if assignment is not None else None
    if assignment is None or edit is None:
        return None
    parsed, statement, _ = assignment
    target, site = statement.targets[0], case.call_site
    call_source = case.parsed(site) if site is not None else None
    if call_source is None:
        return None
    written = tuple(clues.source_of(call_source, node.args[p]) for p in positions)
    fixed = rewrites.definition_with_edits(parsed.lines, statement, [edit])
    return Placed(tuple(positions), target.id if isinstance(target, ast.Name) else "", written, fixed)


def _library_call(case: Case) -> tuple[ast.Call, Any, inspect.Signature] | None:
    """The user's call of a jitted library function that JAX was tracing: the call, the jitted
    function and the signature of the one it wraps."""
    traced, site = case.traced, case.call_site
    if traced is None or clues.is_user_file(traced.file) or traced.traced_for != "jit" or site is None:
        return None
    node = case.expression(site, ast.Call)
    callee = clues.resolve(node.func, site.lookup) if node is not None else MISSING
    wrapped = getattr(callee, "__wrapped__", None)
    if node is None or wrapped is None or not _jax_private.is_jitted(callee):
        return None
    try:
        return node, callee, inspect.signature(wrapped)
    except (TypeError, ValueError):
        return None


def _settings_at(case: Case, node: ast.Call, positions: list[int]) -> bool:
    """Whether the call passes a Python bool, int or string at each of ``positions``."""
    site = case.call_site
    if site is None or any(p >= len(node.args) or isinstance(node.args[p], ast.Starred) for p in positions):
        return False
    passed = [clues.written_value(node.args[p], site.lookup) for p in positions]
    return all(isinstance(value, _SETTING) and not hasattr(value, "shape") for value in passed)


def written_static_names(function: Any, lookup) -> list[str]:
    """The ``static_argnames`` written in the jit decorating ``function``'s ``def`` (JAX's own
    options list a static argument by both its place and its name, whichever was written)."""
    located = clues.function_of_code(function.__code__) if function is not None else None
    use = rewrites.decorator_jit(located[1], lookup) if located else None
    return rewrites.static_names_of(use.options) if use is not None else []
