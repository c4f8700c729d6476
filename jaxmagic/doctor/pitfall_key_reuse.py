"""``key-reuse``: one PRNG key given to two random draws. JAX's random numbers are a function of the
key: the same key gives the same numbers, so the two draws are not independent. Split the key, one
new key per draw.

>>> import jax
>>> def noise(key):
...     a = jax.random.normal(key, (2,))
...     b = jax.random.uniform(key, (2,))
...     return a, b
>>> from jaxmagic.doctor.traced_code import Traced
>>> (found,) = KEY_REUSE.notice(Traced([noise], None, None, lambda filename: None))
>>> found.fix.splitlines()[1].strip()
'key_1, key_2 = jax.random.split(key)'
"""

from __future__ import annotations

import ast

import jax

import jaxmagic.doctor.clues as clues
from jaxmagic.doctor.declared import Declared, Function, InsertBefore, Line, Rewritten, user_function

# Functions of jax.random that take a key without drawing numbers from it.
_NOT_DRAWS = {"split", "fold_in", "key", "PRNGKey", "key_data", "wrap_key_data", "clone", "key_impl"}


def _draws(node: ast.AST, resolve) -> list[tuple[str, ast.Call]]:
    """``(key name, call)`` for each call of a ``jax.random`` sampler whose key is a plain name."""
    samplers = {id(f) for name, f in vars(jax.random).items() if callable(f) and name not in _NOT_DRAWS}
    calls = clues.in_order(clues.nodes_in(node, ast.Call))
    return [
        (c.args[0].id, c)
        for c in calls
        if c.args and isinstance(c.args[0], ast.Name) and id(resolve(c.func)) in samplers
    ]


def _assigned_lines(node: ast.AST, name: str) -> list[int]:
    return [
        n.lineno for n in ast.walk(node) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
    ]


def key_reuse(function: Function | Line) -> list[dict]:
    """Each key name given to two draws with no new value in between: the draws, a new key for each
    (in a function that traced fine, or in the one whose line raised ``KeyReuseError``)."""
    node, resolve = (function.node, function.resolve) if isinstance(function, Function) else (user_function(function), function.frame.resolve)  # fmt: skip
    by_key: dict[str, list[ast.Call]] = {}
    for name, call in _draws(node, resolve):
        uses = by_key.setdefault(name, [])
        if uses and any(uses[-1].lineno < line <= call.lineno for line in _assigned_lines(node, name)):
            uses.clear()  # a new key under the same name (key, sub = split(key)): a fresh start
        uses.append(call)
    found = []
    for name, uses in ((name, uses) for name, uses in by_key.items() if len(uses) >= 2):
        fresh = [f"{name}_{i}" for i in range(1, len(uses) + 1)]
        found.append(
            {"at": uses[1], "again": uses[1], "before": uses[0], "key": name, "fresh": ", ".join(fresh),
             "count": "" if len(uses) == 2 else f", {len(uses)}", "first": clues.statement_at(node, uses[0].lineno),
             "renamed": [(call.args[0], new) for call, new in zip(uses, fresh, strict=True)]}
        )  # fmt: skip
    return found


KEY_REUSE = Declared(
    "key-reuse",
    "One random key used for two draws",
    key_reuse,
    severity="warning",
    stage="trace",
    order=40,
    explanation="{again} draws from {key} again ({where}), after {before} already did: the same key gives the same "
    "random bits, so the draws are not independent.",
    rewrite=(InsertBefore("first", "{fresh} = {jax}.random.split({key}{count})"), Rewritten("renamed")),
    fix_note="Split the key, one new key per draw (`{jax}.random.split`).",
    variable="key",
)


def reused_key(line: Line) -> dict | None:
    """``KeyReuseError`` (``jax_debug_key_reuse``): the draws of the failing function that reuse a key."""
    found = key_reuse(line)
    return next((f for f in found if f["again"].lineno == line.frame.line), found[0] if found else None)


KEY_REUSE_ERROR = Declared(
    "key-reuse-error",
    "A random key consumed twice, refused by jax_debug_key_reuse",
    reused_key,
    raised=jax.errors.KeyReuseError,
    messages=("Previously-consumed key",),
    order=40,
    explanation="{again} draws from {key} again ({where}), after {before} already did. With `jax_debug_key_reuse` on, "
    "JAX refuses a key used a second time: the same key gives the same random bits, so the draws would not be "
    "independent.",
    rewrite=KEY_REUSE.rewrite,
    fix_note=KEY_REUSE.fix_note,
    variable="key",
)
