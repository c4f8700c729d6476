"""The tour notebook runs end to end in a real Jupyter kernel, and its HTML export keeps the views."""

import os
import pathlib
import sys

import nbformat
import pytest
from nbconvert import HTMLExporter

DEMO = pathlib.Path(__file__).resolve().parent.parent / "demo"
sys.path.insert(0, str(DEMO))

import run as tour_runner  # noqa: E402
from notebook_source import build  # noqa: E402


@pytest.fixture(scope="module")
def executed_tour(tmp_path_factory):
    path = tmp_path_factory.mktemp("tour") / "tour.ipynb"
    build(str(DEMO / "tour.py"), str(path))
    return tour_runner.execute(str(path))


def test_committed_notebook_is_built_from_tour_py():
    built = build(str(DEMO / "tour.py"))
    committed = nbformat.read(str(DEMO / "tour.ipynb"), as_version=4)
    assert [(c.cell_type, c.source) for c in committed.cells] == [(c.cell_type, c.source) for c in built.cells]


def test_every_cell_ran_without_an_unexpected_error(executed_tour):
    code = [c for c in executed_tour.cells if c.cell_type == "code"]
    assert all(c.get("execution_count") for c in code), "a cell did not run"
    assert tour_runner.unexpected_errors(executed_tour) == []


def _html_outputs(cell):
    return [o["data"]["text/html"] for o in cell.get("outputs", []) if "text/html" in o.get("data", {})]


def test_every_jaxpr_magic_showed_its_view(executed_tour):
    jaxpr_cells = [c for c in executed_tour.cells if c.cell_type == "code" and c.source.lstrip().startswith(("%jaxpr", "%%jaxpr"))]
    assert len(jaxpr_cells) >= 8
    for cell in jaxpr_cells:
        html = "".join(_html_outputs(cell))
        assert "jm-jaxpr-report" in html, cell.source
    by_source = {c.source: "".join(_html_outputs(c)) for c in jaxpr_cells}
    assert 'data-primitive="dot_general"' in by_source["%jaxpr policy_forward(obs, weights)"]
    assert by_source["%jaxpr good_example(x, 4)"].count('data-primitive="add"') == 4
    assert "stablehlo.dot_general" in by_source["%jaxpr --stage stablehlo my_func(a, b)"]
    assert "FLOPs" in by_source["%jaxpr --stage hlo --cost my_func(a, b)"]
    assert "<details" in by_source["%jaxpr good_activation(x, True)"]


def test_html_export_keeps_the_highlighting_and_the_nested_blocks(executed_tour):
    body, _ = HTMLExporter(template_name="lab").from_notebook_node(executed_tour)
    assert ".jaxmagic .jm-tnf" in body  # the scoped stylesheet survives
    assert '<span class="jm-tnf">dot_general</span>' in body
    assert '<details class="jm-nested">' in body
    assert "<script" not in body.split("jm-jaxpr-report", 1)[1].split("</div></div>", 1)[0]
