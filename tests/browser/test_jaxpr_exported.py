"""%jaxpr's view in a notebook exported to HTML (nbconvert's lab and classic templates), opened in
a real browser: no JupyterLab, no kernel, no script. Nested jaxprs fold with markers drawn by
jaxmagic's own stylesheet, hovering a variable lights its uses, and the primitive filter works."""

import nbformat
import pytest
from nbconvert import HTMLExporter

pytestmark = pytest.mark.browser

SETUP = """def step(x, n):
    y = jnp.sin(x) * 2
    z = jax.lax.cond(n > 0, lambda a: a + 1, lambda a: a - 1, y)
    for _ in range(4):
        z = jnp.tanh(z) * 1.5
    return jnp.sum(z ** 2)
x = jnp.ones(3)"""


@pytest.fixture(params=["lab", "classic"])
def exported(request, run, page, tmp_path):
    run("import jax").assert_ok()
    run(SETUP).assert_ok()
    shown = run("%jaxpr step(x, 1)").assert_ok()
    notebook = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("%jaxpr step(x, 1)")
    cell.outputs = [
        nbformat.v4.new_output("display_data", data={"text/html": shown.html, "text/plain": shown.text or ""})
    ]
    notebook.cells = [cell]
    body, _ = HTMLExporter(template_name=request.param).from_notebook_node(notebook)
    path = tmp_path / f"jaxpr-{request.param}.html"
    path.write_text(body, encoding="utf-8")
    page.goto(path.as_uri())
    view = page.locator(".jaxmagic.jm-jaxpr-report")
    view.wait_for()
    return view


def test_exported_view_folds_highlights_and_filters(exported):
    branch = exported.locator("details.jm-nested").first
    marker = branch.locator("summary").evaluate("e => getComputedStyle(e, '::before').content")
    assert marker == '"▸ "'
    branch.locator("summary").click()
    assert branch.locator("summary").evaluate("e => getComputedStyle(e, '::before').content") == '"▾ "'

    definition = exported.locator(".jm-eqn .jm-def").first
    name = definition.get_attribute("data-v")
    use = exported.locator(f'.jm-listing .jm-tnv[data-v="{name}"]:not(.jm-def)').first
    before = use.evaluate("e => getComputedStyle(e).backgroundColor")
    definition.hover()
    assert use.evaluate("e => getComputedStyle(e).backgroundColor") != before

    equations = exported.locator(".jm-listing > .jm-eqn")
    exported.locator(".jm-filter label", has_text="tanh").click()
    visible = [equations.nth(i) for i in range(equations.count()) if equations.nth(i).is_visible()]
    assert visible and all(e.get_attribute("data-primitive") == "tanh" for e in visible)
