"""Each private JAX API jaxmagic relies on, checked directly: these fail loudly when JAX changes one."""

import functools

import jax
import jax.numpy as jnp

from jaxmagic import _jax_private


def test_jit_options_reads_static_and_donated_arguments():
    @functools.partial(jax.jit, static_argnums=(1,), static_argnames=("mode",), donate_argnums=(0,))
    def f(x, n, mode="a"):
        return x * n

    options = _jax_private.jit_options(f)
    assert options.static_argnums == (1,)
    assert set(options.static_argnames) == {"mode", "n"} or options.static_argnames == ("mode",)
    assert options.donate_argnums == (0,)
    assert "x" in options.donate_argnames


def test_is_jitted_tells_a_jitted_function_from_a_plain_one():
    def plain(x):
        return x

    assert _jax_private.is_jitted(jax.jit(plain))
    assert not _jax_private.is_jitted(plain)
    assert jax.jit(plain).__wrapped__ is plain


def test_traceback_frames_of_an_equation_reach_this_file():
    def f(x):
        return jnp.sin(x)

    eqn = jax.make_jaxpr(f)(jnp.ones(2)).jaxpr.eqns[0]
    frames = list(_jax_private.traceback_frames(eqn.source_info))
    assert frames, "JAX recorded no traceback for the equation"
    assert any(file == __file__ and function.endswith("f") for file, _, function in frames)
    assert all(isinstance(line, int) for _, line, _ in frames)


def test_is_jax_internal_file():
    assert _jax_private.is_jax_internal_file(jax.numpy.__file__)
    assert not _jax_private.is_jax_internal_file(__file__)
