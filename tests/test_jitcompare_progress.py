"""Progress while %jitcompare runs: one status line, updated in place with the mode, the repeat and
the time left, that the report replaces; nothing of it left in a saved notebook."""

import jax.numpy as jnp

from jaxmagic.render import comparison as render
from jaxmagic.timing import compare
from jaxmagic.tracing.call import Call


def test_the_engine_tells_each_step_with_the_time_left():
    steps = []

    def f(x):
        return jnp.sum(jnp.tanh(x))

    compare(Call(f, (jnp.ones(100),), {}), repeat=3, loops=5, on_progress=steps.append)
    stages = [step.stage for step in steps]
    assert stages[:2] == ["setting up", "setting up"] and "first call" in stages and "warm-up" in stages
    repeats = [(step.mode, step.index, step.of) for step in steps if step.stage == "repeat"]
    assert repeats == [("eager", 1, 3), ("jit", 1, 3), ("eager", 2, 3), ("jit", 2, 3), ("eager", 3, 3), ("jit", 3, 3)]
    left = [step.seconds_left for step in steps]
    assert left == sorted(left, reverse=True) and all(0 <= s <= 6.0 for s in left)
    line = render.progress_line("f(x)", steps[-1])
    assert line.startswith("%jitcompare f(x): jit, repeat 3 of 3 · ") and "left of the 6.00 s budget" in line


def test_a_failing_listener_does_not_stop_the_timing():
    def f(x):
        return x * 2

    result = compare(Call(f, (jnp.ones(3),), {}), repeat=2, loops=2, on_progress=lambda step: 1 / 0)
    assert result.modes["jit"].repeat == 2


def test_in_a_saved_notebook_only_the_report_remains(tmp_path):
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(source)
        for source in (
            "%load_ext jaxmagic\nimport jax.numpy as jnp\nx = jnp.ones(1000)",
            "%jitcompare -r 3 jnp.sum(jnp.sin(x) ** 2)",
            "%%jitcompare -r 3 --plain\nprint('body ran')\njnp.sum(jnp.cos(x))",
            "r = %jitcompare -q -o -r 2 jnp.sum(x)",
        )
    ]
    updates = []

    class Watching(NotebookClient):
        def process_message(self, msg, cell, cell_index):
            if msg["msg_type"] == "update_display_data":
                updates.append((cell_index, msg["content"]["data"].get("text/plain", "")))
            return super().process_message(msg, cell, cell_index)

    client = Watching(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    progress_seen = [text for index, text in updates if index == 1 and "repeat" in text and "left of the" in text]
    assert progress_seen, updates  # the line was there while it ran, updated in place
    saved = nbformat.writes(notebook)
    assert "left of the" not in saved and "%jitcompare jnp" not in saved
    rich = notebook.cells[1].outputs
    assert [o.output_type for o in rich] == ["display_data"]
    assert "jm-comparison" in rich[0].data["text/html"]
    plain = notebook.cells[2].outputs
    texts = "".join(o.get("text", "") + o.get("data", {}).get("text/plain", "") for o in plain)
    assert "body ran" in texts and "per call" in texts and "left of the" not in texts
    assert [o.output_type for o in plain] == ["stream", "display_data"]
    assert notebook.cells[3].outputs == []
