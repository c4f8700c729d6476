"""Recompiling code as JAX, Flax (NNX and Linen), Equinox, Optax, Diffrax, Orbax, chex and
jaxtyping users write it, as data: each case is a library, a name and the source of a small
program that calls a jitted function several times. ``tests/test_recompiles_causes_corpus.py``
runs each one under a watch and checks what jaxmagic says against JAX's own explanation."""

from __future__ import annotations

from dataclasses import dataclass

from tests.corpus.optax import LBFGS


@dataclass(frozen=True)
class RecompileCase:
    library: str
    name: str
    source: str
    needs: tuple[str, ...] = ()  # modules the case imports (skipped where one is missing)
    before: str = ""  # run before anything watches: what JAX compiled earlier in the session


CASES = [
    # ---------------------------------------------------------------- plain jax.jit
    RecompileCase(
        "jax",
        "static flag",
        """
def f(x, negate):
    return -x if negate else x
g = jax.jit(f, static_argnames=("negate",))
x = jnp.ones(2)
g(x, negate=True)
g(x, negate=False)
""",
    ),
    RecompileCase(
        "jax",
        "static number of steps",
        """
def power(x, n):
    for _ in range(n):
        x = x * x
    return x
power = jax.jit(power, static_argnums=1)
x = jnp.ones(3)
for n in (2, 3):
    power(x, n)
""",
    ),
    RecompileCase(
        "jax",
        "batch shape",
        """
@jax.jit
def loss(batch):
    return (batch ** 2).mean()
for size in (8, 16):
    batch = jnp.ones((size, 4))
    loss(batch)
""",
    ),
    RecompileCase(
        "jax",
        "dtype",
        """
@jax.jit
def square(x):
    return x * x
square(jnp.ones(3, jnp.float32))
square(jnp.ones(3, jnp.int32))
""",
    ),
    RecompileCase(
        "jax",
        "python scalar then array",
        """
@jax.jit
def scale(x, factor):
    return x * factor
x = jnp.ones(2)
scale(x, 2.0)
scale(x, jnp.float32(2.0))
""",
    ),
    RecompileCase(
        "jax",
        "dict gains a key",
        """
@jax.jit
def total(params):
    return sum(v.sum() for v in params.values())
params = {"w": jnp.ones(2)}
total(params)
params = {"w": jnp.ones(2), "b": jnp.ones(2)}
total(params)
""",
    ),
    RecompileCase(
        "jax",
        "jit inside the loop",
        """
def h(x, n):
    return x + n
for n in (1, 2):
    jax.jit(lambda x, n=n: h(x, n))(jnp.ones(2))
""",
    ),
    RecompileCase(
        "jax",
        "committed by device_put",
        """
@jax.jit
def neg(x):
    return -x
x = jnp.ones(5)
neg(x)
x = jax.device_put(x, jax.devices()[0])
neg(x)
""",
    ),
    RecompileCase(
        "jax",
        "matmul precision context",
        """
@jax.jit
def prod(a, b):
    return a @ b
a = jnp.ones((2, 2))
prod(a, a)
with jax.default_matmul_precision("highest"):
    prod(a, a)
""",
    ),
    RecompileCase(
        "jax",
        "vmapped function, new batch",
        """
def distance(a, b):
    return jnp.sqrt(((a - b) ** 2).sum())
pairwise = jax.jit(jax.vmap(distance))
for size in (3, 5):
    points = jnp.ones((size, 2))
    pairwise(points, points)
""",
    ),
    RecompileCase(
        "jax",
        "varargs",
        """
@jax.jit
def stack_all(*arrays):
    return jnp.stack(arrays)
stack_all(jnp.ones(2), jnp.ones(2))
stack_all(jnp.ones(2), jnp.ones(3).astype(jnp.int32)[:2])
""",
    ),
    RecompileCase(
        "jax",
        "partial binding a new value",
        """
def scaled(x, a):
    return x * a
for a in (1.0, 2.0):
    h = jax.jit(functools.partial(scaled, a=a))
    h(jnp.ones(2))
""",
        needs=("functools",),
    ),
    RecompileCase(
        "jax",
        "static field of a registered dataclass",
        """
@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Config:
    scale: jax.Array
    mode: str = dataclasses.field(metadata=dict(static=True))
@jax.jit
def apply(cfg, x):
    return x * cfg.scale if cfg.mode == "mul" else x + cfg.scale
x = jnp.ones(3)
apply(Config(jnp.float32(2), "mul"), x)
apply(Config(jnp.float32(2), "add"), x)
""",
        needs=("dataclasses",),
    ),
    RecompileCase(
        "jax",
        "closure returned by a factory",
        """
def make_step(lr):
    @jax.jit
    def step(w, g):
        return w - lr * g
    return step
w = jnp.ones(3)
for lr in (0.1, 0.01):
    step = make_step(lr)
    step(w, w)
""",
    ),
    RecompileCase(
        "jax",
        "closure made again alike",
        """
def make_loss(scale):
    def loss(x):
        return (x * scale).sum()
    return jax.jit(loss)
x = jnp.ones(3)
for _ in range(2):
    loss = make_loss(2.0)
    loss(x)
""",
    ),
    RecompileCase(
        "jax",
        "lambda with a default, made in a loop",
        """
def h(x, n):
    return x + n
for n in (1, 2):
    jax.jit(lambda x, k=n: h(x, k))(jnp.ones(2))
""",
    ),
    RecompileCase(
        "jax",
        "vmap wrapper with another in_axes",
        """
def pair(a, b):
    return a * b
x = jnp.ones((2, 3))
for axis in (0, 1):
    jax.jit(jax.vmap(pair, in_axes=(axis, axis)))(x, x)
""",
    ),
    RecompileCase(
        "nnx",
        "train then eval",
        """
class Net(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(3, 3, rngs=rngs)
        self.dropout = nnx.Dropout(0.5, rngs=rngs)
    def __call__(self, x):
        return self.dropout(self.linear(x))
@nnx.jit
def forward(model, x):
    return model(x)
model = Net(nnx.Rngs(0))
x = jnp.ones((2, 3))
forward(model, x)
model.eval()
forward(model, x)
""",
        needs=("flax.nnx",),
    ),
    RecompileCase(
        "nnx",
        "batch shape",
        """
model = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
@nnx.jit
def predict(model, x):
    return model(x)
for size in (4, 5):
    x = jnp.ones((size, 3))
    predict(model, x)
""",
        needs=("flax.nnx",),
    ),
    RecompileCase(
        "nnx",
        "optimizer built each step",
        """
model = nnx.Linear(3, 1, rngs=nnx.Rngs(0))
@nnx.jit
def train_step(model, optimizer, x):
    loss, grads = nnx.value_and_grad(lambda m: m(x).sum())(model)
    optimizer.update(model, grads)
    return loss
x = jnp.ones((2, 3))
for _ in range(2):
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    train_step(model, optimizer, x)
""",
        needs=("flax.nnx", "optax"),
    ),
    RecompileCase(
        "nnx",
        "static mode",
        """
model = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
@nnx.jit(static_argnames="mode")
def run(model, x, mode):
    y = model(x)
    return y if mode == "raw" else jax.nn.relu(y)
x = jnp.ones((2, 3))
run(model, x, mode="raw")
run(model, x, mode="relu")
""",
        needs=("flax.nnx",),
    ),
    RecompileCase(
        "nnx",
        "static attribute equal only to itself",
        """
class Config:
    def __init__(self, act):
        self.act = act
    def __repr__(self):
        return f"Config(act={self.act!r})"
class Net(nnx.Module):
    def __init__(self, cfg, rngs):
        self.linear = nnx.Linear(3, 3, rngs=rngs)
        self.cfg = cfg
    def __call__(self, x):
        return self.linear(x)
@nnx.jit
def forward(model, x):
    return model(x)
x = jnp.ones((2, 3))
model = Net(Config("relu"), nnx.Rngs(0))
forward(model, x)
model.cfg = Config("relu")
forward(model, x)
""",
        needs=("flax.nnx",),
    ),
    RecompileCase(
        "nnx",
        "function attribute built again",
        """
class Net(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(3, 3, rngs=rngs)
        self.act = lambda v: jax.nn.relu(v)
    def __call__(self, x):
        return self.act(self.linear(x))
@nnx.jit
def forward(model, x):
    return model(x)
x = jnp.ones((2, 3))
for _ in range(2):
    model = Net(nnx.Rngs(0))
    forward(model, x)
""",
        needs=("flax.nnx",),
    ),
    RecompileCase(
        "nnx",
        "graphdef of another module",
        """
@jax.jit
def apply(graphdef, state, x):
    return nnx.merge(graphdef, state)(x)
x = jnp.ones((2, 3))
for width in (2, 4):
    graphdef, state = nnx.split(nnx.Linear(3, width, rngs=nnx.Rngs(0)))
    apply(graphdef, state, x)
""",
        needs=("flax.nnx",),
    ),
    # ---------------------------------------------------------------- Equinox
    RecompileCase(
        "equinox",
        "int argument",
        """
@eqx.filter_jit
def power(x, n):
    return x ** n
x = jnp.ones(3)
for n in (3, 4):
    power(x, n)
""",
        needs=("equinox",),
    ),
    RecompileCase(
        "equinox",
        "bool argument",
        """
@eqx.filter_jit
def maybe_negate(x, flag):
    return -x if flag else x
x = jnp.ones(3)
maybe_negate(x, True)
maybe_negate(x, False)
""",
        needs=("equinox",),
    ),
    RecompileCase(
        "equinox",
        "function argument",
        """
@eqx.filter_jit
def apply(x, activation):
    return activation(x)
x = jnp.ones(3)
apply(x, jax.nn.relu)
apply(x, jax.nn.tanh)
""",
        needs=("equinox",),
    ),
    RecompileCase(
        "equinox",
        "static field",
        """
class Layer(eqx.Module):
    weight: jax.Array
    activation: str = eqx.field(static=True)
@eqx.filter_jit
def run(layer, x):
    return layer.weight * x
x = jnp.ones(3)
run(Layer(jnp.ones(3), "relu"), x)
run(Layer(jnp.ones(3), "tanh"), x)
""",
        needs=("equinox",),
    ),
    RecompileCase(
        "equinox",
        "module weight shape",
        """
@eqx.filter_jit
def forward(model, x):
    return jax.vmap(model)(x)
x = jnp.ones((4, 2))
for width in (3, 5):
    model = eqx.nn.Linear(2, width, key=jax.random.key(0))
    forward(model, x)
""",
        needs=("equinox",),
    ),
    RecompileCase(
        "equinox",
        "closure made in a function",
        """
def scaled(x, scale):
    @eqx.filter_jit
    def inner(y):
        return y * scale
    return inner(x)
for scale in (1.0, 2.0):
    scaled(jnp.ones(3), scale)
""",
        needs=("equinox",),
    ),
    RecompileCase(
        "equinox",
        "module jitted whole, its activation built again",
        """
x = jnp.ones(3)
for i in range(2):
    mlp = eqx.nn.MLP(3, 2, 4, 2, activation=lambda v: jax.nn.relu(v), key=jax.random.key(i))
    eqx.filter_jit(mlp)(x)
""",
        needs=("equinox",),
    ),
    # ---------------------------------------------------------------- Flax Linen
    RecompileCase(
        "linen",
        "apply with a new batch size",
        """
model = linen.Dense(2)
variables = model.init(jax.random.key(0), jnp.ones((1, 3)))
apply = jax.jit(model.apply)
for size in (4, 5):
    x = jnp.ones((size, 3))
    apply(variables, x)
""",
        needs=("flax.linen",),
    ),
    RecompileCase(
        "linen",
        "apply with a static training flag",
        """
class MLP(linen.Module):
    @linen.compact
    def __call__(self, x, training: bool):
        x = linen.Dense(4)(x)
        return linen.Dropout(0.5, deterministic=not training)(x)
model = MLP()
x = jnp.ones((2, 3))
variables = model.init(jax.random.key(0), x, training=False)
apply = jax.jit(model.apply, static_argnames="training")
apply(variables, x, training=False)
apply(variables, x, training=True, rngs={"dropout": jax.random.key(1)})
""",
        needs=("flax.linen",),
    ),
    RecompileCase(
        "linen",
        "train state with a new batch",
        """
model = linen.Dense(1)
x = jnp.ones((4, 3))
params = model.init(jax.random.key(0), x)["params"]
state = train_state.TrainState.create(apply_fn=model.apply, params=params, tx=optax.sgd(0.1))
@jax.jit
def train_step(state, batch):
    grads = jax.grad(lambda p: state.apply_fn({"params": p}, batch).sum())(state.params)
    return state.apply_gradients(grads=grads)
for size in (4, 8):
    batch = jnp.ones((size, 3))
    state = train_step(state, batch)
""",
        needs=("flax.linen", "optax", "flax.training.train_state"),
    ),
    # ---------------------------------------------------------------- Optax
    RecompileCase(
        "optax",
        "transform built each step, static",
        """
def step(params, opt_state, tx):
    grads = jax.grad(lambda p: (p["w"] ** 2).sum())(params)
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state
step = jax.jit(step, static_argnames="tx")
params = {"w": jnp.ones(3)}
for _ in range(2):
    tx = optax.adam(1e-3)
    opt_state = tx.init(params)
    params, opt_state = step(params, opt_state, tx=tx)
""",
        needs=("optax",),
    ),
    RecompileCase(
        "optax",
        "transform built each step, filter_jit",
        """
@eqx.filter_jit
def step(params, opt_state, tx):
    grads = jax.grad(lambda p: (p["w"] ** 2).sum())(params)
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state
params = {"w": jnp.ones(3)}
for _ in range(2):
    tx = optax.adam(1e-3)
    opt_state = tx.init(params)
    params, opt_state = step(params, opt_state, tx)
""",
        needs=("optax", "equinox"),
    ),
    RecompileCase(
        "optax",
        "steady loop",
        """
optimizer = optax.adam(1e-2)
params = {"w": jnp.ones(3)}
opt_state = optimizer.init(params)
@jax.jit
def train_step(params, opt_state, x):
    grads = jax.grad(lambda p: (p["w"] * x).sum())(params)
    updates, opt_state = optimizer.update(grads, opt_state)
    return optax.apply_updates(params, updates), opt_state
x = jnp.ones(3)
for _ in range(3):
    params, opt_state = train_step(params, opt_state, x)
""",
        needs=("optax",),
    ),
    RecompileCase(
        "optax",
        "learning rate set as a Python float",
        """
optimizer = optax.inject_hyperparams(optax.sgd)(learning_rate=0.1)
params = {"w": jnp.ones(3)}
opt_state = optimizer.init(params)
@jax.jit
def train_step(params, opt_state):
    grads = jax.grad(lambda p: (p["w"] ** 2).sum())(params)
    updates, opt_state = optimizer.update(grads, opt_state)
    return optax.apply_updates(params, updates), opt_state
params, opt_state = train_step(params, opt_state)
opt_state.hyperparams["learning_rate"] = 0.01
params, opt_state = train_step(params, opt_state)
""",
        needs=("optax",),
    ),
    RecompileCase(
        "optax",
        "update jitted for each learning rate",
        """
params = {"w": jnp.ones(3)}
grads = {"w": jnp.ones(3)}
for lr in (0.1, 0.01):
    optimizer = optax.adam(lr)
    opt_state = optimizer.init(params)
    update = jax.jit(optimizer.update)
    updates, opt_state = update(grads, opt_state, params)
""",
        needs=("optax",),
    ),
    RecompileCase(
        "optax",
        "L-BFGS state from init, then from the step",  # the Optax docs' L-BFGS cell, stepped in a loop
        LBFGS.setup
        + "params = start\nstate = solver.init(params)\nfor _ in range(3):\n    params, state = lbfgs_step(params, state)\n",
        needs=("optax",),
    ),
    RecompileCase(
        "optax",
        "step made by a factory of the user's for each learning rate",
        """
params = {"w": jnp.ones(3)}
def make_step(lr):
    optimizer = optax.sgd(lr)
    @jax.jit
    def step(params, opt_state):
        grads = jax.grad(lambda p: (p["w"] ** 2).sum())(params)
        updates, opt_state = optimizer.update(grads, opt_state)
        return optax.apply_updates(params, updates), opt_state
    return optimizer, step
for lr in (0.1, 0.01):
    optimizer, step = make_step(lr)
    step(params, optimizer.init(params))
""",
        needs=("optax",),
    ),
    RecompileCase(
        "optax",
        "train step closing over an optimizer built per learning rate",
        """
params = {"w": jnp.ones(3)}
def train(lr):
    optimizer = optax.chain(optax.clip(1.0), optax.sgd(lr))
    opt_state = optimizer.init(params)
    @jax.jit
    def step(params, opt_state):
        grads = jax.grad(lambda p: (p["w"] ** 2).sum())(params)
        updates, opt_state = optimizer.update(grads, opt_state)
        return optax.apply_updates(params, updates), opt_state
    return step(params, opt_state)
for lr in (0.1, 0.01):
    train(lr)
""",
        needs=("optax",),
    ),
    # ---------------------------------------------------------------- BlackJAX
    RecompileCase(
        "blackjax",
        "nuts built again for each step size",
        """
def logdensity(x):
    return -0.5 * jnp.sum(x ** 2)
position = jnp.ones(2)
key = jax.random.key(0)
for step_size in (0.1, 0.2):
    nuts = blackjax.nuts(logdensity, step_size, jnp.ones(2))
    state = nuts.init(position)
    step = jax.jit(nuts.step)
    state, info = step(key, state)
""",
        needs=("blackjax",),
    ),
    RecompileCase(
        "blackjax",
        "hmc built again alike",
        """
def logdensity(x):
    return -0.5 * jnp.sum(x ** 2)
position = jnp.ones(2)
key = jax.random.key(0)
for _ in range(2):
    hmc = blackjax.hmc(logdensity, 0.1, jnp.ones(2), 5)
    state = hmc.init(position)
    state, info = jax.jit(hmc.step)(key, state)
""",
        needs=("blackjax",),
    ),
    # ---------------------------------------------------------------- NumPyro
    RecompileCase(
        "numpyro",
        "MCMC built again",
        """
def model(x):
    m = numpyro.sample("m", dist.Normal(0, 1))
    numpyro.sample("obs", dist.Normal(m, 1), obs=x)
x = jnp.ones(10)
for i in range(2):
    mcmc = MCMC(NUTS(model), num_warmup=10, num_samples=10, progress_bar=False)
    mcmc.run(jax.random.key(i), x)
""",
        needs=("numpyro",),
    ),
    RecompileCase(
        "numpyro",
        "SVI built again for each learning rate",
        """
def model(x):
    m = numpyro.sample("m", dist.Normal(0, 1))
    numpyro.sample("obs", dist.Normal(m, 1), obs=x)
x = jnp.ones(10)
guide = AutoNormal(model)
for lr in (0.1, 0.01):
    svi = SVI(model, guide, numpyro.optim.Adam(lr), Trace_ELBO())
    result = svi.run(jax.random.key(0), 20, x, progress_bar=False)
""",
        needs=("numpyro",),
    ),
    RecompileCase(
        "numpyro",
        "SVI update jitted for each learning rate",
        """
def model(x):
    m = numpyro.sample("m", dist.Normal(0, 1))
    numpyro.sample("obs", dist.Normal(m, 1), obs=x)
x = jnp.ones(10)
guide = AutoNormal(model)
for lr in (0.1, 0.01, 0.001):
    svi = SVI(model, guide, numpyro.optim.Adam(lr), Trace_ELBO())
    update = jax.jit(svi.update)
    state = svi.init(jax.random.key(0), x)
    for _ in range(3):
        state, loss = update(state, x)
""",
        needs=("numpyro",),
    ),
    # ---------------------------------------------------------------- Diffrax
    RecompileCase(
        "diffrax",
        "new end time",
        """
def vector_field(t, y, args):
    return -y
term = diffrax.ODETerm(vector_field)
solver = diffrax.Tsit5()
y0 = jnp.ones(2)
for t1 in (1.0, 2.0):
    diffrax.diffeqsolve(term, solver, t0=0.0, t1=t1, dt0=0.1, y0=y0)
""",
        needs=("diffrax",),
    ),
    RecompileCase(
        "diffrax",
        "new tolerance",
        """
def vector_field(t, y, args):
    return -y
term = diffrax.ODETerm(vector_field)
solver = diffrax.Tsit5()
y0 = jnp.ones(2)
for rtol in (1e-3, 1e-5):
    stepsize_controller = diffrax.PIDController(rtol=rtol, atol=1e-6)
    diffrax.diffeqsolve(term, solver, t0=0.0, t1=1.0, dt0=0.1, y0=y0, stepsize_controller=stepsize_controller)
""",
        needs=("diffrax",),
    ),
    RecompileCase(
        "diffrax",
        "new state size",
        """
def vector_field(t, y, args):
    return -y
term = diffrax.ODETerm(vector_field)
solver = diffrax.Tsit5()
for n in (2, 3):
    y0 = jnp.ones(n)
    diffrax.diffeqsolve(term, solver, t0=0.0, t1=1.0, dt0=0.1, y0=y0)
""",
        needs=("diffrax",),
    ),
    # ---------------------------------------------------------------- Orbax
    RecompileCase(
        "orbax",
        "restored with StandardCheckpointer",
        """
@jax.jit
def loss(params, x):
    return (params["w"] * x + params["b"]).sum()
params = {"w": jnp.ones(3), "b": jnp.zeros(3)}
x = jnp.ones(3)
loss(params, x)
checkpointer = ocp.StandardCheckpointer()
checkpointer.save(os.path.join(directory, "standard"), params)
checkpointer.wait_until_finished()
params = checkpointer.restore(os.path.join(directory, "standard"))
loss(params, x)
""",
        needs=("orbax.checkpoint",),
    ),
    RecompileCase(
        "orbax",
        "restored with PyTreeCheckpointer",
        """
@jax.jit
def loss(params, x):
    return (params["w"] * x).sum()
params = {"w": jnp.ones(3)}
x = jnp.ones(3)
loss(params, x)
checkpointer = ocp.PyTreeCheckpointer()
checkpointer.save(os.path.join(directory, "pytree"), params)
params = checkpointer.restore(os.path.join(directory, "pytree"))
loss(params, x)
""",
        needs=("orbax.checkpoint",),
    ),
    RecompileCase(
        "orbax",
        "restored after a compilation nobody watched",
        """
params = checkpointer.restore(os.path.join(directory, "earlier"))
loss(params, x)
""",
        needs=("orbax.checkpoint",),
        before="""
@jax.jit
def loss(params, x):
    return (params["w"] * x).sum()
params = {"w": jnp.ones(3)}
x = jnp.ones(3)
loss(params, x)
checkpointer = ocp.StandardCheckpointer()
checkpointer.save(os.path.join(directory, "earlier"), params)
checkpointer.wait_until_finished()
""",
    ),
    # ---------------------------------------------------------------- chex
    RecompileCase(
        "chex",
        "dataclass field shape",
        """
@chex.dataclass
class Params:
    w: jax.Array
    b: jax.Array
@jax.jit
def affine(params, x):
    return params.w * x + params.b
x = jnp.ones(3)
for n in (3, 4):
    params = Params(w=jnp.ones(n), b=jnp.zeros(n))
    affine(params, jnp.ones(n))
""",
        needs=("chex",),
    ),
    RecompileCase(
        "chex",
        "assert_max_traces allows two shapes",
        """
@jax.jit
@chex.assert_max_traces(n=2)
def normalise(x):
    return x / x.sum()
for n in (3, 4):
    x = jnp.ones(n)
    normalise(x)
""",
        needs=("chex",),
    ),
    # ---------------------------------------------------------------- jaxtyping
    RecompileCase(
        "jaxtyping",
        "annotated batch shape",
        """
@jax.jit
def mean_square(x: Float[Array, "batch features"]) -> Float[Array, ""]:
    return (x ** 2).mean()
for size in (2, 3):
    x = jnp.ones((size, 4))
    mean_square(x)
""",
        needs=("jaxtyping",),
    ),
    RecompileCase(
        "jaxtyping",
        "annotated dtype under jaxtyped",
        """
@jax.jit
@jaxtyping.jaxtyped(typechecker=None)
def double(x: Shaped[Array, "n"]) -> Shaped[Array, "n"]:
    return x * 2
double(jnp.ones(3, jnp.float32))
double(jnp.ones(3, jnp.int32))
""",
        needs=("jaxtyping",),
    ),
]

PRELUDE = """
import os
import jax
import jax.numpy as jnp
"""

IMPORTS = {
    "flax.nnx": "from flax import nnx",
    "flax.linen": "import flax.linen as linen",
    "optax": "import optax",
    "equinox": "import equinox as eqx",
    "diffrax": "import diffrax",
    "orbax.checkpoint": "import orbax.checkpoint as ocp",
    "chex": "import chex",
    "jaxtyping": "import jaxtyping\nfrom jaxtyping import Array, Float, Shaped",
    "flax.training.train_state": "from flax.training import train_state",
    "functools": "import functools",
    "blackjax": "import blackjax",
    "numpyro": (
        "import numpyro\nimport numpyro.distributions as dist\nfrom numpyro.infer import MCMC, NUTS, SVI, Trace_ELBO\n"
        "from numpyro.infer.autoguide import AutoNormal"
    ),
    "dataclasses": "import dataclasses",
}
