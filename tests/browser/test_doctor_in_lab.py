"""The doctor in a real JupyterLab, in a real browser: a cell that falls into a JIT trap shows the
diagnosis card first, in the first screen, with the fix highlighted as Python, then the traceback
trimmed to the user's frames (the full one folded in the card)."""

import pytest

from .conftest import FIRST_SCREEN

pytestmark = pytest.mark.browser

CELLS = [
    "%load_ext jaxmagic\nimport jax, jax.numpy as jnp",
    "@jax.jit\ndef activation(x, use_relu):\n    if use_relu:\n        return jnp.maximum(0, x)\n    return jnp.tanh(x)",
    "activation(jnp.ones(3), True)",
]


def test_the_card_comes_before_the_traceback_with_the_fix_highlighted(open_notebook):
    notebook = open_notebook("doctor.ipynb", CELLS)
    notebook.run_all()
    outputs = notebook.output(2)
    card = outputs.locator(".jaxmagic.jm-diagnosis")
    card.wait_for()
    assert card.get_attribute("data-pitfall") == "python-control-flow"
    kinds = outputs.evaluate_all(
        "els => els.map(e => e.querySelector('.jaxmagic') ? 'card' : "
        "(/TracerBoolConversionError/.test(e.textContent) ? 'error' : e.className))"
    )
    assert kinds.index("card") < kinds.index("error"), kinds  # the card first, the traceback under it
    assert "TracerBoolConversionError" in outputs.nth(kinds.index("error")).inner_text()
    card.scroll_into_view_if_needed()
    heading = card.locator("h4").bounding_box()
    assert heading["y"] >= 0 and heading["y"] + heading["height"] <= FIRST_SCREEN["height"]

    assert card.locator("h4").inner_text().startswith("ERROR")
    assert "In [2] line 3" in card.locator(".jm-where").inner_text()
    fix = card.locator(".jm-fix pre.jm-python")
    assert 'static_argnames=("use_relu",)' in fix.inner_text()
    keyword = fix.locator(".jm-tk", has_text="def").first
    name = fix.locator(".jm-tnf", has_text="activation").first
    assert keyword.evaluate("e => getComputedStyle(e).color") != name.evaluate("e => getComputedStyle(e).color")
    error_border = card.locator(".jm-card").evaluate("e => getComputedStyle(e).borderLeftColor")
    assert error_border.startswith("rgb(") and error_border != "rgb(0, 0, 0)"
    notebook.screenshot("doctor-card", card)
