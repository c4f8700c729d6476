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


def test_the_page_renders_every_recorded_run():
    """Every file in ``benchmarks/recorded`` renders into docs/performance.md: a fidelity recording
    (``bench_fidelity.py --json``, on an accelerator) as its table over every case, inside the words
    kept beside it; a ``run.py --record`` file as its rows."""
    script = (
        "import json, pathlib, bench_fidelity, run\n"
        "page = run.markdown([], 1.0, None)\n"
        "for path in sorted(run.RECORDED.glob('*.json')):\n"
        "    recorded = json.loads(path.read_text(encoding='utf-8'))\n"
        "    if 'results' in recorded:\n"
        "        rows = bench_fidelity.totals_table(bench_fidelity.recorded_results(recorded))\n"
        "        assert all(row in page for row in rows), path.name\n"
        "        words = path.with_suffix('.md')\n"
        "        assert not words.exists() or words.read_text().split('<!-- table -->')[1].strip()[:60] in page\n"
        "    else:\n"
        "        assert f\"## On a {recorded['device']}\" in page, path.name\n"
        "print(page.count('## '))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=ROOT / "benchmarks"
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_the_fidelity_judge_takes_a_lower_bound_for_what_it_is():
    """A figure %jitcompare shows as a lower bound (a stopped call) is right where it is at most the
    truth, and is left out of the median it is judged by; its doctests hold the cases."""
    done = subprocess.run(
        [sys.executable, "-m", "doctest", "bench_fidelity.py"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT / "benchmarks",
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
