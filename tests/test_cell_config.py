"""A setting the cell's own body makes on purpose (``jax.config.update``) stays, as it would in any
cell; what jaxmagic itself changes while it works is given back."""

import jax
import pytest


@pytest.fixture
def matmul_precision_restored():
    before = jax.config.values["jax_default_matmul_precision"]
    yield
    jax.config.update("jax_default_matmul_precision", before)


@pytest.mark.parametrize("magic", ["%%jaxpr", "%%jitcompare -n 2 -r 2 -q"])
def test_the_cell_body_s_own_setting_stays(run, matmul_precision_restored, magic):
    assert jax.config.values["jax_default_matmul_precision"] != "highest"
    run(
        f"{magic}\njax.config.update('jax_default_matmul_precision', 'highest')\ny = jnp.ones((2, 2))\njnp.dot(y, y)"
    ).assert_ok()
    assert jax.config.values["jax_default_matmul_precision"] == "highest", "the user's setting was undone"


def test_the_setting_reaches_the_traced_call(run, matmul_precision_restored):
    report = (
        run(
            "%%jaxpr -o\njax.config.update('jax_default_matmul_precision', 'highest')\n"
            "y = jnp.ones((2, 2))\njnp.dot(y, y)"
        )
        .assert_ok()
        .result
    )
    assert "HIGHEST" in report.text.upper()


@pytest.mark.parametrize("magic", ["%%jaxpr", "%%jitcompare -n 2 -r 2 -q"])
def test_a_setting_made_before_the_body_failed_is_given_back(run, matmul_precision_restored, magic):
    before = jax.config.values["jax_default_matmul_precision"]
    shown = run(f"{magic}\njax.config.update('jax_default_matmul_precision', 'highest')\n1 / 0\njnp.sin(jnp.ones(2))")
    assert shown.error is not None
    assert jax.config.values["jax_default_matmul_precision"] == before
