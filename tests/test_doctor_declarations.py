"""The doctor's shape: pitfalls declared as data keep their words as templates (no sentence built
in code), and no function of the doctor is too branchy to read (radon grade D or worse)."""

from __future__ import annotations

import pathlib
import re

import pytest

from jaxmagic import doctor
from jaxmagic.doctor.declared import Declared

DOCTOR = pathlib.Path(doctor.__file__).parent


def declared_modules() -> list[pathlib.Path]:
    return sorted(p for p in DOCTOR.glob("pitfall_*.py") if re.search(r"\b(Declared|Chosen)\(", p.read_text()))


def test_a_declared_pitfall_is_registered_with_its_declaration_as_recogniser():
    declared = [p for p in doctor.PITFALLS.values() if isinstance(getattr(p.recognise, "__self__", None), Declared)]
    assert len(declared) >= 12 and {"at-assignment", "stale-global", "key-reuse"} <= {p.id for p in declared}
    for pitfall in declared:
        declaration = pitfall.recognise.__self__
        assert (declaration.id, declaration.title, declaration.stage) == (pitfall.id, pitfall.title, pitfall.stage)


@pytest.mark.parametrize("module", declared_modules(), ids=lambda p: p.stem)
def test_a_declared_pitfall_keeps_its_words_as_data_in_a_small_file(module):
    source = module.read_text()
    assert not re.search(r"\bsay\(", source), f"{module.name} builds a sentence in code: put it in a template"
    assert len(source.splitlines()) <= 150, f"{module.name} is over 150 lines"


def _blocks(blocks):
    for block in blocks:  # functions, classes, and the methods and closures inside them
        yield block
        yield from _blocks(getattr(block, "methods", []) + getattr(block, "closures", []))


def graded(worst_allowed: str) -> list[str]:
    complexity = pytest.importorskip("radon.complexity")
    return [
        f"{path.name}:{block.lineno} {block.name} ({complexity.cc_rank(block.complexity)}, {block.complexity})"
        for path in sorted(DOCTOR.glob("*.py"))
        for block in _blocks(complexity.cc_visit(path.read_text()))
        if complexity.cc_rank(block.complexity) > worst_allowed
    ]


def test_no_function_of_the_doctor_is_graded_d_or_worse():
    assert graded("C") == []
    assert graded("A"), "the grading reads the doctor's functions"  # it can fail: many are graded B or C
