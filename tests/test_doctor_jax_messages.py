"""The parts of JAX's error messages the doctor reads. If a JAX release rewords one, the test that
fails here names it, before any diagnosis quietly stops appearing."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from jaxmagic import doctor
from jaxmagic.doctor import clues


def raised(fn, *args):
    with pytest.raises(Exception) as info:
        fn(*args)
    return info.value


def test_tracing_function_and_argument_are_named():
    def activation(x, use_relu):
        if use_relu:
            return x
        return -x

    error = raised(jax.jit(activation), jnp.ones(2), True)
    assert isinstance(error, jax.errors.TracerBoolConversionError)
    traced = clues.traced_function(str(error))
    assert traced.name == "activation" and traced.traced_for == "jit"
    assert traced.file == __file__ and traced.arguments == ("use_relu",)


def test_the_messages_the_doctor_matches_are_still_worded_the_same():
    x = jnp.ones(3)
    slicing = str(raised(jax.jit(lambda x, n: x[:n]), x, 2))
    assert any(f.text in slicing for f in doctor.PITFALLS["traced-shape"].messages if f.by(jax.__version__))
    assert "Shapes must be 1D sequences of concrete values of integer type" in str(
        raised(jax.jit(lambda n: jnp.zeros(n)), 2)
    )
    assert "unsupported format string passed to" in str(raised(jax.jit(lambda x: f"{x.sum():.2f}"), x))
    assert "Non-hashable static arguments are not supported" in str(
        raised(jax.jit(lambda x, s: x, static_argnums=1), x, [1])
    )
    assert isinstance(raised(jax.jit(lambda x: x[x > 0]), x), jax.errors.NonConcreteBooleanIndexError)
    assert isinstance(raised(jax.jit(lambda x: float(x.sum())), x), jax.errors.ConcretizationTypeError)
    assert isinstance(raised(jax.jit(lambda x, n: range(n)), x, 2), jax.errors.TracerIntegerConversionError)
    import numpy as np

    assert isinstance(raised(jax.jit(lambda x: np.sin(x)), x), jax.errors.TracerArrayConversionError)


def test_a_donated_array_says_it_was_deleted():
    step = jax.jit(lambda p: p * 2, donate_argnums=0)
    p = jnp.ones(2)
    step(p)
    # JAX's own check words it "Array has been deleted"; where the read takes JAX's compiled fast
    # path (its caches warm from earlier calls), XLA's refusal "buffer has been deleted or donated"
    said = str(raised(lambda: p + 1))
    assert "Array has been deleted" in said or "has been deleted or donated" in said.lower(), said


def test_a_leaked_tracer_names_its_function_and_the_line_that_made_it():
    kept = []

    def step(x):
        y = jnp.sin(x)
        kept.append(y)
        return y

    jax.jit(step)(jnp.ones(2))
    error = raised(lambda: kept[0] + 1)
    assert isinstance(error, jax.errors.UnexpectedTracerError)
    assert clues.traced_function(str(error)).name == "step"
    file, line = clues.leak_origin(str(error))
    assert file == __file__ and line == step.__code__.co_firstlineno + 1
