"""%jaxpr --values and --memory in a real JupyterLab, in a real browser: the answer line first and
readable, the first NaN marked beside its equation, the table of the peak folded and opening on
click."""

import pytest

from tests.browser.test_jaxpr_in_lab import WORST_CONTRAST

pytestmark = pytest.mark.browser

CELLS = [
    "%load_ext jaxmagic\nimport jax, jax.numpy as jnp",
    "def log_likelihood(x, scale):\n    z = x / scale\n    logs = jnp.log(z)\n    return jnp.sum(logs ** 2)",
    "%jaxpr --values log_likelihood(jnp.array([1.0, 2.0, -0.5, 4.0]), 2.0)",
    "def attention(q, k, v):\n    scores = jnp.einsum('td,sd->ts', q, k)\n"
    "    weights = jax.nn.softmax(scores, axis=-1)\n    return jnp.sum(weights @ v)\n\nq = k = v = jnp.ones((1024, 64))",
    "%jaxpr --memory -t grad attention(q, k, v)",
]


def test_the_first_nan_is_marked_and_the_peak_opens_on_click(open_notebook):
    notebook = open_notebook("values-memory.ipynb", CELLS)
    notebook.run_all()
    values = notebook.output(2).locator(".jaxmagic.jm-jaxpr-report")
    values.wait_for()
    answer = values.locator(".jm-values .jm-summary")
    assert "the first NaN comes from" in answer.inner_text()
    marked = values.locator(".jm-eqn .jm-value.jm-nonfinite")
    assert marked.count() == 1 and marked.is_visible() and "nan" in marked.inner_text()
    ratio, text = values.evaluate(WORST_CONTRAST)
    assert ratio >= 4.5, f"{text!r} has contrast {ratio:.2f}:1"
    notebook.screenshot("jaxpr-values", values)

    memory = notebook.output(4).locator(".jaxmagic.jm-jaxpr-report")
    memory.wait_for()
    assert memory.locator(".jm-peak .jm-summary").inner_text().startswith("peak ")
    folded = memory.locator(".jm-peak details.jm-nested")
    assert folded.evaluate("e => e.open") is False
    folded.locator("summary").click()
    assert folded.locator("table").is_visible()
    ratio, text = memory.evaluate(WORST_CONTRAST)
    assert ratio >= 4.5, f"{text!r} has contrast {ratio:.2f}:1"
    notebook.screenshot("jaxpr-memory", memory.locator(".jm-peak"))
