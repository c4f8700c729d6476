"""How the repeats fit in what is left of the budget: a pure function of the wanted plan, the
seconds each call costs and the seconds left, so the arithmetic can be checked on its own.

The modes share the time in proportion to what each wants. A mode that does not fit has its calls
per repeat cut first, its repeats only when one call per repeat still does not fit: the repeats are
what the speed-up's interval is drawn from, so they are the last thing given up.

>>> fit({"eager": (100_000, 7), "jit": (100_000, 7)}, {"eager": 2e-4, "jit": 1e-5}, seconds=5.0)
{'eager': (3401, 7), 'jit': (3401, 7)}
>>> fit({"jit": (100, 7)}, {"jit": 1e-3}, seconds=5.0)  # fits: unchanged
{'jit': (100, 7)}
>>> fit({"jit": (100, 7)}, {"jit": 2.0}, seconds=5.0)  # one call per repeat, and fewer repeats
{'jit': (1, 2)}
>>> fit({"jit": (100, 7)}, {"jit": 9.0}, seconds=5.0)  # not even one call: None
{'jit': None}
"""

from __future__ import annotations

import math


def fit(
    wanted: dict[str, tuple[int, int]], per_call: dict[str, float], *, seconds: float
) -> dict[str, tuple[int, int] | None]:
    """Mode -> ``(calls per repeat, repeats)`` that fit in ``seconds`` together, or ``None`` for a
    mode with no time for even one call. ``wanted`` is mode -> ``(calls, repeats)`` asked for;
    ``per_call`` is mode -> seconds one call costs (as a repeat runs it)."""
    seconds = max(0.0, seconds)
    need = {mode: loops * repeat * max(per_call[mode], 1e-9) for mode, (loops, repeat) in wanted.items()}
    total = sum(need.values())
    planned: dict[str, tuple[int, int] | None] = {}
    for mode, (loops, repeat) in wanted.items():
        cost = max(per_call[mode], 1e-9)
        allowance = seconds * need[mode] / total if total > seconds and total > 0 else math.inf
        if allowance < cost:
            planned[mode] = None
            continue
        if loops * repeat * cost > allowance:
            loops = max(1, int(allowance / (repeat * cost)))
        if loops * repeat * cost > allowance:
            repeat = max(1, int(allowance / (loops * cost)))
        planned[mode] = (loops, repeat)
    return planned
