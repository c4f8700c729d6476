"""The tour notebook runs end to end in a real Jupyter kernel, and its HTML export keeps the views."""

import pathlib
import re
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


def test_committed_notebook_shows_what_each_magic_showed_when_it_ran():
    """A repository page shows the committed notebook as it is: `make demo` writes it back run."""
    committed = nbformat.read(str(DEMO / "tour.ipynb"), as_version=4)
    code = [c for c in committed.cells if c.cell_type == "code"]
    assert all(c.get("execution_count") for c in code), "the committed tour has cells that never ran"
    magic_cells = [
        c for c in code if c.source.lstrip().startswith(("%jaxpr", "%%jaxpr", "%jitcompare", "%%jitcompare"))
    ]
    assert magic_cells and all(_html_outputs(c) for c in magic_cells)


def test_every_cell_ran_without_an_unexpected_error(executed_tour):
    code = [c for c in executed_tour.cells if c.cell_type == "code"]
    assert all(c.get("execution_count") for c in code), "a cell did not run"
    assert tour_runner.unexpected_errors(executed_tour) == []


def _html_outputs(cell):
    return [o["data"]["text/html"] for o in cell.get("outputs", []) if "text/html" in o.get("data", {})]


def test_every_jaxpr_magic_showed_its_view(executed_tour):
    jaxpr_cells = [
        c for c in executed_tour.cells if c.cell_type == "code" and c.source.lstrip().startswith(("%jaxpr", "%%jaxpr"))
    ]
    assert len(jaxpr_cells) >= 10
    for cell in jaxpr_cells:
        html = "".join(_html_outputs(cell))
        assert "jm-jaxpr-report" in html, cell.source
    by_source = {c.source: "".join(_html_outputs(c)) for c in jaxpr_cells}
    assert 'data-primitive="dot_general"' in by_source["%jaxpr policy_forward(obs, weights)"]
    assert by_source["%jaxpr good_example(x, 4)"].count('class="jm-l jm-eqn" data-primitive="add"') == 4
    assert "stablehlo.dot_general" in by_source["%jaxpr --stage stablehlo my_func(a, b)"]
    assert "FLOPs" in by_source["%jaxpr --stage hlo --cost my_func(a, b)"]
    assert "<details" in by_source["%jaxpr good_activation(x, True)"]


def _cell(notebook, starts_with):
    matches = [c for c in notebook.cells if c.cell_type == "code" and c.source.lstrip().startswith(starts_with)]
    assert matches, f"no cell starts with {starts_with!r}"
    return matches[0]


def _all_outputs_html(cell):
    return "".join(_html_outputs(cell))


def test_the_traps_fail_with_the_doctors_card(executed_tour):
    expected = {
        "@jit\ndef bad_activation": "python-control-flow",
        "@jit\ndef bad_example": "traced-shape",
        "from functools import partial\n\n@partial(jax.jit, static_argnums": "unhashable-static",
        "new_weights = sgd_update": "donated-buffer",
    }
    for start, pitfall in expected.items():
        cell = _cell(executed_tour, start)
        assert "raises-exception" in cell.metadata.get("tags", [])
        assert any(o.output_type == "error" for o in cell.outputs), start
        assert f'data-pitfall="{pitfall}"' in _all_outputs_html(cell), start
    warning = _all_outputs_html(_cell(executed_tour, "%jaxpr train_step"))
    assert 'data-pitfall="print-side-effect"' in warning and 'data-severity="warning"' in warning


def test_jitcompare_cells_show_tables_with_every_mode(executed_tour):
    html = _all_outputs_html(_cell(executed_tour, "%jitcompare --modes eager,jit,sharded,pmap"))
    assert "jm-comparison" in html and "<svg" in html
    for mode in ("eager", "jit", "sharded", "pmap"):
        assert f">{mode}<" in html, mode
    donation = _all_outputs_html(_cell(executed_tour, "%jitcompare --budget 2 sgd_update"))
    assert "aliased (donated)" in donation and "256.0 KiB" in donation


def test_recompiles_cells_name_the_causes(executed_tour):
    static = _all_outputs_html(_cell(executed_tour, "%%recompiles\nprocess_lidar"))
    assert "jm-cause-static_value" in static and "num_points" in static
    shown = _all_outputs_html(_cell(executed_tour, "%recompiles show step"))
    assert "jm-cause-shape" in shown and "jm-cause-dtype" in shown
    shapes = re.findall(r'data-kinds="shape" data-count="(\d+)"', shown)
    assert sum(map(int, shapes)) >= 4  # four batch sizes, then one bucket (one row, ×N)


def test_html_export_keeps_the_highlighting_and_the_nested_blocks(executed_tour):
    body, _ = HTMLExporter(template_name="lab").from_notebook_node(executed_tour)
    assert ".jaxmagic .jm-tnf" in body  # the scoped stylesheet survives
    assert '<span class="jm-tnf">dot_general</span>' in body
    assert '<details class="jm-nested">' in body
    assert "jm-recompile-log" in body and "jm-cause-shape" in body  # the recompile table survives export
    assert "jm-comparison" in body and "jm-diagnosis" in body
    assert "<script" not in body.split("jm-jaxpr-report", 1)[1].split("</div></div>", 1)[0]


def test_the_sharded_step_names_its_communication(executed_tour):
    html = _all_outputs_html(_cell(executed_tour, "%jaxpr --collectives"))
    assert "1 collective moves 4.0 KiB per device; the largest, an all-reduce of 4.0 KiB, comes from" in html
    assert "<code>return hidden @ params[&#x27;w2&#x27;]</code>" in html or "return hidden @ params" in html
    assert "partial results over <code>model</code>" in html


def test_the_nan_and_memory_sections_answer_first(executed_tour):
    nan = _all_outputs_html(_cell(executed_tour, "%jaxpr --values log_loss"))
    assert "the first NaN comes from" in nan and "jnp.log(z)" in nan and "jm-nonfinite" in nan
    memory = _all_outputs_html(_cell(executed_tour, "%jaxpr --memory -t grad attention"))
    assert "peak " in memory and "jax.nn.softmax(scores, axis=-1)" in memory and "live at the peak" in memory
