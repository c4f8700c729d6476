"""Many processes (``jax.distributed``): each process's watch writes its own files, and
``python -m jaxmagic merge`` names the function, process, cause and call site where one process
compiled differently. Real CPU processes on localhost, each a ``python -m jaxmagic watch`` run."""

from __future__ import annotations

import json
import os
import socket
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
    import jaxmagic

    jax.distributed.initialize(f"localhost:{sys.argv[1]}", num_processes=int(sys.argv[2]), process_id=int(sys.argv[3]))
    odd = sys.argv[4] == "odd"

    @jax.jit
    def step(x):
        return jnp.tanh(x).sum()

    @jax.jit
    def evaluate(x):
        return x.mean()

    for _ in range(3):
        step(jnp.ones(4))
    if odd and jax.process_index() == 1:
        step(jnp.ones(4 + jax.process_index()))  # only this process meets a new shape
    with jaxmagic.expect_compiles(evaluate, max=1):  # a budget holds in each process
        evaluate(jnp.ones(2))
        evaluate(jnp.ones(2))
    print("process", jax.process_index(), "of", jax.process_count())
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return probe.getsockname()[1]


def run_processes(tmp_path: Path, count: int, mode: str) -> list[subprocess.CompletedProcess]:
    """``count`` watched processes of one jax.distributed run; skipped if the runtime cannot start."""
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(SCRIPT))
    env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu")
    env.pop("XLA_FLAGS", None)
    port = str(free_port())
    running = [
        subprocess.Popen(
            [sys.executable, "-m", "jaxmagic", "watch", "--html", "report.html", "--fingerprint", "fp.json"]
            + [str(script), port, str(count), str(index), mode],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env=env,
        )
        for index in range(count)
    ]
    done = []
    try:
        for process in running:
            out, err = process.communicate(timeout=120)
            done.append(subprocess.CompletedProcess(process.args, process.returncode, out, err))
    except subprocess.TimeoutExpired:
        for process in running:
            process.kill()
            process.communicate()
        pytest.skip("jax.distributed did not start on localhost within 120 s")
    for result in done:
        if result.returncode != 0 and "distributed" in result.stderr.lower() and "process " not in result.stdout:
            pytest.skip(f"jax.distributed cannot start here: {result.stderr.strip().splitlines()[-1]}")
    return done


TEST_FILE = """
    import os
    import jax, jax.numpy as jnp
    import pytest

    PORT, COUNT, INDEX = (int(v) for v in os.environ["DISTRIBUTED_RUN"].split(","))
    jax.distributed.initialize(f"localhost:{PORT}", num_processes=COUNT, process_id=INDEX)

    @pytest.mark.max_compiles(2)
    def test_step():
        step = jax.jit(lambda x: x * 2)
        step(jnp.ones(4))
        if jax.process_index() == 1:
            step(jnp.ones(6))
"""


def test_the_pytest_plugin_records_one_fingerprint_per_process(tmp_path):
    (tmp_path / "test_distributed.py").write_text(textwrap.dedent(TEST_FILE))
    env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu")
    env.pop("XLA_FLAGS", None)
    port = free_port()
    running = [
        subprocess.Popen(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--jaxmagic-fingerprint=fp.json"]
            + ["test_distributed.py"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=tmp_path,
            env=dict(env, DISTRIBUTED_RUN=f"{port},2,{index}"),
        )
        for index in range(2)
    ]
    try:
        outputs = [process.communicate(timeout=120)[0] for process in running]
    except subprocess.TimeoutExpired:
        for process in running:
            process.kill()
            process.communicate()
        pytest.skip("jax.distributed did not start on localhost within 120 s")
    assert all(process.returncode == 0 for process in running), outputs
    found = merge(tmp_path, "fp.process0.json", "fp.process1.json")
    assert found.returncode == 1, found.stdout + found.stderr
    assert "on fp.process1.json (process 1 of 2)" in found.stdout and "f32[6]" in found.stdout


def merge(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu")
    return subprocess.run(
        [sys.executable, "-m", "jaxmagic", "merge", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env=env,
    )


def test_merge_names_the_process_that_compiled_alone(tmp_path):
    done = run_processes(tmp_path, 2, "odd")
    for index, result in enumerate(done):
        assert result.returncode == 0, result.stderr
        assert f"process {index} of 2" in result.stdout
        assert (tmp_path / f"report.process{index}.html").is_file()
        recorded = json.loads((tmp_path / f"fp.process{index}.json").read_text())
        assert recorded["versions"]["process"] == f"process {index} of 2"
        assert recorded["functions"]["step"]["compilations"] == 1 + index  # as JAX compiled it
    assert not (tmp_path / "report.html").exists() and not (tmp_path / "fp.json").exists()
    found = merge(tmp_path, "--html", "merged.html", "fp.process0.json", "fp.process1.json")
    assert found.returncode == 1, found.stdout + found.stderr
    first, *rest = found.stdout.splitlines()
    assert "`step` on fp.process1.json (process 1 of 2)" in first
    said = "\n".join(rest)
    assert "compiled 2 times, others 1 time" in said
    assert "f32[5]" in said and "f32[4]" in said  # the extra signature and the usual one
    assert "train.py:" in said  # the call site in the user's script
    assert "evaluate" not in said  # it compiled alike everywhere
    page = (tmp_path / "merged.html").read_text()
    assert 'data-kind="count"' in page and "process 1 of 2" in page


def test_merge_agrees_when_processes_compile_alike(tmp_path):
    done = run_processes(tmp_path, 2, "alike")
    assert all(result.returncode == 0 for result in done), [r.stderr for r in done]
    found = merge(tmp_path, "fp.process0.json", "fp.process1.json")
    assert found.returncode == 0, found.stdout + found.stderr
    assert found.stdout.startswith("All 2 processes compiled the same programs (2 functions)")


def test_merge_says_what_it_expected_of_a_file_that_is_no_fingerprint(tmp_path):
    (tmp_path / "notes.json").write_text("{}")
    found = merge(tmp_path, "notes.json")
    assert found.returncode == 2
    assert "not a jaxmagic fingerprint" in found.stderr and "Traceback" not in found.stderr
    missing = merge(tmp_path, "absent.json")
    assert missing.returncode == 2 and "watch --fingerprint" in missing.stderr
