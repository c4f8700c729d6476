"""NumPyro in the shapes its documentation teaches (num.pyro.ai: "Getting started" (eight
schools), "SVI", "Predictive", "Effect handlers"), and the shape of NumPyro's warmup adapter as
reported on JAX's tracker, in our own words."""

from tests.corpus import Cell

SCHOOLS = Cell(
    "numpyro",
    "numpyro docs: getting_started.rst (eight schools)",
    "numpyro/eight-schools",
    """
import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.infer import MCMC, NUTS, Predictive

J = 8
y = jnp.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
sigma = jnp.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])

def eight_schools(J, sigma, y=None):
    mu = numpyro.sample("mu", dist.Normal(0, 5))
    tau = numpyro.sample("tau", dist.HalfCauchy(5))
    with numpyro.plate("J", J):
        theta = numpyro.sample("theta", dist.Normal(mu, tau))
        numpyro.sample("obs", dist.Normal(theta, sigma), obs=y)

mcmc = MCMC(NUTS(eight_schools), num_warmup=50, num_samples=50, progress_bar=False)
rng_key = jax.random.PRNGKey(0)

def run_and_mean(key):
    mcmc.run(key, J, sigma, y=y)
    return mcmc.get_samples()["mu"].mean()

def prior_draws(key):
    return Predictive(eight_schools, num_samples=100)(key, J, sigma)["obs"]

def log_joint(params):
    log_density, _ = numpyro.infer.util.log_density(eight_schools, (J, sigma), {"y": y}, params)
    return log_density

point = {"mu": jnp.float32(1.0), "tau": jnp.float32(2.0), "theta": jnp.zeros(8)}
""",
    needs=("numpyro",),
    tags={"mcmc", "random"},
)

SVI = Cell(
    "numpyro",
    "numpyro docs: svi.rst, tutorials/bayesian_regression.ipynb",
    "numpyro/svi",
    """
import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.infer import SVI, Trace_ELBO
from numpyro.infer.autoguide import AutoNormal

xs = jnp.linspace(-1.0, 1.0, 50)
ys = 2.0 * xs + 0.5 + 0.1 * jax.random.normal(jax.random.PRNGKey(1), (50,))

def regression(x, y=None):
    slope = numpyro.sample("slope", dist.Normal(0.0, 1.0))
    intercept = numpyro.sample("intercept", dist.Normal(0.0, 1.0))
    noise = numpyro.sample("noise", dist.Exponential(1.0))
    with numpyro.plate("data", x.shape[0]):
        numpyro.sample("obs", dist.Normal(slope * x + intercept, noise), obs=y)

guide = AutoNormal(regression)
svi = SVI(regression, guide, numpyro.optim.Adam(0.05), loss=Trace_ELBO())
svi_key = jax.random.PRNGKey(0)
svi_state = svi.init(svi_key, xs, ys)

def run_svi(key, steps=200):
    result = svi.run(key, steps, xs, ys, progress_bar=False)
    return result.losses[-1]

def rebuild_and_run(key, lrs=(0.05, 0.01)):
    losses = []
    for lr in lrs:
        fresh = SVI(regression, AutoNormal(regression), numpyro.optim.Adam(lr), loss=Trace_ELBO())
        losses.append(fresh.run(key, 50, xs, ys, progress_bar=False).losses[-1])
    return losses
""",
    needs=("numpyro",),
    tags={"svi", "random"},
)

PRIMITIVES = Cell(
    "numpyro",
    "numpyro docs: distributions.rst, handlers.rst",
    "numpyro/primitives",
    """
import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro import handlers

normal = dist.Normal(jnp.zeros(3), jnp.ones(3))
points = jnp.array([0.5, -1.0, 2.0])
key = jax.random.PRNGKey(0)

def coin(flips=None):
    p = numpyro.sample("p", dist.Beta(2.0, 2.0))
    numpyro.sample("flips", dist.Bernoulli(p).expand([10]), obs=flips)

def traced_sites(key):
    trace = handlers.trace(handlers.seed(coin, key)).get_trace()
    return {name: site["value"] for name, site in trace.items()}

def unseeded_sample():
    return numpyro.sample("x", dist.Normal(0.0, 1.0))

def branching_model(y=None):
    mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
    if mu > 0:
        numpyro.sample("obs", dist.Normal(mu, 1.0), obs=y)
    else:
        numpyro.sample("obs", dist.Normal(-mu, 2.0), obs=y)

branching_mcmc = numpyro.infer.MCMC(numpyro.infer.NUTS(branching_model), num_warmup=5, num_samples=5,
                                   progress_bar=False)
observed = jnp.array(1.0)
""",
    needs=("numpyro",),
    tags={"random"},
)

ADAPTER = Cell(
    "numpyro",
    "jax-ml/jax#1239 (NumPyro's mass-matrix adaptation, numpyro.infer.hmc_util)",
    "numpyro/welford-adaptation",
    """
import jax
import jax.numpy as jnp
from numpyro.infer.hmc_util import welford_covariance

mm_init, mm_update, mm_final = welford_covariance(diagonal=True)
update = jax.jit(mm_update)

def adapt(samples):
    state = mm_init(samples.shape[-1])
    for t in range(samples.shape[0]):
        state = update(samples[t], state)
    return mm_final(state, regularize=True)

def adapt_two_sizes(samples):
    return adapt(samples), adapt(samples[:, :2])

draws = jax.random.normal(jax.random.PRNGKey(0), (30, 3))
""",
    needs=("numpyro",),
    tags={"mcmc", "factory", "closure"},
)


CASES = [
    SCHOOLS.case("mcmc-run", "run_and_mean(rng_key)", tags={"no-jit"}),
    SCHOOLS.case("predictive-prior", "prior_draws(rng_key)"),
    SCHOOLS.case("log-density", "log_joint(point)", tags={"grad"}),
    SVI.case("svi-run", "run_svi(svi_key)", tags={"no-jit", "loop"}),
    SVI.case("svi-update", "svi.update(svi_state, xs, ys)", tags={"method", "grad", "training-step"}),
    SVI.case("svi-rebuilt-per-setting", "rebuild_and_run(svi_key)", tags={"recompile", "sweep", "no-jit"}),
    PRIMITIVES.case("log-prob", "normal.log_prob(points)", tags={"method"}),
    PRIMITIVES.case("sample", "normal.sample(key, (5,))", tags={"method", "static"}),
    PRIMITIVES.case("seeded-trace", "traced_sites(key)", tags={"no-jit"}),
    PRIMITIVES.case("sample-outside-handler", "unseeded_sample()", "AssertionError"),
    PRIMITIVES.case(
        "python-branch-in-model",
        "branching_mcmc.run(key, y=observed)",
        "TracerBoolConversionError",
        tags={"mcmc", "cond"},
    ),
    ADAPTER.case("welford-loop", "adapt(draws)", tags={"no-jit", "jitted"}),
    ADAPTER.case("welford-two-sizes", "adapt_two_sizes(draws)", tags={"recompile", "no-jit", "jitted"}),
]
