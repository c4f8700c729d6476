"""Run the tour headless and export it: ``python demo/run.py demo/tour.ipynb demo/tour.html``.

Builds ``tour.ipynb`` from ``tour.py`` first (so the two never drift apart), executes it in a real
Jupyter kernel with nbclient, writes it back with its outputs (so that a repository page shows
them) and the HTML export beside it, and prints a short summary. What the kernel process itself
writes to its console (the Jupyter server's and XLA's own log lines) goes to a log file, named in
the summary, not to the console. Exits non-zero when a cell fails that is not tagged
``raises-exception``.
"""

from __future__ import annotations

import collections
import os
import re
import sys
import tempfile
import time

import nbformat
from nbclient import NotebookClient
from nbconvert import HTMLExporter

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from notebook_source import build  # noqa: E402

MAGIC = re.compile(r"^%{1,2}(\w+)", re.M)


KERNEL_LOG = os.path.join(tempfile.gettempdir(), "jaxmagic-tour-kernel.log")


def execute(notebook_path: str, *, timeout: int = 600, kernel_log: str = KERNEL_LOG):
    """The tour, executed in a fresh kernel (the notebook file itself is left as it is); the
    kernel's own console output goes to ``kernel_log``."""
    notebook = nbformat.read(notebook_path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": os.path.dirname(os.path.abspath(notebook_path))}},
    )
    with open(kernel_log, "w", encoding="utf-8") as log:
        client.execute(stdout=log, stderr=log)
    return notebook


def unexpected_errors(notebook) -> list[tuple[int, str]]:
    """(cell index, error name) of every failed cell not tagged ``raises-exception``."""
    found = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code" or "raises-exception" in cell.metadata.get("tags", []):
            continue
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                found.append((index, output.ename))
    return found


def summary(notebook, seconds: float, html_path: str) -> str:
    code = [c for c in notebook.cells if c.cell_type == "code"]
    magics = collections.Counter(m for c in code for m in MAGIC.findall(c.source))
    rich = sum(1 for c in code for o in c.get("outputs", []) if "text/html" in o.get("data", {}))
    errors = unexpected_errors(notebook)
    size = os.path.getsize(html_path) / 1e6
    lines = [
        f"tour: {len(code)} code cells ran in {seconds:.1f} s; {rich} rich outputs; {len(errors)} unexpected errors",
        "magics used: " + ", ".join(f"%{name} ×{count}" for name, count in magics.most_common()),
        f"wrote {html_path} ({size:.2f} MB) and the notebook with its outputs",
        f"the kernel's own console output: {KERNEL_LOG}",
    ]
    lines += [f"  cell {index} failed: {name}" for index, name in errors]
    return "\n".join(lines)


def main(notebook_path: str, html_path: str) -> int:
    build(os.path.join(HERE, "tour.py"), notebook_path)
    started = time.perf_counter()
    notebook = execute(notebook_path)
    seconds = time.perf_counter() - started
    nbformat.write(notebook, notebook_path)
    body, _ = HTMLExporter(template_name="lab").from_notebook_node(notebook)
    with open(html_path, "w", encoding="utf-8") as handle:
        handle.write(body)
    print(summary(notebook, seconds, html_path))
    return 1 if unexpected_errors(notebook) else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
