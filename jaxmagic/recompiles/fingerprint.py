"""A compile fingerprint: for each jitted function a program ran, the facts of what XLA compiled.

Per compilation (a ``ProgramRecord``): the call's signature and causes, and the compiled
program's facts (``ProgramFacts``): the optimized HLO's ops by opcode and its fusions, XLA's FLOPs
and bytes estimate, its memory, its collectives, and the ops and collectives of each of the user's
source lines. They are read from the very program XLA compiled for the user's call (when JAX
records the compile event), so fingerprinting compiles nothing more. The facts are the same in
every run of the same program on one machine and JAX version; compile time, which is not, is kept
apart (``timing``) and never compared as a fact.

>>> import jax, jax.numpy as jnp
>>> from jaxmagic.recompiles.log import RecompileLog
>>> log = RecompileLog(keep_programs=True).start()
>>> def step(x):
...     return jnp.tanh(x).sum()
>>> jitted = jax.jit(step)
>>> _ = jitted(jnp.ones(3)); _ = jitted(jnp.ones(4))
>>> _ = log.stop()
>>> print_ = fingerprint_of(log)
>>> print_.functions["step"].compilations
2
>>> print_.functions["step"].programs[0].facts.ops["tanh"] >= 1
True
"""

from __future__ import annotations

import json
import linecache
import os
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from jaxmagic.compiled.collectives import collective_kind
from jaxmagic.compiled.hlo_sources import parse
from jaxmagic.compiled.memory import memory_from_stats
from jaxmagic.tracing.listing import primitive_counts
from jaxmagic.tracing.sources import pick_user_frame

FORMAT = "jaxmagic-fingerprint/1"
_NOT_WORK = frozenset({"parameter", "tuple", "get-tuple-element"})  # plumbing, not computation


@dataclass(frozen=True)
class ProgramFacts:
    """What JAX traced and XLA compiled for one call: ``equations`` (jaxpr primitive -> equations,
    nested jaxprs included; empty where the jaxpr was out of reach), ``ops`` (HLO opcode ->
    instructions, fused ones included),
    ``fusions``, XLA's ``flops``, ``bytes_accessed`` and ``transcendentals`` estimates, ``memory``
    (``arguments``, ``outputs``, ``aliased``, ``temporaries``, ``code`` bytes per device),
    ``collectives`` (kind -> count), and per user source line (``"train.py:42"``) its ops
    (``lines``) and collectives (``line_collectives``); ``line_text`` holds each line's code."""

    equations: dict[str, int]
    ops: dict[str, int]
    fusions: int
    flops: float
    bytes_accessed: float
    transcendentals: float
    memory: dict[str, int]
    collectives: dict[str, int]
    lines: dict[str, dict[str, int]]
    line_collectives: dict[str, dict[str, int]]
    line_text: dict[str, str]

    @property
    def peak_bytes(self) -> int:
        """Arguments, outputs and temporaries held at once, less what outputs share with arguments."""
        memory = self.memory
        return max(
            0,
            memory.get("arguments", 0)
            + memory.get("outputs", 0)
            + memory.get("temporaries", 0)
            - memory.get("aliased", 0),
        )


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


def line_label(file: str, line: int, root: str) -> str:
    """``"models/mlp.py:12"``: a file inside ``root`` by its path from there, any other by its name.

    >>> line_label("/work/app/models/mlp.py", 12, "/work/app")
    'models/mlp.py:12'
    >>> line_label("/elsewhere/train.py", 3, "/work/app")
    'train.py:3'
    """
    path = os.path.abspath(file)
    inside = path.startswith(root.rstrip(os.sep) + os.sep)
    return f"{os.path.relpath(path, root) if inside else os.path.basename(file)}:{line}"


@dataclass(frozen=True)
class ProgramRecord:
    """One compilation: the call's ``signature`` (``(x: f32[3])``), where it was called
    (``call_site``), its ``causes`` (``{"kind", "argument", "before", "after"}`` each), the compiled
    program's ``facts`` (``None`` where XLA's program was out of reach) and ``compile_s`` (timing:
    never compared as a fact)."""

    signature: str
    call_site: str | None
    causes: tuple[dict, ...]
    facts: ProgramFacts | None
    compile_s: float = 0.0


@dataclass
class FunctionFingerprint:
    """A jitted function's compilations, in order."""

    name: str
    defined_at: str | None
    programs: list[ProgramRecord] = field(default_factory=list)

    @property
    def compilations(self) -> int:
        return len(self.programs)


@dataclass
class Fingerprint:
    """Every jitted function a program compiled, by name, and what it ran on (``versions``:
    ``jax``, ``jaxlib``, ``backend``, ``devices``). ``save`` / ``load`` keep it as JSON."""

    versions: dict[str, str]
    functions: dict[str, FunctionFingerprint]

    def to_json(self) -> dict:
        """A JSON-ready dict; the facts first, compile times apart under ``timing``."""
        functions, timing = {}, {}
        for name, function in sorted(self.functions.items()):
            functions[name] = {
                "defined_at": function.defined_at,
                "compilations": function.compilations,
                "programs": [_program_json(p) for p in function.programs],
            }
            timing[name] = [round(p.compile_s, 6) for p in function.programs]
        return {
            "format": FORMAT,
            "versions": dict(sorted(self.versions.items())),
            "functions": functions,
            "timing": timing,
        }

    def facts_json(self) -> dict:
        """``to_json()`` without the timing part: equal for two runs of the same program."""
        data = self.to_json()
        del data["timing"]
        return data

    @classmethod
    def from_json(cls, data: dict) -> Fingerprint:
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"not a jaxmagic fingerprint (expected format {FORMAT!r})")
        timing = data.get("timing", {})
        functions = {}
        for name, entry in data["functions"].items():
            seconds = timing.get(name, [])
            programs = [
                _program_from_json(p, seconds[i] if i < len(seconds) else 0.0) for i, p in enumerate(entry["programs"])
            ]
            functions[name] = FunctionFingerprint(name, entry.get("defined_at"), programs)
        return cls(dict(data.get("versions", {})), functions)

    def save(self, path: str) -> None:
        """Write the JSON at once (a temporary file renamed into place): a reader never sees half."""
        folder = os.path.dirname(os.path.abspath(path))
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".fingerprint-", suffix=".json")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(self.to_json(), out, indent=1, sort_keys=False)
                out.write("\n")
            os.replace(temporary, path)
        except BaseException:
            if os.path.exists(temporary):
                os.unlink(temporary)
            raise

    @classmethod
    def load(cls, path: str) -> Fingerprint:
        with open(path, encoding="utf-8") as source:
            return cls.from_json(json.load(source))


def _program_json(program: ProgramRecord) -> dict:
    facts = program.facts
    return {
        "signature": program.signature,
        "call_site": program.call_site,
        "causes": list(program.causes),
        "facts": None
        if facts is None
        else {
            "equations": facts.equations,
            "ops": facts.ops,
            "fusions": facts.fusions,
            "flops": facts.flops,
            "bytes_accessed": facts.bytes_accessed,
            "transcendentals": facts.transcendentals,
            "memory": facts.memory,
            "peak_bytes": facts.peak_bytes,
            "collectives": facts.collectives,
            "lines": facts.lines,
            "line_collectives": facts.line_collectives,
            "line_text": facts.line_text,
        },
    }


def _program_from_json(data: dict, compile_s: float) -> ProgramRecord:
    raw = data.get("facts")
    facts = None
    if raw is not None:
        facts = ProgramFacts(
            equations=dict(raw.get("equations", {})),
            ops=dict(raw["ops"]),
            fusions=int(raw["fusions"]),
            flops=float(raw["flops"]),
            bytes_accessed=float(raw["bytes_accessed"]),
            transcendentals=float(raw["transcendentals"]),
            memory=dict(raw["memory"]),
            collectives=dict(raw["collectives"]),
            lines={k: dict(v) for k, v in raw["lines"].items()},
            line_collectives={k: dict(v) for k, v in raw["line_collectives"].items()},
            line_text=dict(raw["line_text"]),
        )
    return ProgramRecord(data["signature"], data.get("call_site"), tuple(data.get("causes", ())), facts, compile_s)


def environment() -> dict[str, str]:
    """What a fingerprint's facts depend on besides the program: JAX's and jaxlib's versions and
    the backend with its device count."""
    import jax
    import jaxlib

    devices = jax.devices()
    return {
        "jax": jax.__version__,
        "jaxlib": getattr(jaxlib, "__version__", "?"),
        "backend": jax.default_backend(),
        "devices": f"{len(devices)} × {devices[0].device_kind}" if devices else "0",
    }


def fingerprint_of(log, root: str | None = None, prefix: str = "") -> Fingerprint:
    """The fingerprint of what ``log`` (a ``RecompileLog`` made with ``keep_programs=True``) saw.
    Functions are named as the log names them, after ``prefix`` (a test's id); two different
    functions of the same name are told apart by where each was defined (``step (train.py:12)``)."""
    root = os.path.abspath(root or os.getcwd())
    functions: dict[str, FunctionFingerprint] = {}
    defined: dict[str, set] = {}
    events = [e for e in log.events if not e.internal]
    for event in events:
        where = line_label(event.defined_at.file, event.defined_at.line, root) if event.defined_at else None
        defined.setdefault(event.function, set()).add(where)
    for event in events:
        where = line_label(event.defined_at.file, event.defined_at.line, root) if event.defined_at else None
        name = prefix + (event.function if len(defined[event.function]) == 1 else f"{event.function} ({where})")
        function = functions.setdefault(name, FunctionFingerprint(name, where))
        site = event.call_site
        facts = event.program_facts
        function.programs.append(
            ProgramRecord(
                signature=event.signature,
                call_site=line_label(site.file, site.line, root) if site else None,
                causes=tuple(
                    {"kind": c.kind, "argument": c.argument, "before": c.before, "after": c.after} for c in event.causes
                ),
                facts=facts,
                compile_s=event.compile_s,
            )
        )
    return Fingerprint(environment(), functions)
