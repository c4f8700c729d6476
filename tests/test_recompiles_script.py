"""``python -m jaxmagic watch``: a real script run in a subprocess, its report, HTML and exit code."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow

SCRIPT = """
    import sys
    import jax, jax.numpy as jnp

    @jax.jit
    def step(x, n):
        return x * n

    @jax.jit
    def loss(x):
        return (x ** 2).sum()

    for size in (3, 4, 5, 5):
        step(jnp.ones(size), 2)
    loss(jnp.ones(2))
    jnp.sin(jnp.arange(7.0))  # eager: JAX's own compilations, not reported by default
    print("script says", sys.argv[1:], __name__)
    if sys.argv[1:] and sys.argv[1] == "fail":
        raise RuntimeError("the script's own failure")
    sys.exit(int(sys.argv[1]) if sys.argv[1:] else 0)
"""


def watch(tmp_path: Path, *args: str, source: str = SCRIPT, name: str = "train.py") -> subprocess.CompletedProcess:
    script = tmp_path / name
    script.write_text(textwrap.dedent(source))
    env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu")
    arguments = [a.replace("SCRIPT", str(script)) for a in args]
    return subprocess.run(
        [sys.executable, "-m", "jaxmagic", "watch", *arguments],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        env=env,
    )


def compilations(page: str) -> int:
    """The compilations a report's rows stand for (a row of ``×N`` stands for N)."""
    return sum(int(n) for n in re.findall(r'class="jm-recompile-row"[^>]* data-count="(\d+)"', page))


def test_report_html_and_the_scripts_exit_code(tmp_path):
    html = tmp_path / "compiles.html"
    done = watch(tmp_path, "--html", str(html), "SCRIPT", "7", "--steps")
    assert done.returncode == 7, done.stderr
    assert "script says ['7', '--steps'] __main__" in done.stdout  # the script's own output, untouched
    report = done.stderr
    assert report.startswith("4 compilations of 2 functions") and " — in train.py" in report.splitlines()[0]
    assert "step ×3 (" in report and "loss ×1 (" in report  # per function, with compile time
    assert "shape of `x` changed: f32[3] → f32[4]" in report and "f32[4] → f32[5]" in report
    assert "Keep the shape of `x` fixed" in report
    assert "train.py:14" in report  # the call site in the script
    assert "sin" not in report.split("\n", 1)[1]
    page = html.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "</html>" in page and "<script" not in page
    assert compilations(page) == 4
    assert 'data-function="step" data-kinds="shape"' in page


def test_a_failing_script_still_reports_and_exits_1(tmp_path):
    done = watch(tmp_path, "SCRIPT", "fail")
    assert done.returncode == 1
    assert "RuntimeError: the script's own failure" in done.stderr
    assert "runpy" not in done.stderr and "__main__.py" not in done.stderr
    assert "4 compilations of 2 functions" in done.stderr


def test_max_fails_a_successful_script_with_the_explanation(tmp_path):
    done = watch(tmp_path, "--max", "1", "SCRIPT")
    assert done.returncode == 1
    assert "`step` compiled 3 times; the limit is 1 time (--max 1)." in done.stderr
    assert watch(tmp_path, "--max", "3", "SCRIPT").returncode == 0


def test_all_reports_jaxs_own_compilations(tmp_path):
    done = watch(tmp_path, "--all", "SCRIPT")
    assert done.returncode == 0
    assert "(JAX internal)" in done.stderr or "sin" in done.stderr


@pytest.mark.parametrize(
    "args, expected",
    [
        (["missing.py"], "no script at 'missing.py'"),
        ([], "SCRIPT"),
        (["--max", "-2", "SCRIPT"], "non-negative whole number"),
    ],
)
def test_bad_command_lines_say_what_is_expected(tmp_path, args, expected):
    done = watch(tmp_path, *args)
    assert done.returncode == 2
    assert expected in done.stderr and "python -m jaxmagic watch" in done.stderr
    assert "Traceback" not in done.stderr


def run_watched(tmp_path: Path, source: str, *args: str) -> subprocess.CompletedProcess:
    """``python -m jaxmagic watch ARGS... script.py`` on ``source``."""
    return watch(tmp_path, *args, "SCRIPT", source=source, name="script.py")


FORKING = """
    import os, sys, time, warnings
    import jax, jax.numpy as jnp
    warnings.simplefilter("ignore")  # JAX warns that forking a threaded process is risky

    @jax.jit
    def parent_work(x):
        return x * 2

    parent_work(jnp.ones(3))
    if os.fork() == 0:  # the child does no JAX work, ends after the parent, through sys.exit
        time.sleep(2)
        sys.exit(0)
    parent_work(jnp.ones(4))
"""


def test_a_forked_child_never_overwrites_the_parents_report(tmp_path):
    html = tmp_path / "compiles.html"
    done = run_watched(tmp_path, FORKING, "--html", str(html))
    assert done.returncode == 0, done.stderr
    page = html.read_text(encoding="utf-8")
    assert 'data-function="parent_work"' in page and compilations(page) == 2
    assert done.stderr.count(" — in script.py") == 1, done.stderr


EXITING = """
    import os
    import jax, jax.numpy as jnp

    @jax.jit
    def step(x):
        return x * 2

    step(jnp.ones(3))
    step(jnp.ones(4))
    os._exit(3)
"""


def test_a_script_ending_in_os_exit_still_leaves_its_report(tmp_path):
    html = tmp_path / "compiles.html"
    done = run_watched(tmp_path, EXITING, "--html", str(html))
    assert done.returncode == 3
    assert "step ×2 (" in done.stderr
    assert compilations(html.read_text(encoding="utf-8")) == 2
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no half-written file left


def test_a_killed_script_leaves_the_html_report_as_it_stood(tmp_path):
    html = tmp_path / "compiles.html"
    killed = EXITING.replace("os._exit(3)", "import signal; os.kill(os.getpid(), signal.SIGKILL)")
    done = run_watched(tmp_path, killed, "--html", str(html))
    assert done.returncode == -9
    assert compilations(html.read_text(encoding="utf-8")) == 2
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no half-written file left


@pytest.mark.parametrize(
    "source, shown, status",
    [
        ("import jax\nx = 1\nraise KeyboardInterrupt\n", "KeyboardInterrupt", 130),
        ("x = 1\ndef broken(:\n    pass\n", "SyntaxError", 1),
    ],
)
def test_an_interrupted_or_invalid_script_shows_only_its_own_frames(tmp_path, source, shown, status):
    done = run_watched(tmp_path, source)
    assert done.returncode == status, done.stderr
    assert shown in done.stderr and "script.py" in done.stderr
    assert "runpy" not in done.stderr and "jaxmagic" + os.sep not in done.stderr, done.stderr
