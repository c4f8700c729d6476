"""Every cell magic runs its cell the way IPython runs any cell: other magics inside it work, its
line numbers are the cell's, and a cell ending in ``;`` (a comment may follow) shows no value."""

import pytest

SETUP = "x = jnp.ones(3)\n@jax.jit\ndef f(v):\n    return jnp.sin(v) * 2"


@pytest.fixture
def f_defined(run):
    run(SETUP).assert_ok()


@pytest.mark.parametrize("magic", ["%%jaxpr", "%%jitcompare -q -n 2 -r 2", "%%recompiles"])
def test_a_line_magic_inside_the_cell_runs(ip, run, f_defined, magic):
    run(f"{magic}\n%time y_from_cell = 1\nf(x)").assert_ok()
    assert ip.user_ns["y_from_cell"] == 1


@pytest.mark.parametrize("ending", ["f(x);", "f(x);  # done", "f(x) ;"])
def test_a_recompiles_cell_ending_in_a_semicolon_is_quiet(run, f_defined, ending):
    shown = run(f"%%recompiles\n{ending}").assert_ok()
    assert shown.result is None and "Out[" not in shown.stdout


def test_a_recompiles_cell_ending_in_an_expression_shows_its_value(run, f_defined):
    shown = run("%%recompiles\nf(x).shape  # the value").assert_ok()
    assert shown.result == (3,)


def test_a_syntax_error_names_the_cell_s_line(run, f_defined):
    for magic in ("%%jaxpr", "%%recompiles"):
        shown = run(f"{magic}\ny = 1\nz = (\nf(x)")
        assert shown.usage_error and "not valid Python" in shown.usage_error
