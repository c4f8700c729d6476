"""Hostile strings in a real JupyterLab, in a real browser: a function named like an HTML tag, static
values and source comments holding ``<img onerror>`` and ``</details><script>`` show as text in every
view and in the live panel; no such element reaches the page and no script runs."""

import pytest

pytestmark = pytest.mark.browser

IMG = "<img src=x onerror=alert(1)>"
SCRIPT = "</details><script>alert(2)</script>"
NAME = "<img src=x onerror=alert(3)>"

CELLS = [
    f"%load_ext jaxmagic\nimport jax, jax.numpy as jnp\nv = jnp.ones(3)\nIMG = {IMG!r}\nSCRIPT = {SCRIPT!r}",
    f"def step(x, mode):  # {SCRIPT}\n"
    f"    '''{SCRIPT} in a docstring'''\n"
    f"    y = jnp.sin(x)  # {IMG}\n"
    "    return y * len(mode)\n"
    f"step.__qualname__ = step.__name__ = {NAME!r}\n"
    "jstep = jax.jit(step, static_argnames='mode')",
    "%recompiles on",
    "%jaxpr -s mode step(v, IMG)",
    f"%jitcompare -n 1 -r 1 --budget 0.5 -s mode step(v, {IMG!r})",
    "%%recompiles\njstep(v, IMG)\njstep(v, SCRIPT);",
    f"def branchy(x):  # {SCRIPT}\n    if x.sum() > 0:  # {IMG}\n        return x\n    return -x\njax.jit(branchy)(v)",
]

COUNT_INJECTED = """() => {
    const outputs = [...document.querySelectorAll('.jp-OutputArea')];
    const inside = selector => outputs.flatMap(o => [...o.querySelectorAll(selector)]);
    return {
        images: inside('img').length,
        scripts: inside('script').filter(s => /alert/.test(s.textContent)).length,
        handlers: inside('*').filter(e => [...e.attributes].some(a => a.name.startsWith('on'))).length,
    };
}"""


def test_hostile_strings_show_as_text_and_never_become_elements(open_notebook, page):
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    notebook = open_notebook("hostile.ipynb", CELLS)
    notebook.run_all()

    jaxpr = notebook.output(3).locator(".jaxmagic.jm-jaxpr-report")
    jaxpr.wait_for()
    assert NAME in jaxpr.locator(".jm-summary").inner_text()
    assert IMG in jaxpr.locator(".jm-src").first.inner_text()

    comparison = notebook.output(4).locator(".jaxmagic.jm-comparison")
    comparison.wait_for()
    assert IMG in comparison.locator(".jm-summary").inner_text()

    table = notebook.output(5).locator(".jaxmagic.jm-recompile-log")
    table.wait_for()
    causes = table.locator(".jm-cause-static_value").first.inner_text()
    assert IMG in causes and SCRIPT in causes
    assert table.locator(".jm-recompile-row details.jm-raw").count() == 0  # no markup closed early

    card = notebook.output(6).locator(".jaxmagic.jm-diagnosis")
    card.wait_for()
    assert IMG in card.locator(".jm-where").inner_text()

    panel = notebook.output(2).locator(".jm-recompile-panel")
    panel.wait_for(timeout=60_000)
    page.wait_for_function(
        "() => document.querySelectorAll('.jm-recompile-panel .jm-recompile-row').length >= 2", timeout=30_000
    )
    assert NAME in panel.locator(".jm-recompile-rows").inner_text()
    options = panel.locator(".jm-recompile-filter select").inner_text().replace("\xa0", " ")  # the widget's spaces
    assert NAME in options

    injected = page.evaluate(COUNT_INJECTED)
    assert injected == {"images": 0, "scripts": 0, "handlers": 0}, injected
    assert dialogs == [], dialogs
