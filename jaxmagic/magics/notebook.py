"""The notebook around a magic: the call in its line or its cell, and how its cells are named."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import Callable

from jaxmagic.errors import UsageProblem
from jaxmagic.tracing import call as calls
from jaxmagic.tracing import cell as cells
from jaxmagic.tracing import sources


@dataclass
class FoundCall:
    """The call a magic works on, and how to name the notebook's cells in what it shows."""

    call: calls.Call
    cell_namer: sources.CellNamer


def find_call(
    shell,
    *,
    line_call: str,
    cell: str | None,
    magic: str,
    magic_line: str,
    static: str | list[str] | None,
    local_ns: dict | None = None,
    after_body: Callable[[], None] | None = None,
) -> FoundCall:
    """The line form evaluates ``line_call``; the cell form runs the cell but its last statement first.
    ``static`` is ``-s`` as given, once or several times (``-s 1 -s mode`` is ``-s 1,mode``).

    Raises ``UsageProblem`` for what the user typed, ``UserCodeError`` when the user's code raised.
    ``after_body`` is called once the cell's body has run (before the call is resolved).
    """
    __tracebackhide__ = True
    if isinstance(static, (list, tuple)):
        static = ",".join(static)
    namer = cell_namer(shell)
    shown_as = f"%{magic}" if cell is None else f"%%{magic}"
    if cell is None:
        text = line_call
        if not text.strip() or text.lstrip().startswith("#"):
            raise UsageProblem(
                f"%{magic} needs a call expression after its options (or use the cell form, "
                f"%%{magic}, with the call as the cell's last statement).",
                example=f"%{magic} {calls.CALL_EXAMPLE}",
            )
        filename, line = _locate_line_magic(shell, magic)
    else:
        plan = cells.split_cell(shell.transform_cell(cell), line_call=line_call, magic=shown_as)
        filename = cache_cell(shell, f"%%{magic} {magic_line}".rstrip() + "\n" + cell)
        cells.run_body(plan.body, shell.user_ns, filename, runner=loop_runner(shell))
        if after_body is not None:
            after_body()
        text = plan.call_text
        line = plan.call_line
    call = calls.resolve_call(
        text,
        shell.user_ns,
        local_namespace=local_ns,
        static=static,
        magic=shown_as,
        filename=filename,
        line=line,
    )
    return FoundCall(call=call, cell_namer=namer)


def loop_runner(shell):
    """What runs a cell's top-level ``await`` in this shell (IPython's autoawait runner), or
    ``None`` for jaxmagic's own default."""
    return getattr(shell, "loop_runner", None)


def _locate_line_magic(shell, magic: str) -> tuple[str, int]:
    """The current cell's filename and the line of ``%magic`` in it, so that a lambda written in
    the call itself is shown as ``In [5] line 2``. Falls back to a name of its own."""
    number, line = current_cell(shell)
    history = getattr(getattr(shell, "history_manager", None), "input_hist_raw", None) or []
    if number is not None and 0 <= number < len(history) and history[number]:
        return shell.compile.cache(history[number], number), line
    return "<jaxmagic-call>", 1


def current_cell(shell) -> tuple[int | None, int]:
    """The number of the cell now running (``In [n]``) and the line it is on.

    Found from the stack: the innermost frame whose code IPython compiled from a cell. (IPython 9
    counts ``execution_count`` up before a cell runs, earlier versions after, so the counter alone
    cannot tell.)
    """
    frame = sys._getframe(1)
    while frame is not None:
        label = shell.compile.format_code_name(frame.f_code.co_filename)
        if label is not None:
            number = re.search(r"\d+", label[1])
            if number:
                return int(number.group(0)), frame.f_lineno
        frame = frame.f_back
    return None, 1


def cache_cell(shell, text: str) -> str:
    """Register a cell's text with Python's linecache under this cell's number; return its filename."""
    number, _ = current_cell(shell)
    return shell.compile.cache(text, number if number is not None else shell.execution_count)


def cell_namer(shell) -> sources.CellNamer:
    """Name a code file the way the notebook shows it: ``In [4]``, or ``None`` for a real file."""
    compiler = shell.compile

    def name(filename: str) -> str | None:
        label = compiler.format_code_name(filename)
        if label is None:
            match = re.match(r"<ipython-input-(\d+)-", filename)
            return f"In [{match.group(1)}]" if match else None
        kind, cell = label
        number = re.search(r"\d+", cell)
        return f"In [{number.group(0)}]" if number else cell

    return name
