"""The notebook view of %jaxpr is a viewer, written in plain HTML and CSS so that it works wherever
the output is shown (JupyterLab, Notebook 7, exported HTML): hovering a variable lights up its
definition and every use, inputs and outputs say on hover what they stand for, a filter shows one
primitive's equations, and each source row shows on hover the chain of calls that made its
equations."""

import re

import pytest

SETUP = """def layer(w, x):
    return jnp.tanh(x @ w)

def loss(params, x):
    h = layer(params["w1"], x)
    h = layer(params["w2"], h)
    return jnp.sum(h ** 2) + jnp.sum(jnp.sin(h)) * jnp.cos(h).mean()

params = {"w1": jnp.ones((4, 8)), "w2": jnp.ones((8, 8))}
x = jnp.ones((3, 4))
"""


@pytest.fixture
def shown(run):
    run(SETUP).assert_ok()
    return run("%jaxpr loss(params, x)").assert_ok()


def _spans(html: str, name: str) -> list[str]:
    return re.findall(rf'<span class="jm-tnv[^"]*" data-v="{name}"[^>]*>{name}</span>', html)


def test_every_occurrence_of_a_variable_is_marked_and_its_definition_told_apart(run, shown):
    text = run("r = %jaxpr -o loss(params, x)\nr").assert_ok().result.text  # JAX's own printer
    body = text.split("let", 1)[1]
    binder = re.search(r"([a-z]+):", body).group(1)  # the first equation's output
    uses = len(re.findall(rf"(?<![\w:]){binder}(?![\w:])", body))
    spans = _spans(shown.html, binder)
    assert uses >= 1 and len(spans) == 1 + uses
    assert sum('jm-def"' in s for s in spans) == 1  # the definition, told apart from the uses
    assert f':has([data-v="{binder}"]:hover) [data-v="{binder}"]' in shown.html


def test_inputs_say_on_hover_what_they_stand_for(shown):
    (span,) = [s for s in _spans(shown.html, "a") if "jm-def" in s]
    assert 'title="in: params[&#x27;w1&#x27;] (f32[4,8])"' in span


def test_a_filter_shows_one_primitive_s_equations(run, shown):
    report = run("r = %jaxpr -o loss(params, x)\nr").assert_ok().result
    offered = re.findall(
        r'<input type="radio" name="(jm-[0-9a-f]+)-filter" id="\1-(f\d+)"> ([a-z_]+)</label>', shown.html
    )
    assert [p for _, _, p in offered] == [name for name, _ in report.top_primitives(6)]
    listing_id, key, primitive = offered[0]
    rule = f'#{listing_id}:has(#{listing_id}-{key}:checked) .jm-eqn:not([data-primitive="{primitive}"])'
    assert rule in shown.html


def test_a_source_row_shows_on_hover_the_calls_that_made_its_equations(shown):
    rows = re.findall(
        r'<div class="jm-l jm-srcrow"[^>]*><span class="jm-src" title="([^"]*)">([^<]*)</span>', shown.html
    )
    (title,) = [t for t, heading in rows if "return jnp.tanh(x @ w)" in heading][:1]
    chain = title.split("made by:\n", 1)[1].splitlines()
    assert re.fullmatch(r"In \[\d+\] line 5 in loss: h = layer\(params\[&quot;w1&quot;\], x\)", chain[0])
    assert re.fullmatch(r"In \[\d+\] line 2 in layer: return jnp.tanh\(x @ w\)", chain[1])


def test_a_short_listing_offers_no_filter(run):
    shown = run("%jaxpr jnp.sin(jnp.ones(3))").assert_ok()
    assert 'type="radio"' not in shown.html and "data-v=" in shown.html
