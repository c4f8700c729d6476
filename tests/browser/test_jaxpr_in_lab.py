"""%jaxpr in a real JupyterLab, in a real browser: highlighted, nested jaxprs open on click, each
source line heading its equations in view, a variable's definition and uses lit together on hover,
a primitive filter, and every text readable (contrast at least 4.5:1) in the light and the dark
theme."""

import pytest

pytestmark = pytest.mark.browser

CELLS = [
    "%load_ext jaxmagic\nimport jax, jax.numpy as jnp\nx = jnp.ones(3)",
    "def nested(x, n):\n    y = jnp.sin(x) * 2\n    z = jax.lax.cond(n > 0, lambda a: a + 1, lambda a: a - 1, y)\n    return jnp.sum(z ** 2)",
    "%jaxpr nested(x, 1)",
]


# The lowest contrast ratio (WCAG 2) of any visible text in ``root`` against the background behind
# it, the text's colour blended by its opacity; and which text that is.
WORST_CONTRAST = """root => {
  const rgba = c => { const m = c.match(/[\\d.]+/g).map(Number); return m.length < 4 ? [...m, 1] : m; };
  const channel = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
  const lum = ([r, g, b]) => 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
  const background = el => {
    for (let e = el; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c[3] > 0.5) return c;
    }
    return rgba(getComputedStyle(document.body).backgroundColor);
  };
  let worst = [99, ""];
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode, el = node.parentElement;
    if (!node.textContent.trim() || el.closest("style") || !el.checkVisibility()) continue;
    let alpha = rgba(getComputedStyle(el).color)[3];
    for (let e = el; e && e !== document.body; e = e.parentElement) alpha *= Number(getComputedStyle(e).opacity);
    const fg = rgba(getComputedStyle(el).color), bg = background(el);
    const seen = [0, 1, 2].map(i => fg[i] * alpha + bg[i] * (1 - alpha));
    const [a, b] = [lum(seen), lum(bg)];
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    if (ratio < worst[0]) worst = [ratio, node.textContent.trim().slice(0, 60)];
  }
  return worst;
}"""


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
    heading = view.locator(".jm-src", has_text="line 2: y = jnp.sin(x) * 2")
    assert heading.count() == 1
    box, viewport = heading.bounding_box(), view.page.viewport_size
    assert box["x"] + box["width"] <= viewport["width"], "the source text is in view without scrolling"
    ratio, text = view.evaluate(WORST_CONTRAST)
    assert ratio >= 4.5, f"{text!r} has contrast {ratio:.2f}:1 in the light theme"

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
    ratio, text = view.evaluate(WORST_CONTRAST)
    assert ratio >= 4.5, f"{text!r} has contrast {ratio:.2f}:1 in the dark theme"
    notebook.screenshot("jaxpr-dark", view)
    page.click(".lm-MenuBar-itemLabel:text-is('Settings')")
    page.click(".lm-Menu-itemLabel:text-is('Theme')")
    page.click(".lm-Menu-itemLabel:text-is('JupyterLab Light')")


VIEWER_CELLS = [
    "%load_ext jaxmagic\nimport jax, jax.numpy as jnp",
    "def loss(w, x):\n    h = jnp.tanh(x @ w)\n    return jnp.sum(h ** 2) + jnp.sum(jnp.sin(h) * jnp.cos(h))\n"
    "w = jnp.ones((4, 3))\nx = jnp.ones((5, 4))",
    "%jaxpr -t grad loss(w, x)",
]


def test_hovering_a_variable_lights_its_definition_and_uses_and_a_filter_shows_one_primitive(open_notebook):
    notebook = open_notebook("jaxpr-viewer.ipynb", VIEWER_CELLS)
    notebook.run_all()
    view = notebook.output(2).locator(".jaxmagic.jm-jaxpr-report")
    view.wait_for()
    assert view.locator(".jm-legend").is_visible() and "grad of w" in view.locator(".jm-legend").inner_text()
    definition = view.locator(".jm-eqn .jm-def").first
    name = definition.get_attribute("data-v")
    occurrences = view.locator(f'.jm-listing [data-v="{name}"]')
    assert occurrences.count() >= 2
    plain = occurrences.nth(1).evaluate("e => getComputedStyle(e).backgroundColor")
    definition.hover()
    lit = [occurrences.nth(i).evaluate("e => getComputedStyle(e).backgroundColor") for i in range(occurrences.count())]
    assert all(color != plain for color in lit), (plain, lit)
    other = view.locator('.jm-listing .jm-tnv:not([data-v="%s"])' % name).first
    assert other.evaluate("e => getComputedStyle(e).backgroundColor") == plain

    equations = view.locator(".jm-listing .jm-eqn")
    total = equations.count()
    view.locator(".jm-filter label", has_text="dot_general").click()
    shown = [equations.nth(i) for i in range(total) if equations.nth(i).is_visible()]
    assert shown and all(e.get_attribute("data-primitive") == "dot_general" for e in shown)
    assert len(shown) == view.locator('.jm-listing .jm-eqn[data-primitive="dot_general"]').count()
    view.locator(".jm-filter label", has_text="all equations").click()
    assert sum(equations.nth(i).is_visible() for i in range(total)) == total
    notebook.screenshot("jaxpr-viewer", view)
