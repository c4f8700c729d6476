"""Where the processes of one multi-process run (``jax.distributed``) compiled differently, as facts.

Each process writes its own fingerprint (``report.process0.json``, ``report.process1.json``…);
``compare_processes`` reads them side by side, function by function: a function compiled on some
processes only, a different number of times, or for different signatures. Such a difference is
the classic cause of a hang: one process waits in a collective the others never reach. Processes
whose compilations agree with the most common ones are the norm; the others are named.

>>> from jaxmagic.recompiles.fingerprint import Fingerprint, FunctionFingerprint, ProgramRecord
>>> def process(*signatures):
...     step = FunctionFingerprint("step", "train.py:3", [ProgramRecord(s, "train.py:9", (), None) for s in signatures])
...     return Fingerprint({}, {"step": step})
>>> found = compare_processes({"0": process("(x: f32[4])"), "1": process("(x: f32[4])", "(x: f32[5])")})
>>> [(d.kind, d.function, d.process, d.signature) for d in found.disagreements]
[('count', 'step', '1', '(x: f32[5])')]
>>> found.exit_status
1
>>> per_process_path("out/report.html", 1, 2)
'out/report.process1.html'
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from dataclasses import dataclass, field

from jaxmagic.recompiles.fingerprint import Fingerprint
from jaxmagic.report import Report

PROCESS_KEY = "process"  # the fingerprint's ``versions`` entry naming its process: "1 of 4"


def per_process_path(path: str, index: int, count: int) -> str:
    """Where process ``index`` of ``count`` writes the file the user named ``path``: the same
    path with ``.process<index>`` before the suffix, or ``path`` itself for a single process.

    >>> per_process_path("report.html", 0, 1), per_process_path("fp", 3, 4)
    ('report.html', 'fp.process3')
    """
    if count <= 1:
        return path
    stem, suffix = os.path.splitext(path)
    return f"{stem}.process{index}{suffix}"


def this_process() -> tuple[int, int]:
    """This process's index and the number of processes of its ``jax.distributed`` run, as JAX
    says once the program ran (``(0, 1)`` where JAX was never imported or cannot start).

    >>> this_process()[1] >= 1
    True
    """
    jax = sys.modules.get("jax")
    if jax is None:
        return 0, 1
    try:
        return jax.process_index(), jax.process_count()
    except Exception:  # noqa: BLE001 - a backend that cannot start: one process
        return 0, 1


def for_this_process(fingerprint: Fingerprint, path: str) -> str:
    """Where this process saves ``fingerprint`` that the user asked for at ``path``; in a
    multi-process run, the fingerprint is marked with its process (``"process 1 of 4"``) and
    the path made its own (``fp.process1.json``)."""
    index, count = this_process()
    if count > 1:
        fingerprint.versions[PROCESS_KEY] = f"process {index} of {count}"
    return per_process_path(path, index, count)


@dataclass(frozen=True)
class Disagreement:
    """One function on one process compiled unlike the others: ``kind`` is ``only_some`` (compiled
    here, not on every process, or the reverse: ``counts`` says), ``count`` (a different number of
    compilations) or ``signatures`` (as many, for different signatures). ``signature``, ``causes``
    and ``call_site`` are those of this process's first compilation that the others lack (``None``
    where this process compiled less)."""

    kind: str
    function: str
    process: str
    counts: dict[str, int]
    signature: str | None = None
    causes: tuple[dict, ...] = ()
    call_site: str | None = None
    usual_signature: str | None = None


@dataclass
class ProcessComparison(Report):
    """The processes' fingerprints compared: ``processes`` (their names, in order), ``functions``
    (how many functions any process compiled), ``disagreements`` and ``same_claims`` (files that
    say they are the same process); ``exit_status`` is 1 when processes disagree (for CI)."""

    processes: list[str]
    functions: int
    disagreements: list[Disagreement] = field(default_factory=list)
    # (process, files) where several files say they are the same process: a run written twice?
    same_claims: list[tuple[str, list[str]]] = field(default_factory=list)

    _renderer = "jaxmagic.render.processes"

    @property
    def exit_status(self) -> int:
        return 1 if self.disagreements else 0


def process_name(fingerprint: Fingerprint, fallback: str) -> str:
    """The process a fingerprint came from (as the watch recorded it), else ``fallback``."""
    return fingerprint.versions.get(PROCESS_KEY, fallback)


def compare_files(loaded: list[tuple[str, Fingerprint]]) -> ProcessComparison:
    """Compare the fingerprints of several files, one process each, told apart by their files
    (what a file says of its process is shown beside its name, never used to tell files apart).

    >>> from jaxmagic.recompiles.fingerprint import Fingerprint
    >>> same = Fingerprint({PROCESS_KEY: "process 0 of 2"}, {})
    >>> found = compare_files([("a/fp.json", same), ("b/fp.json", same)])
    >>> found.processes, found.same_claims
    (['a/fp.json (process 0 of 2)', 'b/fp.json (process 0 of 2)'], [('process 0 of 2', ['a/fp.json', 'b/fp.json'])])
    """
    labels: list[str] = []
    claims: dict[str, list[str]] = {}
    for path, fingerprint in loaded:
        claim = fingerprint.versions.get(PROCESS_KEY)
        label = f"{path} ({claim})" if claim else path
        while label in labels:  # the same path given twice: still two inputs
            label += "'"
        labels.append(label)
        if claim:
            claims.setdefault(claim, []).append(path)
    found = compare_processes({label: fingerprint for label, (_, fingerprint) in zip(labels, loaded, strict=True)})
    found.same_claims = [(claim, paths) for claim, paths in claims.items() if len(paths) > 1]
    return found


def compare_processes(fingerprints: dict[str, Fingerprint]) -> ProcessComparison:
    """Compare each function's compilations across processes (name -> fingerprint)."""
    names = list(fingerprints)
    functions = sorted({f for print_ in fingerprints.values() for f in print_.functions})
    found: list[Disagreement] = []
    for function in functions:
        runs = {}
        for name in names:
            entry = fingerprints[name].functions.get(function)
            runs[name] = entry.programs if entry is not None else []
        counts = {name: len(programs) for name, programs in runs.items()}
        shapes = {name: tuple(p.signature for p in programs) for name, programs in runs.items()}
        usual, _ = Counter(shapes.values()).most_common(1)[0]
        for name in names:
            if shapes[name] == usual:
                continue
            if not counts[name] or not usual:
                kind = "only_some"
            else:
                kind = "count" if counts[name] != len(usual) else "signatures"
            extra = next((p for i, p in enumerate(runs[name]) if i >= len(usual) or p.signature != usual[i]), None)
            found.append(
                Disagreement(
                    kind=kind,
                    function=function,
                    process=name,
                    counts=counts,
                    signature=extra.signature if extra else None,
                    causes=extra.causes if extra else (),
                    call_site=extra.call_site if extra else None,
                    usual_signature=_usual_at(usual, runs[name], extra),
                )
            )
    return ProcessComparison(names, len(functions), found)


def _usual_at(usual: tuple, programs: list, extra) -> str | None:
    if extra is None:
        return usual[len(programs)] if len(programs) < len(usual) else None
    index = programs.index(extra)
    return usual[index] if index < len(usual) else None
