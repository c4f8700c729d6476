"""The package's types hold: pyright, in the basic mode pyproject.toml sets (``[tool.pyright]``),
finds no error in jaxmagic, the doctor's modules listed in ``UNTYPED`` aside, on the JAX this suite runs with.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PYRIGHT = pathlib.Path(sys.executable).with_name("pyright")

# Every module of the package but these of the doctor (typed as their pitfalls become declarations;
# the list only shrinks): a new module is checked from the day it is written.
UNTYPED = (
    "jaxmagic/doctor/case.py",
    "jaxmagic/doctor/checked_fixes.py",
    "jaxmagic/doctor/clues.py",
    "jaxmagic/doctor/declared.py",
    "jaxmagic/doctor/fix_check.py",
    "jaxmagic/doctor/global_watch.py",
    "jaxmagic/doctor/method_rewrites.py",
    "jaxmagic/doctor/pitfall_at_assignment.py",
    "jaxmagic/doctor/pitfall_debug_print_fstring.py",
    "jaxmagic/doctor/pitfall_grad_has_aux.py",
    "jaxmagic/doctor/pitfall_in_place_update.py",
    "jaxmagic/doctor/pitfall_key_reuse.py",
    "jaxmagic/doctor/pitfall_non_array_argument.py",
    "jaxmagic/doctor/pitfall_python_iterator.py",
    "jaxmagic/doctor/pitfall_static_self.py",
    "jaxmagic/doctor/registry.py",
    "jaxmagic/doctor/rewrites.py",
    "jaxmagic/doctor/traced_code.py",
)
TYPED = sorted(
    path for path in (p.relative_to(ROOT).as_posix() for p in (ROOT / "jaxmagic").rglob("*.py")) if path not in UNTYPED
)


def pyright_problems(paths: list[str]) -> list[str]:
    """pyright's errors and warnings on ``paths`` (relative to the checkout), one line each, with
    the settings of pyproject.toml and the packages of the interpreter running this test."""
    done = subprocess.run(
        [str(PYRIGHT), "--outputjson", "--pythonpath", sys.executable, *paths],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise AssertionError(
            f"pyright gave no report (exit status {done.returncode}):\n{done.stdout}{done.stderr}"
        ) from None
    return [
        f"{pathlib.Path(d['file']).relative_to(ROOT)}:{d['range']['start']['line'] + 1}: "
        f"{d['severity']}: {d['message']} ({d.get('rule', '')})"
        for d in report["generalDiagnostics"]
        if d["severity"] in ("error", "warning")
    ]


def test_untyped_modules_are_listed_as_they_are():
    missing = [path for path in UNTYPED if not (ROOT / path).is_file()]
    assert missing == [], "a module left unchecked was moved or removed: update UNTYPED"


def test_pyright_finds_no_error_in_the_typed_modules():
    problems = pyright_problems(TYPED)
    assert problems == [], "\n".join(problems)
