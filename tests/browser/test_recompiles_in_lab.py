"""%recompiles in a real JupyterLab, in a real browser: the live panel fills while later cells run,
filters by function and clears; the cell form shows its table."""

import pytest

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
