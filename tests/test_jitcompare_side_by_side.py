"""Several calls side by side: ``%jitcompare naive(x), vectorized(x)`` times each eager and jit in
one table; ``-o`` returns a list of ``Comparison``, one per call, in order."""

import re

from jaxmagic.timing.comparison import Comparison

SETUP = """
import jax, jax.numpy as jnp
def naive(x):
    return jnp.stack([jnp.dot(row, row) for row in x])
def vectorized(x):
    return jax.vmap(lambda row: jnp.dot(row, row))(x)
x = jnp.arange(24.0).reshape(8, 3)
"""


def test_each_call_timed_eager_and_jit_in_order(run):
    run(SETUP).assert_ok()
    result = run("%jitcompare -o -r 2 -n 2 --plain naive(x), vectorized(x)").assert_ok()
    reports = result.result
    assert isinstance(reports, list) and [type(r) for r in reports] == [Comparison, Comparison]
    assert [r.name for r in reports] == ["naive(x)", "vectorized(x)"]
    for report in reports:
        assert not any("differ" in w for w in report.warnings)  # eager and jit agreed on the values
        assert list(report.modes) == ["eager", "jit"] and report.modes["jit"].repeat == 2
        assert report.budget == 3.0  # an equal share of the 6 s default
    table = result.stdout
    assert "naive(x)" in table and "vectorized(x)" in table and "95% interval" in table
    assert table.index("naive(x)") < table.index("vectorized(x)")


def test_a_call_with_a_tuple_argument_is_one_call(run):
    run(SETUP).assert_ok()
    result = run("%jitcompare -o -r 2 -n 2 -q jnp.add(*(x, x))").assert_ok().result
    assert isinstance(result, Comparison)


def test_html_view_is_one_table_with_a_row_per_call(run):
    run(SETUP).assert_ok()
    shown = run("%jitcompare -r 2 -n 2 naive(x), vectorized(x)").assert_ok().html
    assert shown.count('<table class="jm-table jm-side-by-side">') == 1
    assert re.search(r"<td[^>]*>naive\(x\)</td>", shown) and re.search(r"<td[^>]*>vectorized\(x\)</td>", shown)


def test_a_cell_ending_in_several_calls_times_them_side_by_side(ip, run):
    run(SETUP).assert_ok()
    result = run("%%jitcompare -o -r 2 -n 2 -q\nrows = x * 2\nnaive(rows)\nvectorized(rows)").assert_ok()
    reports = result.result
    assert [r.name for r in reports] == ["naive(rows)", "vectorized(rows)"]
    assert ip.user_ns["rows"].shape == (8, 3), "the cell's own statements ran first"


def test_a_cell_ending_in_one_call_is_one_comparison(run):
    run(SETUP).assert_ok()
    assert isinstance(run("%%jitcompare -o -r 2 -n 2 -q\nrows = x * 2\nnaive(rows)").assert_ok().result, Comparison)
