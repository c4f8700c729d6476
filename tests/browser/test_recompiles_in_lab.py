"""%recompiles in a real JupyterLab, in a real browser: the live panel fills while later cells run,
filters by function and clears; the cell form shows its table."""

import subprocess
import sys

import pytest

from .conftest import FIRST_SCREEN, FIRST_SCREEN_VIEW_HEIGHT, Notebook

pytestmark = pytest.mark.browser

CELLS = [
    "%load_ext jaxmagic\nimport jax, jax.numpy as jnp\n"
    "@jax.jit\ndef step(x):\n    return x.sum()\n"
    "@jax.jit\ndef loss(x):\n    return (x ** 2).sum()",
    "%recompiles on",
    "for n in range(1, 5):\n    step(jnp.ones(n))\nloss(jnp.ones(3))",
    "%%recompiles\nstep(jnp.ones(10))\nstep(jnp.ones(11));",
]


COMPILATIONS = "[...document.querySelectorAll('.jm-recompile-panel .jm-recompile-row')]" + (
    ".reduce((n, row) => n + Number(row.dataset.count), 0)"
)


def test_live_panel_and_cell_table(open_notebook):
    notebook = open_notebook("recompiles.ipynb", CELLS)
    notebook.run_all()
    panel = notebook.output(1).locator(".jm-recompile-panel")
    panel.wait_for(timeout=60_000)
    # the panel was shown by cell 2 and filled by cells 3 and 4, which ran after it
    panel.page.wait_for_function(f"() => {COMPILATIONS} === 7", timeout=30_000)
    assert panel.locator('.jm-recompile-count[data-function="step"]').get_attribute("data-count") == "6"
    assert panel.locator(".jm-recompile-headline").is_visible()
    rows = panel.locator(".jm-recompile-row")
    assert rows.count() == 3, "step's five shape changes are one row"
    newest = rows.first
    assert newest.get_attribute("data-kinds") == "shape" and newest.get_attribute("data-count") == "5"
    assert "×5" in newest.locator(".jm-fn").inner_text() and "2–4, 6–7" in newest.locator(".jm-n").inner_text()
    shape = newest.locator(".jm-cause-shape")
    assert shape.count() == 1 and "f32[10] → f32[11]" in shape.inner_text(), "the latest in sight"
    assert panel.locator(".jm-answer").inner_text().startswith("7 compilations of 2 functions")

    panel.locator(".jm-recompile-filter select").select_option("loss")
    panel.page.wait_for_function(f"() => {COMPILATIONS} === 1", timeout=30_000)
    assert panel.locator('.jm-recompile-row[data-function="loss"]').count() == 1

    table = notebook.output(3).locator(".jaxmagic.jm-recompile-log")
    table.wait_for()
    row = table.locator(".jm-recompile-row")
    assert row.count() == 1 and row.get_attribute("data-count") == "2"
    assert row.locator(".jm-site").inner_text().endswith("line 3")  # the latest call
    row.locator("details.jm-recompile-occurrences > summary").click()
    assert "line 2" in row.locator(".jm-first").inner_text()  # the first call, on demand

    panel.locator(".jm-recompile-clear").click()
    panel.page.wait_for_function(f"() => {COMPILATIONS} === 0", timeout=30_000)
    assert "no compilations" in panel.locator(".jm-summary").inner_text()
    # while the live panel is on the page, its static copy (for saved notebooks) is hidden
    assert notebook.cell(1).locator(".jm-recompile-static").is_hidden()


@pytest.mark.parametrize("trusted", [False, True], ids=["untrusted", "trusted"])
def test_a_saved_notebook_reopened_without_its_kernel_shows_the_log(page, lab, app, trusted):
    """Executed and saved elsewhere (nbclient), then opened in JupyterLab with a new kernel that never
    made the panel's widgets: the log is there as it stood, and no "model not found" error. Trusted,
    JupyterLab tries the widget and fails; untrusted, it shows the outputs' text and HTML only."""
    import nbclient
    import nbformat

    cells = CELLS[:3]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbclient.NotebookClient(notebook, timeout=180, kernel_name="python3").execute()
    # JupyterLab saves no widget state unless asked to: the widget manager will not find the model.
    notebook.metadata.pop("widgets", None)
    name = f"reopened-{'trusted' if trusted else 'untrusted'}-{app}.ipynb"
    nbformat.write(notebook, str(lab.root / name))
    if trusted:
        subprocess.run([sys.executable, "-m", "jupyter", "trust", str(lab.root / name)], check=True, env=lab.env)

    reopened = Notebook(page, lab, name, app)
    outputs = reopened.cell(1).locator(".jp-OutputArea")
    copy = outputs.locator(".jm-recompile-static")
    copy.wait_for(timeout=60_000)
    # "Loading widget..." may show while the widget manager still looks for the model; once it has
    # given up, its placeholder is hidden and the copy stands alone
    outputs.evaluate(
        """(area) => new Promise((done, fail) => {
            const start = Date.now();
            const check = () => /Loading widget|Error displaying widget/.test(area.innerText)
                ? (Date.now() - start > 30000 ? fail(area.innerText) : setTimeout(check, 250)) : done();
            setTimeout(check, 2000);
        })"""
    )
    assert copy.is_visible()
    assert copy.locator(".jm-recompile-row").count() == 3  # step's three shape changes are one row, ×3
    assert copy.locator(".jm-recompile-times").inner_text() == "×3"
    assert "Error displaying widget" not in outputs.inner_text()
    assert "Loading widget" not in outputs.inner_text()
    assert outputs.inner_text().lstrip().startswith("5 compilations of 2 functions")  # the answer, nothing above
    reopened.screenshot(f"recompiles-reopened-{'trusted' if trusted else 'untrusted'}", outputs)


SHOWCASE = [
    "%load_ext jaxmagic\nimport jax, jax.numpy as jnp\n"
    "@jax.jit\ndef step(x):\n    return (x ** 2).sum()\n"
    "@jax.jit\ndef loss(x):\n    return jnp.tanh(x).mean()",
    "%recompiles on",
    "for n in range(1, 13):\n    step(jnp.ones(n))",
    "%%recompiles\nfor n in range(1, 13):\n    loss(jnp.ones(n))",
]


def _fits_first_screen(notebook, cell: int, selector: str) -> tuple[float, str]:
    """The view's height, once its answer line is scrolled into view (asserted on the first screen)."""
    view = notebook.output(cell).locator(selector).first
    view.wait_for(timeout=60_000)
    notebook.cell(cell).scroll_into_view_if_needed()
    view.scroll_into_view_if_needed()
    height = view.bounding_box()["height"]
    print(f"{notebook.app} {selector}: {height:.0f} px")
    answer = view.locator(".jm-answer").first
    box = answer.bounding_box()
    assert box["y"] >= 0 and box["y"] + box["height"] <= FIRST_SCREEN["height"], box
    assert height <= FIRST_SCREEN_VIEW_HEIGHT, height
    return height, answer.inner_text()


def test_twelve_recompiles_answer_on_the_first_screen(open_notebook):
    """The session panel and the cell's table of a function compiled for 12 shapes: the answer line
    (how many, the main cause) on the first screen, the 11 shape changes one row ``×11``."""
    notebook = open_notebook("recompiles-first-screen.ipynb", SHOWCASE)
    notebook.run_all()
    notebook.page.wait_for_function(
        "() => [...document.querySelectorAll('.jm-recompile-panel .jm-recompile-row')]"
        ".some(r => r.dataset.count === '11')",
        timeout=30_000,
    )
    height, answer = _fits_first_screen(notebook, 1, ".jm-recompile-panel")
    # the session panel saw the next cell too: its 12 compilations of loss, on top
    assert answer.startswith("24 compilations of 2 functions"), answer
    assert "main cause: shape of x in loss ×11" in answer, answer
    panel = notebook.output(1).locator(".jm-recompile-panel")
    rows = panel.locator(".jm-recompile-row")
    assert rows.count() == 4 and rows.first.get_attribute("data-count") == "11"
    assert rows.first.get_attribute("data-function") == "loss"
    occurrences = rows.first.locator("details.jm-recompile-occurrences")
    assert occurrences.get_attribute("open") is None and not occurrences.locator(".jm-first").is_visible()
    occurrences.locator(":scope > summary").click()
    assert "f32[1] → f32[2]" in occurrences.locator(".jm-first").inner_text()  # the first one, on demand
    assert "f32[11] → f32[12]" in rows.first.locator(".jm-cause-shape").inner_text()  # the latest, in sight
    notebook.screenshot("recompiles-panel", panel)

    height, answer = _fits_first_screen(notebook, 3, ".jaxmagic.jm-recompile-log")
    assert answer.startswith("12 compilations of 1 function") and "in loss ×11" in answer, answer
    notebook.screenshot("recompiles-cell", notebook.output(3).locator(".jaxmagic.jm-recompile-log"))


def test_a_running_cell_shows_its_compilations_so_far_in_one_live_line(open_notebook):
    """While ``%%recompiles`` runs, one line under the cell counts the compilations and says the
    latest cause; when the cell ends the view, answer first, takes the line's place."""
    notebook = open_notebook(
        "recompiles-live.ipynb",
        [
            SHOWCASE[0] + "\nimport time",
            "%%recompiles\nfor n in range(1, 9):\n    step(jnp.ones(n))\n    time.sleep(1.5)",
        ],
    )
    page = notebook.page
    page.click(".lm-MenuBar-itemLabel:text-is('Run')")
    page.click(".lm-Menu-itemLabel:text-is('Run All Cells')")
    badge = notebook.output(1).locator(".jm-recompile-badge")
    page.wait_for_function(
        "() => Number(document.querySelector('.jm-recompile-badge-count')?.dataset.count) >= 2", timeout=120_000
    )
    line = badge.inner_text()
    assert "compilations so far · latest: step" in line and "shape of x changed" in line, line
    box = badge.bounding_box()
    assert box["height"] <= 40, box  # one line
    notebook.screenshot("recompiles-badge", badge)
    page.wait_for_function(
        "() => Number(document.querySelector('.jm-recompile-badge-count')?.dataset.count) >= 4", timeout=60_000
    )
    notebook.wait_idle(timeout=120_000)
    view = notebook.output(1).locator(".jaxmagic.jm-recompile-log")
    view.wait_for(timeout=60_000)
    assert badge.count() == 0 and notebook.output(1).count() == 1
    assert view.locator(".jm-answer").inner_text().startswith("8 compilations of 1 function")
