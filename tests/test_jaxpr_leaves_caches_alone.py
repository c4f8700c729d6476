"""``%jaxpr`` must not change what the user's next call does: its trace and compile are its own,
never found again by the user's jitted function (JAX caches traces per function object)."""


def test_a_global_changed_after_jaxpr_is_read_by_the_next_call(ip, run):
    run("scale = 1.0\n@jax.jit\ndef scaled(x):\n    return x * scale\nv = jnp.ones(3)").assert_ok()
    run("%jaxpr --stage hlo scaled(v)").assert_ok()
    run("scale = 2.0").assert_ok()
    after = run("scaled(v)").assert_ok().result
    assert after.tolist() == [2.0, 2.0, 2.0], "the user's first call traces with the global as it is now"


def test_the_user_s_first_call_after_jaxpr_still_compiles_as_a_first_call(ip, run):
    import jax

    run("@jax.jit\ndef fresh(x):\n    return jnp.cos(x) + 1\nw = jnp.ones(5)").assert_ok()
    run("%jaxpr --profile 1 fresh(w)").assert_ok()
    compiled = []
    jax.monitoring.register_event_duration_secs_listener(
        lambda event, duration, **_: compiled.append(event) if "backend_compile" in event else None
    )
    run("fresh(w)").assert_ok()
    assert compiled, "the user's call compiled: %jaxpr's compile was its own"


def test_jaxpr_writes_nothing_into_the_users_persistent_compilation_cache(tmp_path):
    """--memory compiles with XLA's dump options and --values runs each equation: programs the user
    never compiles, which must not fill their cache. Run apart: JAX sets its cache up once per process."""
    import subprocess
    import sys

    script = f"""
import os, jax, jax.numpy as jnp
from IPython.core.interactiveshell import InteractiveShell
jax.config.update("jax_compilation_cache_dir", {str(tmp_path)!r})
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "jaxmagic")
shell.run_cell("import jax, jax.numpy as jnp\\ndef f(x):\\n    return jnp.tanh(x @ x.T).sum()\\nv = jnp.ones((8, 8))")
before = len(os.listdir({str(tmp_path)!r}))  # the user's own eager work in that cell
for cell in ("%jaxpr --memory f(v)", "%jaxpr --values f(v)", "%jaxpr --stage hlo f(v)"):
    assert shell.run_cell(cell).success, cell
inside = len(os.listdir({str(tmp_path)!r})) - before
shell.run_cell("jax.jit(f)(v)")
print("ENTRIES", inside, len(os.listdir({str(tmp_path)!r})) > before + inside)
"""
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "JAX_PLATFORMS": "cpu"},
    )
    assert "ENTRIES 0 True" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
