"""``-o`` returns a report that shows in full wherever it is displayed; only the echo of the cell
that made it (``Out[n]``) is one line, as with ``%timeit -o``. No display state lives on a report."""

import re

import pytest

MAGICS = {
    "%jaxpr -o f(x)": ("JaxprReport", "sin"),
    "%jitcompare -o -n 2 -r 2 f(x)": ("Comparison", "eager"),
    "%%recompiles -o\nf(x)": ("RecompileLog", "compil"),
}


@pytest.fixture
def f_defined(run):
    run("x = jnp.ones(3)\n@jax.jit\ndef f(v):\n    return jnp.sin(v) * 2").assert_ok()


def full_views(result):
    return [o for o in result.outputs if "text/html" in o]


LINE_MAGICS = [m for m in MAGICS if not m.startswith("%%")]


@pytest.mark.parametrize("magic", LINE_MAGICS)
def test_displayed_in_the_cell_that_made_it_the_report_shows_in_full(run, f_defined, magic):
    name, word = MAGICS[magic]
    shown = run(f"from IPython.display import display\nr = {magic}\ndisplay(r)").assert_ok()
    views = full_views(shown)
    assert len(views) == 2, "the magic's own view, then display(r): both in full"
    assert word in views[1]["text/plain"] and views[1]["text/plain"] != repr(shown.result)
    assert re.match(rf"<{name}\b", views[1]["text/plain"]) is None, "display(r) is not the one-line echo"


@pytest.mark.parametrize("magic", LINE_MAGICS)
def test_echo_of_the_cell_is_one_line_and_later_displays_are_full(run, f_defined, magic):
    name, word = MAGICS[magic]
    shown = run(magic).assert_ok()
    echo = re.search(rf"Out\[(\d+)\]: <{name}\b", shown.stdout)
    assert echo, shown.stdout
    later = run(f"Out[{echo.group(1)}]").assert_ok()
    assert word in later.stdout and not later.stdout.lstrip().startswith(f"Out[{int(echo.group(1)) + 1}]: <{name}")


@pytest.mark.parametrize("magic", LINE_MAGICS)
def test_a_report_fetched_outside_a_cell_shows_in_full_everywhere(ip, run, f_defined, magic):
    name, word = MAGICS[magic]
    magic_name, line = magic[1:].split(" ", 1)
    report = ip.run_line_magic(magic_name, line)
    assert type(report).__name__ == name
    ip.user_ns["fetched"] = report
    later = run("fetched").assert_ok()
    assert word in later.stdout and f": <{name}" not in later.stdout, "a later cell shows it in full"
    bundle = report._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"} and word in bundle["text/plain"]


def test_a_report_carries_no_display_state(run, f_defined):
    report = run("%jaxpr -o f(x)").assert_ok().result
    assert not [k for k in vars(report) if "echo" in k or "shown" in k], vars(report).keys()
    assert not [k for k in vars(type(report)) if "echo" in k]


def test_the_cell_form_echoes_one_line_and_shows_in_full_when_displayed(run, f_defined):
    shown = run("%%recompiles -o\nf(jnp.ones(5))").assert_ok()
    echo = re.search(r"Out\[(\d+)\]: <RecompileLog\b", shown.stdout)
    assert echo, shown.stdout
    again = run(f"from IPython.display import display\ndisplay(Out[{echo.group(1)}])").assert_ok()
    assert len(full_views(again)) == 1 and "compil" in again.outputs[0]["text/plain"]


@pytest.mark.parametrize(
    ("options", "marker"),
    [("--stage hlo", "ENTRY"), ("--stage stablehlo", "func.func"), ("--cost", "flops"), ("--values", "⇒")],
)
def test_the_returned_report_shows_what_the_magic_displayed(run, f_defined, options, marker):
    shown = run(f"r = %jaxpr -o {options} f(x)").assert_ok()
    displayed = full_views(shown)[0]["text/plain"]
    report = run("r").assert_ok().result
    assert marker in displayed.lower() or marker in displayed
    assert report.to_text() == displayed
