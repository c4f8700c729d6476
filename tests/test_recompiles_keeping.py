"""The session log kept beyond the kernel: ``%recompiles save FILE.html``, the panel's saved copy
(a notebook executed by nbclient and read back), and the panel's tidy details."""

from __future__ import annotations

import re

import pytest

from jaxmagic.magics import recompiles as magic_module
from jaxmagic.recompiles import watch


@pytest.fixture(autouse=True)
def fresh(ip):
    watch.forget()
    yield
    session = magic_module._SESSIONS.get(ip)
    if session is not None and session.log is not None:
        session.log.stop()
    assert not watch.is_installed()


def rows(html: str) -> list[str]:
    """One entry per compilation the view's rows stand for (a row of ``×N`` stands for N)."""
    found = re.findall(r'(<tr class="jm-recompile-row"[^>]* data-count="(\d+)"[^>]*>)', html)
    return [row for row, count in found for _ in range(int(count))]


def numbers(html: str) -> list[str]:
    return re.findall(r'<td class="jm-n"[^>]*>([^<]+)</td>', html)


def test_save_writes_the_standalone_page(ip, run, tmp_path):
    run("%recompiles on").assert_ok()
    run("@jax.jit\ndef kept(x):\n    return x + 1\nfor n in (2, 3):\n    kept(jnp.ones(n))").assert_ok()
    path = tmp_path / "session log.html"
    shown = run(f'%recompiles save "{path}"').assert_ok()
    assert "Wrote 2 compilations of 1 function" in shown.stdout and str(path) in shown.stdout
    page = path.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    assert len(rows(page)) == 2 and "shape of <code>x</code> changed: f32[2] → f32[3]" in page


@pytest.mark.parametrize(
    "line, expected",
    [
        ("%recompiles save", "one file name ending in .html"),
        ("%recompiles save log.txt", "one file name ending in .html"),
        ("%recompiles save a.html b.html", "one file name ending in .html"),
        ("%recompiles save /no/such/folder/log.html", "could not write '/no/such/folder/log.html'"),
    ],
)
def test_save_with_bad_input_says_what_is_expected(ip, run, line, expected):
    run("%recompiles on").assert_ok()
    shown = run(line)
    assert shown.usage_error is not None and expected in shown.usage_error
    assert "%recompiles save compiles.html" in shown.usage_error or "could not write" in shown.usage_error


def test_the_displayed_copy_follows_the_log_stops_and_clears(ip, run):
    run("%recompiles on").assert_ok()
    panel = magic_module._SESSIONS[ip].panels[-1]
    updates = []
    panel.display_handle.update = lambda obj: updates.append(obj._repr_mimebundle_())  # what IPython would send
    run("@jax.jit\ndef followed(x):\n    return x * 3\nfor n in (1, 2, 3):\n    followed(jnp.ones(n))").assert_ok()
    assert len(updates) == 1
    copy = updates[-1]["text/html"]
    assert len(rows(copy)) == 3
    # The saved copy lists the rows in the same order as the live panel.
    assert numbers(copy) == numbers(panel.rows.value) == ["2–3", "1"]
    run("x = 1").assert_ok()
    assert len(updates) == 1, "nothing changed: no update sent"
    run("%recompiles clear").assert_ok()
    assert "every call" not in updates[-1]["text/html"] and "since the log was cleared" in updates[-1]["text/html"]
    run("%recompiles off").assert_ok()
    assert "jm-recompile-stopped" in updates[-1]["text/html"] and "jm-recompile-stopped" in panel.header.value
    assert "line-height:1.35" in panel.header.value  # compact rows, not the 28 px of a form control


@pytest.mark.parametrize("ending", ["f(x);  # comment", "f(x);\n# a last comment\n", "f(x) ;"])
def test_a_cell_ending_in_a_semicolon_is_quiet_as_in_ipython(ip, run, ending):
    run("@jax.jit\ndef f(x):\n    return x + 1\nx = jnp.ones(2)").assert_ok()
    shown = run("%%recompiles\n" + ending).assert_ok()
    assert shown.result is None


def test_a_saved_notebook_keeps_the_log_as_it_stood(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(source)
        for source in (
            "%load_ext jaxmagic\nimport jax, jax.numpy as jnp",
            "%recompiles on",
            "@jax.jit\ndef grow(x):\n    return x * 2\nfor n in (2, 3, 4):\n    grow(jnp.ones(n))",
            "grow(jnp.ones(9));",
        )
    ]
    client = nbclient.NotebookClient(
        notebook, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    path = tmp_path / "saved.ipynb"
    nbformat.write(notebook, path)
    saved = nbformat.read(path, as_version=4)
    panel, copy = [o for o in saved.cells[1].outputs if o.output_type == "display_data"]
    assert "application/vnd.jupyter.widget-view+json" in panel.data and "text/html" not in panel.data
    html, text = copy.data["text/html"], copy.data["text/plain"]
    assert len(rows(html)) == 4 and 'data-function="grow" data-count="4"' in html
    assert "no compilations" not in html and "4 compilations of 1 function" in text
