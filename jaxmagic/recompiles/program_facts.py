"""The facts of one program XLA compiled, read from its optimized HLO, XLA's figures for it and the
jaxpr it came from: the ``ProgramFacts`` a fingerprint keeps per compilation (the watch reads them
when JAX records the compile event, so nothing more is compiled).

>>> import jax, jax.numpy as jnp
>>> compiled = jax.jit(lambda x: jnp.tanh(x).sum()).lower(jnp.ones(3)).compile()
>>> facts = program_facts(compiled.as_text(), compiled.cost_analysis() or {}, compiled.memory_analysis())
>>> facts.ops["tanh"] >= 1
True
"""

from __future__ import annotations

import linecache
import os
from collections import Counter
from typing import Any

from jaxmagic.compiled.collectives import collective_kind
from jaxmagic.compiled.hlo_sources import parse
from jaxmagic.compiled.memory import memory_from_stats
from jaxmagic.recompiles.fingerprint import ProgramFacts, line_label
from jaxmagic.tracing.listing import primitive_counts
from jaxmagic.tracing.sources import pick_user_frame

_NOT_WORK = frozenset({"parameter", "tuple", "get-tuple-element"})  # plumbing, not computation


def program_facts(
    hlo_text: str, cost: dict, memory_stats: Any, jaxpr: Any = None, root: str | None = None
) -> ProgramFacts:
    """The facts of one optimized HLO module, XLA's figures for it and the jaxpr it came from;
    source files are named relative to ``root`` (the current folder by default) when inside it."""
    root = os.path.abspath(root or os.getcwd())
    ops: Counter = Counter()
    lines: dict[str, Counter] = {}
    line_collectives: dict[str, Counter] = {}
    line_text: dict[str, str] = {}
    for instruction in parse(hlo_text, jaxpr).values():
        opcode = instruction.opcode
        if not opcode or opcode in _NOT_WORK:
            continue
        ops[opcode] += 1
        site = pick_user_frame(instruction.frames) if instruction.frames else None
        if site is None:
            continue
        label = line_label(site[0], site[1], root)
        lines.setdefault(label, Counter())[opcode] += 1
        line_text.setdefault(label, linecache.getline(site[0], site[1]).strip())
        kind = collective_kind(opcode)
        if kind is not None:
            line_collectives.setdefault(label, Counter())[kind] += 1
    collectives: Counter = Counter()
    for opcode, count in ops.items():
        kind = collective_kind(opcode)
        if kind is not None:
            collectives[kind] += count
    equations = primitive_counts(jaxpr) if jaxpr is not None else {}
    return ProgramFacts(
        equations=dict(sorted(equations.items())),
        ops=dict(sorted(ops.items())),
        fusions=ops.get("fusion", 0),
        flops=float(cost.get("flops", 0.0)),
        bytes_accessed=float(cost.get("bytes accessed", 0.0)),
        transcendentals=float(cost.get("transcendentals", 0.0)),
        memory=memory_from_stats(memory_stats),
        collectives=dict(sorted(collectives.items())),
        lines={label: dict(sorted(counts.items())) for label, counts in sorted(lines.items())},
        line_collectives={label: dict(sorted(c.items())) for label, c in sorted(line_collectives.items())},
        line_text=dict(sorted(line_text.items())),
    )
