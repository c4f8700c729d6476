"""The extension loads into a real shell and %jaxpr shows a jaxpr."""

from conftest import assert_no_internals


def test_jaxpr_line_form_shows_html_with_source(run):
    run("x = jnp.ones(3)\ndef f(x, n):\n    y = jnp.sin(x) * n\n    return jnp.sum(y)").assert_ok()
    shown = run("%jaxpr f(x, 3)").assert_ok()
    assert 'data-primitive="sin"' in shown.html
    assert "y = jnp.sin(x) * n" in shown.html
    assert_no_internals(shown)
