"""The details of the ``%jaxpr`` view: the static arguments jit traced with in the header, the
in/out table headed, a muted hint (with a link) on how to use the listing, orange kept for
warnings."""

import re

from jaxmagic.render import theme

SCALE = "def scale(x, n, mode='fast'):\n    return x * n if mode == 'fast' else x / n\n"


def test_the_header_says_which_static_values_were_traced(run):
    run(SCALE).assert_ok()
    shown = run("%jaxpr -o -s n,mode scale(jnp.ones(3), 3, mode='slow')").assert_ok()
    assert shown.result.static_arguments == [("n", 3), ("mode", "slow")]
    summary = re.search(r'<div class="jm-summary">.*?</div>', shown.html).group(0)
    assert (
        "n = 3 (static), mode = &#x27;slow&#x27; (static)" in summary
        or "n = 3 (static), mode = 'slow' (static)" in summary
    )
    assert "n = 3 (static), mode = 'slow' (static)" in shown.text.splitlines()[0] + shown.text


def test_a_call_without_static_arguments_says_none(run):
    run(SCALE).assert_ok()
    shown = run("%jaxpr -o scale(jnp.ones(3), jnp.ones(3))").assert_ok()
    assert shown.result.static_arguments == [] and "(static)" not in shown.html


def test_the_in_out_table_has_a_header_row(run):
    run(SCALE).assert_ok()
    html = run("%jaxpr scale(jnp.ones(3), 2.0)").assert_ok().html
    legend = re.search(r'<table class="jm-table jm-legend">(.*?)</table>', html).group(1)
    assert legend.startswith("<tr><th") and "stands for</th>" in legend and "type</th>" in legend


def test_the_listing_says_how_to_use_it_with_a_link(run):
    run(SCALE).assert_ok()
    html = run("%jaxpr scale(jnp.ones(3), 2.0)").assert_ok().html
    hint = re.search(r'<div class="jm-muted jm-viewer-hint">(.*?)</div>', html).group(1)
    assert "hover a variable to see its uses; click ▸ to unfold" in hint
    assert '<a href="https://docs.jax.dev/en/latest/jaxpr.html"' in hint
    assert html.count('class="jm-muted jm-viewer-hint"') == 1


def test_orange_marks_warnings_only():
    orange = ("warn-color", "#bf360c", "#f57c00")
    rules = [rule for rule in theme.STYLESHEET.splitlines() if any(c in rule for c in orange)]
    ordinary = [rule for rule in rules if re.search(r"\.jm-(more|muted|hint|note|summary|viewer)", rule)]
    assert not ordinary, ordinary
