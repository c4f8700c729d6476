"""Compile fingerprints: what XLA compiled for each jitted function of a real script or test run,
checked against JAX's own figures for the same program; ``python -m jaxmagic diff`` on real changes
(a recompilation, a collective, memory growth), its exit status, and the pytest plugin's options."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from test_recompiles_pytest_plugin import run_pytest

from jaxmagic.compiled.hlo_sources import parse
from jaxmagic.recompiles.fingerprint import Fingerprint, fingerprint_of
from jaxmagic.recompiles.fingerprint_diff import Budgets, compare
from jaxmagic.recompiles.log import RecompileLog

ROOT = Path(__file__).resolve().parents[1]

TRAIN = """
    import jax, jax.numpy as jnp

    @jax.jit
    def train_step(w, batch):
        h = jnp.tanh(batch @ w)
        return (h ** 2).mean()

    @jax.jit
    def evaluate(w, batch):
        return jnp.argmax(batch @ w, axis=1)

    w = jnp.ones((16, 8))
    for _ in range(3):
        train_step(w, jnp.ones((4, 16)))
    evaluate(w, jnp.ones((2, 16)))
"""


def jaxmagic_command(tmp_path: Path, *args: str, devices: int = 1) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu")
    if devices > 1:
        env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    return subprocess.run(
        [sys.executable, "-m", "jaxmagic", *args], capture_output=True, text=True, cwd=tmp_path, timeout=300, env=env
    )


def fingerprint_script(tmp_path: Path, source: str, output: str, devices: int = 1) -> dict:
    (tmp_path / "train.py").write_text(textwrap.dedent(source))
    done = jaxmagic_command(tmp_path, "watch", "--fingerprint", output, "train.py", devices=devices)
    assert done.returncode == 0, done.stderr
    return json.loads((tmp_path / output).read_text())


@pytest.mark.slow
def test_two_runs_of_the_same_script_give_the_same_fingerprint(tmp_path):
    first = fingerprint_script(tmp_path, TRAIN, "first.json")
    second = fingerprint_script(tmp_path, TRAIN, "second.json")
    assert set(first["functions"]) == {"train_step", "evaluate"}
    assert first["functions"]["train_step"]["compilations"] == 1
    del first["timing"], second["timing"]
    assert first == second
    done = jaxmagic_command(tmp_path, "diff", "first.json", "second.json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("No change to what XLA compiled for 2 functions")


def test_the_facts_are_those_of_the_program_jax_compiled():
    def step(w, batch):
        h = jnp.tanh(batch @ w)
        return jnp.concatenate([h, h * 2], axis=1).sum()

    jitted = jax.jit(step)
    args = (jnp.ones((16, 8)), jnp.ones((4, 16)))
    with_log = RecompileLog(keep_programs=True).start()
    try:
        jitted(*args)
    finally:
        with_log.stop()
    (program,) = fingerprint_of(with_log).functions["step"].programs
    facts = program.facts
    compiled = jax.jit(step).trace(*args).lower().compile()
    expected_ops = Counter(
        i.opcode
        for i in parse(compiled.as_text()).values()
        if i.opcode not in ("parameter", "tuple", "get-tuple-element")
    )
    assert facts.ops == dict(expected_ops)
    assert facts.flops == compiled.cost_analysis()["flops"]
    memory = compiled.memory_analysis()
    assert facts.memory["temporaries"] == memory.temp_size_in_bytes
    assert facts.memory["arguments"] == memory.argument_size_in_bytes
    assert facts.equations == dict(Counter(e.primitive.name for e in jax.make_jaxpr(step)(*args).jaxpr.eqns))
    here = os.path.relpath(__file__)  # files inside the current folder are named from there
    assert any(label.startswith(f"{here}:") and "tanh" in text for label, text in facts.line_text.items())
    assert all(label.startswith(f"{here}:") for label in facts.lines), facts.lines


def test_a_function_without_a_watch_that_keeps_programs_has_no_facts():
    with_log = RecompileLog().start()
    try:
        jax.jit(lambda x: x + 1)(jnp.ones(2))
    finally:
        with_log.stop()
    assert [event.program_facts for event in with_log.events] == [None]


@pytest.mark.slow
def test_diff_names_a_new_compilation_with_its_cause_and_fails(tmp_path):
    fingerprint_script(tmp_path, TRAIN, "old.json")
    changed = TRAIN.replace("train_step(w, jnp.ones((4, 16)))", "train_step(w, jnp.ones((4 + _, 16)))")
    fingerprint_script(tmp_path, changed, "new.json")
    done = jaxmagic_command(tmp_path, "diff", "--html", "diff.html", "old.json", "new.json")
    assert done.returncode == 1, done.stdout + done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("1 budget broken: `train_step` 3 compilations instead of 1"), first
    assert "shape of `batch` changed: f32[4,16] → f32[5,16]" in first
    page = (tmp_path / "diff.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "jm-fingerprint-answer" in page and "<script" not in page
    allowed = jaxmagic_command(tmp_path, "diff", "--budget", "compilations=allow", "old.json", "new.json")
    assert allowed.returncode == 0, allowed.stdout
    assert allowed.stdout.startswith("Within the budgets: 1 of 2 functions changed")


SHARDED = """
    import jax, jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    mesh = Mesh(jax.devices(), ("data",))
    x = jax.device_put(jnp.ones((8, 4)), NamedSharding(mesh, P("data")))

    @jax.jit
    def step(x):
        y = jnp.sin(x)
        return y.sum(axis=1)

    step(x)
"""


@pytest.mark.slow
def test_diff_names_the_line_that_added_a_collective(tmp_path):
    fingerprint_script(tmp_path, SHARDED, "old.json", devices=8)
    new = fingerprint_script(tmp_path, SHARDED.replace("y.sum(axis=1)", "y.sum(axis=0)"), "new.json", devices=8)
    (program,) = new["functions"]["step"]["programs"]
    assert program["facts"]["collectives"] == {"all-reduce": 1}
    done = jaxmagic_command(tmp_path, "diff", "old.json", "new.json")
    assert done.returncode == 1, done.stdout
    # summing over the sharded axis adds an all-reduce, and a buffer for its result: both are said
    assert done.stdout.splitlines()[0] == "2 budgets broken: `step` +1 all-reduce from train.py:11", done.stdout
    assert "train.py:11: return y.sum(axis=0)" in done.stdout


def test_memory_growth_past_the_budget_breaks_it_and_within_does_not():
    def run(width):
        log = RecompileLog(keep_programs=True).start()
        try:
            jax.jit(lambda x: jnp.tanh(jnp.outer(x, x[:width]) @ jnp.ones((width, width))).sum())(jnp.ones(64))
        finally:
            log.stop()
        return fingerprint_of(log)

    old, new = run(8), run(32)
    found = compare(old, new)
    (memory,) = [c for c in found.changes if c.kind == "memory"]
    assert memory.after > memory.before * 1.1 and memory.breach
    assert found.exit_status == 1
    assert compare(old, new, Budgets.parse("memory=none")).exit_status == 0
    assert compare(old, old).changes == []


def test_other_versions_are_said_and_only_compilations_are_held_to_budgets():
    log = RecompileLog(keep_programs=True).start()
    try:
        jax.jit(lambda x: jnp.outer(x, x).sum())(jnp.ones(64))
    finally:
        log.stop()
    new = fingerprint_of(log)
    old = Fingerprint.from_json(json.loads(json.dumps(new.to_json())))
    old.versions["jax"] = "0.0.1"
    (name,) = old.functions  # the lambda, named by its line
    program = old.functions[name].programs[0]
    smaller = dict(program.facts.memory, temporaries=1)
    old.functions[name].programs[0] = type(program)(
        program.signature,
        program.call_site,
        program.causes,
        type(program.facts)(**{**program.facts.__dict__, "memory": smaller}),
    )
    found = compare(old, new)
    assert found.environment == [("jax", "0.0.1", jax.__version__)]
    assert [c.kind for c in found.changes] == ["memory"] and found.exit_status == 0
    assert "jax differs: 0.0.1 → " in found.to_text()


@pytest.mark.slow
def test_diff_of_something_that_is_not_a_fingerprint_says_so(tmp_path):
    (tmp_path / "a.json").write_text("{}")
    (tmp_path / "b.json").write_text("not json")
    done = jaxmagic_command(tmp_path, "diff", "a.json", "b.json")
    assert done.returncode == 2 and "not a jaxmagic fingerprint" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    missing = jaxmagic_command(tmp_path, "diff", "a.json", "nowhere.json")
    assert missing.returncode == 2 and "no fingerprint at 'nowhere.json'" in missing.stderr


USER_TESTS = """
    import jax, jax.numpy as jnp
    import pytest

    @jax.jit
    def step(x):
        return jnp.sin(x).sum()

    def test_train():
        for n in SIZES:
            step(jnp.ones(n))

    @pytest.mark.jaxmagic_budget("compilations=allow")
    def test_allowed():
        for n in SIZES:
            step(jnp.ones(n + 10))
"""


@pytest.mark.slow
def test_pytest_records_a_baseline_and_fails_the_test_that_breaks_it(tmp_path):
    baseline = tmp_path / "baseline.json"
    recorded = run_pytest(
        tmp_path, "SIZES = (3, 3)\n" + textwrap.dedent(USER_TESTS), f"--jaxmagic-fingerprint={baseline}"
    )
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    functions = json.loads(baseline.read_text())["functions"]
    assert set(functions) == {"test_user_code.py::test_train::step", "test_user_code.py::test_allowed::step"}
    compared = run_pytest(tmp_path, "SIZES = (3, 4)\n" + textwrap.dedent(USER_TESTS), f"--jaxmagic-compare={baseline}")
    assert compared.returncode == 1, compared.stdout
    assert "FAILED test_user_code.py::test_train" in compared.stdout
    assert "PASSED test_user_code.py::test_allowed" in compared.stdout
    assert "test_user_code.py::test_train: 1 budget broken: `test_user_code.py::test_train::step` 2 compilations" in (
        compared.stdout
    )
    assert "shape of `x` changed: f32[3] → f32[4]" in compared.stdout
    bad = run_pytest(tmp_path, "SIZES = (3,)\n" + textwrap.dedent(USER_TESTS), "--jaxmagic-compare=nowhere.json")
    assert bad.returncode != 0 and "--jaxmagic-compare" in bad.stderr + bad.stdout


def test_compile_time_is_said_as_a_ratio_and_never_breaks_a_budget():
    from jaxmagic.recompiles.fingerprint import FunctionFingerprint, ProgramRecord

    def run(seconds):
        program = ProgramRecord("(x: f32[3])", None, (), None, compile_s=seconds)
        return Fingerprint({"jax": jax.__version__}, {"step": FunctionFingerprint("step", None, [program])})

    found = compare(run(0.1), run(0.3))
    assert found.changes == [] and found.exit_status == 0
    assert "compile time (noisy, not held to a budget): step 3× (100 ms → 300 ms)" in found.to_text()


@pytest.mark.slow
def test_pytest_in_parallel_records_every_workers_tests_in_one_fingerprint(tmp_path):
    """Under pytest-xdist each worker records its own tests; the fingerprint the run leaves holds
    them all, written once, and compares against the same baseline a serial run writes."""
    baseline = tmp_path / "baseline.json"
    source = "SIZES = (3, 3)\n" + textwrap.dedent(USER_TESTS)
    recorded = run_pytest(tmp_path, source, "-n", "2", "--dist", "load", f"--jaxmagic-fingerprint={baseline}")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    found = json.loads(baseline.read_text())
    assert set(found["functions"]) == {"test_user_code.py::test_train::step", "test_user_code.py::test_allowed::step"}
    assert found["versions"]["jax"] == jax.__version__
    for workers in (("-n", "2"), ("-n", "0")):
        compared = run_pytest(
            tmp_path, "SIZES = (3, 4)\n" + textwrap.dedent(USER_TESTS), *workers, f"--jaxmagic-compare={baseline}"
        )
        assert compared.returncode == 1, compared.stdout
        assert "1 budget broken: `test_user_code.py::test_train::step` 2 compilations" in compared.stdout
