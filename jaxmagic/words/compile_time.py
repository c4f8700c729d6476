"""The sentences of ``%jaxpr --compile-time`` about a Python loop that ran at trace time.

>>> print(unrolled("In [3] line 3", 2400, 2401))
In [3] line 3 made 2,400 of the 2,401 equations: a Python loop there runs at trace time, each pass adding equations. lax.fori_loop or lax.scan keeps the loop one equation and compiles in a time that does not grow with the number of steps.
"""

from __future__ import annotations

from typing import Any

from jaxmagic.words.sentences import Words, code, say
from jaxmagic.words.units import format_count, format_seconds


def unrolled(label: str, most: int, total: int) -> str:
    """Why one line made most of the program's equations."""
    return (
        f"{label} made {format_count(most)} of the {format_count(total)} equations: a Python loop there runs "
        f"at trace time, each pass adding equations. lax.fori_loop or lax.scan keeps the loop one equation "
        f"and compiles in a time that does not grow with the number of steps."
    )


def fori_measured(found: Any, where: Any) -> Words:
    """What the loop costs to compile as ``lax.fori_loop`` (``found``: a ``LoopAlternative``), and
    whether it gives the same values (the rewrite is shown only then).

    >>> from types import SimpleNamespace as S
    >>> print(fori_measured(S(seconds_before=4.2, seconds_after=0.16, equations_before=1200, equations_after=1,
    ...                       check="same", difference=None), "In [3] line 2"))
    The loop at In [3] line 2, rewritten as `lax.fori_loop` below, traces, lowers and compiles in 160 ms instead of 4.20 s (1 equation instead of 1,200), with the same values on your arguments.
    """
    times = (format_seconds(found.seconds_after), format_seconds(found.seconds_before))
    sizes = (_equations(found.equations_after), format_count(found.equations_before))
    if found.check == "same":
        return say(
            "The loop at {}, rewritten as {} below, traces, lowers and compiles in {} instead of {} ({} instead of "
            "{}), with the same values on your arguments.",
            where, code("lax.fori_loop"), *times, *sizes,
        )  # fmt: skip
    return say(
        "The loop at {} as {} compiles in {} instead of {} ({} instead of {}), but gives other values on your "
        "arguments ({}): not shown.",
        where, code("lax.fori_loop"), *times, *sizes, str(found.difference),
    )  # fmt: skip


def _equations(n: int) -> str:
    return f"{format_count(n)} equation{'s' * (n != 1)}"
