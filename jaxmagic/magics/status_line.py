"""One status line, updated in place while a magic runs and replaced by its report: an updatable
display in a Jupyter kernel (so a saved notebook keeps only the report), a carriage-return line on
a terminal, nothing elsewhere (a plain shell would print every update).

>>> line = StatusLine(shell=None)
>>> line.show("working"); line.done()  # no kernel, no terminal: nothing shown
"""

from __future__ import annotations

import sys


class StatusLine:
    """``show(text)`` puts or updates the line; ``replace(report)`` shows the report where the
    line was (``False`` where there is no line to replace); ``done()`` removes the line."""

    def __init__(self, shell):
        kind = type(shell).__name__
        self._kernel = kind == "ZMQInteractiveShell"
        self._terminal = kind == "TerminalInteractiveShell" and sys.stdout.isatty()
        self._handle = None
        self._width = 0

    def show(self, text: str) -> None:
        if self._kernel:
            from IPython.display import display

            bundle = {"text/plain": text}
            if self._handle is None:
                self._handle = display(bundle, raw=True, display_id=True)
            else:
                self._handle.update(bundle, raw=True)
        elif self._terminal:
            padding = " " * max(0, self._width - len(text))
            sys.stdout.write(f"\r{text}{padding}")
            sys.stdout.flush()
            self._width = len(text)

    def replace(self, report, *, text: str | None = None) -> bool:
        """Show ``report`` (or, given, its ``text`` alone) in the line's place (kernel only);
        ``False`` when there is no line to replace."""
        if self._handle is None:
            return False
        if text is not None:
            self._handle.update({"text/plain": text}, raw=True)
        else:
            self._handle.update(report)
        self._handle = None
        return True

    def done(self) -> None:
        """Remove the line: an empty display in a kernel, a blanked line on a terminal."""
        if self._handle is not None:
            self._handle.update({}, raw=True)
            self._handle = None
        if self._terminal and self._width:
            sys.stdout.write("\r" + " " * self._width + "\r")
            sys.stdout.flush()
            self._width = 0
