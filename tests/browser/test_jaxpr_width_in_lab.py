"""%jaxpr's listing at 1366×768 in a real JupyterLab: a long equation is cut at the output's right
edge by the stylesheet (not by a count of characters) and whole on hover, nothing runs off to the
right; the advice on hovering and unfolding fades once they are used, its link stays."""

import pytest

pytestmark = pytest.mark.browser

CELLS = [
    "%load_ext jaxmagic\nimport jax, jax.numpy as jnp",
    "def wide(x):\n    parts = [jnp.sin(x) * i for i in range(3)]\n"
    "    y = jax.lax.cond(x.sum() > 0, jnp.cos, jnp.sin, x)\n"
    "    return jnp.concatenate(parts + [y] * 60 + [x] * 60).sum()",
    "%jaxpr wide(jnp.ones(3))",
]


def test_long_equations_are_cut_at_the_width_and_the_advice_fades_once_used(open_notebook):
    notebook = open_notebook("jaxpr-width.ipynb", CELLS)
    notebook.run_all()
    view = notebook.output(2).locator(".jaxmagic.jm-jaxpr-report")
    view.wait_for()
    view.scroll_into_view_if_needed()
    right = view.bounding_box()["x"] + view.bounding_box()["width"]
    assert view.evaluate("e => e.scrollWidth <= e.clientWidth + 1")  # no scrolling sideways
    concatenate = view.locator('.jm-eqn[data-primitive="concatenate"]')
    code = concatenate.locator(".jm-code")
    assert code.evaluate("e => e.scrollWidth > e.clientWidth")  # cut by the width...
    box = code.bounding_box()
    assert box["x"] + box["width"] <= right + 1, (box, right)
    whole = concatenate.get_attribute("title")
    assert len(whole) > 150 and code.inner_text() == whole  # ...and whole in the page, and on hover
    for line in view.locator(".jm-l .jm-code").all():
        edge = line.bounding_box()
        assert edge["x"] + edge["width"] <= right + 1

    advice, link = view.locator(".jm-usage-hint"), view.locator(".jm-viewer-hint a")
    assert advice.is_visible() and "hover a variable" in advice.inner_text()
    notebook.screenshot("jaxpr-width", view)
    view.locator("details.jm-nested > summary").first.click()
    assert not advice.is_visible() and link.is_visible()
    view.locator("details.jm-nested > summary").first.click()
    assert advice.is_visible()
    view.locator(".jm-eqn .jm-def").first.hover()
    assert not advice.is_visible() and link.is_visible()
