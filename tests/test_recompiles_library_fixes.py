"""The code a recompile cause's advice prints for a library (Optax's ``inject_hyperparams``,
BlackJAX's ``build_kernel``, a frozen dataclass for a static attribute of an NNX module, NumPyro's
jitted ``svi.update``) is run here, as printed, in the loop that compiled again, and JAX's own
compile log must show that loop compiling once. What the advice claims of NumPyro's ``run`` (it
compiles its loop on every call, whether or not the object is built again) is checked the same way."""

from __future__ import annotations

import importlib.util
import logging
import pathlib
import sys

import jax
import pytest
from recompile_cases import CASES
from test_recompiles_causes_corpus import run_case


def needs(*modules):
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    return pytest.mark.skipif(bool(missing), reason=f"{', '.join(missing)} not installed")


def case(name: str):
    return next(c for c in CASES if f"{c.library}: {c.name}" == name)


def advice_code(log) -> list[str]:
    """The pieces of code the advice of the log's recompilations prints."""
    pieces = []
    for event in log.events:
        for cause in event.causes:
            if cause.kind != "first_call":
                pieces += [part.text for part in cause.advice.parts if part.kind == "code"]
    return pieces


class Compiles(logging.Handler):
    """JAX's own count: ``jax_log_compiles`` lines, by function."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.names: list[str] = []

    def emit(self, record):
        message = record.getMessage()
        if message.startswith("Compiling "):
            self.names.append(message.split(" ", 2)[1])

    def __enter__(self):
        logger = logging.getLogger("jax")
        self.level = logger.level
        logger.addHandler(self)
        logger.setLevel(logging.DEBUG)
        jax.config.update("jax_log_compiles", True)
        return self

    def __exit__(self, *exc):
        jax.config.update("jax_log_compiles", False)
        logger = logging.getLogger("jax")
        logger.removeHandler(self)
        logger.setLevel(self.level)


def run(source: str, namespace: dict, tmp_path: pathlib.Path, name: str = "fixed.py") -> Compiles:
    path = tmp_path / name
    path.write_text(source)
    with Compiles() as compiles:
        exec(compile(source, str(path), "exec"), namespace)
    return compiles


@needs("optax")
def test_a_learning_rate_sweep_with_the_printed_inject_hyperparams_compiles_once(tmp_path):
    log, namespace, _ = run_case(case("optax: update jitted for each learning rate"), tmp_path)
    code = advice_code(log)
    build = next(c for c in code if "inject_hyperparams" in c)
    state = next(c for c in code if "hyperparams[" in c)
    fixed = f"""
import jax.numpy as jnp
lr = 0.1
optimizer = {build}
update = jax.jit(optimizer.update)
opt_state = optimizer.init(params)
for lr in (0.1, 0.01, 0.001):
    {state}
    updates, opt_state = update(grads, opt_state, params)
    assert float(opt_state.hyperparams["learning_rate"]) == pytest.approx(lr)
"""
    namespace["pytest"] = pytest
    compiles = run(fixed, namespace, tmp_path)
    assert compiles.names.count("jit(update_fn)") == 1, compiles.names


@needs("optax")
def test_an_optimizer_built_inside_the_user_s_factory_gets_inject_hyperparams_and_it_compiles_once(tmp_path):
    """``optimizer = optax.sgd(lr)`` inside ``make_step(lr)``: the advice reads the factory and
    prints Optax's documented way, which, used as printed, serves every rate with one compile."""
    log, namespace, _ = run_case(case("optax: step made by a factory of the user's for each learning rate"), tmp_path)
    code = advice_code(log)
    build = next(c for c in code if "inject_hyperparams" in c)
    state = next(c for c in code if "hyperparams[" in c)
    assert build == "optax.inject_hyperparams(optax.sgd)(learning_rate=lr)", code
    fixed = f"""
import jax.numpy as jnp
lr = 0.1
optimizer = {build}
@jax.jit
def step(params, opt_state):
    grads = jax.grad(lambda p: (p["w"] ** 2).sum())(params)
    updates, opt_state = optimizer.update(grads, opt_state)
    return optax.apply_updates(params, updates), opt_state
opt_state = optimizer.init(params)
for lr in (0.1, 0.01, 0.001):
    {state}
    params, opt_state = step(params, opt_state)
    assert float(opt_state.hyperparams["learning_rate"]) == pytest.approx(lr)
"""
    namespace["pytest"] = pytest
    compiles = run(fixed, namespace, tmp_path)
    assert compiles.names.count("jit(step)") == 1, compiles.names


@needs("optax")
def test_an_lbfgs_state_made_strongly_typed_as_printed_compiles_the_step_once(tmp_path):
    """``solver.init`` makes some of L-BFGS's state weakly typed and the jitted step returns it
    strongly typed: the advice's one line, run on the state before the loop, leaves one compile."""
    log, namespace, _ = run_case(case("optax: L-BFGS state from init, then from the step"), tmp_path)
    assert [e.function for e in log.events] == ["lbfgs_step", "lbfgs_step"]
    (strong,) = {c for c in advice_code(log) if "jax.tree.map" in c}
    assert strong.startswith("state = ")
    fixed = f"""
params = jnp.zeros(4)
state = solver.init(params)
{strong}
for _ in range(3):
    params, state = lbfgs_step(params, state)
"""
    jax.clear_caches()
    compiles = run(fixed, namespace, tmp_path)
    assert compiles.names.count("jit(lbfgs_step)") == 1, compiles.names


@needs("blackjax")
def test_a_step_size_sweep_with_the_printed_blackjax_kernel_compiles_once(tmp_path):
    log, namespace, _ = run_case(case("blackjax: nuts built again for each step size"), tmp_path)
    code = advice_code(log)
    kernel = next(c for c in code if "build_kernel" in c)
    parameters = [c for c in code if c in ("rng_key", "state", "logdensity_fn", "step_size", "inverse_mass_matrix")]
    assert parameters == ["step_size", "rng_key", "state", "logdensity_fn", "step_size", "inverse_mass_matrix"]
    fixed = f"""
kernel = {kernel}
state = blackjax.nuts.init(position, logdensity)
for step_size in (0.1, 0.2, 0.3):
    state, info = kernel(rng_key=key, state=state, logdensity_fn=logdensity, step_size=step_size, inverse_mass_matrix=jnp.ones(2))
"""
    compiles = run(fixed, namespace, tmp_path)
    assert compiles.names.count("jit(kernel)") == 1, compiles.names


@needs("flax")
def test_a_static_attribute_made_a_frozen_dataclass_as_printed_compiles_once(tmp_path):
    config_case = case("nnx: static attribute equal only to itself")
    log, namespace, _ = run_case(config_case, tmp_path)
    decorator = next(c for c in advice_code(log) if c.startswith("@"))
    assert decorator == "@dataclasses.dataclass(frozen=True)"
    source = config_case.source.replace(
        "class Config:\n    def __init__(self, act):\n        self.act = act\n",
        f"import dataclasses\n{decorator}\nclass Config:\n    act: str\n",
    )
    assert source != config_case.source
    namespace["__name__"] = "user_program"
    compiles = run(source, namespace, tmp_path, "user_program.py")
    assert compiles.names.count("jit(forward)") == 1, compiles.names


@needs("numpyro")
def test_numpyros_run_compiles_its_loop_on_every_call_whether_built_again_or_not(tmp_path):
    """What the advice for ``mcmc.run`` says, checked with JAX's log: building the ``MCMC`` once
    saves nothing, each call compiles its sampling loop once more."""
    setup = """
import jax, jax.numpy as jnp, numpyro, numpyro.distributions as dist
from numpyro.infer import MCMC, NUTS
def model(x):
    m = numpyro.sample("m", dist.Normal(0, 1))
    numpyro.sample("obs", dist.Normal(m, 1), obs=x)
x = jnp.ones(10)
"""
    namespace: dict = {}
    exec(setup, namespace)
    built_once = "mcmc = MCMC(NUTS(model), num_warmup=5, num_samples=5, progress_bar=False)\n"
    runs = "for i in range(3):\n    mcmc.run(jax.random.key(i), x)\n"
    once = run(built_once + runs, namespace, tmp_path, "once.py")
    again = run(runs.replace("for i in range(3):\n", "for i in range(3):\n    " + built_once), namespace, tmp_path)
    loops = [name for name in once.names if "fori_collect" in name]
    assert len(loops) == 3 and len([n for n in again.names if "fori_collect" in n]) == 3


@needs("numpyro")
def test_svi_update_jitted_as_printed_compiles_once_for_every_step(tmp_path):
    from jaxmagic.recompiles.causes import Cause
    from jaxmagic.recompiles.library_fixes import DocumentedFix

    fix = DocumentedFix("numpyro", "jit_update", kind="SVI")
    cause = Cause(
        "static_value", argument="svi.run", reason="inside_library_call", facts=(("fix", fix), ("root", "svi"))
    )
    code = [part.text for part in cause.advice.parts if part.kind == "code"]
    jitted, init = code[1], code[2]
    assert (jitted, init) == ("jax.jit(svi.update)", "svi.init")
    setup = """
import jax, jax.numpy as jnp, numpyro, numpyro.distributions as dist
from numpyro.infer import SVI, Trace_ELBO
from numpyro.infer.autoguide import AutoNormal
def model(x):
    m = numpyro.sample("m", dist.Normal(0, 1))
    numpyro.sample("obs", dist.Normal(m, 1), obs=x)
x = jnp.ones(10)
svi = SVI(model, AutoNormal(model), numpyro.optim.Adam(0.1), Trace_ELBO())
"""
    namespace: dict = {}
    exec(setup, namespace)
    fixed = f"update = {jitted}\nstate = {init}(jax.random.key(0), x)\nfor _ in range(5):\n    state, loss = update(state, x)\n"
    compiles = run(fixed, namespace, tmp_path)
    assert compiles.names.count("jit(update)") == 1, compiles.names


@needs("numpyro")
def test_a_sweep_that_builds_its_object_once_per_value_is_said_to_compile_once_per_value(tmp_path):
    """An SVI built, jitted and stepped once per learning rate compiles once per rate, by JAX's log:
    the advice says that is what a sweep costs, never "build it once" (the rate lives in it)."""
    log, _, said = run_case(case("numpyro: SVI update jitted for each learning rate"), tmp_path)
    assert len(said.compiled.get("update", [])) == 3 == log.total, (list(said.compiled), log.counts)
    advice = [str(c.advice) for e in log.events if e.is_recompile for c in e.causes]
    assert advice and all("Expected while `lr` changes" in a and "once per value" in a for a in advice), advice
    assert not any("Build `svi` once" in a for a in advice), advice


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))
