"""``key-reuse``: one PRNG key given to two random draws. JAX's random numbers are a function of the
key: the same key gives the same numbers, so the two draws are not independent. Split the key, one
new key per draw.

>>> import jax
>>> def noise(key):
...     a = jax.random.normal(key, (2,))
...     b = jax.random.uniform(key, (2,))
...     return a, b
>>> traced = Traced([noise], None, None, lambda filename: None)
>>> (found,) = describe(traced, key_reuse(traced))
>>> found.fix.splitlines()[1].strip()
'key_1, key_2 = jax.random.split(key)'
"""

from __future__ import annotations

import ast
import types
from dataclasses import dataclass

import jax

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.clues import Span
from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.registry import describes, pitfall
from jaxmagic.doctor.traced_code import Traced, with_edits, with_source
from jaxmagic.tracing import sources
from jaxmagic.words import code, place, say

# Functions of jax.random that take a key without drawing numbers from it.
_NOT_DRAWS = {"split", "fold_in", "key", "PRNGKey", "key_data", "wrap_key_data", "clone", "key_impl"}


def _draws(node: ast.AST, lookup) -> list[tuple[str, ast.Call]]:
    """``(key name, call)`` for each call of a ``jax.random`` sampler whose key is a plain name."""
    samplers = {id(f) for name, f in vars(jax.random).items() if callable(f) and name not in _NOT_DRAWS}
    found = []
    for call in clues.nodes_in(node, ast.Call):
        if not call.args or not isinstance(call.args[0], ast.Name):
            continue
        if id(clues.resolve(call.func, lookup)) in samplers:
            found.append((call.args[0].id, call))
    return sorted(found, key=lambda item: (item[1].lineno, item[1].col_offset))


def _assigned_lines(node: ast.AST, name: str) -> list[int]:
    return [
        n.lineno for n in ast.walk(node) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
    ]


@dataclass(frozen=True)
class KeyReuse:
    """What ``key_reuse`` found: in one function, a key name and the draws that all use it."""

    function: types.FunctionType
    located: tuple
    name: str
    uses: tuple[ast.Call, ...]


@pitfall("key-reuse", "One random key used for two draws", "warning", stage="trace", order=40)
def key_reuse(traced: Traced) -> list[KeyReuse]:
    """One warning per key name given to two draws with no new value in between."""
    found = []
    for sourced in with_source(traced.functions):
        function, located, lookup = sourced.function, sourced.located, sourced.lookup
        parsed, node = located
        by_key: dict[str, list[ast.Call]] = {}
        for name, call in _draws(node, lookup):
            uses = by_key.setdefault(name, [])
            if uses and any(uses[-1].lineno < line <= call.lineno for line in _assigned_lines(node, name)):
                uses.clear()  # a new key under the same name (key, sub = split(key)): a fresh start
            uses.append(call)
        found += [KeyReuse(function, located, name, tuple(uses)) for name, uses in by_key.items() if len(uses) >= 2]
    return found


@describes("key-reuse")
def describe(traced: Traced, found: list[KeyReuse]) -> list[Diagnosis]:
    """The key split before the first draw, one new key per draw."""
    diagnoses = []
    for reuse in found:
        function, located, name, uses = reuse.function, reuse.located, reuse.name, reuse.uses
        parsed, node = located
        first = clues.statement_at(node, uses[0].lineno)
        jn = rewrites.jax_names(function.__globals__)
        fresh = [f"{name}_{i}" for i in range(1, len(uses) + 1)]
        count = "" if len(uses) == 2 else f", {len(uses)}"
        edits = [
            rewrites.Edit(
                Span(first.lineno, first.lineno, first.col_offset, first.col_offset),
                f"{', '.join(fresh)} = {jn.jax}.random.split({name}{count})\n",
            )
        ]
        edits += [rewrites.Edit(Span.of(call.args[0]), new) for call, new in zip(uses, fresh, strict=True)]
        where = sources.source_line(parsed.file, uses[1].lineno, function.__name__, traced.cell_namer)
        diagnoses.append(
            Diagnosis(
                "key-reuse",
                explanation=say(
                    "{} draws from {} again ({}), after {} already did: the same key gives the same random bits, so the "
                    "draws are not independent.",
                    code(clues.source_of(parsed, uses[1])),
                    code(name),
                    place(where),
                    code(clues.source_of(parsed, uses[0])),
                ),
                fix=with_edits(located, edits),
                fix_note=say("Split the key, one new key per draw ({}).", code(f"{jn.jax}.random.split")),
                where=where,
                variable=name,
                function=function.__name__,
            )
        )
    return diagnoses
