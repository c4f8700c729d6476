"""BlackJAX in the shapes its documentation teaches (blackjax-devs.github.io: "Quickstart",
"Sample with multiple chains", "Random walk Metropolis", "MALA"), in our own words."""

from tests.corpus import Cell

QUICKSTART = Cell(
    "blackjax",
    "blackjax docs: examples/quickstart.md",
    "blackjax/quickstart",
    """
import jax
import jax.numpy as jnp
import jax.scipy.stats as stats
import blackjax

observed = 3.0 + 0.5 * jax.random.normal(jax.random.PRNGKey(1), (100,))

def logdensity_fn(position):
    loc, log_scale = position["loc"], position["log_scale"]
    scale = jnp.exp(log_scale)
    prior = stats.norm.logpdf(loc, 0.0, 10.0) + stats.norm.logpdf(log_scale, 0.0, 1.0)
    return prior + jnp.sum(stats.norm.logpdf(observed, loc, scale))

initial_position = {"loc": 1.0, "log_scale": 0.5}
nuts = blackjax.nuts(logdensity_fn, step_size=1e-2, inverse_mass_matrix=jnp.array([1.0, 1.0]))
state = nuts.init(initial_position)
step_key = jax.random.PRNGKey(0)
nuts_step = jax.jit(nuts.step)

""",
    needs=("blackjax",),
    tags={"mcmc", "random"},
)

KERNELS = Cell(
    "blackjax",
    "blackjax docs: examples/howto_sample_multiple_chains.md, algorithms/rmh.md, algorithms/mala.md",
    "blackjax/kernels",
    """
import jax
import jax.numpy as jnp
import blackjax

def banana(x):
    return -0.5 * (x[0] ** 2 / 4.0 + (x[1] - 0.25 * x[0] ** 2) ** 2)

rmh = blackjax.rmh(banana, blackjax.mcmc.random_walk.normal(jnp.array([0.5, 0.5])))
mala = blackjax.mala(banana, step_size=0.05)
hmc = blackjax.hmc(banana, step_size=0.1, inverse_mass_matrix=jnp.ones(2), num_integration_steps=5)
x0 = jnp.zeros(2)
rmh_state, mala_state, hmc_state = rmh.init(x0), mala.init(x0), hmc.init(x0)
key = jax.random.PRNGKey(0)

def many_chains(key, num_chains=4):
    initial = jax.vmap(rmh.init)(jax.random.normal(key, (num_chains, 2)))
    keys = jax.random.split(key, num_chains)
    new_states, _ = jax.vmap(rmh.step)(keys, initial)
    return new_states.position

def inference_loop(key, kernel, initial_state, num_samples):
    @jax.jit
    def one_step(state, key):
        state, _ = kernel(key, state)
        return state, state

    keys = jax.random.split(key, num_samples)
    _, states = jax.lax.scan(one_step, initial_state, keys)
    return states

def rebuilt_sampler_steps(key, step_sizes=(0.1, 0.05, 0.01)):
    positions = []
    for step_size in step_sizes:
        sampler = blackjax.hmc(banana, step_size=step_size, inverse_mass_matrix=jnp.ones(2), num_integration_steps=5)
        new_state, _ = jax.jit(sampler.step)(key, sampler.init(x0))
        positions.append(new_state.position)
    return positions
""",
    needs=("blackjax",),
    tags={"mcmc", "random"},
)


CASES = [
    QUICKSTART.case("nuts-step", "nuts.step(step_key, state)"),
    QUICKSTART.case("nuts-step-jit", "nuts_step(step_key, state)", tags={"jitted"}),
    QUICKSTART.case("logdensity", "logdensity_fn(initial_position)", tags={"pytree"}),
    KERNELS.case("rmh-step", "rmh.step(key, rmh_state)"),
    KERNELS.case("mala-step", "mala.step(key, mala_state)", tags={"grad"}),
    KERNELS.case("hmc-step", "hmc.step(key, hmc_state)", tags={"grad"}),
    KERNELS.case("vmap-chains", "many_chains(key)", tags={"vmap"}),
    KERNELS.case("inference-loop", "inference_loop(key, hmc.step, hmc_state, 20)", tags={"scan", "static", "grad"}),
    KERNELS.case("sampler-built-again", "rebuilt_sampler_steps(key)", tags={"recompile", "factory", "sweep", "no-jit"}),
]
