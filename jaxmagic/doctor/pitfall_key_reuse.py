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
from jaxmagic.doctor.declared import Declared, Function, InsertBefore, Rewritten

# Functions of jax.random that take a key without drawing numbers from it.
_NOT_DRAWS = {"split", "fold_in", "key", "PRNGKey", "key_data", "wrap_key_data", "clone", "key_impl"}


def _draws(function: Function) -> list[tuple[str, ast.Call]]:
    """``(key name, call)`` for each call of a ``jax.random`` sampler whose key is a plain name."""
    samplers = {id(f) for name, f in vars(jax.random).items() if callable(f) and name not in _NOT_DRAWS}
    found = [
        (call.args[0].id, call)
        for call in clues.nodes_in(function.node, ast.Call)
        if call.args and isinstance(call.args[0], ast.Name) and id(function.resolve(call.func)) in samplers
    ]
    return sorted(found, key=lambda item: (item[1].lineno, item[1].col_offset))


def _assigned_lines(node: ast.AST, name: str) -> list[int]:
    return [
        n.lineno for n in ast.walk(node) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
    ]


def key_reuse(function: Function) -> list[dict]:
    """Each key name given to two draws with no new value in between: the draws, a new key for each."""
    by_key: dict[str, list[ast.Call]] = {}
    for name, call in _draws(function):
        uses = by_key.setdefault(name, [])
        if uses and any(uses[-1].lineno < line <= call.lineno for line in _assigned_lines(function.node, name)):
            uses.clear()  # a new key under the same name (key, sub = split(key)): a fresh start
        uses.append(call)
    found = []
    for name, uses in ((name, uses) for name, uses in by_key.items() if len(uses) >= 2):
        fresh = [f"{name}_{i}" for i in range(1, len(uses) + 1)]
        found.append(
            {"at": uses[1], "again": uses[1], "before": uses[0], "key": name, "fresh": ", ".join(fresh),
             "count": "" if len(uses) == 2 else f", {len(uses)}", "first": clues.statement_at(function.node, uses[0].lineno),
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
