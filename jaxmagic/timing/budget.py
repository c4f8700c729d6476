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


FLOOR_S = 0.01  # a repeat's calls are cut no shorter than this while there is time for it


def share(
    wanted: dict[str, tuple[int, int]],
    per_call: dict[str, float],
    *,
    seconds: float,
    first: tuple[str, ...],
    floor_s: float = FLOOR_S,
    least: dict[str, int] | None = None,
    ahead_share: float = 1.0,
) -> dict[str, tuple[int, int] | None]:
    """Mode -> ``(calls per repeat, repeats)`` in ``seconds``, the modes in ``first`` ahead of the
    others (a compiled mode's figure gets the calls its interval needs, as a hand ``timeit`` loop
    gives them; the uncompiled modes are cut first):

    1. the modes in ``first`` get their repeats with calls lasting ``floor_s`` (or the calls
       ``least`` names), whether it fits or not: a repeat of one call of a millisecond is not
       a figure a hand loop gives (with one call each at the least);
    2. what is left lengthens their repeats towards what was wanted, up to ``ahead_share`` of
       ``seconds`` in all;
    3. what they leave goes to the others: their repeats with calls lasting ``floor_s``, cut as
       ``fit`` cuts them (to nothing if nothing is left), then lengthened as far as it allows;
    4. what is still left lengthens the repeats of the modes in ``first`` again.

    Never more than ``wanted``.

    >>> wanted, per_call = {"jit": (1000, 7), "eager": (100, 7)}, {"jit": 1e-4, "eager": 1e-3}
    >>> share(wanted, per_call, seconds=2.0, first=("jit",))
    {'jit': (1000, 7), 'eager': (100, 7)}
    >>> share(wanted, per_call, seconds=1.0, first=("jit",))
    {'jit': (1000, 7), 'eager': (42, 7)}
    >>> share(wanted, per_call, seconds=0.5, first=("jit",))
    {'jit': (714, 7), 'eager': None}
    >>> share(wanted, per_call, seconds=0.5, first=("jit",), ahead_share=0.5)
    {'jit': (364, 7), 'eager': (35, 7)}
    >>> share({"jit": (1000, 7), "eager": (100, 7)}, {"jit": 1e-3, "eager": 1e-2}, seconds=0.05, first=("jit",))
    {'jit': (10, 7), 'eager': None}
    >>> share({"jit": (1000, 7)}, {"jit": 1e-3}, seconds=0.0, first=("jit",), least={"jit": 25})
    {'jit': (25, 7)}
    """
    cost = {mode: max(per_call[mode], 1e-9) for mode in wanted}
    least = least or {}
    floors = {
        mode: (min(loops, max(1, least.get(mode) or math.ceil(floor_s / cost[mode]))), repeat)
        for mode, (loops, repeat) in wanted.items()
    }
    ahead = {mode: floors[mode] for mode in wanted if mode in first}
    if _seconds(ahead, cost) >= seconds:  # only the modes ahead, at their floor
        return {mode: ahead.get(mode) for mode in wanted}
    need = _seconds(ahead, cost)
    ahead = _lengthen(ahead, wanted, cost, room=min(seconds, ahead_share * seconds) - need)
    left = seconds - _seconds(ahead, cost)
    behind = fit({m: floors[m] for m in wanted if m not in first}, per_call, seconds=left)
    behind = {m: p for m, p in behind.items() if p is not None}
    behind = _lengthen(behind, wanted, cost, room=left - _seconds(behind, cost))
    ahead = _lengthen(ahead, wanted, cost, room=seconds - _seconds({**ahead, **behind}, cost))
    return {mode: {**ahead, **behind}.get(mode) for mode in wanted}


def _seconds(plans: dict[str, tuple[int, int]], cost: dict[str, float]) -> float:
    return sum(loops * repeat * cost[mode] for mode, (loops, repeat) in plans.items())


def _lengthen(
    planned: dict[str, tuple[int, int]], wanted: dict[str, tuple[int, int]], cost: dict[str, float], *, room: float
) -> dict[str, tuple[int, int]]:
    """Each plan's calls per repeat raised towards what was wanted, all in the same proportion,
    as far as ``room`` seconds allow."""
    extra = {m: (wanted[m][0] - loops) * repeat * cost[m] for m, (loops, repeat) in planned.items()}
    total = sum(extra.values())
    ratio = min(1.0, max(0.0, room) / total) if total > 0 else 0.0
    return {
        m: (min(wanted[m][0], loops + int((wanted[m][0] - loops) * ratio)), repeat)
        for m, (loops, repeat) in planned.items()
    }
