"""%jitcompare on an accelerator: the jit figure agrees with a hand loop over the jitted call, every
model gets the repeats its interval needs under the default budget, and both figures a user needs
are there — a call waited for, and a call in a pipelined loop (dispatch overlapped), which on a TPU
is several times smaller for a small MLP.

The accelerator tests run on a TPU or GPU only (``@pytest.mark.accelerator``; skipped elsewhere):

    JAX_PLATFORMS=tpu,cpu python -m pytest -q -p no:xdist tests/test_jitcompare_accelerator.py

The last test reads the hand-timed figures recorded on a TPU v5e (``fixtures/tpu/summary.json``)
and checks, on any machine, what the view makes of figures like them.
"""

from __future__ import annotations

import json
import pathlib
import statistics
import sys
import time

import jax
import pytest

from jaxmagic.render import comparison as render
from jaxmagic.timing import DEFAULT_BUDGET_S, Comparison, CompileCost, Timing, compare
from jaxmagic.timing.session import WALL_MARGIN
from jaxmagic.tracing.call import Call

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures" / "tpu"
LOOSE = 0.25  # the jit median within 25% of the hand loop's
HAND_REPEATS = 15


def _models():
    sys.path.insert(0, str(FIXTURES))
    try:
        import models
    finally:
        sys.path.remove(str(FIXTURES))
    return models


def hand_blocked(fn, args, calls: int) -> float:
    """Median seconds per call of ``HAND_REPEATS`` loops of ``calls`` calls, each waited for."""
    jax.block_until_ready(fn(*args))
    runs = []
    for _ in range(HAND_REPEATS):
        start = time.perf_counter()
        for _ in range(calls):
            jax.block_until_ready(fn(*args))
        runs.append((time.perf_counter() - start) / calls)
    return statistics.median(runs)


@pytest.mark.accelerator
@pytest.mark.parametrize("name", ["mlp", "block_grad", "rnn", "convnet"])
def test_the_jit_figure_agrees_with_a_hand_loop_and_has_its_repeats(name):
    models = _models()
    fn, make_args = models.MODELS[name]
    args = make_args(jax.random.key(0))
    start = time.perf_counter()
    result = compare(Call(fn, args, {}, source=f"{name}(*args)"))
    wall = time.perf_counter() - start
    jit = result.modes["jit"]
    assert jit.source == "repeats" and jit.repeat >= 7, (jit, result.warnings)
    assert result.pipelined["jit"].repeat == jit.repeat
    hand = hand_blocked(jax.jit(fn), args, calls=max(10, min(jit.loops, 200)))
    assert abs(jit.median / hand - 1) <= LOOSE, (jit.median, hand)
    assert wall <= DEFAULT_BUDGET_S * WALL_MARGIN + result.compile.first_call_s, (wall, result.warnings)


@pytest.mark.accelerator
def test_a_call_in_a_pipelined_loop_costs_less_than_one_waited_for_on_a_small_mlp():
    models = _models()
    args = models.mlp_args(jax.random.key(0))
    result = compare(Call(models.mlp, args, {}, source="mlp(params, x)"))
    waited, looped = result.modes["jit"], result.pipelined["jit"]
    assert looped.median < waited.median, (looped, waited)
    assert "in a loop" in render.html(result)


def test_what_the_view_makes_of_the_mlp_figures_recorded_on_a_tpu():
    """Built from the hand-timed loops of ``summary.json`` (no timing runs here): the verdict gives the
    speed-up of calls waited for and, as it differs several times over, the pipelined loop's; the
    break-even sentence says which figures it counts."""
    recorded = json.loads((FIXTURES / "summary.json").read_text())["mlp"]
    blocked = recorded["jit_blocked_s"]
    eager = recorded["eager_s"]
    pipelined = recorded["jit_pipelined_s"]
    result = Comparison(
        name="mlp(params, x)",
        modes={"eager": Timing("eager", eager, loops=1), "jit": Timing("jit", blocked, loops=1)},
        pipelined={"eager": Timing("eager", eager, loops=1), "jit": Timing("jit", [pipelined] * 3, loops=50)},
        first_calls={"jit": CompileCost(0.01, 0.02, 0.2, 0.25, compilations=1)},
        memory={},
        warnings=[],
        notes=[],
        setups={},
        budget=6.0,
        elapsed=5.0,
        interrupted=False,
        devices="1 × tpu",
        requested=("eager", "jit"),
    )
    speedup = statistics.median(eager) / statistics.median(blocked)
    loop = statistics.median(eager) / pipelined
    assert result.speedup == pytest.approx(speedup) and result.loop_speedup == pytest.approx(loop)
    headline = render.summary(result)
    assert f"jit is {speedup:.3g}× faster than eager" in headline and "each waited for" in headline
    assert f"{loop:.3g}× in a pipelined loop" in headline
    text = render.text(result)
    assert "Counted on calls each waited for" in text and "In a pipelined loop" in text
