"""A global a jitted function read, bound to a new value after JAX compiled it: the compiled code
silently keeps the old value (JAX's FAQ, "Why does a jitted function ignore a global I changed",
and the impure function of its stateful-computations page). JAX raises nothing; the doctor warns
after the cell that changed the global, once, and its fix (the global as an argument) computes
with the new value."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from doctor_cases import apply, line_of, namespace, run
from test_doctor_hook import cards

from jaxmagic import doctor
from jaxmagic.doctor import global_watch

# JAX's FAQ: a jitted function reads the global `y`, then `y` changes
FAQ = """
y = 0.0

@jax.jit
def impure_func(x):
    return x + y

first = impure_func(1.0)
"""


@pytest.fixture
def watching():
    """The watch on, as ``%load_ext jaxmagic`` turns it on; as it was afterwards."""
    was = global_watch.is_watching()
    global_watch.start()
    global_watch.WATCH.clear()  # what other tests' functions left is not this test's
    yield
    if not was:
        global_watch.stop()


def test_the_trap_itself_the_compiled_function_keeps_the_old_value(watching):
    ns = namespace()
    assert run(FAQ, ns) is None and run("y = 10.0\nsecond = impure_func(1.0)", ns) is None
    assert float(ns["second"]) == 1.0  # not 11.0: what the doctor warns of


def test_a_global_changed_after_compiling_is_a_warning_whose_fix_computes_with_the_new_value(watching):
    ns = namespace()
    assert run(FAQ, ns) is None
    assert doctor.observe_cell(ns) == []  # nothing changed: nothing said
    assert run("y = 10.0", ns) is None
    (found,) = doctor.observe_cell(ns)
    assert found.pitfall == "stale-global" and found.severity == "warning"
    assert found.variable == "y" and found.function == "impure_func"
    assert found.where.line == line_of(FAQ, "return x + y")
    assert "`0.0`" in found.explanation and "`10.0`" in found.explanation
    assert doctor.observe_cell(ns) == []  # said once
    apply(found.fix, ns)
    assert run("fixed = impure_func(1.0, y)", ns) is None
    with jax.disable_jit():  # what JAX computes without compiling, with the new value
        eager = namespace()
        assert run(FAQ + "y = 10.0\nexpected = impure_func(1.0)\n", eager) is None
    assert float(ns["fixed"]) == float(eager["expected"]) == 11.0


def test_the_same_value_assigned_again_and_a_constant_are_not_warned_of(watching):
    ns = namespace()
    source = """
    SCALE = 2.0
    offset = 1.0
    table = np.arange(3.0)

    @jax.jit
    def shifted(x):
        return x * SCALE + offset + table

    out = shifted(1.0)
    """
    assert run(source, ns) is None
    assert run("offset = 1.0\nSCALE = 3.0\nother = 5", ns) is None
    assert doctor.observe_cell(ns) == []  # an equal number, a constant by convention, an unread name
    assert run("table = np.arange(3.0)", ns) is None  # a new array: the compiled one is the old one
    assert [d.variable for d in doctor.observe_cell(ns)] == ["table"]


def test_a_function_traced_again_after_the_change_is_not_stale(watching):
    ns = namespace()
    assert run(FAQ, ns) is None
    assert run("y = 10.0\nsecond = impure_func(np.ones(2))", ns) is None  # a new shape: traced anew
    assert doctor.observe_cell(ns) == []
    np.testing.assert_allclose(ns["second"], [11.0, 11.0])


def test_a_global_read_by_a_helper_is_found_through_the_jitted_function(watching):
    ns = namespace()
    source = """
    rate = 0.1

    def decay(p):
        return p * (1 - rate)

    @jax.jit
    def step(p):
        return decay(p) + 1
    after = step(1.0)
    """
    assert run(source, ns) is None and run("rate = 0.5", ns) is None
    (found,) = doctor.observe_cell(ns)
    assert found.pitfall == "stale-global" and found.function == "step" and "through `decay`" in found.explanation
    apply(found.fix, ns)
    assert run("fixed = decay(1.0, rate)", ns) is None and float(ns["fixed"]) == 0.5


def test_faq_loop_over_the_global_itself_is_warned_of_after_the_cell(watching):
    # JAX's FAQ ("jit changes the behavior of my function"): `for y in range(3)` rebinds the global
    ns = namespace()
    source = """
    y = 0

    @jax.jit
    def impure_func(x):
        return x + y

    results = []
    for y in range(3):
        results.append(int(impure_func(y)))
    """
    assert run(source, ns) is None
    assert ns["results"] == [0, 1, 2]  # not [0, 2, 4]: y stays 0 in the compiled code
    (found,) = doctor.observe_cell(ns)
    assert found.variable == "y" and "`0`" in found.explanation and "`2`" in found.explanation


def test_a_function_only_jaxmagic_traced_is_not_warned_of(run):
    run("scale_t = 2.0\ndef scaled_t(x):\n    return x * scale_t").assert_ok()
    run("%jaxpr scaled_t(1.0)").assert_ok()
    assert cards(run("scale_t = 3.0")) == []  # %jaxpr's trace is not a compilation the user's calls reuse


def test_in_a_notebook_the_warning_shows_after_the_cell_that_changed_the_global(run):
    global_watch.WATCH.clear()
    run(FAQ.replace("y", "bias_y")).assert_ok()
    assert cards(run("z = impure_func(2.0)")) == []
    shown = run("bias_y = 10.0")
    assert cards(shown) == ["stale-global"]
    assert cards(run("bias_y = 10.0")) == []  # said once
    run("%jaxmagic doctor off").assert_ok()
    try:
        assert cards(run("bias_y = 20.0")) == []  # the doctor off says nothing
    finally:
        run("%jaxmagic doctor on").assert_ok()
