"""The package's types hold: pyright, in the basic mode pyproject.toml sets (``[tool.pyright]``),
finds no error in the parts of jaxmagic listed here, on the JAX this suite runs with.

The list grows to the whole package (``["jaxmagic"]``) as the rewrites of the doctor, the
renderers and the recompile engine's explanations land; a module joins it once pyright is clean on it.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PYRIGHT = pathlib.Path(sys.executable).with_name("pyright")

TYPED = [
    # The top level: the public entry points.
    "jaxmagic/__init__.py",
    "jaxmagic/__main__.py",
    "jaxmagic/_jax_private.py",
    "jaxmagic/errors.py",
    "jaxmagic/pytest_plugin.py",
    "jaxmagic/report.py",
    # Tracing the user's call (nnx_copies.py joins once its rewrite lands).
    "jaxmagic/tracing/__init__.py",
    "jaxmagic/tracing/call.py",
    "jaxmagic/tracing/callables.py",
    "jaxmagic/tracing/cell.py",
    "jaxmagic/tracing/jitting.py",
    "jaxmagic/tracing/libraries.py",
    "jaxmagic/tracing/names.py",
    "jaxmagic/tracing/sources.py",
    "jaxmagic/tracing/stages.py",
    "jaxmagic/tracing/streams.py",
    "jaxmagic/tracing/trace_sampling.py",
    "jaxmagic/tracing/values.py",
    # What XLA made of it (collectives.py joins once its rewrite lands).
    "jaxmagic/compiled/__init__.py",
    "jaxmagic/compiled/collective_causes.py",
    "jaxmagic/compiled/hlo_sources.py",
    "jaxmagic/compiled/memory.py",
    "jaxmagic/compiled/peak_memory.py",
    "jaxmagic/compiled/profiling.py",
    "jaxmagic/compiled/remat.py",
    # The words layer.
    "jaxmagic/words/__init__.py",
    "jaxmagic/words/collectives.py",
    "jaxmagic/words/recompiles.py",
    "jaxmagic/words/runs.py",
    "jaxmagic/words/timing.py",
    "jaxmagic/words/units.py",
    # Timing (session.py joins once its rewrite lands).
    "jaxmagic/timing/__init__.py",
    "jaxmagic/timing/agreement.py",
    "jaxmagic/timing/budget.py",
    "jaxmagic/timing/comparison.py",
    "jaxmagic/timing/footprint.py",
    "jaxmagic/timing/interval.py",
    "jaxmagic/timing/modes.py",
    "jaxmagic/timing/notes.py",
    "jaxmagic/timing/progress.py",
    "jaxmagic/timing/side_by_side.py",
    "jaxmagic/timing/stopwatch.py",
    # Recompilations (the explanations, the hub and the budgets join once their rewrites land).
    "jaxmagic/recompiles/__init__.py",
    "jaxmagic/recompiles/attributes.py",
    "jaxmagic/recompiles/cache_keys.py",
    "jaxmagic/recompiles/events.py",
    "jaxmagic/recompiles/fingerprint.py",
    "jaxmagic/recompiles/fingerprint_diff.py",
    "jaxmagic/recompiles/leaves.py",
    "jaxmagic/recompiles/log.py",
    "jaxmagic/recompiles/processes.py",
    "jaxmagic/recompiles/programs.py",
    "jaxmagic/recompiles/signatures.py",
    "jaxmagic/recompiles/watch.py",
    # The magics (recompiles.py joins once its rewrite lands).
    "jaxmagic/magics/__init__.py",
    "jaxmagic/magics/doctor.py",
    "jaxmagic/magics/echo.py",
    "jaxmagic/magics/failures.py",
    "jaxmagic/magics/jaxpr.py",
    "jaxmagic/magics/jitcompare.py",
    "jaxmagic/magics/line_options.py",
    "jaxmagic/magics/notebook.py",
    "jaxmagic/magics/output.py",
    "jaxmagic/magics/status_line.py",
]


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


def test_typed_modules_are_listed_as_they_are():
    missing = [path for path in TYPED if not (ROOT / path).is_file()]
    assert missing == [], "a listed module was moved or removed: update TYPED"


def test_pyright_finds_no_error_in_the_typed_modules():
    problems = pyright_problems(TYPED)
    assert problems == [], "\n".join(problems)
