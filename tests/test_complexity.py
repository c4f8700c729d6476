"""No function of the package takes more than 20 paths: radon grades none of them D or worse.

Radon's cyclomatic complexity counts what ruff's C901 leaves out (conditional expressions,
comprehensions' conditions, boolean operators), so a function can pass ruff and still read as a
maze. Every module of ``jaxmagic`` is graded here with radon's own API, as ``radon cc -n D``
would grade it.
"""

from __future__ import annotations

import pathlib

from radon.complexity import cc_rank, cc_visit

import jaxmagic

PACKAGE = pathlib.Path(jaxmagic.__file__).resolve().parent
WORST_ALLOWED = "C"  # radon's grades: A (1-5) B (6-10) C (11-20) D (21-30) E (31-40) F (41+)

# Functions being brought below D right now, each by its own change. This list only shrinks:
# a function listed here that radon no longer grades D or worse (or that is gone) fails the test
# until it is taken off, so the list says only what is still to do.
BEING_SIMPLIFIED: set[str] = set()  # every function is below D: nothing may be added here


def graded_worse_than_allowed() -> dict[str, str]:
    """``{"module.py::function": "line N, grade G (complexity)"}`` for every function, method and
    class of the package that radon grades worse than ``WORST_ALLOWED``."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        for block in cc_visit(path.read_text(encoding="utf-8")):
            grade = cc_rank(block.complexity)
            if grade > WORST_ALLOWED:
                found[f"{module}::{block.fullname}"] = f"line {block.lineno}, {grade} ({block.complexity})"
    return found


def test_no_function_is_graded_d_or_worse():
    too_complex = {name: grade for name, grade in graded_worse_than_allowed().items() if name not in BEING_SIMPLIFIED}
    assert not too_complex, "radon grades these D or worse; split them into the steps they take:\n" + "\n".join(
        f"  {name}: {grade}" for name, grade in sorted(too_complex.items())
    )


def test_the_list_of_functions_being_simplified_only_shrinks():
    still_complex = graded_worse_than_allowed()
    done = sorted(BEING_SIMPLIFIED - still_complex.keys())
    assert not done, "no longer graded D or worse (or gone): take them off BEING_SIMPLIFIED:\n" + "\n".join(
        f"  {name}" for name in done
    )


def test_the_grading_sees_a_function_with_too_many_paths():
    branches = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(25))
    (block,) = cc_visit(f"def f(x):\n{branches}    return -1\n")
    assert block.fullname == "f" and cc_rank(block.complexity) > WORST_ALLOWED
