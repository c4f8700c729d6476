"""jaxmagic's pytest plugin, run by real pytest in a subprocess on a temporary test file.

The plugin is found as an installed package's ``pytest11`` entry point would be: the entry point
declared in pyproject.toml is written into a distribution's metadata on the subprocess' path.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def declared_entry_points() -> dict:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["entry-points"]["pytest11"]


def run_pytest(tmp_path: Path, source: str, *args: str) -> subprocess.CompletedProcess:
    """Run pytest on ``source`` (a test file) with the plugin installed by its entry point only."""
    site = tmp_path / "site"
    dist = site / "jaxmagic_entry_points-0.0.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: jaxmagic-entry-points\nVersion: 0.0\n")
    lines = ["[pytest11]"] + [f"{name} = {target}" for name, target in declared_entry_points().items()]
    (dist / "entry_points.txt").write_text("\n".join(lines) + "\n")
    test_file = tmp_path / "test_user_code.py"
    test_file.write_text(textwrap.dedent(source))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(ROOT)]), JAX_PLATFORMS="cpu")
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "-rA",
            "--rootdir",
            str(tmp_path),
            "-c",
            os.devnull,
            str(test_file),
            *args,
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        env=env,
    )


USER_TESTS = """
    import jax, jax.numpy as jnp, pytest

    @jax.jit
    def step(x, n):
        return x * n

    @jax.jit
    def other(x):
        return x + 1

    def test_fixture_counts(jax_compiles):
        for n in (3, 3, 4):
            step(jnp.ones(n), 2)
        assert jax_compiles.counts == {"step": 2}
        assert [e.kinds for e in jax_compiles.events] == [["first_call"], ["shape"]]

    @pytest.mark.max_compiles(1)
    def test_budget_kept():
        step(jnp.ones(7), 2)
        step(jnp.ones(7), 2)

    @pytest.mark.max_compiles(1)
    def test_budget_broken():
        for n in (10, 11, 12):
            step(jnp.ones(n), 2)

    @pytest.mark.max_compiles(1, "step")
    def test_budget_names_one_function():
        step(jnp.ones(20), 2)
        for n in (20, 21, 22):
            other(jnp.ones(n))

    def test_failing_test_shows_its_compilations(jax_compiles):
        other(jnp.ones(30)); other(jnp.ones(31))
        assert False, "the user's own failure"
"""


def test_plugin_by_entry_point_fixture_marker_and_report(tmp_path):
    done = run_pytest(tmp_path, USER_TESTS)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "PASSED test_user_code.py::test_fixture_counts" in out
    assert "PASSED test_user_code.py::test_budget_kept" in out
    assert "PASSED test_user_code.py::test_budget_names_one_function" in out
    assert "FAILED test_user_code.py::test_budget_broken" in out
    assert "FAILED test_user_code.py::test_failing_test_shows_its_compilations" in out
    # The budget's failure explains each compilation, with the fix.
    assert "CompileBudgetExceeded: `step` compiled 3 times in the block; expected at most 1 time." in out
    assert "shape of `x` changed: f32[10] → f32[11]" in out
    assert "Keep the shape of `x` fixed" in out
    # A failing test shows its compilations' report in its own section.
    assert "JAX compilations" in out
    assert "2 compilations of 1 function" in out and " — in test test_failing_test_shows_its_compilations" in out
    assert "the user's own failure" in out


def test_marker_with_bad_arguments_says_what_is_expected(tmp_path):
    done = run_pytest(
        tmp_path,
        """
        import pytest

        @pytest.mark.max_compiles("one")
        def test_bad():
            pass

        @pytest.mark.max_compiles(-1)
        def test_negative():
            pass
    """,
    )
    out = done.stdout + done.stderr
    assert done.returncode != 0
    assert "takes a non-negative whole number" in out and "@pytest.mark.max_compiles(1, 'step')" in out
    assert "got (-1,)" in out
    assert "KeyError" not in out and "Traceback" not in out, out  # the message alone, nothing added at teardown
    assert out.count("ERROR test_") == 2  # one error per test


def test_the_marker_is_registered_for_strict_markers(tmp_path):
    done = run_pytest(
        tmp_path,
        """
        import pytest

        @pytest.mark.max_compiles(0)
        def test_nothing_compiles():
            assert 1 + 1 == 2
    """,
        "--strict-markers",
    )
    assert done.returncode == 0, done.stdout + done.stderr


FINGERPRINTED = """
import jax, jax.numpy as jnp

def test_step():
    jax.jit(lambda x: x + 1)(jnp.ones(3))
"""


def test_a_fingerprint_that_cannot_be_written_stops_the_run_at_its_start(tmp_path):
    for path in (tmp_path / "missing" / "fp.json", "", tmp_path):
        done = run_pytest(tmp_path, FINGERPRINTED, f"--jaxmagic-fingerprint={path}")
        assert done.returncode == 4, done.stdout + done.stderr  # a usage error: no test ran
        assert "--jaxmagic-fingerprint:" in done.stderr and "passed" not in done.stdout
        assert "INTERNALERROR" not in done.stdout + done.stderr


def test_a_malformed_baseline_is_a_usage_error_of_one_line(tmp_path):
    seed = (ROOT / "tests" / "fixtures" / "fingerprints" / "width8.json").read_text()
    hostile = seed.replace('"loss"', '"::error::x\\n\\u001b[2J"').replace('"flops": 792.0', '"flops": NaN')
    for name, text in (("nested.json", "[" * 100_000), ("nan.json", hostile), ("binary.json", "\udcff")):
        (tmp_path / name).write_text(text, errors="surrogateescape")
        done = run_pytest(tmp_path, FINGERPRINTED, f"--jaxmagic-compare={tmp_path / name}")
        shown = done.stdout + done.stderr
        assert done.returncode == 4 and "INTERNALERROR" not in shown and "Traceback" not in shown, shown
        (line,) = [line for line in done.stderr.splitlines() if "--jaxmagic-compare" in line]
        assert name in line and "\x1b" not in shown
