"""The benchmark suite in its quick form (tiny sizes, nothing judged), so it cannot break unnoticed.
The real figures come from ``make bench``; no test here looks at a time."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_quick_benchmark_suite_runs_every_benchmark():
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    table = done.stdout
    for goal in (
        "import jaxmagic",
        "%jaxpr HTML render",
        "%jitcompare jit median",
        "session watch on / off",
        "doctor: the card",
        "doctor: checking the fixes by value",
        "growth exponent: %jaxpr render time",
        "growth exponent: %jitcompare wall time",
        "growth exponent: recompile log",
        "values: --values / one eager call",
        "memory: --memory / one compile",
        "memory: reading the dump / one compile",
        "memory: checkpoint policies / one compile",
        "memory: peak bytes on user lines or arguments",
        "fidelity: %jitcompare eager median",
        "fidelity: %%recompiles count",
    ):
        assert goal in table, goal
    assert "(quick run: not judged)" in table
