"""Recompiling examples in the manner of JAX's documentation (static arguments, jit in a loop,
pytrees, Python scalars, dtypes) and of Flax / Optax training loops, each checked against JAX
itself: how many times JAX says it compiled (``jax_log_compiles``) and what JAX's own explanation
(``jax_explain_cache_misses``) names as the difference."""

from __future__ import annotations

import functools
import logging

import jax
import jax.numpy as jnp
import pytest

from jaxmagic.recompiles import watch
from jaxmagic.recompiles.watch import watch_recompiles


class JaxSays(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())

    def compiled(self, name):
        return sum(1 for m in self.messages if m.startswith((f"Compiling {name} ", f"Compiling jit({name})")))


@pytest.fixture
def jax_says():
    handler, logger = JaxSays(), logging.getLogger("jax")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    jax.config.update("jax_log_compiles", True)
    watch.forget()
    try:
        yield handler
    finally:
        jax.config.update("jax_log_compiles", False)
        logger.setLevel(level)
        logger.removeHandler(handler)


def _static_flag():
    def f(x, negate):
        return -x if negate else x

    g = jax.jit(f, static_argnames=("negate",))
    g(jnp.ones(2), negate=True)
    g(jnp.ones(2), negate=False)
    return "f", "static_value", "negate"


def _partial_in_loop():
    def g(x, n):
        return x * n

    for n in (1, 2):
        jax.jit(functools.partial(g, n=n))(jnp.ones(2))
    return "partial(g)", "redefined_function", None


def _lambda_in_loop():
    def h(x, n):
        return x + n

    for n in (1, 2):
        jax.jit(lambda x, n=n: h(x, n))(jnp.ones(2))
    line = _lambda_in_loop.__code__.co_firstlineno + 5  # a lambda is named by the line it is written on
    return f"<lambda> (line {line})", "redefined_function", None


def _batch_shape():
    @jax.jit
    def loss(batch):
        return (batch**2).mean()

    for size in (8, 16):
        loss(jnp.ones((size, 4)))
    return "loss", "shape", "batch"


def _dict_gains_a_key():
    @jax.jit
    def total(params):
        return sum(v.sum() for v in params.values())

    total({"w": jnp.ones(2)})
    total({"w": jnp.ones(2), "b": jnp.ones(2)})
    return "total", "pytree_structure", "params"


def _list_then_tuple():
    @jax.jit
    def first(xs):
        return xs[0]

    first([jnp.ones(2), jnp.ones(2)])
    first((jnp.ones(2), jnp.ones(2)))
    return "first", "pytree_structure", "xs"


def _python_scalar_then_array():
    @jax.jit
    def scale(x, factor):
        return x * factor

    scale(jnp.ones(2), 2.0)
    scale(jnp.ones(2), jnp.float32(2.0))
    return "scale", "weak_type", "factor"


def _dtype_change():
    @jax.jit
    def square(x):
        return x * x

    square(jnp.ones(3, jnp.float32))
    square(jnp.ones(3, jnp.int32))
    return "square", "dtype", "x"


def _optax_steady_loop():
    optax = pytest.importorskip("optax")
    optimizer = optax.adam(1e-2)
    params = {"w": jnp.ones(3)}
    state = optimizer.init(params)

    @jax.jit
    def train_step(params, state, x):
        grads = jax.grad(lambda p: (p["w"] * x).sum())(params)
        updates, state = optimizer.update(grads, state)
        return optax.apply_updates(params, updates), state

    for _ in range(3):
        params, state = train_step(params, state, jnp.ones(3))
    return "train_step", None, None


def _linen_apply_batch():
    linen = pytest.importorskip("flax.linen")
    model = linen.Dense(2)
    variables = model.init(jax.random.key(0), jnp.ones((1, 3)))
    apply = jax.jit(model.apply)
    for size in (4, 5):
        apply(variables, jnp.ones((size, 3)))
    return "Module.apply", "shape", "inputs"  # Dense.__call__(self, inputs), which apply hands x to


CASES = [
    _static_flag,
    _partial_in_loop,
    _lambda_in_loop,
    _batch_shape,
    _dict_gains_a_key,
    _list_then_tuple,
    _python_scalar_then_array,
    _dtype_change,
    _optax_steady_loop,
    _linen_apply_batch,
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__.strip("_"))
def test_each_example_agrees_with_jax(jax_says, case):
    with watch_recompiles(explain=True) as log:
        function, kind, argument = case()
    jax_name = function.split(" (line ")[0]  # a lambda is named by its line; JAX names it <lambda>
    jax_name = jax_name.replace("partial(", "").rstrip(")").rsplit(".", 1)[-1]
    assert log.counts.get(function, 0) == jax_says.compiled(jax_name), (log.counts, jax_says.messages)
    events = [e for e in log.events if e.function == function]
    if kind is None:  # a steady loop: one compilation, nothing to explain
        assert [e.kinds for e in events] == [["first_call"]]
        return
    recompile = events[-1]
    assert recompile.kinds[0] == kind, recompile.causes
    if argument is not None:
        assert recompile.causes[0].argument.startswith(argument)
    # JAX explains only functions in its users' own files, not a library's (Linen's Module.apply)
    if kind in ("shape", "dtype", "static_value", "weak_type") and not function.startswith("Module."):
        assert recompile.raw is not None and argument in recompile.raw  # JAX names the same argument
    if kind == "pytree_structure":
        assert recompile.raw is not None and ("input path [0]" in recompile.raw or "args[0]" in recompile.raw), (
            recompile.raw
        )  # JAX: the first argument's tree (JAX 0.8 says args[0])


def test_list_then_tuple_is_said_in_words(jax_says):
    with watch_recompiles() as log:
        _list_then_tuple()
    (cause,) = log.events[-1].causes
    assert cause.message == (
        "structure of `xs` changed: [f32[2], f32[2]] → (f32[2], f32[2]) "
        "(a list before, a tuple now: JAX compiles each kind of container apart)"
    )
