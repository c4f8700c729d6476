"""%jaxpr in a real JupyterLab, in a real browser: highlighted, nested jaxprs open on click, readable
in the light and the dark theme."""

import pytest

pytestmark = pytest.mark.browser

CELLS = [
    "%load_ext jaxmagic\nimport jax, jax.numpy as jnp\nx = jnp.ones(3)",
    "def nested(x, n):\n    y = jnp.sin(x) * 2\n    z = jax.lax.cond(n > 0, lambda a: a + 1, lambda a: a - 1, y)\n    return jnp.sum(z ** 2)",
    "%jaxpr nested(x, 1)",
]


def luminance(css_color: str) -> float:
    parts = [float(p) for p in css_color[css_color.index("(") + 1 : css_color.index(")")].split(",")[:3]]
    return (0.2126 * parts[0] + 0.7152 * parts[1] + 0.0722 * parts[2]) / 255


def test_jaxpr_view_is_highlighted_and_nested_jaxprs_expand_on_click(open_notebook):
    notebook = open_notebook("jaxpr.ipynb", CELLS)
    notebook.run_all()
    view = notebook.output(2).locator(".jaxmagic.jm-jaxpr-report")
    view.wait_for()
    primitive = view.locator(".jm-tnf", has_text="sin").first
    plain = view.locator(".jm-tp").first
    assert primitive.evaluate("e => getComputedStyle(e).color") != plain.evaluate("e => getComputedStyle(e).color")
    assert view.locator(".jm-src", has_text="line 2: y = jnp.sin(x) * 2").count() == 1

    branches = view.locator("details.jm-nested")
    assert branches.count() == 2
    first = branches.nth(0)
    assert first.evaluate("e => e.open") is False
    inner = first.locator(".jm-eqn").first
    assert not inner.is_visible()
    first.locator("summary").click()
    assert first.evaluate("e => e.open") is True
    assert inner.is_visible()
    notebook.screenshot("jaxpr-light", view)


def test_jaxpr_view_is_readable_in_the_dark_theme(open_notebook, page):
    notebook = open_notebook("jaxpr-dark.ipynb", CELLS)
    notebook.run_all()
    page.click(".lm-MenuBar-itemLabel:text-is('Settings')")
    page.click(".lm-Menu-itemLabel:text-is('Theme')")
    page.click(".lm-Menu-itemLabel:text-is('JupyterLab Dark')")
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'", timeout=30_000)
    page.wait_for_selector("#jupyterlab-splash", state="detached", timeout=30_000)
    view = notebook.output(2).locator(".jaxmagic.jm-jaxpr-report")
    summary_color = view.locator(".jm-summary").evaluate("e => getComputedStyle(e).color")
    variable_color = view.locator(".jm-tnv").first.evaluate("e => getComputedStyle(e).color")
    assert luminance(summary_color) > 0.6, summary_color
    assert luminance(variable_color) > 0.5, variable_color
    notebook.screenshot("jaxpr-dark", view)
    page.click(".lm-MenuBar-itemLabel:text-is('Settings')")
    page.click(".lm-Menu-itemLabel:text-is('Theme')")
    page.click(".lm-Menu-itemLabel:text-is('JupyterLab Light')")
