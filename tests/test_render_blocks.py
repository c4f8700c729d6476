"""A report is turned into blocks once, and its text and HTML views are two walks of them: they
show the same equations, the same source rows and the same nested blocks, and the HTML's code
comes from Pygments' tokens, not from its HTML read back."""

from html.parser import HTMLParser

import jax
import jax.numpy as jnp
import pytest

import jaxmagic
from jaxmagic.render import blocks as blocks_module
from jaxmagic.render import jaxpr as jaxpr_view
from jaxmagic.render.blocks import EquationRow, Listing, Nested, PlaceRow, Repeat
from jaxmagic.render.theme import escape


def layer(w, x):
    return jnp.tanh(x @ w)


def model(params, x):
    h = layer(params["w1"], x)
    h = jax.lax.cond(h.sum() > 0, jnp.sin, jnp.cos, h)
    for _ in range(4):
        h = layer(params["w2"], h)
    h = jax.lax.scan(lambda c, y: (c + y, c * 2), h[0], h)[1]
    return jnp.sum(h**2)


PARAMS = {"w1": jnp.ones((4, 8)), "w2": jnp.ones((8, 8))}
CALL = jaxmagic.Call(model, (PARAMS, jnp.ones((3, 4))), {})


class _EquationCodes(HTMLParser):
    """The visible text of each equation row (``div.jm-eqn``) of an HTML view, in order."""

    def __init__(self):
        super().__init__()
        self.codes: list[str] = []
        self._depth = 0  # open elements inside the current equation row, 0 outside one

    def handle_starttag(self, tag, attrs):
        if self._depth:
            self._depth += 1
        elif tag == "div" and "jm-eqn" in (dict(attrs).get("class") or "").split():
            self._depth = 1
            self.codes.append("")

    def handle_endtag(self, tag):
        if self._depth:
            self._depth -= 1

    def handle_data(self, data):
        if self._depth:
            self.codes[-1] += data


def _rows(rows):
    for row in rows:
        yield row
        if isinstance(row, (Nested, Repeat)):
            yield from _rows(row.rows)


@pytest.mark.parametrize(
    "options,view_options",
    [({}, {}), ({"transforms": ["grad"]}, {}), ({"show_values": True}, {}), ({}, {"max_eqns": 12})],
)
def test_text_and_html_are_two_walks_of_one_form(options, view_options):
    report = jaxmagic.trace(CALL, **options)
    shown_as = jaxmagic.JaxprView(report, **view_options) if view_options else report  # or its default view
    shown = jaxpr_view.blocks(shown_as)
    (listing,) = [b for b in shown if isinstance(b, Listing)]
    rows = list(_rows(listing.rows))
    equations = [r for r in rows if isinstance(r, EquationRow)]
    assert equations and any(isinstance(r, Nested) for r in rows)
    text = jaxpr_view.text(shown_as, shown=shown)
    html = jaxpr_view.html(shown_as, shown=shown)
    assert text == shown_as.to_text() and html == shown_as.to_html()
    # every equation a terminal shows (a repeat's copies are left out there) is in the HTML, in order
    parser = _EquationCodes()
    parser.feed(html)
    assert len(parser.codes) == len(equations)
    in_text = [r for r in _in_text(listing.rows) if isinstance(r, EquationRow)]
    text_lines = iter(text.splitlines())
    for row in in_text:
        assert any(line.strip().startswith(row.code.text) for line in text_lines), row.code.text
    for row, code in zip(equations, parser.codes, strict=True):
        assert code.startswith(row.code.text)  # whole: the stylesheet cuts it to the width
    for place in (r.place for r in rows if isinstance(r, PlaceRow)):
        assert escape(place.heading) in html
    for place in (r.place for r in _in_text(listing.rows) if isinstance(r, PlaceRow)):
        assert place.heading in text


def _in_text(rows):
    """The rows a terminal shows: a repeat's copies are left out there."""
    for row in rows:
        yield row
        if isinstance(row, Nested):
            yield from _in_text(row.rows)


def test_a_repeated_block_is_folded_in_html_and_counted_in_text():
    report = jaxmagic.trace(CALL)
    (listing,) = [b for b in jaxpr_view.blocks(report) if isinstance(b, Listing)]
    repeats = [r for r in _rows(listing.rows) if isinstance(r, Repeat)]
    assert repeats
    for repeat in repeats:
        assert f"⋯ {repeat.what}: {repeat.more} more copies left out" in report.to_text()
        assert f"<b>{repeat.what}</b>" in report.to_html()


def test_the_mime_bundle_makes_the_blocks_once(monkeypatch):
    report = jaxmagic.trace(CALL)
    made = []
    original = jaxpr_view.blocks
    monkeypatch.setattr(jaxpr_view, "blocks", lambda r: made.append(r) or original(r))
    bundle = report._repr_mimebundle_()
    assert sorted(bundle) == ["text/html", "text/plain"] and made == [report]
    assert bundle["text/plain"] == report.to_text() and bundle["text/html"] == report.to_html()
    assert report._repr_mimebundle_(include=["text/plain"]).keys() == {"text/plain"}


def test_a_variable_is_marked_from_the_lexer_s_tokens():
    (line,) = blocks_module.code_lines(["c:f32[3] = add a b 2.0:f32[]"], "jaxpr", {"a": "in: x (f32[3])"})
    marked = [(s.variable, s.binder, s.title) for s in line.spans if s.variable]
    assert marked == [("c", True, ""), ("a", False, "in: x (f32[3])"), ("b", False, "")]
    assert line.text == "c:f32[3] = add a b 2.0:f32[]"
