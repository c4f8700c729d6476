"""Everything user-controlled that reaches HTML or the live panel is escaped: function names,
argument names, static values, string arguments, docstrings, source lines and comments, warnings,
and JAX's own messages show as text, never as markup.

Each view is parsed as a browser would read it: no element or event handler may come from the
user's strings, and each string must be there as text (so the check is not passing vacuously).
"""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

IMG = "<img src=x onerror=alert(1)>"
SCRIPT = "</details><script>alert(2)</script>"
NAME = "<img src=x onerror=alert(3)>"  # a function's __name__ / __qualname__
DANGEROUS = {"img", "script", "iframe", "object", "embed", "form", "input", "base", "meta", "link"}

SETUP = f'''
import warnings
import jax, jax.numpy as jnp
v = jnp.ones(3)
IMG = {IMG!r}
SCRIPT = {SCRIPT!r}

def step(x, mode):  # {SCRIPT}
    """{SCRIPT} in a docstring"""
    y = jnp.sin(x)  # {IMG}
    return y * len(mode)

step.__qualname__ = step.__name__ = {NAME!r}
jstep = jax.jit(step, static_argnames="mode")

def keywords(**kwargs):
    return sum(kwargs.values())

def warns(x):
    warnings.warn({SCRIPT!r})
    return x * 2

def chatty(x):
    print({SCRIPT!r})
    return x + 1

def branchy(x):  # {SCRIPT}
    """{IMG} in a docstring"""
    if x.sum() > 0:  # {IMG}
        return x
    return -x
'''
NAMES = {"warnings", "jax", "jnp", "v", "IMG", "SCRIPT", "step", "jstep", "keywords", "warns", "chatty", "branchy"}


class Markup(HTMLParser):
    """What a browser builds from an HTML string: its elements, their attributes, and the text."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.handlers: list[tuple[str, str]] = []
        self.pieces: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for name, value in attrs:
            if name.startswith("on") or (name in ("href", "src") and not (value or "").startswith("https://")):
                self.handlers.append((tag, name))
            if value:
                self.pieces.append(value)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)

    def handle_data(self, data):
        self.pieces.append(data)

    @property
    def text(self) -> str:
        return "\n".join(self.pieces)


def assert_inert(html: str, *shown_as_text: str) -> Markup:
    """No element, handler or link from the user's strings (jaxmagic's own links go to https pages);
    each of ``shown_as_text`` is there as text."""
    assert html, "nothing was shown as HTML"
    markup = Markup(html)
    assert not DANGEROUS & set(markup.tags), sorted(DANGEROUS & set(markup.tags))
    assert markup.handlers == []
    assert "<script" not in html.lower() and "<img" not in html.lower()
    for text in shown_as_text:
        assert text in markup.text, f"{text!r} is not shown as text"
    return markup


@pytest.fixture(scope="module")
def hostile(ip):
    saved = {name: ip.user_ns[name] for name in NAMES if name in ip.user_ns}
    ip.run_cell(SETUP, store_history=True)
    yield
    for name in NAMES:
        ip.user_ns.pop(name, None)
    ip.user_ns.update(saved)  # what the session had before (jax, jnp, ...) stays for the other tests


QUICK = "-n 1 -r 1 --budget 0.1"


def test_the_parser_sees_markup_where_there_is_some():
    markup = Markup(f"<div>{IMG}{SCRIPT}</div>")
    assert {"img", "script"} <= set(markup.tags) and markup.handlers == [("img", "src"), ("img", "onerror")]


@pytest.mark.parametrize("options", ["", "--stage stablehlo", "--stage hlo --cost", "-t grad"])
def test_jaxpr_view_names_and_source_lines(run, hostile, options):
    call = "-s mode step(v, 'ab')" if options != "-t grad" else "-s mode step(v, 'ab')"
    shown = run(f"%jaxpr {options} {call}")
    if options == "-t grad":  # step's output is not a scalar: the refusal is text, never HTML
        assert shown.usage_error is not None and shown.html == ""
        return
    shown.assert_ok()
    expected = [NAME] if options else [NAME, IMG]  # the source comments show beside the jaxpr's equations
    assert_inert(shown.html, *expected)


def test_jaxpr_view_argument_names_from_keywords(run, hostile):
    shown = run("%jaxpr keywords(**{IMG: v, SCRIPT: v})").assert_ok()
    assert_inert(shown.html, "keywords")


def test_jitcompare_view_call_text_static_values_and_warnings(run, hostile):
    shown = run(f"%jitcompare {QUICK} -s mode step(v, {IMG!r})").assert_ok()
    assert_inert(shown.html, f"step(v, {IMG!r})")
    shown = run(f"%jitcompare {QUICK} warns(v)").assert_ok()
    assert_inert(shown.html, SCRIPT)  # the warning the user's function raised, quoted in the report


def test_recompile_table_static_values_names_call_sites_and_jax_explanations(run, hostile):
    shown = run(f"%%recompiles --explain\njstep(v, IMG)\njstep(v, SCRIPT)  # {SCRIPT}\njstep(v, 'plain');").assert_ok()
    markup = assert_inert(shown.html, NAME, IMG, SCRIPT)
    assert markup.tags.count("tr") >= 3
    import jax

    if tuple(int(p) for p in jax.__version__.split(".")[:2]) >= (0, 9):  # JAX 0.8 words its explanation otherwise
        assert f"Static(val={SCRIPT!r})" in markup.text  # JAX's own explanation, quoting the value, is text too


def test_doctor_card_for_an_ordinary_cell_quotes_the_users_line_and_fix(run, hostile):
    shown = run("jax.jit(branchy)(v)")
    assert shown.error is not None
    card = next(o["text/html"] for o in shown.outputs if "data-pitfall" in o.get("text/html", ""))
    # the line with its comment; the fix is the function rewritten, its docstring and comments included
    assert_inert(card, IMG, SCRIPT, f"{IMG} in a docstring")


def test_doctor_card_under_a_magic_and_trace_warnings(run, hostile):
    shown = run("%jaxpr branchy(v)")
    assert shown.error is not None
    assert_inert(shown.html, IMG)
    shown = run("%jaxpr chatty(v)").assert_ok()
    warnings = [o["text/html"] for o in shown.outputs if "data-pitfall" in o.get("text/html", "")]
    assert warnings, "the doctor's print warning was expected"
    for card in warnings:
        assert_inert(card)


def test_live_panel_widget_values(ip, run, hostile):
    from jaxmagic.magics.recompiles import _SESSIONS

    run("%recompiles on").assert_ok()
    try:
        run("jstep(v, IMG + '1')\njstep(v, SCRIPT + '1')").assert_ok()
        panel = _SESSIONS[ip].panels[-1]
        panel.flush()
        panel.refresh()
        assert_inert(panel.header.value, NAME)
        assert_inert(panel.rows.value, NAME, IMG + "1", SCRIPT + "1")
        assert NAME in panel.filter.options  # a dropdown option's label is text by construction
        bundle = panel.copy._repr_mimebundle_()  # the static copy shown beside the live panel
        assert_inert(bundle["text/html"], NAME)
    finally:
        run("%recompiles off")


def test_error_messages_that_quote_the_user_are_text(run, hostile):
    shown = run(f"%jaxpr -s mode step(v, [{IMG!r}])")
    assert shown.usage_error is not None and IMG in shown.usage_error
    assert shown.html == ""  # a UsageError is shown as text by IPython, never as HTML
