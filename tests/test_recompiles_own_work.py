"""jaxmagic's own compilations are never the user's: whatever magics run while a watch is open, the
watch counts exactly the compilations JAX makes for the user's own calls.

The truth is JAX's own record, as the user reads it: every compilation ``jax_log_compiles`` logs
while the user's own call cells run (and none while a magic runs); what jaxmagic compiles in the
user's cell to check a fix (the doctor) is its own, and JAX logs none of it. Over a corpus of user
calls (plain ``jax.jit``, an ``nnx.jit`` train step with a model and an optimizer,
``eqx.filter_jit``, ``jit`` with a static argument, a jitted method), every magic that compiles
runs between the user's calls, each call once with its first arguments and once with arguments of
another shape.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import re
from dataclasses import dataclass

import jax
import pytest

from jaxmagic.recompiles.watch import watch_recompiles

pytest.importorskip("flax.nnx")
pytest.importorskip("equinox")
pytest.importorskip("optax")

# JAX's own name for the event it records once per XLA compilation.


@dataclass(frozen=True)
class UserCall:
    name: str
    setup: str
    first: str  # the user's call
    second: str  # the same call with arguments of another shape: JAX compiles again


CORPUS = [
    UserCall(
        "plain jax.jit",
        "@jax.jit\ndef predict(w, x):\n    return jnp.tanh(x @ w).sum()\nw = jnp.ones((3, 2))\n"
        "x = jnp.ones((4, 3))\nx_more = jnp.ones((8, 3))",
        "predict(w, x)",
        "predict(w, x_more)",
    ),
    UserCall(
        "nnx.jit train step with model and optimizer",
        "import optax\nfrom flax import nnx\n"
        "class MLP(nnx.Module):\n"
        "    def __init__(self, rngs):\n"
        "        self.hidden = nnx.Linear(3, 8, rngs=rngs)\n"
        "        self.out = nnx.Linear(8, 2, rngs=rngs)\n"
        "    def __call__(self, x):\n"
        "        return self.out(nnx.relu(self.hidden(x)))\n"
        "model = MLP(nnx.Rngs(0))\n"
        "optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)\n"
        "@nnx.jit\n"
        "def train_step(model, optimizer, x, y):\n"
        "    def loss_fn(model):\n"
        "        return ((model(x) - y) ** 2).mean()\n"
        "    loss, grads = nnx.value_and_grad(loss_fn)(model)\n"
        "    optimizer.update(model, grads)\n"
        "    return loss\n"
        "x, y = jnp.ones((4, 3)), jnp.ones((4, 2))\nx_more, y_more = jnp.ones((8, 3)), jnp.ones((8, 2))",
        "train_step(model, optimizer, x, y)",
        "train_step(model, optimizer, x_more, y_more)",
    ),
    UserCall(
        "eqx.filter_jit",
        "import equinox as eqx\n"
        "mlp = eqx.nn.MLP(3, 2, 8, 2, key=jax.random.key(0))\n"
        "@eqx.filter_jit\n"
        "def forward(model, x):\n"
        "    return jax.vmap(model)(x).sum()\n"
        "x = jnp.ones((4, 3))\nx_more = jnp.ones((8, 3))",
        "forward(mlp, x)",
        "forward(mlp, x_more)",
    ),
    UserCall(
        "jit with a static argument",
        "import functools\n"
        "@functools.partial(jax.jit, static_argnums=(1,))\n"
        "def power(x, n):\n"
        "    for _ in range(n):\n"
        "        x = x * x\n"
        "    return x.sum()\n"
        "x = jnp.ones(5)\nx_more = jnp.ones(9)",
        "power(x, 2)",
        "power(x_more, 2)",
    ),
    UserCall(
        "a jitted method",
        "import functools\n"
        "class Scaler:\n"
        "    def __init__(self, factor):\n"
        "        self.factor = factor\n"
        "    @functools.partial(jax.jit, static_argnums=(0,))\n"
        "    def apply(self, x):\n"
        "        return (x * self.factor).sum()\n"
        "scaler = Scaler(3.0)\nx = jnp.ones(5)\nx_more = jnp.ones(9)",
        "scaler.apply(x)",
        "scaler.apply(x_more)",
    ),
]

MAGICS = [
    "%jaxpr --profile 2 {call}",
    "%jaxpr --compile-time {call}",
    "%jaxpr --stage hlo {call}",
    "%jaxpr --stage stablehlo {call}",
    "%jaxpr -t grad {call}",
    "%jaxpr --values {call}",
    "%jaxpr --memory {call}",
    "%jitcompare -q -r 2 -n 2 --budget 2 {call}",
]


class JaxCompilations(logging.Handler):
    """Compilations as the user sees them: what ``jax_log_compiles`` logs ("Finished XLA
    compilation of jit(f)"), counted only while ``counting`` is on."""

    def __init__(self):
        super().__init__()
        self.counting = False
        self.names: collections.Counter[str] = collections.Counter()

    def emit(self, record: logging.LogRecord) -> None:
        compiled = re.match(r"Finished XLA compilation of (\S+)", record.getMessage())
        if compiled and self.counting:
            self.names[compiled.group(1)] += 1

    @contextlib.contextmanager
    def users_own(self):
        self.counting = True
        try:
            yield
        finally:
            self.counting = False


@pytest.fixture
def jax_compilations():
    listener, logger = JaxCompilations(), logging.getLogger("jax")
    logger.addHandler(listener)
    before = jax.config.jax_log_compiles
    jax.config.update("jax_log_compiles", True)
    try:
        yield listener
    finally:
        jax.config.update("jax_log_compiles", before)
        logger.removeHandler(listener)


@pytest.mark.parametrize("case", CORPUS, ids=[c.name for c in CORPUS])
def test_a_watch_counts_only_the_users_own_compilations_whatever_magics_run(case, run, jax_compilations):
    run(case.setup).assert_ok()
    with watch_recompiles() as mine, watch_recompiles(include_internal=True) as everything:
        for call in (case.first, case.second):
            with jax_compilations.users_own():
                run(call).assert_ok()
            for magic in MAGICS:
                outcome = run(magic.format(call=call))
                # -t grad does not apply to every call: a clear usage error is fine, a crash is not
                assert outcome.error is None or outcome.usage_error is not None, (magic, outcome.shown_traceback)
                with jax_compilations.users_own():
                    run(call).assert_ok()
    truth = sum(jax_compilations.names.values())
    assert truth == 2, jax_compilations.names  # one compilation per shape, however many magics ran
    assert everything.total == truth, everything.to_text()
    assert mine.total == truth and len(mine.counts) == 1, mine.to_text()
    assert "re-defined" not in mine.to_text()
    assert [e.kinds for e in mine.events][0] == ["first_call"]
    assert "shape" in mine.events[1].kinds, mine.to_text()


TRAIN_STEP = """
import jax, jax.numpy as jnp, optax
from flax import nnx

model = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)

@nnx.jit
def train_step(model, optimizer, x):
    loss, grads = nnx.value_and_grad(lambda m: (m(x) ** 2).mean())(model)
    optimizer.update(model, grads)
    return loss

x = jnp.ones((4, 3))
"""


def test_expect_compiles_is_not_spent_by_jaxmagics_own_work_even_when_a_report_compiles_later():
    import jaxmagic

    user: dict = {}
    exec(TRAIN_STEP, user)
    train_step, model, optimizer, x = (user[name] for name in ("train_step", "model", "optimizer", "x"))
    call = jaxmagic.resolve_call("train_step(model, optimizer, x)", user)
    with jaxmagic.expect_compiles(train_step, max=1):
        train_step(model, optimizer, x)
        report = jaxmagic.trace(call)
        jaxmagic.compare(call, repeat=2, loops=2, budget=1.0)
        assert "HloModule" in report.hlo  # lowered and compiled only now, outside the trace
        train_step(model, optimizer, x)


SCRIPT = (
    TRAIN_STEP
    + """
import jaxmagic

call = jaxmagic.resolve_call("train_step(model, optimizer, x)", globals())
for _ in range(3):
    train_step(model, optimizer, x)
    jaxmagic.trace(call).prepare(compiled=True)
    jaxmagic.compare(call, repeat=1, loops=1, budget=0.5)
print("steps", int(optimizer.step[...]))
"""
)


@pytest.mark.slow
def test_python_m_jaxmagic_watch_counts_none_of_jaxmagics_own_work_in_a_script(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]), JAX_PLATFORMS="cpu")
    done = subprocess.run(
        [sys.executable, "-m", "jaxmagic", "watch", "--max", "1", str(script)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "steps 3" in done.stdout  # the user's own three steps, none of jaxmagic's
    assert "train_step ×1" in done.stderr and "re-defined" not in done.stderr, done.stderr
