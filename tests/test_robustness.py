"""What users really do, held up: JAX's errors shown as JAX's, the public functions' arguments
checked, nothing compiled said rather than "0 ns", lambdas kept apart by their line, the session's
log on unloading, IPython's idioms (``;``, a shape given as an argument), and option values that are
refused, never run, in every magic's line and cell form."""

from __future__ import annotations

import pytest
from conftest import assert_no_internals
from outcomes import INTERNAL_FAILURE

SETUP = """
import jax, jax.numpy as jnp
x = jnp.ones(3)
def passes_through(tree):
    return tree
@jax.jit
def f(v):
    return jnp.sin(v) * 2
"""


@pytest.fixture
def defined(run):
    run(SETUP).assert_ok()


# ------------------------------------------------------------------------------------------------
# The blame line: "a bug in jaxmagic" only for a failure in jaxmagic's own frame


@pytest.mark.parametrize("magic", ["%jaxpr", "%jitcompare -q -n 1 -r 1 --budget 0.1"])
def test_jaxs_error_about_the_input_is_shown_as_jaxs(run, defined, magic):
    shown = run(f"{magic} passes_through({{1: x, 'a': x}})")
    assert shown.usage_error is not None, shown.error
    assert INTERNAL_FAILURE not in shown.usage_error
    assert shown.usage_error.startswith("JAX raised ValueError"), shown.usage_error
    assert "dictionary keys" in shown.usage_error
    assert_no_internals(shown)


def test_a_failure_in_jaxmagics_own_frame_is_still_called_a_bug(ip):
    from jaxmagic.magics.failures import unexpected

    try:
        {}["missing"]  # raised right here: a frame outside jaxmagic, not a library's
    except KeyError as exc:
        assert str(unexpected(exc)).startswith("your code raised KeyError")
    import jaxmagic.words.units as units  # any jaxmagic module: an error raised in its own frame

    code = compile("raise RuntimeError('inside')", units.__file__, "exec")
    try:
        exec(code, {})
    except RuntimeError as exc:
        assert INTERNAL_FAILURE in str(unexpected(exc))


def test_a_shape_given_as_an_argument_hints_at_static(run, defined):
    shown = run("%jaxpr jnp.ones(3)")
    assert shown.error is not None
    assert "`-s shape`" in shown.shown_traceback, shown.shown_traceback
    run("%jaxpr -s shape jnp.ones(3)").assert_ok()


# ------------------------------------------------------------------------------------------------
# The public functions check their arguments


@pytest.mark.parametrize(
    "args, kwargs, error, said",
    [
        ((3,), {}, TypeError, "functions are given by name, as strings, not 3"),
        (("",), {}, TypeError, "as strings"),
        ((), {"max_compiles": -1}, ValueError, "max_compiles takes None or a whole number >= 0"),
        ((), {"max_compiles": "two"}, TypeError, "max_compiles takes a whole number"),
        ((), {"max_compiles": True}, TypeError, "max_compiles takes a whole number"),
        ((), {"capacity": 0}, ValueError, "capacity takes a whole number >= 1"),
        ((), {"include_internal": "yes"}, TypeError, "include_internal takes True or False"),
        ((), {"explain": 1}, TypeError, "explain takes True or False"),
        ((), {"cell_namer": 3}, TypeError, "cell_namer takes a function"),
    ],
)
def test_watch_recompiles_refuses_what_it_cannot_take(args, kwargs, error, said):
    import jaxmagic
    from jaxmagic.recompiles import watch

    with pytest.raises(error, match="e\\.g\\.|function of") as raised, jaxmagic.watch_recompiles(*args, **kwargs):
        pass
    assert said in str(raised.value)
    assert not watch.is_installed()


def test_a_single_name_given_to_a_log_is_one_name_not_its_letters():
    import jaxmagic

    assert jaxmagic.RecompileLog("step").functions == ("step",)


@pytest.mark.parametrize("loader", ["load_ipython_extension", "unload_ipython_extension"])
@pytest.mark.parametrize("shell", [None, "ip", 3])
def test_the_extension_hooks_want_the_shell(loader, shell):
    import jaxmagic

    with pytest.raises(TypeError, match="takes the IPython shell.*%load_ext jaxmagic"):
        getattr(jaxmagic, loader)(shell)


# ------------------------------------------------------------------------------------------------
# Unloading keeps the session's log reachable, and says so


def test_unloading_says_the_session_log_is_kept_and_loading_gives_it_back(ip, run, defined):
    from jaxmagic.recompiles import watch

    run("%recompiles on").assert_ok()
    run("f(jnp.ones(5)); f(jnp.ones(6))").assert_ok()
    run("%recompiles off").assert_ok()
    shown = run("%unload_ext jaxmagic")
    try:
        assert "its log is kept" in shown.stderr.lower() and "2 compilations" in shown.stderr, shown.stderr
        assert not watch.is_installed()
    finally:
        run("%load_ext jaxmagic").assert_ok()
    log = run("%recompiles -o show f").assert_ok().result
    assert log.counts == {"f": 2}


# ------------------------------------------------------------------------------------------------
# --profile with nothing compiled says so, instead of "0 ns" a line


@pytest.mark.parametrize(
    "cell, why",
    [
        ("with jax.disable_jit():\n    profiled = %jaxpr --profile 2 -o plain_h(x)", "jit is disabled"),
        ("profiled = %jaxpr --profile 2 -o jax.pmap(plain_h)(x[None])", "no kernel of the compiled call"),
    ],
)
def test_profile_with_nothing_compiled_says_so(run, defined, cell, why):
    run("def plain_h(v):\n    return jnp.sin(v) * 2").assert_ok()
    shown = run(cell).assert_ok()
    report = run("profiled").result
    assert report.profile.nothing_compiled and why in report.profile.nothing_compiled
    assert report.line_times == {}
    assert "nothing compiled to profile" in shown.text + shown.html
    assert "0 ns" not in shown.text + shown.html


# ------------------------------------------------------------------------------------------------
# Names: two lambdas are two functions


def test_two_lambdas_on_different_lines_are_two_functions(run, defined):
    shown = run(
        "%%recompiles -o\ndoubled = jax.jit(lambda v: v * 2)\nshifted = jax.jit(lambda v: v + 1)\n"
        "doubled(x); shifted(x); doubled(jnp.ones(4)); shifted(jnp.ones(5))"
    ).assert_ok()
    log = shown.result
    assert log.counts == {"<lambda> (line 2)": 2, "<lambda> (line 3)": 2}
    assert [e.kinds for e in log.events] == [["first_call"], ["first_call"], ["shape"], ["shape"]]
    assert log.for_functions(["<lambda>"]).total == 4  # a bare <lambda> still names them all


# ------------------------------------------------------------------------------------------------
# IPython's idioms


@pytest.mark.parametrize("magic", ["%jaxpr", "%jaxpr --plain", "%jitcompare -q -n 1 -r 1 --budget 0.1"])
@pytest.mark.parametrize("ending", [";", " ;"])
def test_a_trailing_semicolon_is_accepted_as_in_any_line(run, defined, magic, ending):
    plain = run(f"{magic} f(x)").assert_ok()
    quiet = run(f"{magic} f(x){ending}").assert_ok()
    assert bool(quiet.outputs) == bool(plain.outputs) and bool(quiet.stdout) == bool(plain.stdout)


# ------------------------------------------------------------------------------------------------
# Bounded output for any input: no view above 1 MB of HTML, the rest folded with a count

MAX_HTML = 1_000_000
HUGE = """
many_leaves = {f"k{i}": jnp.ones(2) for i in range(10_000)}
huge_key = {"k" * 10_000_000: x, "b": x}
huge_text = "t" * 10_000_000
def chain(v):
    for _ in range(20_000):
        v = v + 1.0
    return v
def labelled(v, label):
    return v * len(label)
"""


@pytest.fixture
def huge(run, defined):
    run(HUGE).assert_ok()


@pytest.mark.parametrize(
    "cell, folded",
    [
        ("%jaxpr passes_through(many_leaves)", "… 9936 more"),
        ("%jaxpr passes_through(huge_key)", "more characters"),
        ("%jaxpr --stage hlo passes_through(huge_key)", ""),
        ("%jaxpr chain(x)", "more equations"),
        ("%jaxpr -s label labelled(x, huge_text)", ""),
        (
            "%%recompiles\nlabelled_jit = jax.jit(labelled, static_argnames='label')\n"
            "labelled_jit(x, label=huge_text); labelled_jit(x, label=huge_text + '!')",
            "",
        ),
    ],
)
def test_no_view_is_above_a_megabyte(run, huge, cell, folded):
    shown = run(cell).assert_ok()
    assert 0 < len(shown.html.encode()) <= MAX_HTML, len(shown.html)
    assert len(shown.text.encode()) <= MAX_HTML
    assert folded in shown.html


def test_many_leaves_fold_in_the_text_view_too(run, huge):
    shown = run("%jaxpr --plain passes_through(many_leaves)").assert_ok()
    assert len(shown.stdout) < 100_000
    assert "… 9936 more" in shown.stdout and "… 9984 more" in shown.stdout  # the listing, the summary
