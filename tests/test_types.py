"""The package's types hold: pyright, in the basic mode pyproject.toml sets (``[tool.pyright]``),
finds no error in jaxmagic, on the JAX this suite runs with.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PYRIGHT = pathlib.Path(sys.executable).with_name("pyright")

# Every module of the package: a new module is checked from the day it is written.
TYPED = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "jaxmagic").rglob("*.py"))


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


def test_pyright_finds_no_error_in_the_typed_modules():
    problems = pyright_problems(TYPED)
    assert problems == [], "\n".join(problems)
