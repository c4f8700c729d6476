"""Several calls compared at once (``%jitcompare naive(x), vectorized(x)``): each call timed eager
and jit in turn within its share of the budget, the comparisons kept in order, shown in one table.

>>> shares(6.0, 2)
[3.0, 3.0]
"""

from __future__ import annotations

from typing import Sequence

from jaxmagic.report import Report
from jaxmagic.timing.comparison import Comparison


class SideBySide(Report):
    """The comparisons of several calls, in the order written: ``comparisons`` (a list of
    ``Comparison``). Shown as one table, a row per call; ``%jitcompare -o`` returns the list.

    >>> SideBySide([]).comparisons
    []
    """

    _renderer = "jaxmagic.render.side_by_side"

    def __init__(self, comparisons: Sequence[Comparison]):
        self.comparisons = list(comparisons)

    def __repr__(self) -> str:
        return f"<SideBySide of {len(self.comparisons)} calls>"


def shares(budget: float, count: int) -> list[float]:
    """Each call's share of the budget: equal parts.

    >>> shares(6.0, 3)
    [2.0, 2.0, 2.0]
    """
    return [budget / count] * count
