"""Terminal text for every renderer: ANSI styles through Pygments' console codes, and aligned
tables. One home, so that every view colours and aligns the same way.

>>> print(table(["mode", "median"], [["eager", "130 µs"], ["jit", "14.1 µs"]], align="<>"))
mode    median
eager   130 µs
jit    14.1 µs
>>> paint("slow", "bold", "red", color=False)
'slow'
"""

from __future__ import annotations

from typing import Sequence

from pygments.console import codes

# Names as Pygments' console codes have them: bold, faint (dim), red, yellow, cyan, ...
STYLES = frozenset(codes) - {"", "reset"}


def paint(text: str, *styles: str, color: bool = True) -> str:
    """``text`` in the given styles (``"bold"``, ``"faint"``, ``"red"``...) when ``color``."""
    if not color or not styles:
        return text
    unknown = [s for s in styles if s not in STYLES]
    if unknown:
        raise ValueError(f"unknown terminal style {unknown[0]!r}; choose from {sorted(STYLES)}")
    return "".join(codes[s] for s in styles) + text + codes["reset"]


def table(header: Sequence[str] | None, rows: Sequence[Sequence[str]], *, align: str = "", gap: str = "  ") -> str:
    """Rows of cells as aligned text: ``align`` has one ``<`` (left) or ``>`` (right) per column
    (left where not given). The last column is not padded."""
    lines = [list(header)] if header else []
    lines += [list(map(str, row)) for row in rows]
    if not lines:
        return ""
    columns = max(len(line) for line in lines)
    widths = [max((len(line[i]) for line in lines if i < len(line)), default=0) for i in range(columns)]
    out = []
    for line in lines:
        cells = []
        for i, cell in enumerate(line):
            right = i < len(align) and align[i] == ">"
            last = i == len(line) - 1
            cells.append(cell.rjust(widths[i]) if right else (cell if last else cell.ljust(widths[i])))
        out.append(gap.join(cells).rstrip())
    return "\n".join(out)
