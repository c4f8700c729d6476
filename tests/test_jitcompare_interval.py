"""Noise told from a difference: the speed-up's bootstrap interval, the headline that says "no
measurable difference" (and gives no break-even count) when the interval contains 1, and timing
warnings that say how sure they are."""

import random

import jax.numpy as jnp
import pytest

from jaxmagic.render import comparison as render
from jaxmagic.timing import compare, interval
from jaxmagic.timing.comparison import Comparison, CompileCost, Timing, slower_than_eager_warnings
from jaxmagic.tracing.call import Call


def report(eager_runs, jit_runs, jit_first=0.05):
    return Comparison(
        name="f(x)",
        modes={"eager": Timing("eager", list(eager_runs), loops=100), "jit": Timing("jit", list(jit_runs), loops=100)},
        first_calls={"jit": CompileCost(0.004, 0.006, jit_first - 0.015, jit_first, compilations=1)},
        memory={},
        warnings=[],
        notes=[],
        setups={},
        budget=6.0,
        elapsed=2.0,
        interrupted=False,
        devices="1 × cpu",
        requested=("eager", "jit"),
    )


def noisy(center, spread, count, seed):
    generator = random.Random(seed)
    return [center * (1 + generator.uniform(-spread, spread)) for _ in range(count)]


def test_interval_brackets_a_clear_difference_and_excludes_one():
    found = interval.ratio_interval(noisy(1e-3, 0.05, 7, 1), noisy(1e-4, 0.05, 7, 2))
    assert found is not None
    low, high = found
    assert 8 < low <= high < 12.5
    assert not interval.contains_one(found)


def test_interval_of_two_samples_of_the_same_noise_contains_one():
    found = interval.ratio_interval(noisy(1e-3, 0.2, 7, 3), noisy(1e-3, 0.2, 7, 4))
    assert interval.contains_one(found), found


def test_interval_is_reproducible_and_needs_two_repeats():
    eager, jit = noisy(1e-3, 0.3, 7, 5), noisy(8e-4, 0.3, 7, 6)
    assert interval.ratio_interval(eager, jit) == interval.ratio_interval(eager, jit)
    assert interval.ratio_interval([1e-3], jit) is None
    assert interval.ratio_interval(eager, [0.0, 0.0]) is None


def test_headline_says_no_measurable_difference_and_gives_no_break_even_count():
    same = report(noisy(1e-3, 0.2, 7, 7), noisy(0.98e-3, 0.2, 7, 8), jit_first=0.05)
    assert same.measurable is False
    assert same.break_even_calls is not None  # the medians alone would give one
    headline = render.summary(same)
    assert "no measurable difference" in headline
    assert "95% interval" in headline
    assert "repaid" not in headline and "faster" not in headline and "slower" not in headline
    text = render.text(same)
    assert "pays off after" not in text
    assert "no break-even count" in text


def test_headline_of_a_clear_difference_gives_its_interval_and_break_even():
    clear = report(noisy(1e-3, 0.05, 7, 9), noisy(1e-4, 0.05, 7, 10))
    assert clear.measurable is True
    low, high = clear.speedup_interval
    assert low <= clear.speedup <= high
    headline = render.summary(clear)
    assert "faster than eager (95% interval" in headline and "repaid after" in headline


def test_single_samples_have_no_interval():
    single = report([1e-3], [1e-4])
    assert single.speedup_interval is None and single.measurable is None
    assert "faster than eager (1" in render.summary(single)


def test_real_comparison_has_an_interval_around_its_speedup():
    def f(x):
        return jnp.sum(jnp.sin(x) ** 2 + jnp.cos(x))

    result = compare(Call(f, (jnp.ones(2000),), {}), repeat=5, loops=20)
    low, high = result.speedup_interval
    assert low <= high
    assert low <= result.speedup * 1.0001 and result.speedup <= high * 1.0001


@pytest.mark.parametrize("measurable", [True, False])
def test_slower_warning_says_how_sure_and_is_left_out_within_the_noise(measurable):
    slower = noisy(2e-4, 0.03, 7, 11) if measurable else noisy(1.02e-4, 0.3, 7, 12)
    built = report(noisy(1e-4, 0.03 if measurable else 0.3, 7, 13), slower)
    warned = slower_than_eager_warnings(built)
    if measurable:
        assert len(warned) == 1 and "95% interval" in warned[0] and "from 7 repeats" in warned[0]
    else:
        assert warned == []
