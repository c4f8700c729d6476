"""How sure a speed-up is: a bootstrap interval for the ratio of two modes' median times.

Each mode's repeats are resampled with replacement, the ratio of the resampled medians taken, and
the central ``level`` share of those ratios kept. The generator is seeded, so the same repeats
always give the same interval. When the interval contains 1 the two modes cannot be told apart
from these repeats: the difference is within the noise.

>>> low, high = ratio_interval([1.0, 1.1, 0.9, 1.0, 1.05], [0.5, 0.52, 0.49, 0.51, 0.5])
>>> 1.7 < low <= high < 2.3
True
>>> contains_one(ratio_interval([1.0, 1.2, 0.8, 1.1, 0.9], [1.05, 0.95, 1.1, 0.9, 1.0]))
True
>>> ratio_interval([1.0], [0.5]) is None  # a single repeat says nothing about the noise
True
"""

from __future__ import annotations

import math
import random
import statistics
from typing import Sequence

LEVEL = 0.95  # the share of resampled ratios the interval keeps
RESAMPLES = 2000
SEED = 0  # the same repeats always give the same interval
MIN_REPEATS = 2  # per mode; fewer say nothing about the spread


def ratio_interval(
    baseline_runs: Sequence[float],
    other_runs: Sequence[float],
    *,
    level: float = LEVEL,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> tuple[float, float] | None:
    """``(low, high)`` bounds for median(baseline) / median(other), or ``None`` when either side has
    fewer than two repeats or a median of zero.

    >>> ratio_interval([2.0, 2.0, 2.0], [1.0, 1.0, 1.0])
    (2.0, 2.0)
    """
    if len(baseline_runs) < MIN_REPEATS or len(other_runs) < MIN_REPEATS:
        return None
    generator = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        top = statistics.median(generator.choices(baseline_runs, k=len(baseline_runs)))
        bottom = statistics.median(generator.choices(other_runs, k=len(other_runs)))
        if bottom <= 0:
            return None
        ratios.append(top / bottom)
    ratios.sort()
    tail = (1 - level) / 2
    low = ratios[max(0, math.floor(tail * resamples))]
    high = ratios[min(resamples - 1, math.ceil((1 - tail) * resamples) - 1)]
    return low, high


def contains_one(interval: tuple[float, float] | None) -> bool:
    """Whether the interval allows "no difference" (``False`` when there is no interval).

    >>> contains_one((0.9, 1.2)), contains_one((1.1, 1.3)), contains_one(None)
    (True, False, False)
    """
    return interval is not None and interval[0] <= 1 <= interval[1]
