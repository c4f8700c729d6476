"""The diagnosis card (HTML) and its terminal text: structure, escaping, highlighting."""

from __future__ import annotations

import re

import pytest
from pygments.console import codes

from jaxmagic.doctor import PITFALLS, Diagnosis
from jaxmagic.tracing.sources import SourceLine
from jaxmagic.words import code, place, say

WHERE = SourceLine(file="<cell>", line=3, function="f", text="if use_relu:  # <script>", cell="In [4]")


def sample(**changes) -> Diagnosis:
    fields = dict(
        pitfall="python-control-flow",
        explanation=say("{} is traced <b>here</b> & now, at {}.", code("use_relu"), place(WHERE)),
        fix='@jax.jit(static_argnames=("use_relu",))\ndef f(x, use_relu):\n    return x',
        fix_note=say("Mark {} static.", code("use_relu")),
        where=WHERE,
        variable="use_relu",
        error_type="TracerBoolConversionError",
        alternatives=((say("Or use {}:", code("jax.lax.cond")), "jax.lax.cond(p, a, b)"), ("Or stop doing that.", "")),
        reference="https://docs.jax.dev/en/latest/errors.html#jax.errors.TracerBoolConversionError",
    )
    fields.update(changes)
    return Diagnosis(**fields)


def test_html_card_has_the_pitfall_the_line_the_explanation_and_the_fix():
    html = sample().to_html()
    assert html.startswith(
        '<div class="jaxmagic jm-diagnosis" data-pitfall="python-control-flow" data-severity="error">'
    )
    assert "<style>" in html and 'class="jm-card jm-error"' in html
    assert "In [4]" in html and PITFALLS["python-control-flow"].title.replace("/", "/") in html
    assert "<code>use_relu</code> is traced" in html  # code parts become code
    assert 'title="&lt;cell&gt;:3">In [4] line 3</span>' in html  # a place shows its label, the file in a tooltip
    assert html.count('<pre class="jm-block jm-python">') == 2  # the fix and one alternative with code
    assert 'class="jm-tk"' in html or 'class="jm-tnd"' in html  # Python highlighted by Pygments
    assert "Or stop doing that." in html
    assert 'href="https://docs.jax.dev/' in html and "docs/pitfalls.md#python-control-flow" in html


def test_html_escapes_everything_from_user_code():
    html = sample(fix="x = '<script>alert(1)</script>'").to_html()
    assert "<script>" not in html
    assert "&lt;b&gt;here&lt;/b&gt; &amp; now" in html
    assert "# &lt;script&gt;" in html


def test_warning_card_is_marked_as_a_warning():
    html = sample(pitfall="baked-global").to_html()
    assert 'data-severity="warning"' in html and 'class="jm-card jm-warning"' in html


def test_text_has_the_same_parts_in_order_and_no_colour_by_default():
    text = sample().to_text()
    parts = [
        "jaxmagic doctor · error: Python if / while",
        "In [4] line 3: if use_relu:",
        "`use_relu` is traced",
        "Fix: Mark `use_relu` static.",
        '    @jax.jit(static_argnames=("use_relu",))',
        "Or use `jax.lax.cond`:",
        "    jax.lax.cond(p, a, b)",
        "docs/pitfalls.md#python-control-flow",
    ]
    positions = [text.index(p) for p in parts]
    assert positions == sorted(positions)
    assert "\x1b[" not in text


def test_text_in_colour_highlights_the_fix():
    text = sample().to_text(color=True)
    assert codes["bold"] in text and "\x1b[38;5;" in text
    assert re.sub(r"\x1b\[[0-9;]*m", "", text) == sample().to_text()


def test_mimebundle_has_both_views_and_honours_include():
    diagnosis = sample()
    assert sorted(diagnosis._repr_mimebundle_()) == ["text/html", "text/plain"]
    assert list(diagnosis._repr_mimebundle_(include=["text/plain"])) == ["text/plain"]
    assert repr(diagnosis) == "<Diagnosis python-control-flow at In [4] line 3: Python if / while on a traced value>"


def test_a_diagnosis_without_a_line_or_alternatives_still_renders():
    bare = Diagnosis("donated-buffer", explanation="`p` was donated.", fix="p = step(p)")
    assert 'class="jm-where"' not in bare.to_html() and "p = step(p)" in bare.to_text()


@pytest.mark.parametrize("pitfall", sorted(PITFALLS))
def test_every_pitfall_has_a_title_and_a_severity(pitfall):
    known = PITFALLS[pitfall]
    assert known.title and known.severity in ("error", "warning")
    assert Diagnosis(pitfall, explanation="", fix="").severity == known.severity


def test_a_fix_in_words_alone_still_shows_its_note():
    shown = sample(fix="", fix_note=say("Use {} here.", code("jax.lax.while_loop")), alternatives=())
    assert "<code>jax.lax.while_loop</code>" in shown.to_html() and '<pre class="jm-block' not in shown.to_html()
    assert "Fix: Use `jax.lax.while_loop` here." in shown.to_text()
