"""%jitcompare's rules as properties over the shared corpus of code users write (``tests/corpus/``):

- eager is the user's own call: the Python function under the callee's own jit, on the user's
  arguments, with jit on, giving the values the plain call gives (every running case);
- whatever eager costs, jit gets the repeats asked for, both figures (a call waited for, a call in
  a pipelined loop) are there, and the comparison ends within its budget and a tenth (a cheap
  subset of the cases, each under a small budget), save what an eager first call ran past its
  time inside JAX or a library, where no call is stopped, which the report says; it fails, as
  the user's error, only where the user's code fails with JAX too (under ``jax.jit``, or without
  it once jit has run).

Structure and values only: no figure is judged against time here (``benchmarks/`` does that).
"""

from __future__ import annotations

import contextlib
import io
import time

import jax
import pytest

from jaxmagic import _jax_private
from jaxmagic.errors import UserCodeError
from jaxmagic.timing import DEFAULT_REPEAT, agreement, compare, modes
from jaxmagic.timing.session import WALL_MARGIN
from jaxmagic.tracing.call import resolve_call
from tests.corpus import namespace_of, running

RUNNING = running()
# Values that are not the same from call to call by design: a counter, a list appended to, a print.
CHANGING = {"side-effect", "recompile", "sweep"}
SUBSET = RUNNING[::8]  # every eighth case, from every part of the corpus
BUDGET = 1.5


def _leaves(tree) -> list:
    return jax.tree_util.tree_leaves(tree, is_leaf=lambda x: x is None)


@pytest.mark.parametrize("case", RUNNING, ids=lambda case: case.id)
def test_eager_is_the_users_call_with_jit_on(case):
    ns = namespace_of(case)
    call = resolve_call(case.call, ns, magic="%jitcompare")
    runner = modes.build("eager", call)
    assert runner.fn is call.function  # the Python function under the callee's own jit wrapper
    assert not runner.compiles
    given = _leaves((call.args, call.kwargs))
    placed = _leaves((runner.args, runner.kwargs))
    assert len(given) == len(placed)
    for mine, theirs in zip(placed, given, strict=True):  # the user's own objects (NumPy put on the device)
        assert mine is theirs or type(theirs).__module__ == "numpy", (type(theirs), type(mine))
    with runner.context():
        assert not _jax_private.jit_disabled()  # jit stays on: inner jits run compiled
    if case.tags & CHANGING:
        return
    # What the user's call gives without its outer jit: the call itself for a plain callee; for a
    # callee jitted already, its Python function called on the same arguments (a checkified
    # function formatting a Python int, say, raises there and not under jit: so must eager).
    if call.function is call.fn:
        reference = _outcome(lambda: eval(case.call, ns))
    else:
        reference = _outcome(lambda: call.function(*call.args, **call.kwargs))
    output = _outcome(runner.call)
    assert output[0] == reference[0], (output, reference)
    if output[0] == "raises":
        assert output[1] is reference[1]
    else:
        found = agreement.mismatch(reference[1], output[1])
        assert found is None, str(found)


def _outcome(thunk) -> tuple[str, object]:
    """``("value", output)`` waited for, or ``("raises", the exception's type)``."""
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            return "value", jax.block_until_ready(thunk())
    except Exception as exc:
        return "raises", type(exc)


@pytest.mark.parametrize("case", SUBSET, ids=lambda case: case.id)
def test_jit_gets_its_repeats_both_figures_and_the_budget_holds(case):
    ns = namespace_of(case)
    call = resolve_call(case.call, ns, magic="%jitcompare")
    start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            result = compare(call, budget=BUDGET)
    except UserCodeError:
        # only where the user's code fails with JAX too: under JAX's own jit (a traced length), or
        # without it once jit has run (a tracer leaked into a global)
        jitted = jax.jit(call.function, static_argnums=call.static_argnums, static_argnames=call.static_argnames)
        outcomes = (
            _outcome(lambda: jitted(*call.args, **call.kwargs)),
            _outcome(lambda: call.function(*call.args, **call.kwargs)),
        )
        assert "raises" in {outcome for outcome, _ in outcomes}, outcomes
        return
    wall = time.perf_counter() - start
    jit = result.modes["jit"]
    assert jit.source == "repeats" and jit.repeat == DEFAULT_REPEAT, (jit, result.warnings)
    assert result.pipelined["jit"].repeat == jit.repeat
    kinds = {note.kind for note in result.facts}
    if "budget_overrun" not in kinds:  # only a jit call too long for its own repeats may pass it...
        first_call_s = result.compile.first_call_s
        # ...and an eager first call by what it ran past its time inside JAX or a library, where it
        # is not stopped (the report says by how much)
        late_s = sum(note.facts.get("late_s", 0.0) for note in result.facts)
        assert wall <= BUDGET * WALL_MARGIN + first_call_s * (first_call_s > BUDGET) + late_s, (wall, result.warnings)
    # eager measured, or said not run, or said not measured (stopped while JAX compiled its operations)
    assert "eager" in result.modes or kinds & {"not_run", "stopped_compiling"} or result.interrupted
