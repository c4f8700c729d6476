"""Each trap the doctor knows, with a real traced function: the pitfall's id, the variable and line
it names, and the suggested fix, applied, runs (and computes what the code meant)."""

from __future__ import annotations

import numpy as np
import pytest
from doctor_cases import apply, diagnosed, line_of, run

from jaxmagic import doctor

X = np.arange(1.0, 5.0, dtype=np.float32)


# ------------------------------------------------------------------------------------------------
# python-control-flow

ACTIVATION = """
@jax.jit
def activation(x, use_relu):
    if use_relu:
        return jnp.maximum(0, x)
    else:
        return jnp.tanh(x)
"""


def test_if_on_a_traced_argument_suggests_marking_it_static():
    found, ns, error = diagnosed(ACTIVATION, "activation(x, True)", x=X)
    assert found.pitfall == "python-control-flow" and found.severity == "error"
    assert found.variable == "use_relu"
    assert found.error_type == "TracerBoolConversionError"
    assert found.where.line == line_of(ACTIVATION, "if use_relu")
    assert found.where.text == "if use_relu:"
    assert "`use_relu`" in found.explanation and "activation" in found.explanation
    assert found.static_argnames == ("use_relu",)
    assert 'static_argnames=("use_relu",)' in found.fix
    apply(found.fix, ns)
    np.testing.assert_allclose(ns["activation"](X, True), np.maximum(0, X))
    np.testing.assert_allclose(ns["activation"](X, False), np.tanh(X), rtol=1e-6)


def test_if_on_a_traced_argument_also_offers_lax_cond_which_runs():
    found, ns, _ = diagnosed(ACTIVATION, "activation(x, True)", x=X)
    ((label, code),) = [alt for alt in found.alternatives if "cond" in alt[1]]
    assert "lax.cond(use_relu" in code
    apply(code, ns)
    np.testing.assert_allclose(ns["activation"](X, True), np.maximum(0, X))


def test_if_on_an_array_condition_is_rewritten_with_where():
    source = """
    @jax.jit
    def clip_negative(x):
        if x > 0:
            y = x
        else:
            y = 0.0
        return y
    """
    found, ns, error = diagnosed(source, "clip_negative(x)", x=X - 2)
    assert isinstance(error, ValueError)  # NumPy's "truth value ... is ambiguous", under jit
    assert found.pitfall == "python-control-flow"
    assert found.variable == "x"
    assert found.where.line == line_of(source, "if x > 0")
    assert "jnp.where(x > 0, x, 0.0)" in found.fix
    assert found.static_argnames == ()
    apply(found.fix, ns)
    np.testing.assert_allclose(ns["clip_negative"](X - 2), np.where(X - 2 > 0, X - 2, 0))


def test_while_on_a_traced_argument_offers_static_and_while_loop():
    source = """
    @jax.jit
    def halve(x, n):
        while n > 0:
            x = x / 2
            n = n - 1
        return x
    """
    found, ns, _ = diagnosed(source, "halve(x, 3)", x=X)
    assert found.pitfall == "python-control-flow" and found.variable == "n"
    assert found.where.text == "while n > 0:"
    apply(found.fix, ns)
    np.testing.assert_allclose(ns["halve"](X, 3), X / 8)
    ((label, loop),) = [alt for alt in found.alternatives if "while_loop" in alt[1]]
    apply(loop, ns)
    np.testing.assert_allclose(ns["halve"](X, 3), X / 8)


def test_condition_computed_from_data_is_not_made_static():
    source = """
    @jax.jit
    def sign_of_sum(x):
        if x.sum() > 0:
            return x
        return -x
    """
    found, ns, _ = diagnosed(source, "sign_of_sum(x)", x=X)
    assert found.pitfall == "python-control-flow"
    assert found.static_argnames == () and "static_argnames" not in found.fix
    assert "x.sum() > 0" in found.fix
    apply(found.fix, ns)
    np.testing.assert_allclose(ns["sign_of_sum"](-X), X)


def test_static_argument_is_added_to_an_existing_jit_call_in_the_source():
    source = """
    def scaled(x, mode):
        if mode:
            return x * 2
        return x

    fast = jax.jit(scaled, donate_argnums=())
    """
    found, ns, _ = diagnosed(source, "fast(x, 1)", x=X)
    assert found.fix.startswith('fast = jax.jit(scaled, donate_argnums=(), static_argnames=("mode",))')
    apply(found.fix, ns)
    np.testing.assert_allclose(ns["fast"](X, 1), X * 2)


# ------------------------------------------------------------------------------------------------
# traced-shape


def test_slice_with_a_traced_length():
    source = """
    @jax.jit
    def first_points(points, num_points):
        return points[:num_points]
    """
    points = np.arange(15.0, dtype=np.float32).reshape(5, 3)
    found, ns, error = diagnosed(source, "first_points(points, 3)", points=points)
    assert isinstance(error, IndexError)
    assert found.pitfall == "traced-shape" and found.variable == "num_points"
    assert found.where.line == line_of(source, "points[:num_points]")
    assert 'static_argnames=("num_points",)' in found.fix
    apply(found.fix, ns)
    np.testing.assert_allclose(ns["first_points"](points, 3), points[:3])
    ((label, masked),) = [alt for alt in found.alternatives if "where" in alt[1]]
    apply(masked, ns)
    expected = np.where(np.arange(5)[:, None] < 3, points, 0)
    np.testing.assert_allclose(ns["first_points"](points, 3), expected)


def test_range_with_a_traced_count_offers_static_and_fori_loop():
    source = """
    @jax.jit
    def total(x, n):
        result = 0.0
        for i in range(n):
            result += x[i]
        return result
    """
    found, ns, error = diagnosed(source, "total(x, 3)", x=X)
    assert type(error).__name__ == "TracerIntegerConversionError"
    assert found.pitfall == "traced-shape" and found.variable == "n"
    assert found.where.text == "for i in range(n):"
    apply(found.fix, ns)
    assert float(ns["total"](X, 3)) == pytest.approx(6.0)
    ((label, loop),) = [alt for alt in found.alternatives if "fori_loop" in alt[1]]
    apply(loop, ns)
    assert float(ns["total"](X, 3)) == pytest.approx(6.0)


def test_array_creation_with_a_traced_size():
    source = """
    @jax.jit
    def padded(x, width):
        return jnp.concatenate([x, jnp.zeros(width)])
    """
    found, ns, _ = diagnosed(source, "padded(x, 2)", x=X)
    assert found.pitfall == "traced-shape" and found.variable == "width"
    assert "jnp.zeros(width)" in found.where.text
    apply(found.fix, ns)
    assert ns["padded"](X, 2).shape == (6,)


def test_boolean_mask_is_rewritten_to_keep_the_shape():
    source = """
    @jax.jit
    def positive_sum(x):
        return x[x > 2].sum()
    """
    found, ns, error = diagnosed(source, "positive_sum(x)", x=X)
    assert type(error).__name__ == "NonConcreteBooleanIndexError"
    assert found.pitfall == "traced-shape"
    assert "jnp.where(x > 2, x, 0)" in found.fix
    apply(found.fix, ns)
    assert float(ns["positive_sum"](X)) == pytest.approx(7.0)


def test_fixed_length_slice_at_a_traced_start_uses_dynamic_slice():
    source = """
    @jax.jit
    def window(x, start):
        return x[start:start + 2]
    """
    found, ns, _ = diagnosed(source, "window(x, 1)", x=X)
    assert found.pitfall == "traced-shape" and found.variable == "start"
    assert "length (2) is fixed" in found.explanation and "depends on" not in found.explanation
    assert "dynamic_slice" in found.fix and found.check.outcome == "same"
    apply(found.fix, ns)
    np.testing.assert_allclose(ns["window"](X, 1), X[1:3])


def test_a_range_of_fixed_length_at_a_traced_start_is_a_fixed_range_shifted():
    """JAX's issue 19433: ``jnp.arange(x[0] - 1, x[0] + 1)`` always has 2 elements; only its start is
    traced. The fix shifts a range of plain ints, not a static argument (``x`` is an array)."""
    source = """
    @jax.jit
    def around_first(x):
        return jnp.arange(x[0] - 1, x[0] + 1)
    """
    starts = np.array([3], np.int32)
    found, ns, _ = diagnosed(source, "around_first(starts)", starts=starts)
    assert found.pitfall == "traced-shape" and "length (2) is fixed" in found.explanation
    assert "`jnp.arange`" in found.explanation and "shape depends on" not in found.explanation
    assert "x[0] + jnp.arange(-1, 1)" in found.fix and found.check.outcome == "same"
    apply(found.fix, ns)
    np.testing.assert_array_equal(ns["around_first"](np.array([7], np.int32)), [6, 7])


# ------------------------------------------------------------------------------------------------
# numpy-in-jit


def test_numpy_function_on_a_traced_value():
    source = """
    @jax.jit
    def smooth(x):
        return np.sin(x) + np.cos(x) * 2
    """
    found, ns, error = diagnosed(source, "smooth(x)", x=X)
    assert type(error).__name__ == "TracerArrayConversionError"
    assert found.pitfall == "numpy-in-jit" and found.variable == "x"
    assert found.where.line == line_of(source, "np.sin")
    assert "jnp.sin(x) + jnp.cos(x) * 2" in found.fix
    apply(found.fix, ns)
    np.testing.assert_allclose(ns["smooth"](X), np.sin(X) + np.cos(X) * 2, rtol=1e-6)


def test_numpy_under_another_alias_keeps_the_users_jnp_alias():
    source = """
    import numpy as onp
    import jax.numpy as jn

    @jax.jit
    def norm(v):
        return onp.linalg.norm(v)
    """
    found, ns, _ = diagnosed(source, "norm(x)", x=X)
    assert found.pitfall == "numpy-in-jit"
    assert "jn.linalg.norm(v)" in found.fix
    apply(found.fix, ns)
    assert float(ns["norm"](X)) == pytest.approx(float(np.linalg.norm(X)), rel=1e-6)


# ------------------------------------------------------------------------------------------------
# python-scalar-conversion


def test_float_of_a_traced_value():
    source = """
    @jax.jit
    def normalise(x):
        total = float(x.sum())
        return x / total
    """
    found, ns, _ = diagnosed(source, "normalise(x)", x=X)
    assert found.pitfall == "python-scalar-conversion"
    assert found.variable == "x"
    assert found.where.line == line_of(source, "float(")
    assert "x.sum().astype(float)" in found.fix
    apply(found.fix, ns)
    np.testing.assert_allclose(ns["normalise"](X), X / X.sum(), rtol=1e-6)


def test_item_of_a_traced_value():
    source = """
    @jax.jit
    def scaled(x):
        return x * x.max().item()
    """
    found, ns, _ = diagnosed(source, "scaled(x)", x=X)
    assert found.pitfall == "python-scalar-conversion"
    assert "x * x.max()" in found.fix and ".item()" not in found.fix
    apply(found.fix, ns)
    np.testing.assert_allclose(ns["scaled"](X), X * 4)


def test_int_of_a_traced_argument_offers_static_too():
    source = """
    @jax.jit
    def repeat(x, times):
        return x * int(times)
    """
    found, ns, _ = diagnosed(source, "repeat(x, 3)", x=X)
    assert found.pitfall == "python-scalar-conversion" and found.variable == "times"
    apply(found.fix, ns)
    np.testing.assert_allclose(ns["repeat"](X, 3), X * 3)
    ((label, static),) = [alt for alt in found.alternatives if "static_argnames" in alt[1]]
    apply(static, ns)
    np.testing.assert_allclose(ns["repeat"](X, 3), X * 3)


def test_python_list_indexed_by_a_traced_index():
    source = """
    scales = [1.0, 10.0, 100.0]

    @jax.jit
    def pick(x, i):
        return x * scales[i]
    """
    found, ns, _ = diagnosed(source, "pick(x, 2)", x=X)
    assert found.pitfall == "python-scalar-conversion"
    assert "jnp.asarray(scales)[i]" in found.fix
    apply(found.fix, ns)
    np.testing.assert_allclose(ns["pick"](X, 2), X * 100)


def test_a_list_written_in_place_indexed_by_a_traced_index_is_not_called_a_size():
    source = """
    @jax.jit
    def pick(x, i):
        return [1.0, 10.0, 100.0][i] * x
    """
    found, ns, _ = diagnosed(source, "pick(x, 2)", x=X)
    assert found.pitfall == "python-scalar-conversion", found.pitfall
    assert "indexes a Python list with a traced index" in found.explanation
    assert "jnp.asarray([1.0, 10.0, 100.0])[i]" in found.fix
    apply(found.fix, ns)
    np.testing.assert_allclose(ns["pick"](X, 2), X * 100)


# ------------------------------------------------------------------------------------------------
# unhashable-static


RESIZE = """
from functools import partial

@partial(jax.jit, static_argnums=(1,))
def resize_image(image, target_size):
    return jax.image.resize(image, target_size, method='bilinear')
"""


@pytest.mark.parametrize("argument", ["jnp.array([2, 2])", "[2, 2]", "np.array([2, 2])"])
def test_unhashable_static_argument(argument):
    image = np.ones((4, 4), np.float32)
    call = f"small = resize_image(image, {argument})"
    found, ns, error = diagnosed(RESIZE, call, image=image)
    assert "Non-hashable static arguments" in str(error)
    assert found.pitfall == "unhashable-static"
    assert found.variable == "target_size" and found.function == "resize_image"
    assert found.where.text == call
    assert found.fix == "small = resize_image(image, (2, 2))"
    apply(found.fix, ns)
    assert ns["small"].shape == (2, 2)


def test_unhashable_static_argument_held_in_a_variable():
    image = np.ones((4, 4), np.float32)
    found, ns, _ = diagnosed(RESIZE, "size = [2, 2]\nsmall = resize_image(image, size)", image=image)
    assert found.pitfall == "unhashable-static" and found.variable == "target_size"
    assert "resize_image(image, tuple(size))" in found.fix
    apply(found.fix, ns)
    assert ns["small"].shape == (2, 2)


# ------------------------------------------------------------------------------------------------
# tracer-leak


def test_tracer_kept_in_a_global_list():
    source = """
    history = []

    @jax.jit
    def step(x):
        y = jnp.sin(x)
        history.append(y)
        return y * 2
    """
    found, ns, error = diagnosed(source, "step(x)\njnp.cos(history[0])", x=X)
    assert type(error).__name__ == "UnexpectedTracerError"
    assert found.pitfall == "tracer-leak"
    assert found.variable == "y" and found.function == "step"
    assert found.where.line == line_of(source, "history.append")
    assert "`history`" in found.explanation
    assert "history.append" not in found.fix and "return y * 2, y" in found.fix
    apply(found.fix, ns)
    doubled, y = ns["step"](X)
    np.testing.assert_allclose(y, np.sin(X), rtol=1e-6)


def test_tracer_kept_in_a_global_variable():
    source = """
    last = None

    @jax.jit
    def step(x):
        global last
        last = x * 3
        return x + 1
    """
    found, ns, _ = diagnosed(source, "step(x)\nlast + 1", x=X)
    assert found.pitfall == "tracer-leak" and found.variable == "last"
    assert "global last" not in found.fix
    apply(found.fix, ns)
    plus_one, last = ns["step"](X)
    np.testing.assert_allclose(last, X * 3)


# ------------------------------------------------------------------------------------------------
# donated-buffer


def test_array_read_after_it_was_donated():
    source = """
    @jax.jit
    def update(params, grads):
        return params - 0.1 * grads
    update = jax.jit(update, donate_argnums=(0,))
    """
    call = """
    params = jnp.ones(4)
    new_params = update(params, jnp.ones(4))
    total = params.sum()
    """
    found, ns, error = diagnosed(source, call)
    assert "deleted" in str(error)
    assert found.pitfall == "donated-buffer"
    assert found.variable == "params" and found.function == "update"
    assert found.where.text == "total = params.sum()"
    assert found.fix.startswith("params = update(params, jnp.ones(4))")
    ns["params"] = ns["jnp"].ones(4)
    apply(found.fix + "\ntotal = params.sum()", ns)
    assert float(ns["total"]) == pytest.approx(3.6)


DONATING_STEP = "step = jax.jit(lambda p, x: p - x, donate_argnums=(0,))"


def donated_then(read: str) -> str:
    """A call that donates ``p`` to ``step``, then ``read``, which reads ``p``."""
    return f"p = jnp.ones(3)\nq = step(p, jnp.ones(3))\n{read}"


def test_donated_array_passed_again_to_the_jitted_function(capfd):
    capfd.readouterr()
    found, ns, error = diagnosed(DONATING_STEP, donated_then("r = step(p, jnp.ones(3))"))
    assert found.pitfall == "donated-buffer" and found.variable == "p"
    assert found.where.text == "r = step(p, jnp.ones(3))"
    assert found.fix.startswith("p = step(p, jnp.ones(3))")
    # where XLA's runtime logged the error on a line of its own (stderr, which a notebook shows), and
    # only there, the card says what that line is
    logged = [line for line in capfd.readouterr().err.splitlines() if "Invalid buffer passed" in line]
    said = "XLA wrote this error to its log too" in str(found.explanation)
    assert said == bool(logged), (said, logged)
    if "Invalid buffer passed to Execute()" in str(error):  # JAX 0.10's words; 0.8 writes no log line
        assert logged and logged[0].startswith("E"), logged


def test_a_donated_array_read_in_python_mentions_no_log(capfd):
    capfd.readouterr()
    found, ns, error = diagnosed(DONATING_STEP, donated_then("r = np.asarray(p)"), np=np)
    assert found.pitfall == "donated-buffer" and "Array has been deleted" in str(error)
    err = capfd.readouterr().err
    assert "Execute()" not in err and "log" not in str(found.explanation), err


def test_a_donated_array_waited_for_gets_the_donated_card():
    """A timing loop's ``block_until_ready()`` on the donated array: XLA's own words this time."""
    found, ns, error = diagnosed(DONATING_STEP, donated_then("p.block_until_ready()"))
    assert "called on deleted or donated buffer" in str(error)
    assert found.pitfall == "donated-buffer" and found.variable == "p" and found.function == "step"
    assert found.where.text == "p.block_until_ready()"
    assert found.fix.startswith("p = step(p, jnp.ones(3))")
    ns["p"] = ns["jnp"].ones(3)
    apply(found.fix + "\np.block_until_ready()", ns)
    np.testing.assert_allclose(ns["p"], np.zeros(3))


# ------------------------------------------------------------------------------------------------
# Not a trap: the normal traceback stands


@pytest.mark.parametrize(
    "code",
    [
        "1 / 0",
        "undefined_name + 1",
        "jnp.sofmax(x)",  # a typo, not a moved name
        "jnp.dot(jnp.ones((2, 3)), jnp.ones((2, 3)))",
        "[1, 2][5]",
        "bool(np.array([1, 2]) > 0)",
        "jax.jit(lambda v: v.reshape(7))(x)",
        "raise RuntimeError('something else')",
        "raise ValueError('Array has been deleted')",
    ],
)
def test_unrelated_errors_get_no_diagnosis(code):
    error = run(code, {"jax": __import__("jax"), "jnp": __import__("jax.numpy").numpy, "np": np, "x": X})
    assert error is not None
    assert doctor.diagnose(error) is None


def test_correct_code_traces_without_warnings():
    import jax
    import jax.numpy as jnp

    def good(x, w):
        return jnp.tanh(x @ w).sum()

    w = np.ones((4, 2), np.float32)
    assert doctor.observe_trace(good, jax.make_jaxpr(good)(X, w), "") == []


def test_the_doctor_never_raises():
    class Unprintable(Exception):
        def __str__(self):
            raise RuntimeError("no")

    assert doctor.diagnose(Unprintable()) is None
    assert doctor.diagnose(TypeError("Shapes must be 1D sequences of concrete values of integer type")) is None
    assert doctor.observe_trace(object(), object(), "JitTracer(float32[])") == []
    assert doctor.observe_trace(len, None, None) == []


def test_diagnose_reads_through_jaxmagic_user_code_error():
    from jaxmagic.errors import UserCodeError

    found, _, error = diagnosed(ACTIVATION, "activation(x, True)", x=X)
    again = doctor.diagnose(UserCodeError(error, during="tracing activation"))
    assert again is not None and again.pitfall == found.pitfall


def test_without_source_the_static_fix_is_a_jit_call_that_runs():
    ns = {"jax": __import__("jax"), "jnp": __import__("jax").numpy}
    exec(compile(ACTIVATION, "<no source>", "exec"), ns)  # not in linecache: no source to read
    try:
        ns["activation"](X, True)
    except Exception as exc:
        found = doctor.diagnose(exc)
    assert found.pitfall == "python-control-flow" and found.variable == "use_relu"
    assert found.fix == 'activation = jax.jit(activation.__wrapped__, static_argnames=("use_relu",))'
    exec(found.fix, ns)
    np.testing.assert_allclose(ns["activation"](X, True), np.maximum(0, X))


SIGN = """
def signed(v, flag):
    if flag > 0:
        return v
    return -v
"""


def test_under_vmap_an_if_becomes_where_never_a_static_argument():
    found, ns, _ = diagnosed(SIGN, "jax.vmap(signed)(x, x - 2)", x=X)
    assert found.pitfall == "python-control-flow" and found.variable == "flag"
    assert found.static_argnames == () and "static" not in found.fix
    assert "jnp.where(flag > 0, v, -v)" in found.fix
    apply(found.fix, ns)
    np.testing.assert_allclose(ns["jax"].vmap(ns["signed"])(X, X - 2), np.where(X - 2 > 0, X, -X))


def test_inside_a_scan_body_there_is_no_static_fix():
    found, ns, _ = diagnosed(SIGN, "jax.lax.scan(lambda c, v: (c, signed(v, c)), 1.0, x)", x=X)
    assert found.pitfall == "python-control-flow" and found.static_argnames == ()
    assert "lax.cond(flag > 0" in found.fix
    apply(found.fix, ns)
    carry, ys = ns["jax"].lax.scan(lambda c, v: (c, ns["signed"](v, c)), 1.0, X)
    np.testing.assert_allclose(ys, X)


def test_math_function_on_a_traced_value_becomes_its_jnp_twin():
    source = """
    import math

    @jax.jit
    def scaled(x):
        return x * math.sqrt(x.sum())
    """
    found, ns, _ = diagnosed(source, "scaled(x)", x=X)
    assert found.pitfall == "python-scalar-conversion" and "jnp.sqrt(x.sum())" in found.fix
    apply(found.fix, ns)
    np.testing.assert_allclose(ns["scaled"](X), X * np.sqrt(X.sum()), rtol=1e-6)


def test_assert_on_a_traced_value_is_checked_with_checkify():
    source = """
    @jax.jit
    def positive(x):
        assert (x > 0).all(), "x must be positive"
        return jnp.log(x)
    """
    found, ns, _ = diagnosed(source, "positive(x)", x=X)
    assert found.pitfall == "python-control-flow" and found.where.text.startswith("assert")
    assert 'checkify.check((x > 0).all(), "x must be positive")' in found.fix
    definition = found.fix.split("\nerror, result")[0]
    apply(definition, ns)
    error, _ = ns["checkify"].checkify(ns["positive"])(X)
    error.throw()  # passes for positive values
    error, _ = ns["checkify"].checkify(ns["positive"])(-X)
    with pytest.raises(Exception, match="x must be positive"):
        error.throw()


def test_logging_a_formatted_traced_value():
    source = """
    import logging

    @jax.jit
    def total(x):
        loss = x.sum()
        logging.warning(f"loss {loss:.3f}")
        return loss
    """
    found, ns, error = diagnosed(source, "total(x)", x=X)
    assert found.pitfall == "formatted-tracer" and found.variable == "loss"
    assert 'jax.debug.print("loss {:.3f}", loss)' in found.fix
    apply(found.fix, ns)
    assert float(ns["total"](X)) == pytest.approx(10.0)


def test_nonzero_gets_a_fixed_size():
    source = """
    @jax.jit
    def big(x):
        return jnp.nonzero(x > 1, fill_value=-1)[0]
    """
    found, ns, _ = diagnosed(source, "big(x)", x=X)
    assert found.pitfall == "traced-shape"
    assert "size=(x > 1).size" in found.fix
    apply(found.fix, ns)
    assert ns["big"](X).tolist() == [1, 2, 3, -1]


def test_a_length_computed_from_the_data_is_masked_not_converted():
    source = """
    @jax.jit
    def head(points):
        k = int(points.sum())
        return points[:k]
    """
    found, ns, _ = diagnosed(source, "head(points)", points=np.ones((6, 2), np.float32) / 4)
    assert found.pitfall == "python-scalar-conversion" and found.variable == "points"
    assert "k = points.sum().astype(int)" in found.fix and "jnp.where(keep[:, None], points, 0)" in found.fix
    assert "cannot be compiled" in found.fix_note
    apply(found.fix, ns)
    expected = np.where(np.arange(6)[:, None] < 3, np.full((6, 2), 0.25), 0)
    np.testing.assert_allclose(ns["head"](np.ones((6, 2), np.float32) / 4), expected)


def test_a_long_function_is_shown_around_the_change_only():
    body = "\n".join(f"    x = x + {i}" for i in range(30))
    source = f"""
@jax.jit
def long_one(x, flag):
{body}
    if flag:
        return x
    return -x
"""
    found, ns, _ = diagnosed(source, "long_one(x, True)", x=X)
    lines = found.fix.splitlines()
    assert lines[:2] == ['@jax.jit(static_argnames=("flag",))', "def long_one(x, flag):"]
    assert "    ..." in lines and len(lines) < 12
    assert "    if flag:" in lines  # the line that failed stays in view
    changed = found.alternatives[0][1]
    assert "return jax.lax.cond(flag, lambda: x, lambda: -x)" in changed and "    ..." in changed.splitlines()


def test_static_names_are_merged_into_a_partial_jit_decorator():
    source = """
    from functools import partial

    @partial(jax.jit, static_argnames=("mode",))
    def scale(x, mode, n):
        if n > 2:
            return x * mode
        return x
    """
    found, ns, _ = diagnosed(source, "scale(x, 2, 3)", x=X)
    assert found.fix.startswith('@partial(jax.jit, static_argnames=("mode", "n"))')
    apply(found.fix, ns)
    np.testing.assert_allclose(ns["scale"](X, 2, 3), X * 2)


def test_jit_written_at_the_call_site_gets_the_static_argument_there():
    source = """
    def sign(x, n):
        if n > 2:
            return x
        return -x
    """
    found, ns, _ = diagnosed(source, "y = jax.jit(sign)(x, 3)", x=X)
    assert found.fix == 'y = jax.jit(sign, static_argnames=("n",))(x, 3)'
    apply(found.fix, ns)
    np.testing.assert_allclose(ns["y"], X)


# ------------------------------------------------------------------------------------------------
# key-reuse-error

REUSED_KEY = """
def noise(key):
    a = jax.random.normal(key, (3,))
    b = jax.random.uniform(key, (3,))
    return a, b
"""


def test_a_key_refused_by_debug_key_reuse_is_split_one_key_per_draw():
    import jax

    with jax.debug_key_reuse(True):
        found, ns, error = diagnosed(REUSED_KEY, "noise(jax.random.key(0))")
        assert type(error).__name__ == "KeyReuseError"
        assert found.pitfall == "key-reuse-error" and found.variable == "key"
        assert found.where.line == line_of(REUSED_KEY, "b = jax.random.uniform")
        apply(found.fix, ns)
        a, b = ns["noise"](jax.random.key(0))  # the fix runs where the check refused the original
    key_1, key_2 = jax.random.split(jax.random.key(0))
    np.testing.assert_array_equal(a, jax.random.normal(key_1, (3,)))  # one new key per draw, as written
    np.testing.assert_array_equal(b, jax.random.uniform(key_2, (3,)))


# ------------------------------------------------------------------------------------------------
# tracer-leak-vmap

VMAP_LEAK = """
kept = {}

def sketch(x):
    kept["last"] = x
    return x * 2

def run_all(xs):
    jax.vmap(sketch)(xs)
    return kept["last"] + 1
"""


def test_a_value_kept_outside_a_mapped_function_is_handed_back_by_vmap():
    found, ns, error = diagnosed(VMAP_LEAK, "run_all(x)", x=X)
    assert type(error).__name__ == "UnexpectedTracerError"
    assert found.pitfall == "tracer-leak-vmap" and found.variable == "x"
    assert found.where is not None and "sketch" in found.explanation
    apply(found.fix, ns)
    result, kept = ns["jax"].vmap(ns["sketch"])(X)  # the caller keeps what the map hands back
    np.testing.assert_allclose(result, X * 2)
    np.testing.assert_allclose(kept, X)


def test_a_mapped_function_that_returns_what_it_kept_is_not_made_to_return_it_twice():
    """JAX's issue 13022: the mapped function stores ``x`` and returns it. The fix drops the store and
    says to keep what ``vmap`` returns."""
    found, ns, _ = diagnosed(VMAP_LEAK.replace("return x * 2", "return x"), "run_all(x)", x=X)
    assert found.pitfall == "tracer-leak-vmap" and "as well as returning it" in found.explanation
    code, comment = found.fix.split("\n\n# ")
    assert 'kept["last"]' not in code and code.rstrip().endswith("return x")
    assert comment.startswith("the caller keeps what it returns:  x = jax.vmap(sketch)(")
    apply(found.fix, ns)
    np.testing.assert_allclose(ns["jax"].vmap(ns["sketch"])(X), X)
