"""What changed between two fingerprints, function by function, as facts: ``Change`` objects, and
which of them break the budgets a CI sets (``Budgets``).

Programs of a function are matched by their signature (``(x: f32[3])``), in order. A change of JAX,
jaxlib, backend or devices is said first: XLA's programs differ between versions, so then only
the compilations are held to the budgets, not the programs' contents.

>>> from jaxmagic.recompiles.fingerprint import Fingerprint, FunctionFingerprint, ProgramRecord
>>> def run(*signatures):
...     step = FunctionFingerprint("step", "train.py:3", [ProgramRecord(s, None, (), None) for s in signatures])
...     return Fingerprint({"jax": "0.10.2"}, {"step": step})
>>> found = compare(run("(x: f32[3])"), run("(x: f32[3])", "(x: f32[4])"))
>>> [(c.kind, c.function, c.before, c.after, c.breach) for c in found.changes]
[('compilations', 'step', 1, 2, True)]
>>> found.exit_status
1
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jaxmagic.recompiles.fingerprint import Fingerprint, FunctionFingerprint, ProgramFacts, ProgramRecord
from jaxmagic.report import Report

# What a change is about, in the order a reader wants them.
CHANGE_KINDS = (
    "compilations",
    "new_function",
    "removed_function",
    "signature",
    "collectives",
    "memory",
    "flops",
    "ops",
    "equations",
)


@dataclass(frozen=True)
class Budgets:
    """What a change may do before it fails CI: ``memory`` and ``flops`` are the largest growth
    allowed, as a fraction (``0.10`` = +10%; ``None``: any); ``new_collectives`` and
    ``new_compilations`` say whether a collective or a compilation may be added.

    >>> Budgets.parse("memory=5%,flops=none,collectives=allow")
    Budgets(memory=0.05, flops=None, new_collectives=True, new_compilations=False)
    """

    memory: float | None = 0.10
    flops: float | None = None
    new_collectives: bool = False
    new_compilations: bool = False

    @classmethod
    def parse(cls, text: str) -> Budgets:
        """``memory=10%,flops=20%,collectives=allow,compilations=forbid`` (any subset)."""
        values: dict[str, Any] = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, _, value = part.partition("=")
            key, value = key.strip(), value.strip().lower()
            if key in ("memory", "flops"):
                values[key] = None if value in ("none", "any") else _fraction(key, value)
            elif key in ("collectives", "compilations") and value in ("allow", "forbid"):
                values[f"new_{key}"] = value == "allow"
            else:
                raise ValueError(
                    f"unknown budget {part!r}: use memory=PCT, flops=PCT (or none), "
                    "collectives=allow|forbid, compilations=allow|forbid, e.g. memory=10%,collectives=forbid"
                )
        return cls(**values)


def _fraction(key: str, value: str) -> float:
    try:
        number = float(value.removesuffix("%"))
    except ValueError:
        raise ValueError(f"{key}= takes a percentage such as 10%, not {value!r}") from None
    if number < 0:
        raise ValueError(f"{key}= takes a growth of 0% or more, not {value!r}")
    return number / 100 if value.endswith("%") else number


@dataclass(frozen=True)
class Change:
    """One difference: ``kind`` (one of ``CHANGE_KINDS``), the ``function``, the ``before`` and
    ``after`` figures, the user's ``line`` (``"train.py:42"``) and its ``line_text`` where one line
    is behind it, ``signature`` (the program's), ``detail`` (the collective's kind, the new
    compilations' causes) and whether it breaks a budget (``breach``)."""

    kind: str
    function: str
    before: Any
    after: Any
    line: str | None = None
    line_text: str | None = None
    signature: str | None = None
    detail: Any = None
    breach: bool = False

    @property
    def growth(self) -> float | None:
        """``after / before - 1`` for numbers (``None`` where ``before`` is 0 or not a number)."""
        if isinstance(self.before, (int, float)) and isinstance(self.after, (int, float)) and self.before:
            return self.after / self.before - 1
        return None

    @property
    def size(self) -> float:
        """How large the change is, to show the largest first: its relative growth (either way),
        infinite for something from nothing.

        >>> Change("memory", "f", 100, 150).size, Change("ops", "f", 0, 2).size
        (0.5, inf)
        """
        growth = self.growth
        if growth is not None:
            return abs(growth)
        return float("inf") if self.before != self.after else 0.0


@dataclass
class FingerprintDiff(Report):
    """What changed from ``old`` to ``new``: ``changes`` (facts), ``environment`` (``(what,
    before, after)`` for versions or backend that differ) and the ``budgets`` held to. It shows
    itself as text and HTML (``to_text()``, ``to_html()``, ``save_html(path)``)."""

    _renderer = "jaxmagic.render.fingerprint"  # a class attribute, not a field

    changes: list[Change]
    environment: list[tuple[str, str, str]]
    budgets: Budgets
    functions: int = 0  # functions compared
    unchanged: list[str] = field(default_factory=list)
    # function -> (seconds compiling before, after): noisy, so shown as a ratio, never held to a budget
    compile_seconds: dict[str, tuple[float, float]] = field(default_factory=dict)
    # (side "old" or "new", function, compilations not kept, compilations) where a file says it was cut
    cut: list[tuple[str, str, int, int]] = field(default_factory=list)

    @property
    def breaches(self) -> list[Change]:
        return [c for c in self.changes if c.breach]

    @property
    def exit_status(self) -> int:
        """0: within the budgets; 1: a budget broken."""
        return 1 if self.breaches else 0


def compare(old: Fingerprint, new: Fingerprint, budgets: Budgets | None = None) -> FingerprintDiff:
    """Every change from ``old`` to ``new``, each marked where it breaks ``budgets``."""
    budgets = budgets or Budgets()
    environment = [
        (key, old.versions.get(key, "?"), new.versions.get(key, "?"))
        for key in sorted(set(old.versions) | set(new.versions))
        if old.versions.get(key) != new.versions.get(key)
    ]
    same_stack = not environment
    changes: list[Change] = []
    unchanged = []
    for name in sorted(set(old.functions) | set(new.functions)):
        before, after = old.functions.get(name), new.functions.get(name)
        found = _function_changes(name, before, after, budgets, same_stack)
        changes.extend(found)
        if not found:
            unchanged.append(name)
    order = {kind: i for i, kind in enumerate(CHANGE_KINDS)}
    changes.sort(key=lambda c: (not c.breach, order[c.kind], -c.size, c.function))
    seconds = {
        name: (
            sum(p.compile_s for p in old.functions[name].programs),
            sum(p.compile_s for p in new.functions[name].programs),
        )
        for name in sorted(set(old.functions) & set(new.functions))
    }
    compared = len(set(old.functions) | set(new.functions))
    cut = [
        (side, name, function.cut, function.compilations)
        for side, print_ in (("old", old), ("new", new))
        for name, function in sorted(print_.functions.items())
        if function.cut
    ]
    return FingerprintDiff(
        changes, environment, budgets, compared, unchanged, {k: v for k, v in seconds.items() if all(v)}, cut
    )


def _function_changes(
    name: str, before: FunctionFingerprint | None, after: FunctionFingerprint | None, budgets: Budgets, same: bool
) -> list[Change]:
    if before is None and after is not None:
        return [Change("new_function", name, 0, after.compilations, after.defined_at, breach=False)]
    if after is None and before is not None:
        return [Change("removed_function", name, before.compilations, 0, before.defined_at)]
    assert before is not None and after is not None
    changes = []
    if after.compilations != before.compilations:
        known = {p.signature for p in before.programs}
        added = [p for p in after.programs if p.signature not in known]
        changes.append(
            Change(
                "compilations",
                name,
                before.compilations,
                after.compilations,
                detail=[cause for p in added for cause in p.causes],
                breach=after.compilations > before.compilations and not budgets.new_compilations,
            )
        )
    pairs, unmatched = _matched(before.programs, after.programs)
    for old_program, new_program in unmatched:
        changes.append(Change("signature", name, old_program.signature, new_program.signature))
    for old_program, new_program in pairs + unmatched:
        if old_program.facts is not None and new_program.facts is not None:
            changes.extend(
                _program_changes(name, new_program.signature, old_program.facts, new_program.facts, budgets, same)
            )
    return changes


def _matched(before: list[ProgramRecord], after: list[ProgramRecord]) -> tuple[list, list]:
    """Programs with the same signature, paired in order of compilation; then those left on both
    sides, paired in order (the same call compiled for other shapes or types)."""
    pending: dict[str, list[ProgramRecord]] = {}
    for program in before:
        pending.setdefault(program.signature, []).append(program)
    pairs, left_after = [], []
    for program in after:
        waiting = pending.get(program.signature)
        if waiting:
            pairs.append((waiting.pop(0), program))
        else:
            left_after.append(program)
    paired = {id(old) for old, _ in pairs}
    left_before = [p for p in before if id(p) not in paired]
    return pairs, list(zip(left_before, left_after, strict=False))


def by_line(counts: dict[str, dict[str, int]], texts: dict[str, str]) -> dict[tuple[str, str], tuple[str, dict]]:
    """Per-line counts keyed by the line's file and text, so that a line moved by code added above
    it is still the same line: ``{(file, text): (label, counts)}`` (the label where no text is known).

    >>> by_line({"t.py:7": {"dot": 1}}, {"t.py:7": "y = x @ w"})
    {('t.py', 'y = x @ w'): ('t.py:7', {'dot': 1})}
    """
    keyed: dict[tuple[str, str], tuple[str, dict]] = {}
    for label, found in counts.items():
        text = texts.get(label)
        key = (label.rpartition(":")[0], text) if text else (label, "")
        if key in keyed:  # the same text on two lines of one file: keep them apart
            key = (label, text or "")
        keyed[key] = (label, found)
    return keyed


def _paired_lines(old: dict, old_texts: dict, new: dict, new_texts: dict):
    """``(label, text, old counts, new counts)`` for every line on either side: the same text in
    the same file is the same line; a line left alone on both sides at one label is one line edited."""
    before, after = by_line(old, old_texts), by_line(new, new_texts)
    only_before = {before[k][0]: k for k in set(before) - set(after)}
    edited = {k: only_before[after[k][0]] for k in set(after) - set(before) if after[k][0] in only_before}
    for key in sorted(set(before) | set(after)):
        if key in edited.values():
            continue  # shown with its edited line
        old_label, was = before.get(edited.get(key, key), (None, {}))
        new_label, now = after.get(key, (None, {}))
        label = new_label or old_label or ""
        yield label, new_texts.get(label) or old_texts.get(label), was, now


def _program_changes(
    name: str, signature: str, old: ProgramFacts, new: ProgramFacts, budgets: Budgets, same: bool
) -> list[Change]:
    changes = []
    lines = _paired_lines(old.line_collectives, old.line_text, new.line_collectives, new.line_text)
    for label, text, was, now in lines:
        for kind in sorted(set(was) | set(now)):
            if was.get(kind, 0) != now.get(kind, 0):
                changes.append(
                    Change(
                        "collectives",
                        name,
                        was.get(kind, 0),
                        now.get(kind, 0),
                        label,
                        text,
                        signature,
                        detail=kind,
                        breach=same and now.get(kind, 0) > was.get(kind, 0) and not budgets.new_collectives,
                    )
                )
    if old.peak_bytes != new.peak_bytes:
        grown = _grew_past(old.peak_bytes, new.peak_bytes, budgets.memory)
        detail = {k: (old.memory.get(k, 0), new.memory.get(k, 0)) for k in sorted(set(old.memory) | set(new.memory))}
        changes.append(
            Change("memory", name, old.peak_bytes, new.peak_bytes, None, None, signature, detail, same and grown)
        )
    if old.flops != new.flops:
        grown = _grew_past(old.flops, new.flops, budgets.flops)
        changes.append(Change("flops", name, old.flops, new.flops, None, None, signature, None, same and grown))
    for label, text, was, now in _paired_lines(old.lines, old.line_text, new.lines, new.line_text):
        if sum(was.values()) != sum(now.values()):
            changes.append(
                Change("ops", name, sum(was.values()), sum(now.values()), label, text, signature, (was, now))
            )
    if old.equations != new.equations:
        changes.append(
            Change("equations", name, sum(old.equations.values()), sum(new.equations.values()), None, None, signature)
        )
    return changes


def _grew_past(before: float, after: float, allowed: float | None) -> bool:
    if allowed is None or after <= before:
        return False
    return before == 0 or after / before - 1 > allowed


class FingerprintBudgetExceeded(AssertionError):
    """A change broke the budgets: an ``AssertionError`` (test runners report a failed check) whose
    message is the comparison, budget breaches first; ``difference`` holds the facts."""

    def __init__(self, difference: FingerprintDiff, test: str = ""):
        self.difference = difference
        self.test = test
        super().__init__(test, difference)

    def __str__(self) -> str:
        where = f"{self.test}: " if self.test else ""
        return f"{where}{self.difference.to_text()}"
