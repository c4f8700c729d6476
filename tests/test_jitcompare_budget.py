"""The budget arithmetic on its own: what the repeats may cost fits in the seconds left, calls per
repeat are cut before repeats, and a plan that fits is left as asked."""

import itertools
import math

import pytest

from jaxmagic.timing import budget


@pytest.mark.parametrize(
    "seconds, eager, jit, loops, repeat",
    list(itertools.product((0.05, 1.0, 5.0), (1e-5, 2e-4, 0.3), (1e-6, 1e-5, 0.1), (1, 50, 100_000), (1, 3, 7))),
)
def test_the_plan_fits_and_cuts_calls_before_repeats(seconds, eager, jit, loops, repeat):
    per_call = {"eager": eager, "jit": jit}
    planned = budget.fit({"eager": (loops, repeat), "jit": (loops, repeat)}, per_call, seconds=seconds)
    cost = sum(calls * repeats * per_call[m] for m, plan in planned.items() if plan for calls, repeats in [plan])
    assert cost <= seconds * (1 + 1e-9)
    for plan in planned.values():
        if plan is None:
            continue
        got_loops, got_repeat = plan
        assert 1 <= got_loops <= loops and 1 <= got_repeat <= repeat
        if got_repeat < repeat:
            assert got_loops == 1  # repeats are given up only once a repeat is a single call


def test_a_plan_that_fits_is_unchanged():
    wanted = {"eager": (100, 7), "jit": (1000, 7)}
    assert budget.fit(wanted, {"eager": 1e-4, "jit": 1e-5}, seconds=1.0) == wanted


def test_no_time_for_one_call_is_none():
    assert budget.fit({"jit": (10, 7)}, {"jit": 2.0}, seconds=1.0) == {"jit": None}
    assert budget.fit({"jit": (10, 7)}, {"jit": 2.0}, seconds=-3.0) == {"jit": None}


@pytest.mark.parametrize(
    "seconds, eager, jit, ahead_share",
    list(itertools.product((0.05, 0.3, 1.0, 5.0), (1e-5, 2e-4, 0.01), (1e-6, 1e-5, 1e-3), (1.0, 0.5))),
)
def test_the_jitted_repeats_are_lengthened_before_eager_ones(seconds, eager, jit, ahead_share):
    """A compiled mode's figure gets the calls its interval needs first: eager's repeats grow past
    their floor only once jit's have all the calls asked for, or the share of the time they may
    take first, and the whole plan fits."""
    wanted = {"eager": (round(0.2 / eager), 7), "jit": (round(0.2 / jit), 7)}
    per_call = {"eager": eager, "jit": jit}
    planned = budget.share(wanted, per_call, seconds=seconds, first=("jit",), ahead_share=ahead_share)
    floor = {m: min(loops, max(1, math.ceil(budget.FLOOR_S / per_call[m]))) for m, (loops, _) in wanted.items()}
    assert planned["jit"] is not None and planned["jit"][1] == 7
    if planned["eager"] is not None and planned["eager"][0] > floor["eager"]:
        jit_s = planned["jit"][0] * planned["jit"][1] * jit
        assert planned["jit"] == wanted["jit"] or jit_s >= ahead_share * seconds - 7 * jit, planned
    cost = sum(plan[0] * plan[1] * per_call[m] for m, plan in planned.items() if plan)
    if planned["jit"][0] > floor["jit"]:
        assert cost <= seconds * (1 + 1e-9)
    else:  # jit's repeats never shorter than the floor, whether it fits or not: eager then waits
        assert planned["jit"][0] == floor["jit"]
        assert planned["eager"] is None or cost <= seconds * (1 + 1e-9)


def test_the_jitted_repeats_keep_their_floor_when_nothing_is_left():
    """Where the first calls spent the budget, jit's repeats still last ``FLOOR_S`` each (or the
    calls ``least`` names), never one call each; eager gets nothing."""
    wanted, per_call = {"jit": (2000, 7), "eager": (10, 7)}, {"jit": 1e-4, "eager": 0.02}
    for seconds in (0.0, 0.001, 0.05):
        assert budget.share(wanted, per_call, seconds=seconds, first=("jit",)) == {"jit": (100, 7), "eager": None}
    assert budget.share(wanted, per_call, seconds=0.0, first=("jit",), least={"jit": 40})["jit"] == (40, 7)
