"""Where a comparison stands while it runs, as facts a front end can show: the stage, the mode, the
repeat and the time left in the budget. ``compare(..., on_progress=...)`` hands one to the callback
at each step; the renderer words it, the front end shows it.

>>> step = Progress(stage="repeat", mode="jit", index=3, of=7, seconds_left=4.2, budget=6.0)
>>> step.stage, step.index, step.of
('repeat', 3, 7)
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Callable, Optional

STAGES = ("setting up", "first call", "checking results", "memory analysis", "communication", "warm-up", "repeat")


@dataclass(frozen=True)
class Progress:
    """One step of a comparison: ``stage`` (one of ``STAGES``), ``mode`` (``None`` for steps about
    all modes), ``index`` of ``of`` for repeats (1-based), ``seconds_left`` of the ``budget``.

    >>> Progress("first call", "eager", None, None, 5.9, 6.0).mode
    'eager'
    """

    stage: str
    mode: Optional[str]
    index: Optional[int]
    of: Optional[int]
    seconds_left: float
    budget: float


Listener = Callable[[Progress], None]


def tell(listener: Listener | None, step: Progress) -> None:
    """Hand ``step`` to ``listener``; a listener that fails is dropped silently, never the timing
    (a Ctrl-C still stops it).

    >>> seen = []
    >>> tell(seen.append, Progress("warm-up", "jit", None, None, 3.0, 6.0)); len(seen)
    1
    >>> tell(lambda step: 1 / 0, Progress("warm-up", "jit", None, None, 3.0, 6.0))  # nothing raised
    """
    if listener is None:
        return
    with contextlib.suppress(Exception):
        listener(step)
