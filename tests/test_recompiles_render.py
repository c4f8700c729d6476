"""The recompile log's views (HTML, text, the live panel) and the reading of JAX's explanations.

Views are pure functions of a log, so most tests build logs from synthetic events: fast, exact."""

from __future__ import annotations

import re
import time

import pytest
from pygments.console import codes

from jaxmagic.recompiles import RecompileEvent, RecompileLog
from jaxmagic.recompiles.causes import CAUSE_KINDS, Cause
from jaxmagic.recompiles.explanations import argument_for_path, parse_explanation
from jaxmagic.render import recompiles as render
from jaxmagic.render.panel import ALL, RecompilePanel
from jaxmagic.tracing.sources import SourceLine


def event(function="step", causes=None, *, line=3, raw=None, persistent=None, compile_s=0.03, internal=False):
    site = SourceLine(file="<cell-7>", line=line, function="<module>", text="step(x)", cell="In [7]")
    return RecompileEvent(
        function=function,
        defined_at=None,
        call_site=site,
        compile_s=compile_s,
        causes=causes or [Cause("first_call", after="(x: f32[3])")],
        raw=raw,
        persistent_cache=persistent,
        internal=internal,
    )


def shape(before, after, argument="x"):
    return Cause(
        "shape",
        argument=argument,
        before=f"f32[{before}]",
        after=f"f32[{after}]",
        detail=f"axis 0: {before} → {after}",
        axes=((0, before, after),),
    )


def filled_log(n=5, **kwargs):
    log = RecompileLog(scope="this cell", **kwargs)
    log.record(event())
    for i in range(1, n):
        log.record(event(causes=[shape(i + 2, i + 3)]))
    return log


def compilations_in(html: str) -> int:
    """The compilations a view's rows stand for (a row of ×N stands for N)."""
    return sum(int(n) for n in re.findall(r'class="jm-recompile-row"[^>]* data-count="(\d+)"', html))


# ----------------------------------------------------------------------------------------------
# HTML


def test_html_has_stable_classes_rows_and_counts():
    html = render.html(filled_log())
    assert html.startswith('<div class="jaxmagic jm-recompile-log"><style>')
    rows = re.findall(
        r'<tr class="jm-recompile-row" data-function="step" data-kinds="([^"]*)" data-count="(\d+)">', html
    )
    assert rows == [("first_call", "1"), ("shape", "4")], "the same function and cause: one row, ×4"
    assert '<span class="jm-recompile-count" data-function="step" data-count="5">' in html
    assert html.count('class="jm-cause jm-cause-shape"') == 1, "the latest one's causes"
    assert re.search(r'<td class="jm-n"[^>]*>2–5</td>', html) and '<span class="jm-recompile-times">×4</span>' in html
    assert "f32[6] → f32[7]" in html.split('<details class="jm-recompile-occurrences">')[0], "the latest in sight"
    occurrences = re.search(r'<details class="jm-recompile-occurrences">(.*?)</details>', html).group(1)
    assert "×4" in occurrences and "#2 " in occurrences and "f32[3] → f32[4]" in occurrences, "the first on demand"
    assert 'data-argument="x"' in html
    assert "In [7] line 3" in html
    assert 'class="jm-card jm-recompile-headline"' in html and "<code>step</code> compiled 5 times" in html


def test_the_answer_comes_first_how_many_and_the_main_cause():
    log = filled_log()
    log.record(event("loss"))
    log.record(event("loss", causes=[Cause("dtype", argument="y", before="f32[3]", after="i32[3]")]))
    html = render.html(log)
    answer = re.search(r'<div class="jm-summary jm-answer"><b>(.*?)</b>', html).group(1)
    assert answer == (
        "7 compilations of 2 functions (210 ms compiling); main cause: shape of <code>x</code> in <code>step</code> ×4"
    )
    assert html.index("jm-answer") < html.index('class="jm-card jm-recompile-headline"') < html.index("<table")
    assert render.text(log).splitlines()[0] == (
        "7 compilations of 2 functions (210 ms compiling); main cause: shape of `x` in `step` ×4 — in this cell"
    )
    firsts = RecompileLog(scope="this cell")
    firsts.record(event())
    assert str(render.answer(firsts)).endswith("; each a first compilation")
    firsts.record(event(causes=[Cause("static_value", argument="n", before="2", after="3")]))
    firsts.record(event(causes=[Cause("dtype", argument="y", before="f32[3]", after="i32[3]")]))
    assert str(render.answer(firsts)).endswith("; causes: static value of `n` in `step`, dtype of `y` in `step`")


def test_groups_are_the_same_function_and_the_same_causes_wherever_they_come():
    log = RecompileLog()
    log.record(event())
    log.record(event(causes=[shape(3, 4)]))
    log.record(event(causes=[shape(4, 5, argument="y")]))
    log.record(event("loss", causes=[shape(3, 4)]))
    log.record(event(causes=[shape(5, 6)]))
    groups = render.grouped(log.events)
    assert [(g.latest.function, g.latest.causes[0].argument, g.numbers) for g in groups] == [
        ("step", None, "1"),
        ("step", "x", "2, 5"),  # its runs: a range would count the compilations of `y` and `loss` between
        ("step", "y", "3"),
        ("loss", "x", "4"),
    ]
    assert sum(g.count for g in groups) == log.total
    panel = RecompilePanel(log)
    order = re.findall(r'<td class="jm-n"[^>]*>([^<]+)</td>', panel.rows.value)
    assert order == ["2, 5", "4", "3", "1"], "the group compiled most recently is on top"


def test_html_shows_each_fix_once():
    html = render.html(filled_log())
    assert html.count('class="jm-advice"') == 1


def test_shapes_that_changed_together_get_one_fix_naming_them_all():
    log = RecompileLog(scope="this cell")
    log.record(event())
    log.record(event(causes=[shape(3, 2, "sample"), shape(3, 2, "state[0]"), shape(3, 2, "state[1]")]))
    log.record(event(causes=[shape(2, 4, "sample"), shape(2, 4, "state[0]"), shape(2, 4, "state[1]")]))
    text = log.to_text()
    assert text.count("→ Keep") == 1, text
    assert "Keep the shapes of `sample`, `state[0]` and `state[1]` fixed" in text
    assert render.html(log).count('class="jm-advice"') == 1
    log.record(event(causes=[shape(2, 4, "sample")]))  # one alone: its fix was said in the shared one
    assert log.to_text().count("→ Keep") == 1


def test_html_escapes_everything_the_user_controls():
    log = RecompileLog()
    evil = Cause(
        "pytree_structure", argument="params['<script>']", before="{'a': f32[1]}", after="{'<script>': f32[1]}"
    )
    log.record(event(function="<lambda>", causes=[evil], raw="TRACING CACHE MISS <b>bold</b>"))
    html = render.html(log)
    assert "<script>" not in html and "<b>bold</b>" not in html and "<lambda>" not in html
    assert "&lt;script&gt;" in html and "&lt;lambda&gt;" in html


def test_html_shows_code_from_the_causes_parts_never_from_backticks_in_the_users_values():
    """A cause's message keeps which of its parts are code; a user's value that happens to hold
    backticks stays text (a renderer that read backticks back would make `b` code here)."""
    import functools

    import jax
    import jax.numpy as jnp

    from jaxmagic.recompiles.watch import watch_recompiles

    @functools.partial(jax.jit, static_argnames="label")
    def tagged(x, label):
        return x * len(label)

    with watch_recompiles() as log:
        tagged(jnp.ones(2), label="a`b`c")
        tagged(jnp.ones(2), label="z")
    cause = log.events[1].causes[0]
    assert cause.kind == "static_value"
    assert str(cause.message) == "static argument `label` changed: 'a`b`c' → 'z'", "the text view keeps its backticks"
    html = render.html(log)
    assert "static argument <code>label</code> changed: &#x27;a`b`c&#x27; → &#x27;z&#x27;" in html
    assert "<code>b</code>" not in html
    assert "first compilation of <code>tagged</code> for (x: f32[2], label=" in html


def test_html_keeps_jaxs_own_text_and_the_persistent_cache():
    log = RecompileLog()
    log.record(event(raw="TRACING CACHE MISS at x.py:1", persistent=True))
    log.record(event(causes=[shape(3, 4)], persistent=False))
    html = render.html(log)
    assert 'title="JAX: TRACING CACHE MISS at x.py:1"' in html, "JAX's words on hover"
    assert "<details" not in html, "spelled out only where jaxmagic could not tell"
    assert '<div class="jm-persistent-hit">persistent cache</div>' in html
    assert "not in persistent cache" in html
    log.record(event(causes=[Cause("unknown")], raw="TRACING CACHE MISS at y.py:2"))
    assert '<details class="jm-raw"><summary>JAX\'s explanation</summary>' in render.html(log)


def test_html_of_an_empty_log():
    html = render.html(RecompileLog(scope="this cell"))
    assert "no compilations" in html and "hit JAX&#x27;s caches" in html
    assert 'class="jm-recompile-row"' not in html


def test_both_views_are_walked_from_the_same_blocks():
    log = filled_log()
    log.record(event("loss", causes=[Cause("unknown")], raw="TRACING CACHE MISS at a.py:1", persistent=False))
    shown = render.blocks(log)
    bundle = log._repr_mimebundle_()
    assert bundle == {"text/plain": render.text(log, shown=shown), "text/html": render.html(log, shown=shown)}
    assert bundle["text/plain"] == log.to_text() and bundle["text/html"] == log.to_html()
    text, html = bundle["text/plain"], bundle["text/html"]
    for said in ("first #2 ", "| TRACING CACHE MISS at a.py:1", "(not in the persistent cache"):
        assert said in text
    assert (
        'class="jm-first">#2 ' in html
        and "<summary>JAX's explanation</summary>" in html
        and "jm-persistent-miss" in html
    )
    panel = RecompilePanel(log)
    assert panel.rows.value.count('class="jm-recompile-row"') == html.count('class="jm-recompile-row"') == 3
    assert 'class="jm-recompile-count jm-selected"' not in panel.header.value
    panel.filter.value = "loss"
    assert 'class="jm-recompile-count jm-selected" data-function="loss"' in panel.header.value
    panel.close()


def test_long_logs_show_the_latest_rows_and_say_so():
    log = filled_log(n=render.MAX_ROWS + 30, capacity=10_000)
    html = render.html(log)
    assert compilations_in(html) == render.MAX_ROWS
    assert f"Showing the last {render.MAX_ROWS} of {render.MAX_ROWS + 30:,} compilations" in html
    assert "… 30 earlier compilations not shown" in render.text(log)


# ----------------------------------------------------------------------------------------------
# Text


def test_text_lists_headline_counts_and_one_line_per_cause():
    log = filled_log()
    log.record(
        event(
            "loss",
            causes=[
                Cause("dtype", argument="y", before="f32[3]", after="i32[3]"),
                Cause("static_value", argument="n", before="2", after="3"),
            ],
        )
    )
    text = render.text(log)
    lines = text.splitlines()
    assert lines[0].startswith("6 compilations of 2 functions (180 ms compiling); main cause: shape of `x`")
    assert lines[1].startswith("! `step` compiled 5 times: the shape of `x` changes on axis 0")
    assert lines[2] == "  step ×5 (150 ms) · loss ×1 (30 ms)"
    assert lines[4].split() == ["2–5", "step", "×4", "In", "[7]", "line", "3", "120", "ms", "shape", "of"] + [
        "`x`",
        "changed:",
        "f32[6]",
        "→",
        "f32[7]",
    ]
    assert "first #2 " in lines[5] and lines[5].endswith("shape of `x` changed: f32[3] → f32[4]")
    assert "first compilation for (x: f32[3])" in text
    assert (
        "dtype of `y` changed" in text
        and "dtype: dtype" not in text
        and "static value: static argument `n` changed: 2 → 3" in text
    )
    fixes = [line for line in lines if line.lstrip().startswith("→ ")]
    assert len(fixes) == 3  # shape, dtype and static value fixes, each once
    assert "\x1b[" not in text


def test_text_in_colour():
    text = render.text(filled_log(), color=True)
    assert codes["bold"] + "step" in text and codes["yellow"] + "! `step` compiled" in text


def test_text_shows_raw_text_for_unknown_causes():
    log = RecompileLog()
    log.record(event(causes=[Cause("unknown")], raw="TRACING CACHE MISS at a.py:1\n  something new"))
    assert "| TRACING CACHE MISS at a.py:1" in render.text(log)


# ----------------------------------------------------------------------------------------------
# The model


def test_every_kind_has_a_message_and_advice():
    for kind in CAUSE_KINDS:
        cause = Cause(kind, argument="x", before="a", after="b")
        assert cause.message and cause.advice, kind
    with pytest.raises(ValueError, match="unknown cause kind"):
        Cause("because")


def test_headline_needs_a_streak_of_the_same_cause():
    log = RecompileLog()
    log.record(event())
    log.record(event(causes=[shape(3, 4)]))
    log.record(event(causes=[Cause("dtype", argument="x", before="f32[4]", after="i32[4]")]))
    log.record(event(causes=[shape(4, 5)]))
    assert log.headlines == []
    log.record(event(causes=[shape(5, 6)]))
    log.record(event(causes=[shape(6, 7)]))
    assert log.headlines == ["`step` compiled 6 times: the shape of `x` changes on axis 0 — pad to a few bucket sizes"]


def test_function_filter_and_copy():
    log = RecompileLog()
    log.record(event("Model.apply"))
    log.record(event("partial(loss)"))
    log.record(event("other"))
    assert log.for_functions(["apply", "loss"]).counts == {"Model.apply": 1, "partial(loss)": 1}
    assert RecompileLog(["other"]).wants("other", internal=False)
    assert not RecompileLog(["other"]).wants("step", internal=False)
    assert not RecompileLog().wants("cos", internal=True)


def test_repr_and_summary():
    log = filled_log(2)
    assert repr(log) == "<RecompileLog: 2 compilations of 1 function (60 ms compiling)>"
    assert repr(log.events[1]).startswith("<RecompileEvent step · In [7] line 3 · 30.0 ms · shape of `x` changed")


# ----------------------------------------------------------------------------------------------
# The panel


def test_panel_follows_the_log():
    log = RecompileLog(scope="the session")
    panel = RecompilePanel(log)
    assert "no compilations" in panel.header.value and panel.filter.options == (ALL,)
    log.record(event())
    panel.flush()
    for i in range(3):
        log.record(event("loss", causes=[shape(i + 1, i + 2, argument="y")]))
    panel.flush()
    assert panel.rows.value.count('class="jm-recompile-row"') == 2
    assert panel.filter.options == (ALL, "loss", "step")
    order = re.findall(r'<td class="jm-n"[^>]*>([^<]+)</td>', panel.rows.value)
    assert order == ["2–4", "1"], "the newest compilation is on top, its like grouped with it"
    panel.filter.value = "step"
    assert panel.rows.value.count('class="jm-recompile-row"') == 1
    assert 'jm-recompile-count jm-selected" data-function="step"' in panel.header.value


def test_panel_updates_are_throttled_but_never_lost():
    log = RecompileLog()
    panel = RecompilePanel(log)
    log.record(event())  # the first update is immediate
    assert panel.rows.value.count('class="jm-recompile-row"') == 1
    for i in range(20):
        log.record(event(causes=[shape(i + 1, i + 2)]))
    shown_now = compilations_in(panel.rows.value)
    assert shown_now < 21, "twenty events in a burst should not redraw twenty times"
    deadline = time.monotonic() + 5
    while compilations_in(panel.rows.value) < 21 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert compilations_in(panel.rows.value) == 21, "the pending update arrived on its own"


def test_panel_clear_button_and_close():
    log = filled_log(3)
    panel = RecompilePanel(log)
    panel.clear_button.click()
    assert log.total == 0 and 'class="jm-recompile-row"' not in panel.rows.value
    panel.close()
    log.record(event())
    panel.flush()
    assert 'class="jm-recompile-row"' not in panel.rows.value, "a closed panel no longer follows the log"
    assert log._observers == []


def test_panel_preselects_a_function_and_its_copy_has_every_static_view():
    log = filled_log(2)
    log.record(event("loss"))
    panel = RecompilePanel(log, function="loss")
    assert panel.filter.value == "loss" and panel.rows.value.count('class="jm-recompile-row"') == 1
    bundle = panel._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == panel.widget.model_id
    assert "text/html" not in bundle  # the copy, in an output of its own, holds the log
    copy = panel.copy._repr_mimebundle_()
    assert copy["text/plain"].startswith("3 compilations of 2 functions") and "jm-recompile-log" in copy["text/html"]
    assert "jm-recompile-static" in copy["text/html"]
    assert set(panel.copy._repr_mimebundle_(include=["text/plain"])) == {"text/plain"}


# ----------------------------------------------------------------------------------------------
# JAX's explanations, in the words of several releases


EXPLANATIONS = {
    "types": """TRACING CACHE MISS at /tmp/t2.py:17 (<module>):
  for f defined at /tmp/t2.py:11
  all previously seen cache keys differ. For the closest previous key:
  different input types:
  * at x, now f32[4] and before f32[3]
  * at y, now i32[2] and before f32[2]""",
    "weak": """TRACING CACHE MISS at a.py:3 (<module>):
  for g defined at a.py:1
  all previously seen cache keys differ. For the closest previous key:
  different input types:
  * at lr, now f32[]{weak_type=True} and before f32[]{weak_type=False}https://docs.jax.dev/en/latest/type_promotion.html#weak-types""",
    "static": """TRACING CACHE MISS at /tmp/t.py:9 (<module>):
  for f defined at /tmp/t.py:2
  all previously seen cache keys differ. For the closest previous key:
  different input pytree:
  * at input path [0][1], now <class 'jax._src.tree_util.Static'> with pytree metadata Static(val=3) and before <class 'jax._src.tree_util.Static'> with pytree metadata Static(val=2), so the pytree node metadata does not match""",
    "dict": """TRACING CACHE MISS at a.py:48:27 (<module>):
  for <lambda> defined at a.py:47
  all previously seen cache keys differ. For the closest previous key:
  different input pytree:
  * at input path [0][0], now <class 'dict'> with 2 children and before <class 'dict'> with 1 child, so the numbers of children do not match""",
    "config": """TRACING CACHE MISS at a.py:56:43 (<module>):
  for f defined at a.py:28
  all previously seen cache keys differ. For the closest previous key:
  Tracing context doesn't match, e.g. due to config or context manager.
  * jax_enable_x64 differs: now True and before False""",
    "redefined": """TRACING CACHE MISS at a.py:51:4 (<module>):
  never seen function:
    k id=139814642610752 defined at a.py:50
  but seen another function defined on the same line; maybe the function is
  being re-defined repeatedly, preventing caching?""",
    "sharding": """TRACING CACHE MISS at e3.py:23:18 (<module>):
  for f defined at e3.py:12
  all previously seen cache keys differ. For the closest previous key:
  different input types:
  * at x, now f32[8@i]({Explicit: ('i',)}) and before f32[8]({})""",
    "future": """TRACING CACHE MISS at a.py:1 (<module>):
  for f defined at a.py:1
  the cache key grew a field this parser has never heard of""",
}


@pytest.mark.parametrize(
    "name, expected",
    [
        ("types", [("shape", "x", "f32[3]", "f32[4]"), ("dtype", "y", "f32[2]", "i32[2]")]),
        ("weak", [("weak_type", "lr", "f32[]", "weak f32[]")]),
        ("static", [("static_value", "args[1]", "2", "3")]),
        ("dict", [("pytree_structure", "args[0]", "dict with 1 child", "dict with 2 children")]),
        ("config", [("config", "jax_enable_x64", "False", "True")]),
        ("redefined", [("redefined_function", "k", None, None)]),
        ("sharding", [("sharding", "x", "f32[8]({})", "f32[8@i]({Explicit: ('i',)})")]),
        ("future", [("unknown", None, None, None)]),
    ],
)
def test_jax_explanations_become_causes(name, expected):
    causes = parse_explanation(EXPLANATIONS[name])
    assert [(c.kind, c.argument, c.before, c.after) for c in causes] == expected


def test_input_paths_become_parameter_names_with_the_calls_signature():
    import jax.numpy as jnp

    from jaxmagic.recompiles.signatures import describe_call

    def f(x, n, params):
        return x

    signature = describe_call(f, (jnp.ones(2), 3, {"w": jnp.ones(2)}), {})
    assert argument_for_path("[0][1]", signature) == "n"
    assert argument_for_path("[0][2]['w']", signature) == "params['w']"
    assert argument_for_path("[1]['mode']", signature) == "mode"
    (cause,) = parse_explanation(EXPLANATIONS["static"], signature)
    assert (cause.kind, cause.argument) == ("static_value", "n")


def test_the_answer_names_every_argument_whose_change_compiled_again():
    """Two arguments changed shape, one its dtype: the answer names all three, not the first alone."""
    first = RecompileEvent("f", None, None, 0.01, [Cause("first_call", after="(x: f32[3], y: f32[2], z: f32[1])")])
    again = RecompileEvent(
        "f",
        None,
        None,
        0.01,
        [
            Cause("shape", argument="x", before="f32[3]", after="f32[2,3]"),
            Cause("shape", argument="y", before="f32[2]", after="f32[4]"),
            Cause("dtype", argument="z", before="f32", after="i32"),
        ],
    )
    log = RecompileLog()
    log.record(first)
    log.record(again)
    said = str(render.answer(log))
    assert said.endswith("cause: shape of `x` and `y`, dtype of `z` in `f`"), said


def test_weak_types_that_changed_together_get_one_fix_naming_them_all():
    log = RecompileLog(scope="this cell")
    log.record(event())
    weak = [Cause("weak_type", argument=a, before="weak f32[]", after="f32[]") for a in ("lr", "momentum")]
    log.record(event(causes=[*weak, shape(3, 4)]))
    text = log.to_text()
    assert text.count("→ Pass") == 1 and "→ Pass `lr` and `momentum` the same kind of value every time" in text, text
    assert text.count("→ Keep the shape of `x` fixed") == 1  # one argument alone: its own fix


def test_the_copy_published_after_a_cell_holds_every_compilation_even_while_a_redraw_is_under_way(monkeypatch):
    """The cell ends while the throttled redraw runs on its timer: what is published for the saved
    notebook waits for that redraw, and never says less than the log held when the cell ended."""
    import threading

    from jaxmagic.render import panel as panels

    class Handle:
        def __init__(self):
            self.shown = []

        def update(self, obj):
            self.shown.append(obj._repr_mimebundle_()["text/html"])

    drawing = threading.Event()
    slow_rows = panels.views.rows

    def rows(*args, **kwargs):
        if threading.current_thread() is not threading.main_thread():
            drawing.set()
            time.sleep(0.5)  # the timer's redraw, on a busy machine
        return slow_rows(*args, **kwargs)

    monkeypatch.setattr(panels.views, "rows", rows)
    log = RecompileLog()
    panel = RecompilePanel(log)
    handle = Handle()
    panel.flush()  # as when the panel is displayed: the next update waits its turn
    panel.shown_as(handle)
    for i in range(3):
        log.record(event(causes=[shape(i + 1, i + 2)] if i else None))
    assert drawing.wait(5), "the throttled redraw ran on its timer"
    panel.flush()  # what runs after each cell
    panel.publish()
    assert len(handle.shown) == 1 and compilations_in(handle.shown[0]) == 3
