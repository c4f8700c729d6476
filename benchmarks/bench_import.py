"""What loading jaxmagic adds to ``import jax``, each measured in fresh processes, side by side;
and how long ``python -m jaxmagic diff`` takes from start to answer.

Goals: ``import jaxmagic`` and ``%load_ext jaxmagic`` together add less than 0.2 s to ``import jax``
(also shown as a fraction of ``import jax`` measured in the same run); ``diff`` of two real
fingerprints answers within 0.3 s of wall time, JAX never imported (also shown as a ratio to a
bare ``python -c pass`` timed in the same run).
"""

from __future__ import annotations

import pathlib
import statistics
import subprocess
import sys
import time

SEEDS = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "fingerprints"

PROBE = """
import time
t0 = time.perf_counter()
import jax
t1 = time.perf_counter()
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
t2 = time.perf_counter()
import jaxmagic
t3 = time.perf_counter()
shell.run_line_magic("load_ext", "jaxmagic")
t4 = time.perf_counter()
import sys
heavy = sorted(m for m in ("ipywidgets", "matplotlib") if m in sys.modules)
print(t1 - t0, t3 - t2, t4 - t3, ",".join(heavy) or "-")
"""


def sample() -> tuple[float, float, float, str]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        check=True,
        env={"JAX_PLATFORMS": "cpu", "PATH": ""},
    ).stdout.split()
    return float(out[0]), float(out[1]), float(out[2]), out[3]


def run(quick: bool = False) -> list[dict]:
    samples = [sample() for _ in range(2 if quick else 5)]
    import_jax = statistics.median(s[0] for s in samples)
    import_jaxmagic = statistics.median(s[1] for s in samples)
    load_ext = statistics.median(s[2] for s in samples)
    added = import_jaxmagic + load_ext
    heavy = samples[-1][3]
    detail = (
        f"import jax {import_jax:.2f} s; import jaxmagic {import_jaxmagic * 1e3:.1f} ms; "
        f"%load_ext {load_ext * 1e3:.0f} ms ({added / import_jax:.0%} of import jax); "
        f"heavy modules loaded: {heavy}"
    )
    return [
        {
            "goal": "import jaxmagic + %load_ext jaxmagic, seconds added to import jax",
            "measured": added,
            "target": "< 0.2",
            "met": added < 0.2,
            "detail": detail,
        },
        *run_diff(quick),
    ]


def _wall(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, capture_output=True, check=False, env={"PATH": "", "JAX_PLATFORMS": "cpu"})
    return time.perf_counter() - start


def run_diff(quick: bool = False) -> list[dict]:
    """``python -m jaxmagic diff`` of two real fingerprints, from process start to exit."""
    samples = 2 if quick else 7
    bare = statistics.median(_wall([sys.executable, "-c", "pass"]) for _ in range(samples))
    command = [sys.executable, "-m", "jaxmagic", "diff", str(SEEDS / "width8.json"), str(SEEDS / "width16.json")]
    diff = statistics.median(_wall(command) for _ in range(samples))
    probe = "import sys, runpy; sys.argv = ['jaxmagic', 'diff', sys.argv[1], sys.argv[2]]\ntry:\n"
    probe += "    runpy.run_module('jaxmagic', run_name='__main__')\nexcept SystemExit:\n    pass\n"
    probe += "print('JAX', 'jax' in sys.modules, file=sys.stderr)"
    loaded = subprocess.run(
        [sys.executable, "-c", probe, str(SEEDS / "width8.json"), str(SEEDS / "width16.json")],
        capture_output=True,
        text=True,
        check=False,
    ).stderr.strip()
    return [
        {
            "goal": "python -m jaxmagic diff, seconds from start to answer (JAX not imported)",
            "measured": diff,
            "target": "<= 0.3",
            "met": diff <= 0.3 and loaded.endswith("JAX False"),
            "detail": f"{diff / bare:.1f}x a bare python -c pass ({bare * 1e3:.0f} ms); {loaded.splitlines()[-1]}",
        }
    ]


if __name__ == "__main__":
    for row in run():
        print(
            f"{row['goal']}: {row['measured']:.3f} (target {row['target']}) {'met' if row['met'] else 'NOT MET'} — {row['detail']}"
        )
