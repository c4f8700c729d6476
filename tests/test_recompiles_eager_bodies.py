"""Control flow and callbacks run eagerly, at the top of a cell: JAX compiles a program for each
(``jit(scan)``, ``jit(while)``, ``jit(pure_callback)``), again for every new body or callback (a
lambda made anew), and its compile log (``jax_log_compiles``) counts each. So does
``%%recompiles``: these are the user's compilations, not JAX's internal work, whose body the user
wrote. A single operation run eagerly (``jnp.sin``) stays JAX's own (shown with ``--all``)."""

from __future__ import annotations

import pytest
from test_recompiles_own_work import jax_compilations  # noqa: F401 -- the fixture

CELLS = {
    "scan": "jax.lax.scan(lambda c, x: (c + x, c), 0.0, xs)",
    "while": "jax.lax.while_loop(lambda c: c < 3.0, lambda c: c + 1.0, 0.0)",
    "fori_loop": "jax.lax.fori_loop(0, 3, lambda i, c: c * 2.0, 1.0)",
    "pure_callback": "jax.pure_callback(lambda v: v * 2, jax.ShapeDtypeStruct((3,), jnp.float32), xs)",
}


@pytest.mark.parametrize("what", list(CELLS))
def test_eager_control_flow_is_counted_as_jax_logs_it(what, run, jax_compilations):  # noqa: F811
    run("import jax, jax.numpy as jnp\nxs = jnp.arange(3.0)\njnp.sin(xs)").assert_ok()
    cell = CELLS[what]
    run(cell).assert_ok()  # JAX's own caches warm: what the cell compiles again is the new body's program
    with jax_compilations.users_own():
        log = run(f"%%recompiles -o\n{cell}\n{cell}").assert_ok().result
    logged = sum(jax_compilations.names.values())
    assert logged >= 2, jax_compilations.names  # each line made a new body: JAX compiled it again
    assert log.total == logged, (log.counts, dict(jax_compilations.names))


def test_a_single_eager_operation_stays_jaxs_own(run, jax_compilations):  # noqa: F811
    run("import jax, jax.numpy as jnp").assert_ok()
    with jax_compilations.users_own():
        log = run("%%recompiles -o\njnp.cos(jnp.arange(7.0))").assert_ok().result
    assert sum(jax_compilations.names.values()) >= 1 and log.total == 0, (log.counts, jax_compilations.names)


def test_a_new_body_in_a_loop_is_said_as_such_and_its_advice_compiles_once(run, jax_compilations):  # noqa: F811
    """The cause is the new body given to an eager ``scan``, not a library's object built again; the
    advice (call it from a function under jax.jit that takes what changes) compiles once, by JAX's log."""
    run("import jax, jax.numpy as jnp\nfrom jax import lax\nxs = jnp.ones(10)").assert_ok()
    loop = "for k in range(3):\n    out = lax.scan(lambda c, x: (c + x * k, c), 0.0, xs)"
    shown = run(f"%%recompiles -o\n{loop}").assert_ok()
    log = shown.result
    (again,) = [e for e in log.events if e.is_recompile][-1:]
    (cause,) = again.causes
    assert (cause.kind, cause.reason, cause.argument) == ("redefined_function", "eager_body", "scan")
    said = "\n".join(bundle.get("text/plain", "") for bundle in shown.outputs)
    assert "was given a new body" in said and "jit" in said and "Build `scan`" not in said
    run("@jax.jit\ndef scanned(k):\n    return lax.scan(lambda c, x: (c + x * k, c), 0.0, xs)").assert_ok()
    with jax_compilations.users_own():
        run("for k in range(3):\n    out = scanned(k)").assert_ok()
    assert sum(jax_compilations.names.values()) == 1, jax_compilations.names


def test_a_library_call_that_runs_its_loop_eagerly_is_said_as_that_call_with_its_documented_fix(
    run,
    jax_compilations,  # noqa: F811
):
    """NumPyro's ``svi.run`` (no progress bar) runs a ``lax.scan`` outside jit over a step it builds
    anew at each call: the cause is said of ``svi.run``, the line of the cell that called it (the
    cell's ``%%recompiles`` line above it, which is not Python, kept out of reading that line), with
    NumPyro's documented way (a jitted ``svi.update``), never "a lambda defined in the loop"."""
    run(
        "import jax, jax.numpy as jnp, numpyro, numpyro.distributions as dist, optax\n"
        "from numpyro.infer import SVI, Trace_ELBO, autoguide\n"
        "def model(x, y=None):\n"
        "    w = numpyro.sample('w', dist.Normal(0, 1))\n"
        "    numpyro.sample('y', dist.Normal(w * x, 1), obs=y)\n"
        "x = jnp.linspace(0, 1, 20); y = 2 * x\n"
        "guide = autoguide.AutoNormal(model)"
    ).assert_ok()
    loop = (
        "for lr in [0.1, 0.01]:\n"
        "    svi = SVI(model, guide, optax.adam(lr), Trace_ELBO())\n"
        "    res = svi.run(jax.random.PRNGKey(0), 5, x, y, progress_bar=False)"
    )
    run(loop).assert_ok()  # JAX's own caches warm: what the cell compiles again is the loops' programs
    with jax_compilations.users_own():
        shown = run(f"%%recompiles -o\n{loop}").assert_ok()
    log = shown.result
    assert log.total == sum(jax_compilations.names.values()) >= 2, (log.counts, jax_compilations.names)
    again = [e for e in log.events if e.is_recompile]
    assert again and all(cause.argument == "svi.run" for e in again for cause in e.causes), again
    said = "\n".join(bundle.get("text/plain", "") for bundle in shown.outputs)
    assert "`jax.jit(svi.update)`" in said and "`svi.init`" in said, said
    assert "lambda" not in said and "In [" in said and "line 4" in said, said
