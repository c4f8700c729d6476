"""%recompiles / %%recompiles in a real IPython shell with real JAX: the cell scope, the session
watch and its live panel, --all, --max, -o, bad input, and nothing left behind."""

from __future__ import annotations

import logging
import os
import pathlib
import re
import subprocess
import sys

import jax
import pytest
from conftest import assert_no_internals, internals_in

from jaxmagic import _jax_private
from jaxmagic.magics import recompiles as magic_module
from jaxmagic.recompiles import RecompileLimitExceeded, RecompileLog, watch


@pytest.fixture(autouse=True)
def fresh(ip):
    """Each test starts with no remembered signatures and leaves no session watch behind."""
    watch.forget()
    yield
    session = magic_module._SESSIONS.get(ip)
    if session is not None and session.log is not None:
        session.log.stop()
    assert not watch.is_installed()


def cell_number(result_html: str) -> set[str]:
    return set(re.findall(r"In \[(\d+)\] line \d+", result_html))


def rows(html: str) -> list[str]:
    """One entry per compilation the view's rows stand for (a row of ``×N`` stands for N)."""
    found = re.findall(r'(<tr class="jm-recompile-row"[^>]* data-count="(\d+)"[^>]*>)', html)
    return [row for row, count in found for _ in range(int(count))]


def session(ip):
    return magic_module._SESSIONS[ip]


# ----------------------------------------------------------------------------------------------
# The cell form


def test_cell_reports_each_compilation_with_its_cause_and_call_site(ip, run):
    run("@jax.jit\ndef step(batch):\n    return batch.sum()").assert_ok()
    shown = run("%%recompiles\nfor n in (2, 3, 4):\n    step(jnp.ones((n, 3)))\n'done'").assert_ok()
    assert shown.result == "done", "the cell's last expression is still its value"
    html = shown.html
    assert 'class="jaxmagic jm-recompile-log"' in html
    assert len(rows(html)) == 3
    assert html.count("jm-cause jm-cause-shape") == 1 and html.count("jm-cause jm-cause-first_call") == 1
    assert '<span class="jm-recompile-times">×2</span>' in html, "the same cause twice: one row"
    assert 'data-function="step"' in html
    number = ip.execution_count - 1
    assert f"In [{number}] line 3" in html, "the call site is the cell's line as the user sees it"
    answer = shown.outputs[0]["text/plain"].splitlines()[0]
    assert answer.startswith("3 compilations of 1 function"), "the answer first"
    assert answer.endswith("main cause: shape of `batch` in `step` ×2 — in this cell")
    assert "shape of `x`" not in shown.text and "shape of `batch` changed: f32[2,3] → f32[3,3]" in shown.text
    assert_no_internals(shown)


def test_cell_with_nothing_compiling_says_so(run):
    run("@jax.jit\ndef warm(x):\n    return x + 1\nwarm(jnp.ones(2))").assert_ok()
    shown = run("%%recompiles\nwarm(jnp.ones(2))").assert_ok()
    assert "no compilations" in shown.text and "hit JAX's caches" in shown.text
    assert rows(shown.html) == []


def test_cell_filters_by_function_name(run):
    run("@jax.jit\ndef kept(x):\n    return x + 1\n@jax.jit\ndef skipped(x):\n    return x + 2").assert_ok()
    shown = run("%%recompiles kept\nkept(jnp.ones(2))\nskipped(jnp.ones(2))").assert_ok()
    assert 'data-function="kept"' in shown.html and 'data-function="skipped"' not in shown.html


def test_all_shows_jaxs_internal_compilations(run):
    run("odd = jnp.ones((7, 29))").assert_ok()
    mine = run("%%recompiles\njnp.cos(odd)").assert_ok()
    assert rows(mine.html) == []
    everything = run("%%recompiles --all\njnp.tan(odd)").assert_ok()
    assert rows(everything.html) and "(JAX internal)" in everything.html


def test_a_function_redefined_in_a_loop_in_a_cell(run):
    shown = run("%%recompiles\nfor i in range(3):\n    f = jax.jit(lambda x: x + i)\n    f(jnp.ones(2))").assert_ok()
    assert len(rows(shown.html)) == 3 and 'data-kinds="redefined_function" data-count="2"' in shown.html
    assert "outside the loop" in shown.text
    # named as the user reads it; the loop's `i`, which the lambda reads, made an argument (hoisted as it is,
    # the lambda would keep the `i` of its first trace)
    assert "Define the lambda at line 3 once, outside the loop, with `i` as an argument" in shown.text
    assert "reading the global `i`: 0 → 1" in shown.text
    # where it was defined, named as the notebook names the cell (its file name on hover)
    cell = re.search(r"In \[(\d+)\] line 3", shown.text)
    assert cell and "(defined at In [" + cell[1] + "] line 3)" in shown.text, shown.text
    assert "ipython-input" not in shown.text and "ipykernel" not in shown.text
    assert re.search(r'defined at <span class="jm-place" title="[^"]+:3">In \[\d+\] line 3</span>', shown.html)


def test_a_cell_watching_a_function_compiled_in_an_earlier_cell_names_the_change(run):
    run("@jax.jit\ndef earlier(x):\n    return x * 2\nearlier(jnp.ones(3))").assert_ok()
    shown = run("%%recompiles\nearlier(jnp.ones(4))").assert_ok()
    assert "shape of `x` changed: f32[3] → f32[4]" in shown.text, shown.text
    assert "while nothing watched" in shown.text and "first compilation" not in shown.text


def test_redefining_a_function_in_a_later_cell_is_expected(run):
    run("%recompiles on").assert_ok()
    run("@jax.jit\ndef edited(x):\n    return x + 1\nedited(jnp.ones(2))").assert_ok()
    run("@jax.jit\ndef edited(x):\n    return x + 2\nedited(jnp.ones(2))").assert_ok()
    shown = run("%recompiles show edited --plain").assert_ok()
    assert "re-defined function" in shown.stdout
    assert "Expected after defining `edited` again" in shown.stdout


def test_another_function_of_the_same_name_is_not_compared_argument_by_argument(run):
    """A `step` of another cell, with other code and other arguments, is not this one: its compile is
    said as a function defined again, with none of the earlier one's shapes or structures as causes."""
    run("%%recompiles\n@jax.jit\ndef step(g, w):\n    return w - g\nstep(jnp.ones(3), jnp.ones(3))").assert_ok()
    shown = run(
        "%%recompiles --plain\n@jax.jit\ndef step(w, opt_state):\n    return w * opt_state['lr'], opt_state\n"
        "step(jnp.ones(4), {'lr': jnp.ones(())})"
    ).assert_ok()
    assert "re-defined function" in shown.stdout, shown.stdout
    for unrelated in ("shape of `w` changed", "pytree structure", "pad it", "`g` was passed before"):
        assert unrelated not in shown.stdout, shown.stdout


def test_o_returns_the_log(run):
    run("@jax.jit\ndef returned(x):\n    return x * 3").assert_ok()
    result = run("%%recompiles -o\nreturned(jnp.ones(2))\nreturned(jnp.ones(3))").assert_ok().result
    assert isinstance(result, RecompileLog)
    assert result.counts == {"returned": 2}
    assert [e.kinds for e in result.events] == [["first_call"], ["shape"]]
    assert result.events[1].causes[0].argument == "x"


def test_plain_prints_text_only(run):
    run("@jax.jit\ndef plain(x):\n    return x * 3").assert_ok()
    shown = run("%%recompiles --plain\nplain(jnp.ones(2))").assert_ok()
    assert shown.outputs == []
    assert "first compilation of `plain` for (x: f32[2])" in shown.stdout


def test_user_error_in_the_cell_shows_the_users_traceback_and_the_log(run):
    run("@jax.jit\ndef before_error(x):\n    return x * 3").assert_ok()
    shown = run("%%recompiles\nbefore_error(jnp.ones(2))\n1 / 0")
    assert isinstance(shown.error, Exception) and "ZeroDivisionError" in shown.shown_traceback
    assert rows(shown.html), "what compiled before the error is still reported"
    assert "line 3" in shown.shown_traceback
    assert_no_internals(shown)


# ----------------------------------------------------------------------------------------------
# --max


def test_max_fails_the_cell_at_the_call_that_went_over_listing_the_causes(ip, run):
    run("@jax.jit\ndef grows(x):\n    return x.sum()\nreached = []").assert_ok()
    shown = run("%%recompiles --max 2\nfor n in range(1, 8):\n    grows(jnp.ones(n))\n    reached.append(n)")
    assert isinstance(shown.error, RecompileLimitExceeded)
    assert ip.user_ns["reached"] == [1, 2], "the loop stopped at the third compilation"
    message = shown.shown_traceback
    assert "`grows` compiled 3 times; the limit is 2 times (--max 2)" in message
    assert "shape of `x` changed: f32[2] → f32[3]" in message and "pad it" in message
    assert "Traceback" not in message and internals_in(message) == []
    assert len(rows(shown.html)) == 3, "the log is shown too"


def test_max_zero_after_warm_up_passes_and_then_fails(run):
    run("@jax.jit\ndef warmed(x):\n    return x.sum()\nwarmed(jnp.ones(4))").assert_ok()
    run("%%recompiles --max 0\nwarmed(jnp.ones(4))").assert_ok()
    assert isinstance(run("%%recompiles --max 0\nwarmed(jnp.ones(5))").error, RecompileLimitExceeded)


def test_max_with_the_session_watch_fails_the_cell_that_goes_over(run):
    run("@jax.jit\ndef session_limited(x):\n    return x.sum()").assert_ok()
    run("%recompiles on --max 1").assert_ok()
    run("session_limited(jnp.ones(2))").assert_ok()
    over = run("session_limited(jnp.ones(3))")
    assert isinstance(over.error, RecompileLimitExceeded)
    run("session_limited(jnp.ones(4))").assert_ok()  # reported once per function, not every cell


# ----------------------------------------------------------------------------------------------
# The session watch and its panel


def test_on_shows_a_live_panel_that_updates_while_later_cells_run(ip, run):
    shown = run("%recompiles on").assert_ok()
    panel = session(ip).panels[-1]
    # (earlier panels of replaced logs may publish an update of their own copy: "stopped")
    (bundle,) = [
        o
        for o in shown.outputs
        if o.get("application/vnd.jupyter.widget-view+json", {}).get("model_id") == panel.widget.model_id
    ]
    assert set(bundle) == {"application/vnd.jupyter.widget-view+json", "text/plain"}
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == panel.widget.model_id
    # right after it, its copy: the same log as static HTML, what a saved notebook keeps
    copy = shown.outputs[shown.outputs.index(bundle) + 1]
    assert set(copy) == {"text/html", "text/plain"} and "jm-recompile-static" in copy["text/html"]
    assert "jm-recompile-panel" in panel.widget._dom_classes
    assert rows(panel.rows.value) == []

    run("@jax.jit\ndef live(x):\n    return x * 2\nfor n in (1, 2, 3, 4):\n    live(jnp.ones(n))").assert_ok()
    # the cell's end flushes any update still waiting for its turn
    assert len(rows(panel.rows.value)) == 4
    assert 'data-function="live" data-count="4"' in panel.header.value
    assert "jm-recompile-headline" in panel.header.value and "pad to a few bucket sizes" in panel.header.value
    assert 'data-kinds="shape" data-count="3"' in panel.rows.value
    assert list(panel.filter.options) == ["all functions", "live"]

    run("@jax.jit\ndef other(x):\n    return x - 1\nother(jnp.ones(2))").assert_ok()
    panel.filter.value = "other"
    assert len(rows(panel.rows.value)) == 1 and 'data-function="other"' in panel.rows.value
    panel.filter.value = "all functions"
    assert len(rows(panel.rows.value)) == 5

    panel.clear_button.click()
    assert rows(panel.rows.value) == [] and session(ip).log.total == 0
    assert list(panel.filter.options) == ["all functions"]


def test_show_clear_and_off(ip, run):
    run("%recompiles on").assert_ok()
    run("@jax.jit\ndef watched(x):\n    return x + 1\nwatched(jnp.ones(2))\nwatched(jnp.ones(3))").assert_ok()
    shown = run("%recompiles show watched").assert_ok()
    assert len(rows(shown.html)) == 2
    plain = run("%recompiles show --plain").assert_ok()
    assert "watched ×2" in plain.stdout
    assert "Cleared" in run("%recompiles clear").assert_ok().stdout
    assert session(ip).log.total == 0
    off = run("%recompiles off").assert_ok()
    assert "Stopped watching" in off.stdout and not watch.is_installed()
    run("watched(jnp.ones(4))").assert_ok()
    assert session(ip).log.total == 0, "nothing is recorded after off"
    assert "not being watched" in run("%recompiles off").assert_ok().stdout


def test_bare_recompiles_shows_the_session_log(run):
    run("%recompiles on").assert_ok()
    run("@jax.jit\ndef bare(x):\n    return x + 1\nbare(jnp.ones(2))").assert_ok()
    assert 'data-function="bare"' in run("%recompiles").assert_ok().html


def test_on_o_returns_the_live_log(ip, run):
    log = run("%recompiles on -o").assert_ok().result
    assert isinstance(log, RecompileLog) and log.watching
    run("@jax.jit\ndef through_o(x):\n    return x + 1\nthrough_o(jnp.ones(2))").assert_ok()
    assert log.counts == {"through_o": 1}


def test_off_restores_jax_and_logging(ip, run):
    from jax._src import monitoring

    listeners = (len(monitoring.get_event_duration_listeners()), len(monitoring.get_event_listeners()))
    filters = {name: list(logging.getLogger(name).filters) for name in _jax_private.explanation_logger_names()}
    run("%recompiles on").assert_ok()
    assert jax.config.values["jax_explain_cache_misses"] is False  # jaxmagic's own comparison decides
    run("%recompiles on --explain").assert_ok()
    assert jax.config.values["jax_explain_cache_misses"] is True  # JAX's own text asked for
    run("%recompiles off").assert_ok()
    assert (len(monitoring.get_event_duration_listeners()), len(monitoring.get_event_listeners())) == listeners
    assert {name: list(logging.getLogger(name).filters) for name in filters} == filters
    assert jax.config.values["jax_explain_cache_misses"] is False


def test_unloading_the_extension_leaves_nothing_behind(ip, run):
    from jax._src import monitoring

    from jaxmagic.doctor import global_watch

    # the doctor's own listener (stale-global) is jaxmagic's too: it goes on unload
    listeners = (
        len(monitoring.get_event_duration_listeners()) - global_watch.is_watching(),
        len(monitoring.get_event_listeners()),
    )
    hooks = list(ip.events.callbacks["post_run_cell"])
    run("%recompiles on").assert_ok()
    panel = session(ip).panels[-1]
    ip.run_line_magic("unload_ext", "jaxmagic")
    try:
        assert not watch.is_installed() and not global_watch.is_watching()
        assert (len(monitoring.get_event_duration_listeners()), len(monitoring.get_event_listeners())) == listeners
        assert jax.config.values["jax_explain_cache_misses"] is False
        assert ip not in magic_module._SESSIONS
        assert all(h in hooks for h in ip.events.callbacks["post_run_cell"])
        assert "recompiles" not in ip.magics_manager.magics["line"]
        assert panel._changed not in session_log_observers(panel)
    finally:
        ip.run_line_magic("load_ext", "jaxmagic")
    assert "recompiles" in ip.magics_manager.magics["cell"]


def session_log_observers(panel):
    return list(panel.log._observers)


# ----------------------------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize(
    "line, expected",
    [
        ("%recompiles bogus", "unknown sub-command `bogus`"),
        ("%recompiles on --max -1", "--max takes a non-negative whole number"),
        ("%recompiles on --max lots", "--max takes a non-negative whole number"),
        ("%recompiles off now", "takes no further arguments"),
        ("%recompiles show --max 2", "--all and --max belong to `%recompiles on`"),
        ("%recompiles on 3x", "`3x` is not a function name"),
        ("%recompiles --frobnicate", "unrecognized arguments"),
    ],
)
def test_bad_line_input_is_a_usage_error_listing_what_is_accepted(run, line, expected):
    shown = run(line)
    assert shown.usage_error is not None, shown.error
    assert expected in shown.usage_error
    assert "%recompiles on [FN ...]" in shown.usage_error or "never" in expected
    assert not watch.is_installed()
    assert_no_internals(shown)


def test_bare_recompiles_before_anything_was_watched(ip, run):
    magic_module.uninstall(ip)  # a fresh session, its hook unregistered (not orphaned)
    magic_module.install(ip)
    shown = run("%recompiles")
    assert shown.usage_error and "needs a sub-command" in shown.usage_error and "%recompiles off" in shown.usage_error


def test_show_of_a_function_never_seen(run):
    run("%recompiles on").assert_ok()
    run("@jax.jit\ndef seen(x):\n    return x\nseen(jnp.ones(2))").assert_ok()
    shown = run("%recompiles show unseen")
    assert (
        shown.usage_error
        and "`unseen` has not compiled" in shown.usage_error
        and "Functions seen: seen" in shown.usage_error
    )


def test_cell_form_bad_input(ip, run):
    ip.user_ns["counter"] = 0
    unknown = run("%%recompiles nosuchfunction\ncounter += 1")
    assert unknown.usage_error and "no function `nosuchfunction`" in unknown.usage_error
    assert ip.user_ns["counter"] == 0, "a usage error runs nothing"
    on = run("%%recompiles on\ncounter += 1")
    assert on.usage_error and "sub-command of the line form" in on.usage_error
    bad_max = run("%%recompiles --max=-3\ncounter += 1")
    assert bad_max.usage_error and "non-negative" in bad_max.usage_error
    syntax = run("%%recompiles\nfor")
    assert syntax.usage_error and "not valid Python (line 2" in syntax.usage_error
    assert ip.user_ns["counter"] == 0
    assert not watch.is_installed() and jax.config.values["jax_explain_cache_misses"] is False


def test_a_name_defined_by_the_cell_itself_is_accepted(run):
    shown = run(
        "%%recompiles made_here\n@jax.jit\ndef made_here(x):\n    return x + 1\nmade_here(jnp.ones(2))"
    ).assert_ok()
    assert 'data-function="made_here"' in shown.html


# ----------------------------------------------------------------------------------------------
# Terminal IPython


def test_terminal_prints_the_log_as_text():
    ipython = pathlib.Path(sys.executable).with_name("ipython")
    session_text = (
        "%load_ext jaxmagic\nimport jax, jax.numpy as jnp\n"
        "f = jax.jit(lambda x: x * 2)\n"
        "%recompiles on\n"
        "f(jnp.ones(2)); f(jnp.ones(3))\n"
        "%recompiles show\n"
        "%recompiles off\nexit\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env.update(JAX_PLATFORMS="cpu", TERM="dumb")
    done = subprocess.run(
        [str(ipython), "--simple-prompt"], input=session_text, capture_output=True, text=True, timeout=180, env=env
    )
    out = done.stdout + done.stderr
    first = "[recompiles] <lambda> (line 1) at In [5] line 1: first compilation of `<lambda> (line 1)` for (x: f32[2])"
    assert first in out
    assert "[recompiles] <lambda> (line 1) at In [5] line 1: shape of `x` changed: f32[2] → f32[3]" in out
    assert "2 compilations of 1 function (" in out and " — in the session since In [4]" in out
    assert "shape of `x` changed: f32[2] → f32[3] (axis 0: 2 → 3)" in out and "shape: shape" not in out
    assert "application/vnd.jupyter.widget-view+json" not in out and "Traceback" not in out


def test_a_trailing_semicolon_hides_the_cells_value(run):
    run("@jax.jit\ndef quiet(x):\n    return x + 1").assert_ok()
    assert run("%%recompiles\nquiet(jnp.ones(2));").assert_ok().result is None
    assert run("%%recompiles\nquiet(jnp.ones(2))").assert_ok().result is not None


def test_jitcompare_measurements_are_not_counted_as_the_users_recompilations(ip, run):
    run("@jax.jit\ndef timed(x):\n    return x * 2 + 1\nv = jnp.ones(8)\ntimed(v)").assert_ok()
    run("%recompiles on").assert_ok()
    run("%jitcompare -n 2 -r 2 --plain timed(v)").assert_ok()
    assert session(ip).log.total == 0, session(ip).log.events
    run("%recompiles on --all").assert_ok()
    run("%jitcompare -n 2 -r 2 --plain timed(v)").assert_ok()
    assert [e for e in session(ip).log.events if e.function == "timed"] == [], "not even with --all"


def test_reload_ext_keeps_the_session_watch_and_unload_says_it_stopped(ip, run):
    run("%recompiles on").assert_ok()
    log = session(ip).log
    run("%reload_ext jaxmagic").assert_ok()
    assert session(ip).log is log and log.watching and watch.is_installed()
    run("@jax.jit\ndef after_reload(x):\n    return x + 2\nafter_reload(jnp.ones(2))").assert_ok()
    assert log.counts == {"after_reload": 1}
    shown = run("%unload_ext jaxmagic")
    try:
        assert not log.watching and not watch.is_installed()
        assert "the session watch stopped (1 compilation of 1 function" in shown.stderr
    finally:
        run("%load_ext jaxmagic").assert_ok()


def test_jaxmagics_own_compilations_of_the_users_function_are_not_counted(ip, run):
    run("def plain(x):\n    return jnp.sin(x) * 2\nx = jnp.ones(3)").assert_ok()
    run("%recompiles on").assert_ok()
    for cell in ("%jaxpr --stage hlo plain(x)", "%jaxpr --cost plain(x)"):
        run(cell).assert_ok()
    assert session(ip).log.counts == {}
    run("jax.jit(plain)(jnp.ones(5))").assert_ok()  # the user's own compilation still counts
    assert session(ip).log.counts == {"plain": 1}
