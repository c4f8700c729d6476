"""The recompile watch's advice is right or silent: every cause's advice fits what changed. A dtype
that only widened because ``jax_enable_x64`` was switched is that setting, not "the same Python
type"; random keys are never told to be padded or cast to float."""

from __future__ import annotations

import jax


def causes(run, cell: str):
    shown = run("%%recompiles -o\n" + cell).assert_ok()
    return [c for event in shown.result.events for c in event.causes]


def test_an_x64_toggle_is_the_setting_not_the_python_type_passed(run):
    run("@jax.jit\ndef twice(x):\n    return x * 2").assert_ok()
    try:
        found = causes(run, "twice(1.0)\njax.config.update('jax_enable_x64', True)\ntwice(1.0)")
    finally:
        jax.config.update("jax_enable_x64", False)
    later = [c for c in found if c.kind != "first_call"]
    assert [(c.kind, c.argument) for c in later] == [("config", "jax_enable_x64")]
    assert "same Python type" not in " ".join(c.advice for c in found)


def test_a_typed_key_and_a_raw_key_are_told_apart_not_cast(run):
    run("@jax.jit\ndef draw(key):\n    return jax.random.normal(key, (2,))").assert_ok()
    found = causes(run, "draw(jax.random.key(0))\ndraw(jax.random.PRNGKey(0))")
    (changed,) = [c for c in found if c.kind != "first_call"]
    assert changed.kind == "dtype" and changed.argument == "key"
    assert "jax.random.key" in changed.advice and "PRNGKey" in changed.advice
    assert "astype" not in changed.advice and "jnp.pad" not in changed.advice


def test_a_new_number_of_keys_is_told_to_split_the_same_number_not_to_pad(run):
    run("@jax.jit\ndef first_draw(keys):\n    return jax.random.normal(keys[0], (2,))").assert_ok()
    found = causes(
        run,
        "first_draw(jax.random.split(jax.random.key(0), 3))\nfirst_draw(jax.random.split(jax.random.key(0), 4))",
    )
    (changed,) = [c for c in found if c.kind != "first_call"]
    assert changed.kind == "shape" and "jax.random.split(key, n)" in changed.advice
    assert "jnp.pad" not in changed.advice


def test_a_function_made_again_that_reads_a_changing_global_is_told_to_take_it_as_an_argument(run):
    """A lambda jitted anew in a loop, reading the loop's variable as a global: defined once outside
    the loop as it is, it would keep the first value it traced with (``[0, 0, 0]`` where the loop
    gives ``[0, 1, 2]``). The advice makes the global an argument, and says which one changed."""
    run("x = jnp.ones(5)").assert_ok()
    found = causes(run, "for t in range(3):\n    jax.jit(lambda v: v * t)(x)")
    later = [c for c in found if c.kind != "first_call"]
    assert [c.kind for c in later] == ["redefined_function"] * 2
    first = later[0]
    assert (first.before, first.after) == ("t=0", "t=1"), first
    assert "`t`" in first.message and "0 → 1" in first.message, first.message
    assert "`t` as an argument" in first.advice, first.advice
    assert "alike" not in first.message
