"""%jaxpr's default view of a 50-layer MLP and ``--profile`` of a small MLP (its forward pass and
its training step) in a real JupyterLab at 1366×768: the answer's text lies inside the first
screen (its bounding box measured) and the whole view is at most ``FIRST_SCREEN_VIEW_HEIGHT``
tall, the rest folded with its counts."""

import pytest

from .conftest import FIRST_SCREEN, FIRST_SCREEN_VIEW_HEIGHT

pytestmark = pytest.mark.browser

CELLS = [
    "%load_ext jaxmagic\nimport jax, jax.numpy as jnp",
    "def mlp50(layers, x):\n    for layer in layers:\n        x = jax.nn.relu(x @ layer['w'] + layer['b'])\n"
    "    return x.sum()\n\nlayers = [{'w': jnp.ones((32, 32)) * 0.01, 'b': jnp.zeros(32)} for _ in range(50)]",
    "%jaxpr mlp50(layers, jnp.ones((8, 32)))",
    "def mlp(params, x):\n    h = jnp.tanh(x @ params['w1'] + params['b1'])\n    logits = h @ params['w2']\n"
    "    return jax.nn.log_softmax(logits)\n\n"
    "params = {'w1': jnp.ones((256, 512)) * 0.01, 'b1': jnp.ones(512), 'w2': jnp.ones((512, 10))}",
    "%jaxpr --profile 3 mlp(params, jnp.ones((128, 256)))",
    "def loss(params, x, y):\n    return -(mlp(params, x) * y).sum()\n\n"
    "@jax.jit\ndef step(params, x, y):\n    grads = jax.grad(loss)(params, x, y)\n"
    "    return jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)",
    "%jaxpr --profile 3 step(params, jnp.ones((128, 256)), jnp.ones((128, 10)))",
]


def _answer_in_first_screen(notebook, cell: int, view_class: str, answer_selector: str):
    view = notebook.output(cell).locator(f".jaxmagic.{view_class}")
    view.wait_for()
    notebook.cell(cell).scroll_into_view_if_needed()
    view.scroll_into_view_if_needed()
    answer = view.locator(answer_selector).first
    box = answer.bounding_box()
    assert box["y"] >= 0 and box["y"] + box["height"] <= FIRST_SCREEN["height"], box
    assert box["x"] >= 0 and box["x"] + min(box["width"], 600) <= FIRST_SCREEN["width"], box
    height = view.bounding_box()["height"]
    assert height <= FIRST_SCREEN_VIEW_HEIGHT, height
    return view, answer.inner_text(), height


def test_answers_lie_on_the_first_screen(open_notebook):
    notebook = open_notebook("first_screen.ipynb", CELLS)
    notebook.run_all()

    view, summary, height = _answer_in_first_screen(notebook, 2, "jm-jaxpr-report", ".jm-summary")
    assert summary.startswith("mlp50: 301 equations"), summary
    fold = view.locator("details.jm-repeat")
    assert fold.count() == 1 and fold.get_attribute("open") is None
    assert "×50, 6 equations each" in fold.locator(":scope > summary").inner_text()
    print(f"%jaxpr of a 50-layer MLP: {height:.0f} px")
    notebook.screenshot("jaxpr_50_layers", view)

    # the MLP's forward pass, and its training step (1,367 px tall before the view answered first)
    for cell, what in ((4, "forward pass"), (6, "training step")):
        view, answer, height = _answer_in_first_screen(notebook, cell, "jm-jaxpr-report", ".jm-answer")
        assert " takes " in answer and "% of the device time" in answer, answer
        for folded in view.locator("details.jm-details").all():
            assert folded.get_attribute("open") is None
        print(f"%jaxpr --profile of a small MLP's {what}: {height:.0f} px")
    notebook.screenshot("jaxpr_profile", view)
