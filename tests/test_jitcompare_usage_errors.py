"""What %jitcompare says to input it cannot use: a UsageError that says what was expected, with an
example; nothing of jaxmagic's internals; the namespace and JAX's configuration untouched."""

import jax
import pytest
from outcomes import assert_usage_error

SETUP = "x = jnp.ones(8)\ndef f(x, n=2):\n    return jnp.sum(jnp.sin(x) * n)\nclass Model:\n    pass\nnumber = 3\n"

CASES = [
    # (cell, words the message must contain)
    ("%jitcompare", ["needs a call expression", "Example: %jitcompare f(x, 3)"]),
    ("%jitcompare f(x", ["not valid Python"]),
    ("%jitcompare y = f(x)", ["times an expression", "not a statement: y = f(x)"]),
    ("%jitcompare f(x) + undefined_name", ["name 'undefined_name' is not defined"]),
    ("%jitcompare undefined_function(x)", ["name 'undefined_function' is not defined"]),
    ("%jitcompare number(x)", ["`number` is a int, not a function"]),
    ("%jitcompare Model()", ["`Model` is a class"]),
    ("%jitcompare -s q f(x, 2)", ["no parameter named `q`"]),
    ("%%jitcompare\ny = f(x, 2)", ["last statement must be an expression, the one to time"]),
    ("%jitcompare -n 0 f(x)", ["-n must be a positive number, not 0", "Example: %jitcompare -n 100 f(x)"]),
    ("%jitcompare -n -5 f(x)", ["-n must be a positive number, not -5"]),
    ("%jitcompare -r 0 f(x)", ["-r must be a positive number, not 0"]),
    ("%jitcompare --budget 0 f(x)", ["--budget must be a positive number, not 0.0"]),
    ("%jitcompare --budget -1 f(x)", ["--budget must be a positive number"]),
    ("%jitcompare --budget nan f(x)", ["--budget must be a positive number, not nan"]),
    ("%jitcompare -n many f(x)", ["invalid int value: 'many'"]),
    ("%jitcompare --budget soon f(x)", ["invalid float value: 'soon'"]),
    ("%jitcompare --rtol -1 f(x)", ["--rtol must be zero or positive"]),
    ("%jitcompare --modes eager,fast f(x)", ["unknown mode `fast`", "eager, jit, op-by-op, sharded, pmap"]),
    ("%jitcompare --modes , f(x)", ["--modes needs at least one mode"]),
    (
        "%jitcompare --modes pmap f(x)",
        [
            "`pmap` spreads the work over several devices",
            "only 1",
            "XLA_FLAGS=--xla_force_host_platform_device_count=8",
            "before JAX starts",
        ],
    ),
    ("%jitcompare --modes eager,sharded f(x)", ["`sharded` spreads the work", "XLA_FLAGS="]),
    ("%jitcompare --bogus f(x)", ["unrecognized arguments: --bogus"]),
    ("%jitcompare --split x f(x)", ["--split chooses the arguments that sharded and pmap spread", "include neither"]),
]


@pytest.mark.parametrize("cell, expected", CASES, ids=[c for c, _ in CASES])
def test_bad_input_is_a_clear_usage_error(run, ip, cell, expected):
    run(SETUP).assert_ok()
    assert_usage_error(run, ip, cell, expected)


def test_bad_options_are_refused_before_the_cell_runs(run, ip):
    run(SETUP).assert_ok()
    shown = run("%%jitcompare -r 0\nmade_by_the_cell = 1\nf(x)")
    assert "-r must be a positive number" in shown.usage_error
    assert "made_by_the_cell" not in ip.user_ns


def test_a_failure_in_one_mode_leaves_jax_config_and_namespace_alone(run, ip):
    run("def branchy(v):\n    return v * 2 if v.sum() > 0 else v\n").assert_ok()
    run(SETUP).assert_ok()
    names_before = set(ip.user_ns)
    config_before = dict(jax.config.values)
    shown = run("%jitcompare -n 2 -r 2 branchy(x)")
    assert shown.error is not None and "jit mode" in shown.shown_traceback
    assert dict(jax.config.values) == config_before
    assert {n for n in set(ip.user_ns) - names_before if not n.startswith("_")} == set()
