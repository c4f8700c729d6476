"""Diffrax, Optimistix and Lineax in the shapes their documentation teaches
(docs.kidger.site/diffrax: "Getting started", "ODE example", "Steady-state"; optimistix:
"Getting started"; lineax: "Getting started"), in our own words."""

from tests.corpus import Cell

ODE = Cell(
    "diffrax",
    "diffrax docs: usage/getting-started.md",
    "diffrax/ode",
    """
import jax
import jax.numpy as jnp
import diffrax

def decay(t, y, args):
    return -y

term = diffrax.ODETerm(decay)
solver = diffrax.Tsit5()
saveat = diffrax.SaveAt(ts=jnp.linspace(0.0, 3.0, 7))

def solve(y0):
    return diffrax.diffeqsolve(term, solver, t0=0.0, t1=3.0, dt0=0.1, y0=y0, saveat=saveat).ys

def lotka_volterra(t, y, args):
    prey, predator = y
    alpha, beta, gamma, delta = args
    return jnp.stack([alpha * prey - beta * prey * predator, -gamma * predator + delta * prey * predator])

def solve_adaptive(y0, args):
    return diffrax.diffeqsolve(
        diffrax.ODETerm(lotka_volterra), diffrax.Dopri5(), t0=0.0, t1=10.0, dt0=0.1, y0=y0, args=args,
        stepsize_controller=diffrax.PIDController(rtol=1e-5, atol=1e-5),
        saveat=diffrax.SaveAt(ts=jnp.linspace(0.0, 10.0, 11)),
    ).ys

y0 = jnp.array([1.0, 2.0])
lv_args = (0.1, 0.02, 0.4, 0.02)
lv_y0 = jnp.array([10.0, 10.0])
""",
    needs=("diffrax",),
    tags={"ode"},
)

OPTX = Cell(
    "optimistix",
    "optimistix docs: index.md, api/root_find.md, api/minimise.md, api/least_squares.md",
    "optimistix/solvers",
    """
import jax
import jax.numpy as jnp
import optimistix as optx

def fixed_point_residual(y, args):
    return jnp.tanh(y + 1) - y

def find_root(y0):
    return optx.root_find(fixed_point_residual, optx.Newton(rtol=1e-6, atol=1e-6), y0).value

def rosenbrock(y, args):
    return jnp.sum(100.0 * (y[1:] - y[:-1] ** 2) ** 2 + (1.0 - y[:-1]) ** 2)

def minimise(y0):
    return optx.minimise(rosenbrock, optx.BFGS(rtol=1e-6, atol=1e-6), y0, max_steps=500).value

def residuals(params, args):
    xs, ys = args
    a, b = params
    return a * jnp.exp(b * xs) - ys

xs = jnp.linspace(0.0, 1.0, 20)
ys = 2.0 * jnp.exp(-1.5 * xs)

def least_squares(params):
    return optx.least_squares(residuals, optx.LevenbergMarquardt(rtol=1e-6, atol=1e-6), params, args=(xs, ys)).value

y3 = jnp.zeros(3)
fit_start = jnp.array([1.0, 0.0])
""",
    needs=("optimistix",),
    tags={"solver"},
)

LX = Cell(
    "lineax",
    "lineax docs: index.md, api/solvers.md",
    "lineax/solve",
    """
import jax
import jax.numpy as jnp
import lineax as lx

matrix = jax.random.normal(jax.random.PRNGKey(0), (8, 8)) + 4 * jnp.eye(8)
vector = jnp.arange(8.0)

def lu_solve(matrix, vector):
    return lx.linear_solve(lx.MatrixLinearOperator(matrix), vector, solver=lx.LU()).value

spd = matrix @ matrix.T + jnp.eye(8)

def cg_solve(matrix, vector):
    operator = lx.MatrixLinearOperator(matrix, lx.positive_semidefinite_tag)
    return lx.linear_solve(operator, vector, solver=lx.CG(rtol=1e-6, atol=1e-6)).value

def diagonal_solve(diag, vector):
    return lx.linear_solve(lx.DiagonalLinearOperator(diag), vector).value
""",
    needs=("lineax",),
    tags={"solver"},
)


CASES = [
    ODE.case("decay-tsit5", "solve(y0)"),
    ODE.case("lotka-volterra-adaptive", "solve_adaptive(lv_y0, lv_args)", tags={"loop"}),
    ODE.case("diffeqsolve-direct", "diffrax.diffeqsolve(term, solver, t0=0.0, t1=1.0, dt0=0.1, y0=y0)"),
    OPTX.case("newton-root", "find_root(y3)"),
    OPTX.case("bfgs-rosenbrock", "minimise(y3)"),
    OPTX.case("levenberg-marquardt", "least_squares(fit_start)"),
    LX.case("lu", "lu_solve(matrix, vector)"),
    LX.case("cg", "cg_solve(spd, vector)"),
    LX.case("diagonal", "diagonal_solve(jnp.arange(1.0, 9.0), vector)"),
]
