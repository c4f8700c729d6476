"""The tour is written as a Python file in the "percent" format and built into ``tour.ipynb``.

A line ``# %% [markdown]`` starts a markdown cell (its lines are ``# `` comments); a line ``# %%``
starts a code cell; ``# %% tags=raises-exception`` starts a code cell that is meant to fail
(the doctor's examples), which Jupyter's runners then let through.

    python demo/notebook_source.py demo/tour.py demo/tour.ipynb
"""

from __future__ import annotations

import re
import sys

import nbformat

_CELL_START = re.compile(r"^# %%(?P<markdown> \[markdown\])?(?: tags=(?P<tags>[\w,-]+))?\s*$")


def cells_of(source: str) -> list:
    """The notebook cells written in ``source``."""
    cells, kind, tags, lines = [], None, [], []

    def flush():
        text = "\n".join(lines).strip("\n")
        if kind == "markdown":
            text = "\n".join(re.sub(r"^# ?", "", line) for line in text.splitlines())
            cells.append(nbformat.v4.new_markdown_cell(text))
        elif kind == "code" and text:
            cell = nbformat.v4.new_code_cell(text)
            if tags:
                cell.metadata["tags"] = tags
            cells.append(cell)

    for line in source.splitlines():
        match = _CELL_START.match(line)
        if match:
            flush()
            kind = "markdown" if match.group("markdown") else "code"
            tags = match.group("tags").split(",") if match.group("tags") else []
            lines = []
        elif kind is not None:
            lines.append(line)
    flush()
    return cells


def build(source_path: str, notebook_path: str | None = None):
    """Build the notebook; write it when ``notebook_path`` is given. Returns the notebook."""
    with open(source_path, encoding="utf-8") as handle:
        notebook = nbformat.v4.new_notebook(cells=cells_of(handle.read()))
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.metadata["language_info"] = {"name": "python"}
    for index, cell in enumerate(notebook.cells):
        cell["id"] = f"cell-{index:03d}"  # stable ids: rebuilding changes nothing that did not change
    if notebook_path:
        nbformat.write(notebook, notebook_path)
    return notebook


if __name__ == "__main__":
    build(sys.argv[1], sys.argv[2])
