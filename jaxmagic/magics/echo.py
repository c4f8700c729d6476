"""The one-line echo of a report that a magic has just shown and returned with ``-o``.

Like ``%timeit -o``: ``%jaxpr -o f(x)`` shows the full view once, and the value IPython echoes as
``Out[n]`` is one line. Which reports echo short is the shell's state, never the report's: the
mark lasts until the cell ends, and ``display(report)`` shows the full view at any time, in the
same cell too.
"""

from __future__ import annotations

import contextlib
import weakref

_MARKED: "weakref.WeakKeyDictionary[object, _Echo]" = weakref.WeakKeyDictionary()


class _Echo:
    """One shell's wrapper around its display hook's formatting, and the reports marked short."""

    def __init__(self, shell):
        self.hook = shell.displayhook
        self.original = self.hook.compute_format_data
        self.short: list = []  # kept only until the cell ends: the objects themselves, not ids

        def compute_format_data(result):
            if any(result is marked for marked in self.short):
                return {"text/plain": repr(result)}, {}
            return self.original(result)

        self.wrapper = compute_format_data

    def forget(self, *_) -> None:
        self.short.clear()


def install(shell) -> None:
    """Wrap the shell's display hook so that marked reports echo as their one-line repr."""
    if shell in _MARKED:
        return
    echo = _MARKED[shell] = _Echo(shell)
    echo.hook.compute_format_data = echo.wrapper
    shell.events.register("pre_run_cell", echo.forget)
    shell.events.register("post_run_cell", echo.forget)


def uninstall(shell) -> None:
    """Give the display hook back exactly as it was."""
    echo = _MARKED.pop(shell, None)
    if echo is None:
        return
    if echo.hook.__dict__.get("compute_format_data") is echo.wrapper:
        del echo.hook.compute_format_data
    for event in ("pre_run_cell", "post_run_cell"):
        with contextlib.suppress(ValueError):
            shell.events.unregister(event, echo.forget)
    echo.forget()


def returned(shell, report, *, shown: bool):
    """Hand ``-o``'s report back; when the magic has just shown it, its echo in this cell is one line."""
    echo = _MARKED.get(shell)
    if shown and echo is not None:
        echo.short.append(report)
    return report
