"""The settings ``compare`` takes, checked before anything runs: a ``UsageProblem`` names the one
it cannot use, with an example that works."""

from __future__ import annotations

import math

import jaxmagic.timing.modes as mode_setup
from jaxmagic.errors import UsageProblem

DEFAULT_REPEAT = 7
DEFAULT_BUDGET_S = 6.0


def check_settings(
    *, modes=None, repeat=DEFAULT_REPEAT, loops=None, budget=DEFAULT_BUDGET_S, rtol=None, atol=None, split=None
) -> tuple[str, ...]:
    """A ``UsageProblem`` for any setting ``compare`` cannot use; the modes chosen otherwise.

    >>> check_settings(modes="jit,eager", loops=10)
    ('jit', 'eager')
    >>> check_settings(repeat=0)
    Traceback (most recent call last):
    ...
    jaxmagic.errors.UsageProblem: %jitcompare: -r must be a positive number, not 0.
    Example: %jitcompare -r 7 f(x)
    """
    for value, flag, example in ((repeat, "-r", "-r 7"), (loops, "-n", "-n 100"), (budget, "--budget", "--budget 10")):
        usable = value > 0 and (flag == "--budget" or not math.isinf(value)) if value is not None else True
        if not usable:
            raise UsageProblem(
                f"%jitcompare: {flag} must be a positive number, not {value}.",
                example=f"%jitcompare {example} f(x)",
            )
    for value, flag in ((rtol, "--rtol"), (atol, "--atol")):
        if value is not None and not value >= 0:
            raise UsageProblem(
                f"%jitcompare: {flag} must be zero or positive, not {value}.", example=f"%jitcompare {flag} 1e-3 f(x)"
            )
    chosen = mode_setup.parse_modes(modes)
    if split is not None and not set(chosen) & set(mode_setup.MULTI_DEVICE_MODES):
        raise UsageProblem(
            f"%jitcompare: --split chooses the arguments that sharded and pmap spread over the devices, "
            f"and the modes asked for ({', '.join(chosen)}) include neither.",
            example="%jitcompare --modes eager,jit,sharded --split batch step(params, batch)",
        )
    return chosen
