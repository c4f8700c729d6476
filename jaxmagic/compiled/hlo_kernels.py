"""XLA's optimized module as the kernels it runs, in order: each fusion or single instruction with
the user's source lines fused into it; an asynchronous start/done pair as one kernel that says
what runs while it is in flight; a custom call named by what it runs (``custom_calls``).

An asynchronous operation (``copy-start``/``copy-done``, ``slice-start``/``slice-done``,
``all-gather-start``/``all-gather-done``, ``async-start``/``async-done``) is one piece of work XLA
starts, overlaps with the kernels scheduled between its two halves, and waits for: listed as two
rows it would read as two kernels of work, and hide what it overlaps.

>>> import jax, jax.numpy as jnp
>>> def f(x):
...     return jnp.cos(jnp.sin(x) * 2)
>>> groups = kernel_groups(jax.jit(f).trace(jnp.ones(8)).lower().compile().as_text())
>>> [g.opcode for g in groups], len(groups[0].lines)
(['fusion'], 1)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from jaxmagic.compiled import custom_calls
from jaxmagic.compiled.hlo_sources import (
    _COMPUTATION,
    _INSTRUCTION,
    HloInstruction,
    _call_sites,
    lines_of_instructions,
    parse,
)
from jaxmagic.tracing.sources import CellNamer, no_cells

# Instructions that are bookkeeping, not work: left out of the kernel view.
BOOKKEEPING = frozenset({"parameter", "constant", "get-tuple-element", "tuple", "bitcast"})
_KIND = re.compile(r"\bkind=(k\w+)")


@dataclass(frozen=True)
class KernelGroup:
    """One kernel of the optimized module as XLA runs it: a fusion (``kind`` ``kLoop``,
    ``kInput``, ``kCustom``...) or a single instruction, the source lines fused into it (in
    source order), the instruction's text and the text of the computation it calls; a loop's or
    branch's kernels are its ``inner`` groups. An asynchronous pair is the group of its start,
    ``done`` naming its other half and ``overlaps`` the kernels XLA runs while it is in flight; a
    custom call carries what it runs (``called``).
    """

    name: str
    opcode: str
    kind: str
    lines: tuple[str, ...]
    text: str
    called: str = ""
    inner: tuple["KernelGroup", ...] = ()
    sources: tuple[str, ...] = ()  # the text of each of ``lines``, in the same order
    done: str = ""
    overlaps: tuple[str, ...] = ()
    custom_call: custom_calls.CustomCall | None = None

    @property
    def is_async(self) -> bool:
        return bool(self.done)


def is_async_start(opcode: str) -> bool:
    """``copy-start``, ``all-gather-start``, ``async-start``... (not ``async-update``)."""
    return opcode.endswith("-start")


def async_pairs(instructions: dict[str, HloInstruction], order: list[str]) -> dict[str, str]:
    """Each asynchronous start in ``order`` (one computation's instructions) -> the done that waits
    for it, through any ``-update`` between them."""
    users: dict[str, list[str]] = {}
    for name in order:
        for operand in instructions[name].operands if name in instructions else ():
            users.setdefault(operand, []).append(name)
    pairs = {}
    for name in order:
        instruction = instructions.get(name)
        if instruction is None or not is_async_start(instruction.opcode):
            continue
        current, seen = name, {name}
        while current:
            nxt = next((u for u in users.get(current, ()) if u not in seen and _async_half(instructions[u].opcode)), "")
            if not nxt:
                break
            seen.add(nxt)
            if instructions[nxt].opcode.endswith("-done"):
                pairs[name] = nxt
                break
            current = nxt
    return pairs


def _async_half(opcode: str) -> bool:
    return opcode.endswith(("-done", "-update"))


def kernel_groups(hlo_text: str, cell_namer: CellNamer = no_cells, jaxpr: Any = None) -> list[KernelGroup]:
    """The entry computation's kernels in the order XLA runs them, with their source lines (of
    this call where ``jaxpr`` is given: ``hlo_sources.parse``)."""
    instructions = parse(hlo_text, _call_sites(jaxpr))
    blocks, order, entry = _computation_blocks(hlo_text)
    lines_of = lines_of_instructions(instructions, cell_namer)

    def group(name: str, computation: str, depth: int, done: str, overlaps: tuple[str, ...]) -> KernelGroup:
        instruction = instructions[name]
        text = blocks.get(computation, {}).get(name, "")
        nested: tuple = ()
        if instruction.opcode in ("while", "conditional", "call") and depth < 4:
            nested = tuple(g for called in instruction.calls for g in groups_in(called, depth + 1))
        fused = instruction.opcode == "fusion"
        called = "\n".join(blocks.get(c, {}).get("", "") for c in instruction.calls) if fused else ""
        kind = _KIND.search(text)
        own = list(lines_of.get(name, ()))
        if done:  # the pair's lines: its start's and its done's
            own += [line for line in lines_of.get(done, ()) if line not in own]
        in_order = sorted(own, key=lambda line: (line.file, line.line))
        target = custom_calls.called(instruction.attributes) if instruction.opcode == "custom-call" else None
        return KernelGroup(
            name,
            instruction.opcode,
            kind.group(1) if kind else "",
            tuple(line.label for line in in_order),
            text,
            called,
            nested,
            tuple(line.text for line in in_order),
            done,
            overlaps,
            target,
        )

    def groups_in(computation: str, depth: int) -> tuple[KernelGroup, ...]:
        names = order.get(computation, [])
        pairs = async_pairs(instructions, names)
        halves = {done for done in pairs.values()} | {
            n for n in names if n in instructions and instructions[n].opcode.endswith("-update")
        }
        work = [n for n in names if n in instructions and instructions[n].opcode not in BOOKKEEPING]
        found = []
        for index, name in enumerate(work):
            if name in halves:
                continue
            done = pairs.get(name, "")
            overlaps: tuple[str, ...] = ()
            if done and done in work:
                between = work[index + 1 : work.index(done)]
                overlaps = tuple(n for n in between if n not in halves and n not in pairs)
            found.append(group(name, computation, depth, done, overlaps))
        return tuple(found)

    return list(groups_in(entry, 0))


def _computation_blocks(hlo_text: str) -> tuple[dict[str, dict[str, str]], dict[str, list[str]], str]:
    """Each computation's instruction lines by name ("" holds the whole computation's text), the
    order of its instructions, and the entry computation's name."""
    blocks: dict[str, dict[str, str]] = {}
    order: dict[str, list[str]] = {}
    entry, current, text = "", None, []
    for line in hlo_text.splitlines():
        header = _COMPUTATION.match(line)
        if header and " = " not in line.split("{")[0]:
            current, text = header.group(1), [line]
            blocks[current], order[current] = {}, []
            if line.startswith("ENTRY"):
                entry = current
            continue
        if current is None:
            continue
        text.append(line)
        found = _INSTRUCTION.match(line)
        if found:
            blocks[current][found.group(1)] = line.strip()
            order[current].append(found.group(1))
        if line.strip() == "}":
            blocks[current][""] = "\n".join(text)
            current = None
    return blocks, order, entry
