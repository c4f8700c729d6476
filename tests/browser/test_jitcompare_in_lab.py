"""%jitcompare in a real JupyterLab, in a real browser: the modes table with its bars, the first
calls split into coloured segments, readable without any JavaScript of ours."""

import pytest

from .conftest import FIRST_SCREEN, FIRST_SCREEN_VIEW_HEIGHT

pytestmark = pytest.mark.browser

CELLS = [
    "%load_ext jaxmagic\nimport jax, jax.numpy as jnp\nx = jnp.ones((128, 128))",
    "def layer(x):\n    return jnp.tanh(x @ x).sum()",
    "%jitcompare -n 5 -r 3 layer(x)",
]


def test_modes_table_with_bars_and_first_call_split(open_notebook):
    notebook = open_notebook("jitcompare.ipynb", CELLS)
    notebook.run_all()
    view = notebook.output(2).locator(".jaxmagic.jm-comparison")
    view.wait_for()
    summary = view.locator(".jm-summary").inner_text()
    # a verdict, whichever three repeats on a shared machine support (the engine's tests check which)
    assert any(verdict in summary for verdict in ("faster than eager", "slower", "no measurable difference"))

    modes = view.locator("table.jm-modes")
    assert modes.locator("tr").count() == 3  # header, eager, jit
    bars = modes.locator("svg.jm-bars")
    assert bars.count() == 2
    eager_bar = bars.nth(0).locator("rect.jm-bar").first
    jit_bar = bars.nth(1).locator("rect.jm-bar").first
    eager_width = float(eager_bar.get_attribute("width"))
    jit_width = float(jit_bar.get_attribute("width"))
    assert eager_width > 0 and jit_width > 0
    assert eager_bar.bounding_box()["width"] > 0  # drawn, not just present
    assert eager_bar.evaluate("e => getComputedStyle(e).fill") != jit_bar.evaluate("e => getComputedStyle(e).fill")

    first_calls = view.locator("table.jm-first-calls")
    for segment in ("trace", "lower", "compile", "run"):
        assert first_calls.locator(f"rect.jm-bar-{segment}").count() >= 1, segment
    assert view.locator("script").count() == 0

    # the answer on the first screen: the verdict and its table in view, the details folded
    view.scroll_into_view_if_needed()
    verdict = view.locator(".jm-summary").bounding_box()
    assert verdict["y"] >= 0 and verdict["y"] + verdict["height"] <= FIRST_SCREEN["height"]
    assert view.bounding_box()["height"] <= FIRST_SCREEN_VIEW_HEIGHT
    assert view.locator("details.jm-details").get_attribute("open") is None
    notebook.screenshot("jitcompare", view)
