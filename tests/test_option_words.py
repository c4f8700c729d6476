"""Words that look like a magic's options are options, never the user's Python: a bad value is a
``UsageError`` naming the option and what it takes, and no code of the cell runs."""

import pytest
from outcomes import assert_usage_error

SETUP = "x = jnp.ones(3)\n@jax.jit\ndef f(v):\n    return v * 2\nran = []"

CASES = {
    # a negative number where a count is expected
    "%%recompiles --max -1\nran.append(1)\nf(x)": ["--max", "non-negative whole number"],
    "%%recompiles f --max -1\nran.append(1)\nf(x)": ["--max", "non-negative whole number"],
    "%recompiles on --max -1": ["--max", "non-negative whole number"],
    "%jaxpr --max-eqns -5 f(x)": ["--max-eqns", "positive number"],
    "%%jaxpr --max-eqns -3\nran.append(1)\nf(x)": ["--max-eqns", "positive number"],
    "%jitcompare -n -3 f(x)": ["-n", "positive number"],
    "%%jitcompare -r -2\nran.append(1)\nf(x)": ["-r", "positive number"],
    "%jitcompare --budget -2 f(x)": ["--budget", "positive number"],
    "%jitcompare --rtol -1 f(x)": ["--rtol", "zero or positive"],
    # an option given a value that looks like an option
    "%jaxpr --max-eqns --plain f(x)": ["--max-eqns", "expected one argument"],
    "%jitcompare -n --plain f(x)": ["-n", "expected one argument"],
    "%jaxpr -t -grad f(x)": ["-t", "expected one argument"],
    "%%recompiles --max --all\nran.append(1)\nf(x)": ["--max", "expected one argument"],
    "%jaxpr -s -x f(x)": ["-s", "expected one argument"],
    # an option spelled with one dash
    "%jaxpr -stage hlo f(x)": ["`-stage`", "--stage"],
    "%jitcompare -budget 3 f(x)": ["`-budget`", "--budget"],
    "%%recompiles -max 1\nran.append(1)\nf(x)": ["`-max`", "--max"],
    "%%jaxpr -max-eqns 3\nran.append(1)\nf(x)": ["`-max-eqns`", "--max-eqns"],
    "%%jitcompare -modes jit\nran.append(1)\nf(x)": ["`-modes`", "--modes"],
}


@pytest.fixture
def defined(run):
    run(SETUP).assert_ok()


@pytest.mark.parametrize("cell", list(CASES), ids=lambda c: c.replace("\n", " ⏎ "))
def test_an_option_word_is_never_run_as_code(ip, run, defined, cell):
    message = assert_usage_error(run, ip, cell, CASES[cell])
    assert "TypeError" not in message and "builtin" not in message
    assert ip.user_ns["ran"] == [], "no statement of the cell ran"


def test_a_negative_number_inside_the_call_is_the_call_s(run, defined):
    report = run("%jaxpr -o --max-eqns 5 jnp.add(x, -3)").assert_ok().result
    assert report.primitive_counts["add"] == 1 and report.n_eqns <= 5
