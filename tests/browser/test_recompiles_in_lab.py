"""%recompiles in a real JupyterLab, in a real browser: the live panel fills while later cells run,
filters by function and clears; the cell form shows its table."""

import subprocess
import sys

import pytest

from .conftest import Notebook

pytestmark = pytest.mark.browser

CELLS = [
    "%load_ext jaxmagic\nimport jax, jax.numpy as jnp\n"
    "@jax.jit\ndef step(x):\n    return x.sum()\n"
    "@jax.jit\ndef loss(x):\n    return (x ** 2).sum()",
    "%recompiles on",
    "for n in range(1, 5):\n    step(jnp.ones(n))\nloss(jnp.ones(3))",
    "%%recompiles\nstep(jnp.ones(10))\nstep(jnp.ones(11));",
]


def test_live_panel_and_cell_table(open_notebook):
    notebook = open_notebook("recompiles.ipynb", CELLS)
    notebook.run_all()
    panel = notebook.output(1).locator(".jm-recompile-panel")
    panel.wait_for(timeout=60_000)
    # the panel was shown by cell 2 and filled by cells 3 and 4, which ran after it
    panel.page.wait_for_function(
        "() => document.querySelectorAll('.jm-recompile-panel .jm-recompile-row').length === 7", timeout=30_000
    )
    assert panel.locator('.jm-recompile-count[data-function="step"]').get_attribute("data-count") == "6"
    assert panel.locator(".jm-recompile-headline").is_visible()
    assert panel.locator(".jm-cause-shape").count() == 5
    shape = panel.locator(".jm-cause-shape").first
    assert "changed" in shape.inner_text()
    notebook.screenshot("recompiles-panel", panel)

    panel.locator(".jm-recompile-filter select").select_option("loss")
    panel.page.wait_for_function(
        "() => document.querySelectorAll('.jm-recompile-panel .jm-recompile-row').length === 1", timeout=30_000
    )
    assert panel.locator('.jm-recompile-row[data-function="loss"]').count() == 1

    table = notebook.output(3).locator(".jaxmagic.jm-recompile-log")
    table.wait_for()
    assert table.locator(".jm-recompile-row").count() == 2
    assert table.locator(".jm-recompile-row .jm-site").first.inner_text().endswith("line 2")
    notebook.screenshot("recompiles-cell", table)

    panel.locator(".jm-recompile-clear").click()
    panel.page.wait_for_function(
        "() => document.querySelectorAll('.jm-recompile-panel .jm-recompile-row').length === 0", timeout=30_000
    )
    assert "no compilations" in panel.locator(".jm-summary").inner_text()
    # while the live panel is on the page, its static copy (for saved notebooks) is hidden
    assert notebook.cell(1).locator(".jm-recompile-static").is_hidden()


@pytest.mark.parametrize("trusted", [False, True], ids=["untrusted", "trusted"])
def test_a_saved_notebook_reopened_without_its_kernel_shows_the_log(page, lab, trusted):
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
    name = f"reopened-{'trusted' if trusted else 'untrusted'}.ipynb"
    nbformat.write(notebook, str(lab.root / name))
    if trusted:
        subprocess.run([sys.executable, "-m", "jupyter", "trust", str(lab.root / name)], check=True, env=lab.env)

    reopened = Notebook(page, lab, name)
    outputs = reopened.cell(1).locator(".jp-OutputArea")
    copy = outputs.locator(".jm-recompile-static")
    copy.wait_for(timeout=60_000)
    page.wait_for_timeout(2_000)  # the widget manager has given up on the model by now
    assert copy.is_visible()
    assert copy.locator(".jm-recompile-row").count() == 5
    assert "5 compilations of 2 functions" in copy.inner_text()
    assert "Error displaying widget" not in outputs.inner_text()
    assert "Loading widget" not in outputs.inner_text()
    assert outputs.inner_text().lstrip().startswith("Compilations in the session")  # nothing above the log
    reopened.screenshot(f"recompiles-reopened-{'trusted' if trusted else 'untrusted'}", outputs)
