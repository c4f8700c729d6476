"""Every view read from a notebook someone else ran: executed and saved elsewhere (nbclient), then
opened in JupyterLab 4 and Notebook 7 at 1366×768, **untrusted** (its sanitizer removes every
``<style>`` and the inline styles it does not allow) and **trusted**, in the light and the dark
theme. Checked from the DOM: the answer line opens each view, each view's first screen is at most
``FIRST_SCREEN_VIEW_HEIGHT`` tall, counts and labels are words of their own, code keeps a
monospace font and its indentation, a text column is not right-aligned, no table is cut, and the
text keeps its contrast."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from .conftest import FIRST_SCREEN_VIEW_HEIGHT, Notebook
from .test_jaxpr_in_lab import WORST_CONTRAST

pytestmark = pytest.mark.browser

CELLS = [
    "%load_ext jaxmagic\nimport jax, jax.numpy as jnp\n"
    "def f(x):\n    y = x * 2\n    z = jnp.sin(y)\n    return (z ** 2).sum()\n"
    "def running(x):\n    def body(carry, v):\n        carry = carry * 0.5 + v\n        return carry, carry\n"
    "    return jax.lax.scan(body, 0.0, x)[1].sum()\n"
    "x = jnp.ones(1000)\n"
    "@jax.jit\ndef step(x):\n    return x.sum()",
    "%jaxpr running(x)",
    "%jitcompare --budget 1 f(x)",
    "%%recompiles\nstep(jnp.ones(3))\nstep(jnp.ones(4))\nstep(jnp.ones(4, jnp.int32))",
    "%jaxpr --memory -t grad f(x)",
    "@jax.jit\ndef g(x):\n    if x > 0:\n        return x\n    return -x\ng(1.0)",
    "def block(p, x):\n    h = jax.nn.gelu(x @ p['w1'] + p['b1'])\n    h = h @ p['w2'] + p['b2']\n"
    "    mean = h.mean(-1, keepdims=True)\n    var = ((h - mean) ** 2).mean(-1, keepdims=True)\n"
    "    return ((h - mean) / jnp.sqrt(var + 1e-5) + x)\n"
    "def loss(params, x):\n    for p in params:\n        x = block(p, x)\n    return (x ** 2).mean()\n"
    "params = [{'w1': jnp.ones((64, 256)) / 64, 'b1': jnp.zeros(256), 'w2': jnp.ones((256, 64)) / 256,"
    " 'b2': jnp.zeros(64)} for _ in range(2)]\n"
    "%jaxpr --memory -t grad loss(params, jnp.ones((32, 64)))",
]
# each view, by cell: its root, and how its answer line begins
VIEWS = {
    1: (".jaxmagic.jm-jaxpr-report", r"running: \d+ equations"),
    # which answer is the timing's (on a busy machine the interval may reach 1); the line is first either way
    2: (".jaxmagic", r"f\(x\): (jit is |no measurable difference between jit and eager)"),
    3: (".jaxmagic.jm-recompile-log", r"3 compilations of 1 function"),
    4: (".jaxmagic.jm-jaxpr-report", r"grad\(f\): \d+ equations"),
    5: (".jaxmagic", r"ERROR\s"),
    6: (".jaxmagic.jm-jaxpr-report", r"grad\(loss\): \d+ equations"),
}
# a count run into what comes before it ("(z ** 2)2 equations"), a kind said twice ("shape shape")
RUN_IN_COUNT = re.compile(r"[^\s(·\d,]\d[\d,]* equations?\b")
SAID_TWICE = re.compile(r"\b(shape|dtype|sharding|program) \1\b")


@pytest.fixture(scope="module")
def executed():
    """The notebook, run once outside the browser (as a colleague would, then share it)."""
    import nbclient
    import nbformat

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3", allow_errors=True).execute()
    return notebook


def _open(page, lab, app, executed, trusted: bool, theme: str) -> Notebook:
    import nbformat

    name = f"shared-{'trusted' if trusted else 'untrusted'}-{theme}-{app}.ipynb"
    # a notebook's trust is a signature of its content: each copy differs, so that trusting one
    # trusts no other
    copy = nbformat.from_dict(executed)
    copy.metadata["copy"] = name
    nbformat.write(copy, str(lab.root / name))
    if trusted:
        subprocess.run([sys.executable, "-m", "jupyter", "trust", str(lab.root / name)], check=True, env=lab.env)
    notebook = Notebook(page, lab, name, app)
    if theme == "dark":
        page.click(".lm-MenuBar-itemLabel:text-is('Settings')")
        page.click(".lm-Menu-itemLabel:text-is('Theme')")
        page.click(".lm-Menu-itemLabel:text-is('JupyterLab Dark')")
        page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'", timeout=30_000)
        page.wait_for_selector("#jupyterlab-splash", state="detached", timeout=30_000)
    return notebook


def _back_to_light(page):
    page.click(".lm-MenuBar-itemLabel:text-is('Settings')")
    page.click(".lm-Menu-itemLabel:text-is('Theme')")
    page.click(".lm-Menu-itemLabel:text-is('JupyterLab Light')")
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'true'", timeout=30_000)


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("trusted", [False, True], ids=["untrusted", "trusted"])
def test_every_view_reads_right_with_or_without_its_stylesheet(page, lab, app, executed, trusted, theme):
    notebook = _open(page, lab, app, executed, trusted, theme)
    try:
        for cell, (root, answer) in VIEWS.items():
            notebook.cell(cell).scroll_into_view_if_needed()
            view = notebook.output(cell).locator(root).first
            view.wait_for(timeout=60_000)
            view.scroll_into_view_if_needed()
            where = f"cell {cell} ({'trusted' if trusted else 'untrusted'}, {theme}, {app})"
            styles = view.evaluate("e => e.querySelectorAll('style').length")
            assert (styles > 0) == trusted, f"{where}: {styles} <style> elements"
            text = view.inner_text()
            assert re.match(answer, text.lstrip()), f"{where}: the view opens with {text[:120]!r}"
            height = view.bounding_box()["height"]
            assert height <= FIRST_SCREEN_VIEW_HEIGHT, f"{where}: {height:.0f} px as first shown"
            assert not RUN_IN_COUNT.search(text), f"{where}: {RUN_IN_COUNT.search(text).group(0)!r} in {text!r}"
            assert not SAID_TWICE.search(text), f"{where}: {SAID_TWICE.search(text).group(0)!r}"
            cut = view.evaluate(
                "e => [...e.querySelectorAll('table')].filter(t => t.getBoundingClientRect().right"
                " > e.getBoundingClientRect().right + 1 && t.closest('details:not([open])') === null).length"
            )
            assert cut == 0, f"{where}: {cut} tables run past the view's right edge"
            ratio, worst = view.evaluate(WORST_CONTRAST)
            assert ratio >= 4.5, f"{where}: {worst!r} has contrast {ratio:.2f}:1"
            # each source row's count stands apart from the source text, whatever its last character
            rows = [row for row in view.locator(".jm-listing > .jm-srcrow").all_inner_texts() if row.strip()]
            assert rows or cell != 1, where
            for row in rows:  # apart: by " · ", or by a column
                assert re.search(r"\S(\s+·\s+|\n)\d[\d,]* equations?$", row), f"{where}: {row!r}"

        listing = notebook.output(1).locator(".jm-listing").first
        font, spaces = listing.evaluate("e => [getComputedStyle(e).fontFamily, getComputedStyle(e).whiteSpace]")
        assert "mono" in font.lower() and spaces.startswith("pre"), (font, spaces)
        # an equation inside the scan's body sits further right than the scan itself
        nested = notebook.output(1).locator("details.jm-nested").first
        nested.locator(":scope > summary").click()
        inner = nested.locator(".jm-eqn .jm-code").first
        outer = notebook.output(1).locator(".jm-listing > .jm-eqn .jm-code").first
        assert inner.bounding_box()["x"] > outer.bounding_box()["x"] + 5
        # a recompile's cause reads from the left, as text does
        causes = notebook.output(3).locator("td.jm-causes").first
        assert causes.evaluate("e => getComputedStyle(e).textAlign") in ("left", "start")
        # --memory's tables, every fold opened: none runs past the view's right edge
        memory = notebook.output(6).locator(".jaxmagic").first
        memory.evaluate("e => e.querySelectorAll('details').forEach(d => { d.open = true; })")
        cut = memory.evaluate(
            "e => [...e.querySelectorAll('table')].filter(t => t.getBoundingClientRect().right"
            " > e.getBoundingClientRect().right + 1).map(t => t.className)"
        )
        assert cut == [], f"{app}: tables cut at the right edge once unfolded: {cut}"
        label = "trusted" if trusted else "untrusted"
        notebook.screenshot(f"shared-{label}-{theme}", notebook.output(1).locator(".jaxmagic").first)
    finally:
        if theme == "dark":
            _back_to_light(page)
