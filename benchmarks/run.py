"""``make bench``: every performance goal measured side by side, one table, a page and a plot.

Each ``bench_*.py`` module beside this file has ``run(quick=False) -> list[dict]`` (rows with
``goal``, ``measured``, ``target``, ``met``, ``detail``) and may have ``scaling(quick=False) ->
dict`` (plot title -> ``{"x", "y", "series": {name: [(x, y), ...]}}``) and ``section(quick=False)
-> str`` (a section of markdown for the page, written after ``run``). Ratios are measured
against an anchor in the same run: these machines are shared and noisy.

    python benchmarks/run.py            # the full suite; writes docs/performance.md and the plot
    python benchmarks/run.py --quick    # tiny sizes, no page written (the test suite's smoke run)
    python benchmarks/run.py --only profile,values_memory --record benchmarks/recorded/tpu-v5e.json
                                        # on an accelerator: its figures, kept for the page

The page shows, beside this machine's table, one table per file in ``benchmarks/recorded/``: the
figures of the views that read what the device did (profile, values, memory, timing), measured on
the accelerator named in the file by ``--record`` there.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import pathlib
import platform
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))


def module_names() -> list[str]:
    return sorted(p.stem for p in HERE.glob("bench_*.py"))


_CHILD = """
import json, sys
sys.path.insert(0, {here!r})
module = __import__({name!r})
rows = module.run(quick={quick!r})
scaling = getattr(module, "scaling", None)
plots = scaling(quick={quick!r}) if scaling else {{}}
section = getattr(module, "section", None)
text = section(quick={quick!r}) if section else ""
print("\\n@@result@@" + json.dumps({{"rows": rows, "plots": plots, "section": text}}))
"""


def run_module(name: str, quick: bool) -> tuple[list[dict], dict, str]:
    """One benchmark module in a fresh process, so that no module's leftovers (large jaxprs,
    caches, threads) weigh on another's figures."""
    code = _CHILD.format(here=str(HERE), name=name, quick=quick)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0 or "@@result@@" not in done.stdout:
        raise RuntimeError(f"{name} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    result = json.loads(done.stdout.rsplit("@@result@@", 1)[1])
    plots = {
        title: {**spec, "series": {k: [tuple(p) for p in v] for k, v in spec["series"].items()}}
        for title, spec in result["plots"].items()
    }
    return result["rows"], plots, result.get("section", "")


RECORDED = HERE / "recorded"


def collect(quick: bool, only: tuple[str, ...] = ()) -> tuple[list[dict], dict, list[str], float]:
    started = time.perf_counter()
    rows, plots, sections = [], {}, []
    for name in module_names():
        if only and name.removeprefix("bench_") not in only:
            continue
        module_rows, module_plots, section = run_module(name, quick)
        rows += [{**row, "suite": name.removeprefix("bench_")} for row in module_rows]
        plots.update(module_plots)
        if section:
            sections.append(section)
    return rows, plots, sections, time.perf_counter() - started


def table(rows: list[dict], *, judged: bool = True) -> str:
    header = f"{'goal':<72} {'measured':>10}  {'target':<10} result"
    lines = [header, "-" * len(header)]
    for r in rows:
        verdict = "info" if r["target"] == "(info)" else ("met" if r["met"] else "NOT MET")
        if not judged:
            verdict = "(quick run: not judged)"
        lines.append(f"{r['goal']:<72} {r['measured']:>10.3f}  {r['target']:<10} {verdict}")
    return "\n".join(lines)


def markdown(rows: list[dict], seconds: float, plot_name: str | None, sections: tuple[str, ...] = ()) -> str:
    import jax

    machine = f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"
    out = [
        "# Performance",
        "",
        "Measured by `make bench` (`benchmarks/run.py`). Every figure is a ratio against an anchor",
        "measured side by side in the same run, or a size: absolute times on a shared machine are",
        "not comparable from run to run.",
        "",
        f"- date: {datetime.date.today().isoformat()}",
        f"- machine: {machine}",
        f"- Python {platform.python_version()}, JAX {jax.__version__}",
        f"- the whole suite took {seconds:.0f} s",
        "",
        "| goal | measured | target | result | detail |",
        "| --- | ---: | --- | --- | --- |",
    ]
    for r in rows:
        verdict = "info" if r["target"] == "(info)" else ("met" if r["met"] else "**not met**")
        out.append(f"| {r['goal']} | {r['measured']:.3f} | {r['target']} | {verdict} | {r['detail']} |")
    if plot_name:
        out += ["", "## How the costs grow", "", f"![how the costs grow]({plot_name})", ""]
    for section in sections:  # the modules' own sections (the fidelity over the corpus)
        out += ["", section.strip(), ""]
    for path in sorted(RECORDED.glob("*.json")):  # what ran on an accelerator, kept from there
        recorded = json.loads(path.read_text(encoding="utf-8"))
        section = fidelity_section if "results" in recorded else recorded_section
        out += ["", *section(recorded, path.name)]
    notes = HERE / "notes.md"
    if notes.exists():  # what limits a goal, and what the figures mean: written by hand
        out += ["", notes.read_text(encoding="utf-8").strip()]
    return "\n".join(out) + "\n"


def recorded_section(recorded: dict, name: str) -> list[str]:
    """The markdown of one ``--record`` file: where and when it ran, then its rows."""
    out = [
        f"## On a {recorded['device']}",
        "",
        f"Recorded there by `benchmarks/run.py --record` (`benchmarks/recorded/{name}`) on "
        f"{recorded['date']}, JAX {recorded['jax']}, the run took {recorded['seconds']:.0f} s. Each "
        "figure is a ratio against an anchor measured on that device in the same run.",
        "",
        "| goal | measured | target | result | detail |",
        "| --- | ---: | --- | --- | --- |",
    ]
    for r in recorded["rows"]:
        verdict = "info" if r["target"] == "(info)" else ("met" if r["met"] else "**not met**")
        out.append(f"| {r['goal']} | {r['measured']:.3f} | {r['target']} | {verdict} | {r['detail']} |")
    return out


def fidelity_section(recorded: dict, name: str) -> list[str]:
    """The markdown of a ``bench_fidelity.py --json`` file recorded on an accelerator: its table over
    every case, inside the words written for it by hand beside it (``<name>.md``, where
    ``<!-- table -->`` stands for the table)."""
    import bench_fidelity

    table = bench_fidelity.totals_table(bench_fidelity.recorded_results(recorded))
    words = RECORDED / name.replace(".json", ".md")
    text = words.read_text(encoding="utf-8") if words.exists() else "<!-- table -->"
    before, _, after = text.partition("<!-- table -->")
    heading = f"## Fidelity over the corpus, on a {recorded['device'].split(',')[0]}"
    return [heading, "", before.strip(), "", *table, "", after.strip()]


def record(rows: list[dict], seconds: float, path: str) -> None:
    """Keep this run's rows, with the device they ran on, for the page (``recorded_section``)."""
    import jax

    recorded = {
        "device": jax.devices()[0].device_kind,
        "jax": jax.__version__,
        "date": datetime.date.today().isoformat(),
        "seconds": seconds,
        "rows": rows,
    }
    pathlib.Path(path).write_text(json.dumps(recorded, indent=1) + "\n", encoding="utf-8")


def plot(plots: dict, path: pathlib.Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    if not plots:
        return False
    fig, axes = plt.subplots(1, len(plots), figsize=(5.5 * len(plots), 4.2), squeeze=False)
    for ax, (title, spec) in zip(axes[0], plots.items(), strict=True):
        for name, points in spec["series"].items():
            xs, ys = zip(*points, strict=True)
            ax.loglog(xs, ys, marker="o", label=name)
        ax.set_title(title)
        ax.set_xlabel(spec["x"])
        ax.set_ylabel(spec["y"])
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    return True


def growth(points: list[tuple[float, float]]) -> float:
    """The exponent k of y ~ x^k between the first and the last point (1: linear)."""
    (x0, y0), (x1, y1) = points[0], points[-1]
    return math.log(y1 / y0) / math.log(x1 / x0) if y0 > 0 and x1 > x0 else float("nan")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes; judge nothing, write nothing")
    parser.add_argument("--only", default="", help="only these suites, e.g. profile,values_memory")
    parser.add_argument("--record", default="", help="write the rows, and the device, to this JSON file only")
    args = parser.parse_args(argv)
    only = tuple(name.strip() for name in args.only.split(",") if name.strip())
    rows, plots, sections, seconds = collect(args.quick, only)
    if args.record:
        print(table(rows))
        record(rows, seconds, args.record)
        return 0
    for title, spec in plots.items():
        for name, points in spec["series"].items():
            rows.append(
                {
                    "suite": "scale",
                    "goal": f"growth exponent: {title}, {name}",
                    "measured": growth(points),
                    "target": "(info)",
                    "met": True,
                    "detail": "1.0 is linear; below 1, better than linear",
                }
            )
    print(table(rows, judged=not args.quick))
    if args.quick:
        return 0
    plot_name = "performance.png"
    written = plot(plots, ROOT / "docs" / plot_name)
    page = markdown(rows, seconds, plot_name if written else None, tuple(sections))
    (ROOT / "docs" / "performance.md").write_text(page)
    print(f"\nwrote docs/performance.md{' and docs/' + plot_name if written else ''} ({seconds:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
