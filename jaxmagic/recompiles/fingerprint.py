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
import os
from dataclasses import dataclass, field

from jaxmagic.files import write_atomically
from jaxmagic.recompiles.fingerprint_schema import FORMAT, check_fingerprint_json, read_fingerprint_json

# A fingerprinting log's capacity: every compilation kept (past it, the earliest are cut, and the file says so).
KEEP_EVERY_COMPILATION = 1_000_000


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
    """A jitted function's compilations, in order: ``programs`` holds those kept, ``cut`` counts
    the earliest ones that were not (a log that kept only its latest), so that ``compilations``
    is always the true count."""

    name: str
    defined_at: str | None
    programs: list[ProgramRecord] = field(default_factory=list)
    cut: int = 0

    @property
    def compilations(self) -> int:
        return len(self.programs) + self.cut


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
                "cut": function.cut,
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
    def from_json(cls, data: dict, name: str = "fingerprint") -> Fingerprint:
        """The fingerprint a JSON dict holds (checked: ``FingerprintError`` names ``name``, the field
        and what was expected)."""
        check_fingerprint_json(data, name)
        timing = data.get("timing", {})
        functions = {}
        for name, entry in data["functions"].items():
            seconds = timing.get(name, [])
            programs = [
                _program_from_json(p, seconds[i] if i < len(seconds) else 0.0) for i, p in enumerate(entry["programs"])
            ]
            functions[name] = FunctionFingerprint(name, entry.get("defined_at"), programs, int(entry.get("cut", 0)))
        return cls(dict(data.get("versions", {})), functions)

    def save(self, path: str, *, inputs=()) -> str:
        """Write the JSON whole (``jaxmagic.files.write_atomically``: a reader never sees half),
        never over one of ``inputs``; the path written."""
        return write_atomically(path, json.dumps(self.to_json(), indent=1) + "\n", inputs=inputs)

    @classmethod
    def load(cls, path: str) -> Fingerprint:
        """The fingerprint in the file at ``path``; ``FingerprintError`` (one line naming the file,
        the field and what was expected) for a file that is not one."""
        return cls.from_json(read_fingerprint_json(path), os.fspath(path))


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
            equations=_whole(raw.get("equations", {})),
            ops=_whole(raw["ops"]),
            fusions=int(raw["fusions"]),
            flops=float(raw["flops"]),
            bytes_accessed=float(raw["bytes_accessed"]),
            transcendentals=float(raw["transcendentals"]),
            memory=_whole(raw["memory"]),
            collectives=_whole(raw["collectives"]),
            lines={k: _whole(v) for k, v in raw["lines"].items()},
            line_collectives={k: _whole(v) for k, v in raw.get("line_collectives", {}).items()},
            line_text=dict(raw.get("line_text", {})),
        )
    return ProgramRecord(data["signature"], data.get("call_site"), tuple(data.get("causes", ())), facts, compile_s)


def _whole(counts: dict) -> dict[str, int]:
    return {name: int(count) for name, count in counts.items()}


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
    functions of the same name are told apart by where each was defined (``step (train.py:12)``).
    Compilations the log counted but no longer holds (its ``capacity`` was reached) are said as
    each function's ``cut``: the file never reads as complete when it is not."""
    root = os.path.abspath(root or os.getcwd())
    functions: dict[str, FunctionFingerprint] = {}
    defined: dict[str, set] = {}
    held = log.events
    events = [e for e in held if not e.internal]
    for event in events:
        where = line_label(event.defined_at.file, event.defined_at.line, root) if event.defined_at else None
        defined.setdefault(event.function, set()).add(where)
    for event in events:
        where = line_label(event.defined_at.file, event.defined_at.line, root) if event.defined_at else None
        name = prefix + (event.function if len(defined[event.function]) == 1 else f"{event.function} ({where})")
        function = functions.setdefault(name, FunctionFingerprint(name, where))
        function.programs.append(_record_of(event, root))
    _say_what_was_cut(log, held, functions, prefix)
    return Fingerprint(environment(), functions)


def _record_of(event, root: str) -> ProgramRecord:
    site = event.call_site
    return ProgramRecord(
        signature=event.signature,
        call_site=line_label(site.file, site.line, root) if site else None,
        causes=tuple(
            {"kind": c.kind, "argument": c.argument, "before": c.before, "after": c.after} for c in event.causes
        ),
        facts=event.program_facts,
        compile_s=event.compile_s,
    )


def _say_what_was_cut(log, held: list, functions: dict[str, FunctionFingerprint], prefix: str) -> None:
    """Give each function the compilations the log counted but dropped (to the first entry of
    that name, where two functions share it)."""
    if not getattr(log, "dropped", 0):
        return
    kept: dict[str, int] = {}
    internal = {e.function for e in held if e.internal}
    for event in held:
        kept[event.function] = kept.get(event.function, 0) + 1
    for function, count in log.counts.items():
        cut = count - kept.get(function, 0)
        if cut <= 0 or function in internal or (function not in kept and log.include_internal):
            continue
        entry = next(
            (
                f
                for f in functions.values()
                if f.name == prefix + function or f.name.startswith(f"{prefix}{function} (")
            ),
            None,
        )
        if entry is None:
            entry = functions[prefix + function] = FunctionFingerprint(prefix + function, None)
        entry.cut += cut
