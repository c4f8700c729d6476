"""The live line under a running ``%%recompiles`` cell: the compilations so far and the latest cause,
updated in place while the cell runs (in a real kernel), then replaced by the log's view, answer
first; nothing of the line is left in a saved notebook."""

from __future__ import annotations

import os
import select
import sys
import time

import pytest

from jaxmagic.recompiles import RecompileEvent, RecompileLog
from jaxmagic.recompiles.causes import Cause
from jaxmagic.render import panel as panels
from jaxmagic.tracing.sources import SourceLine


class Handle:
    """What IPython's ``DisplayHandle`` receives, kept in order."""

    def __init__(self, bundle):
        self.shown = [bundle]

    def update(self, obj, raw=False):
        self.shown.append(obj)


def compiled(n: int) -> RecompileEvent:
    site = SourceLine(file="<cell-3>", line=2, function="<module>", text="step(x)", cell="In [3]")
    cause = Cause("shape", argument="x", before=f"f32[{n}]", after=f"f32[{n + 1}]")
    return RecompileEvent("step", None, site, 0.01, [cause])


def test_the_line_follows_the_log_and_never_loses_the_last_update():
    log = RecompileLog(scope="this cell")
    badge = panels.RecompileBadge(log, display=Handle)
    handle = badge.handle
    assert handle.shown[0]["text/plain"] == "%%recompiles: nothing compiled yet"
    log.record(compiled(1))  # the first update is immediate
    assert handle.shown[-1]["text/plain"] == (
        "%%recompiles: 1 compilation so far · latest: step — shape of `x` changed: f32[1] → f32[2] (In [3] line 2)"
    )
    for n in range(2, 30):
        log.record(compiled(n))
    assert len(handle.shown) < 10, "a burst of compilations is not a burst of updates"
    deadline = time.monotonic() + 5
    while "29 compilations" not in handle.shown[-1]["text/plain"] and time.monotonic() < deadline:
        time.sleep(0.05)
    line = handle.shown[-1]
    assert line["text/plain"].startswith("%%recompiles: 29 compilations so far · latest: step")
    assert line["text/plain"].endswith("f32[29] → f32[30] (In [3] line 2)")
    assert 'class="jaxmagic jm-recompile-badge"' in line["text/html"] and 'data-count="29"' in line["text/html"]
    assert "<code>x</code>" in line["text/html"]
    badge.replace(log)
    assert handle.shown[-1] is log and log._observers == []
    log.record(compiled(30))
    time.sleep(2 * panels.REFRESH_S)
    assert handle.shown[-1] is log, "a replaced line no longer follows the log"


def test_in_a_kernel_the_line_updates_while_the_cell_runs_and_the_view_takes_its_place(tmp_path):
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(source)
        for source in (
            "%load_ext jaxmagic\nimport time, jax, jax.numpy as jnp\n@jax.jit\ndef step(x):\n    return x.sum()",
            "%%recompiles\nfor n in range(1, 7):\n    step(jnp.ones(n))\n    time.sleep(0.4)\nprint('cell done')",
        )
    ]
    lines = []

    class Watching(NotebookClient):
        def process_message(self, msg, cell, cell_index):
            if cell_index == 1 and msg["msg_type"] in ("display_data", "update_display_data"):
                lines.append(msg["content"]["data"].get("text/plain", ""))
            return super().process_message(msg, cell, cell_index)

    client = Watching(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    counts = [line.split(" compilation")[0].rsplit(" ", 1)[-1] for line in lines if " so far" in line]
    assert lines[0] == "%%recompiles: nothing compiled yet"
    assert len(set(counts)) >= 3, lines  # the line moved while the cell ran
    assert counts == sorted(counts, key=int) and "latest: step — shape of `x` changed" in lines[-2], lines
    assert lines[-1].startswith("6 compilations of 1 function"), lines[-1]
    outputs = notebook.cells[1].outputs
    assert [o.output_type for o in outputs] == ["display_data", "stream"], "the view first, then the cell's own"
    assert "jm-recompile-log" in outputs[0].data["text/html"] and "jm-answer" in outputs[0].data["text/html"]
    assert " so far" not in nbformat.writes(notebook)


@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal")
def test_on_a_terminal_the_line_is_rewritten_in_place_and_cleared_before_the_log(tmp_path):
    import pty

    cells = tmp_path / "cells.ipy"
    cells.write_text(
        "%load_ext jaxmagic\nimport time, jax, jax.numpy as jnp\n@jax.jit\ndef step(x):\n    return x.sum()\n"
        "get_ipython().run_cell_magic('recompiles', '', "
        "'for n in range(1, 5):\\n    step(jnp.ones(n))\\n    time.sleep(0.4)')\n"
    )
    ipython = os.path.join(os.path.dirname(sys.executable), "ipython")
    pid, fd = pty.fork()
    if pid == 0:  # the child: terminal IPython on a pseudo-terminal, 80 columns
        os.environ.update(JAX_PLATFORMS="cpu", TERM="dumb")
        os.execv(ipython, [ipython, "--colors=nocolor", str(cells)])
    out = b""
    while select.select([fd], [], [], 180)[0]:
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        out += data
    os.waitpid(pid, 0)
    text = out.decode(errors="replace")
    updates = [part for part in text.split("\r") if part.startswith("%%recompiles: ")]
    assert updates[0] == "%%recompiles: nothing compiled yet", text
    assert any(u.startswith("%%recompiles: 2 compilations so far · latest: step — shape of `x`") for u in updates), text
    assert all(len(u.rstrip()) < 80 for u in updates), "one line of the terminal, rewritten in place"
    log = text.split("\r")[len(updates) + 2 :]
    assert text.split("\r")[len(updates) + 1].strip() == "", "the line is blanked before the log"
    assert log[0].startswith("4 compilations of 1 function"), text
