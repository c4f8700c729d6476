"""Showing a report: rich in a notebook, coloured text in a terminal, plain text on request."""

from __future__ import annotations

import os
from typing import Callable


def is_terminal(shell) -> bool:
    """True in terminal IPython (not a kernel, not a plain embedded shell)."""
    return type(shell).__name__ == "TerminalInteractiveShell"


def use_color(shell) -> bool:
    """Colour only on a terminal that wants it (``TERM=dumb`` and ``NO_COLOR`` say no)."""
    if not is_terminal(shell) or os.environ.get("TERM") == "dumb" or "NO_COLOR" in os.environ:
        return False
    return str(getattr(shell, "colors", "")).lower() not in ("nocolor", "no_color", "none")


def show(shell, report, *, plain: bool = False, text: Callable[..., str] | None = None) -> None:
    """Show a report: rich in a notebook, coloured text in a terminal, plain text with ``plain``."""
    if plain or is_terminal(shell):
        render_text = text or (lambda r, color=False: repr(r))
        print(render_text(report, color=use_color(shell) and not plain))
        return
    from IPython.display import display

    display(report)
