"""The user's objects are as they were after every magic, under every wrapper.

Every case of the corpus sets up a realistic training or inference call (Flax NNX train steps,
also through ``nnx.cached_partial``, ``functools.partial``, a closure and a bound method; an Equinox
model with its Optax state; a Linen ``TrainState``; plain JAX with a donated argument). Every magic
runs on the call, and everything the user's names reach (arrays, NNX state, optimizer steps,
closures' cells, partials' arguments) is compared before and after (``user_state``): nothing may
change, not even an object swapped for an equal copy. ``%%recompiles`` runs the cell as any cell,
so after it the state must be what the same cell leaves without the magic.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from outcomes import Snapshot
from user_state import changes, snapshot

pytest.importorskip("flax.nnx")
pytest.importorskip("equinox")
pytest.importorskip("optax")


@dataclass(frozen=True)
class Case:
    name: str
    setup: str
    call: str
    scalar_output: bool = False  # -t grad applies


NNX_TRAIN = """
import optax
from flax import nnx
class MLP(nnx.Module):
    def __init__(self, rngs):
        self.hidden = nnx.Linear(2, 8, rngs=rngs)
        self.out = nnx.Linear(8, 3, rngs=rngs)
    def __call__(self, x):
        return self.out(nnx.relu(self.hidden(x)))
model = MLP(nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adamw(1e-3), wrt=nnx.Param)
def loss_fn(model, x, y):
    return jnp.mean((model(x) - y) ** 2)
x, y = jnp.ones((10, 2)), jnp.ones((10, 3))
"""

NNX_JIT_STEP = """
@nnx.jit
def train_step(model, optimizer, x, y):
    loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
    optimizer.update(model, grads)
    return loss
for _ in range(10):
    train_step(model, optimizer, x, y)
"""

EQUINOX_STEP = """
import equinox as eqx, optax
model = eqx.nn.MLP(2, 3, 8, 2, key=jax.random.key(0))
optim = optax.adam(1e-3)
opt_state = optim.init(eqx.filter(model, eqx.is_array))
x, y = jnp.ones((10, 2)), jnp.ones((10, 3))
{decorator}
def make_step(model, opt_state, x, y):
    def loss(model):
        return jnp.mean((jax.vmap(model)(x) - y) ** 2)
    value, grads = eqx.filter_value_and_grad(loss)(model)
    updates, opt_state = optim.update(grads, opt_state, eqx.filter(model, eqx.is_array))
    return eqx.apply_updates(model, updates), opt_state, value
"""

DONATING = """
import functools
@functools.partial(jax.jit, donate_argnums=(0,))
def sgd(params, grads):
    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)
params = {"w": jnp.ones((3, 2)), "b": jnp.zeros(2)}
grads = {"w": jnp.full((3, 2), 0.5), "b": jnp.ones(2)}
apply_grads = functools.partial(sgd, params)
"""

CORPUS = [
    Case("nnx.jit train step", NNX_TRAIN + NNX_JIT_STEP, "train_step(model, optimizer, x, y)"),
    Case(
        "nnx.cached_partial train step",
        NNX_TRAIN
        + """
@nnx.jit(graph_updates=True, graph=True)
def train_step(model, optimizer, x, y):
    loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
    optimizer.update(model, grads)
    return loss
with nnx.set_graph_mode(True):
    with nnx.set_graph_updates(True):
        cached_train_step = nnx.cached_partial(train_step, model, optimizer)
for _ in range(10):
    cached_train_step(x, y)
""",
        "cached_train_step(x, y)",
    ),
    Case(
        "functools.partial of an nnx.jit train step",
        NNX_TRAIN + NNX_JIT_STEP + "import functools\nstep = functools.partial(train_step, model, optimizer)\n",
        "step(x, y)",
    ),
    Case(
        "a plain train step closing over a model and optimizer",
        NNX_TRAIN
        + """
def make_step(model, optimizer):
    def step(x, y):
        loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
        optimizer.update(model, grads)
        return loss
    return step
step = make_step(model, optimizer)
""",
        "step(x, y)",
    ),
    Case(
        "a plain train step changing a global model and optimizer",
        NNX_TRAIN
        + """
def global_step(x, y):
    loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
    optimizer.update(model, grads)
    return loss
""",
        "global_step(x, y)",
    ),
    Case("an NNX module called as a bound method", NNX_TRAIN, "model.__call__(x)"),
    Case(
        "a loss closing over an NNX model",
        NNX_TRAIN + "def make_loss(model):\n    def loss(x):\n        return loss_fn(model, x, y)\n    return loss\n"
        "loss = make_loss(model)\n",
        "loss(x)",
        scalar_output=True,
    ),
    Case(
        "Equinox model and Optax state",
        EQUINOX_STEP.format(decorator="@eqx.filter_jit") + "model, opt_state, _ = make_step(model, opt_state, x, y)\n",
        "make_step(model, opt_state, x, y)",
    ),
    Case(
        "Equinox step donating its model and optimizer state",
        EQUINOX_STEP.format(decorator='@eqx.filter_jit(donate="all")'),
        "make_step(model, opt_state, x, y)",
    ),
    Case(
        "nnx.jit train step donating the model and optimizer",
        NNX_TRAIN
        + """
@nnx.jit(donate_argnums=(0, 1))
def train_step(model, optimizer, x, y):
    loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
    optimizer.update(model, grads)
    return loss
train_step(model, optimizer, x, y)
""",
        "train_step(model, optimizer, x, y)",
    ),
    Case(
        "Linen TrainState",
        """
import optax
import flax.linen as nn
from flax.training import train_state
class Dense(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(3)(x)
net = Dense()
x, y = jnp.ones((10, 2)), jnp.ones((10, 3))
state = train_state.TrainState.create(
    apply_fn=net.apply, params=net.init(jax.random.key(0), x)["params"], tx=optax.sgd(0.1))
import functools
@functools.partial(jax.jit, donate_argnums=(0,))
def train_step(state, x, y):
    def loss(params):
        return jnp.mean((state.apply_fn({"params": params}, x) - y) ** 2)
    grads = jax.grad(loss)(state.params)
    return state.apply_gradients(grads=grads)
state = train_step(state, x, y)
""",
        "train_step(state, x, y)",
    ),
    Case(
        "plain JAX with donate_argnums",
        DONATING,
        "sgd(params, grads)",
    ),
    Case(
        "a partial holding a donated argument",
        DONATING,
        "apply_grads(grads)",
    ),
]

MAGICS = [
    "%jaxpr {call}",
    "%jaxpr --stage stablehlo {call}",
    "%jaxpr --stage hlo {call}",
    "%jaxpr --cost {call}",
    "%jaxpr --profile 2 {call}",
    "%jaxpr --compile-time {call}",
    "%jaxpr --values {call}",
    "%jaxpr --memory {call}",
    "%jaxpr -t grad {call}",
    "%jaxpr -t vmap {call}",
    "%jitcompare -q -r 2 -n 2 --budget 2 {call}",
]


def _users_names(ip, before: set) -> dict:
    return {name: ip.user_ns[name] for name in sorted(set(ip.user_ns) - before) if not name.startswith("_")}


@pytest.mark.parametrize("magic", MAGICS)
@pytest.mark.parametrize("case", CORPUS, ids=[c.name for c in CORPUS])
def test_every_magic_leaves_what_the_call_reaches_as_it_was(ip, run, case, magic):
    names_before = set(ip.user_ns)
    run(case.setup).assert_ok()
    roots = _users_names(ip, names_before)
    before, namespace = snapshot(roots), Snapshot(ip)
    outcome = run(magic.format(call=case.call))
    # a transform that does not apply, or a function JAX cannot jit, is a clear error; never a crash
    if outcome.error is not None:
        assert outcome.usage_error is not None or "MagicFailure" in type(outcome.error).__name__, (
            outcome.shown_traceback
        )
    assert changes(before, snapshot(roots)) == [], outcome.shown_traceback[-2000:]
    namespace.assert_kept()  # no name added or rebound, JAX's configuration as it was


@pytest.mark.parametrize("case", CORPUS, ids=[c.name for c in CORPUS])
def test_a_recompiles_cell_leaves_the_state_the_cell_itself_leaves(ip, run, case):
    names_before = set(ip.user_ns)
    run(case.setup).assert_ok()
    run(f"_ = {case.call}").assert_ok()
    plain = snapshot(_users_names(ip, names_before))
    run(case.setup).assert_ok()
    run(f"%%recompiles\n_ = {case.call}").assert_ok()
    watched = snapshot(_users_names(ip, names_before))
    assert changes(plain, watched, identities=False, arrays_only=True) == []


def _case(name: str) -> Case:
    return next(case for case in CORPUS if case.name == name)


def test_an_nnx_cached_partial_train_step_is_traced_and_timed_as_the_call_it_stands_for(run):
    run(_case("nnx.cached_partial train step").setup).assert_ok()
    assert run("int(optimizer.step[...])").assert_ok().result == 10
    report = run("%jaxpr -o cached_train_step(x, y)").assert_ok().result
    names = report.input_names
    assert names[0].startswith("model.") and "optimizer.step" in names and names[-2:] == ["x", "y"], names
    # eager's first call compiles each NNX operation on its own (about 1.3 s on an idle 2-core machine,
    # several on a busy one): a budget with room for it, since eager on copies is what is checked here
    comparison = run("%jitcompare -q -o -r 2 -n 2 --budget 10 cached_train_step(x, y)").assert_ok().result
    assert list(comparison.modes) == ["eager", "jit"]
    assert any("copies of `model` and `optimizer`" in note for note in comparison.notes), comparison.notes
    assert run("int(optimizer.step[...])").assert_ok().result == 10
    assert float(run("cached_train_step(x, y)").assert_ok().result) > 0  # the user's own step still runs
    assert run("int(optimizer.step[...])").assert_ok().result == 11


def test_a_train_step_reading_a_global_model_is_timed_on_copies_and_says_so(run):
    run(_case("a plain train step changing a global model and optimizer").setup).assert_ok()
    outcome = run("%jitcompare -q -o -r 2 -n 2 --budget 2 --modes eager global_step(x, y)").assert_ok()
    assert any("copies of `model` and `optimizer`" in note for note in outcome.result.notes), outcome.result.notes
    assert run("int(optimizer.step[...])").assert_ok().result == 0
