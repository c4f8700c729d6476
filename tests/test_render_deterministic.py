"""The same report renders to the same bytes: in one process, twice, and in two processes. Ids in
the HTML come from what they label, so outputs compare and diff cleanly."""

import hashlib
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import hashlib, sys
    import jax, jax.numpy as jnp
    import jaxmagic

    def layer(w, x):
        return jnp.tanh(x @ w)

    def loss(params, x):
        h = layer(params["w1"], x)
        h = jax.lax.cond(h.sum() > 0, jnp.sin, jnp.cos, h)
        for _ in range(3):
            h = layer(params["w2"], h)
        return jnp.sum(h ** 2) + jnp.sum(jnp.sin(h)) * jnp.cos(h).mean()

    params = {"w1": jnp.ones((4, 8)), "w2": jnp.ones((8, 8))}
    call = jaxmagic.Call(loss, (params, jnp.ones((3, 4))), {})
    for options, view in ({}, {}), ({"transforms": ["grad"]}, {}), ({"show_values": True}, {}), ({}, {"stage": "stablehlo"}):
        report = jaxmagic.trace(call, **options)
        shown_as = jaxmagic.JaxprView(report, **view) if view else report
        for shown in (shown_as.to_html(), shown_as.to_text(), shown_as.to_html()):
            print(hashlib.sha256(shown.encode()).hexdigest())
    """
)


def _hashes(tmp_path) -> list[str]:
    script = tmp_path / "render_twice.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONHASHSEED": "random"}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_two_processes_render_the_same_reports_to_the_same_bytes(tmp_path):
    first, second = _hashes(tmp_path), _hashes(tmp_path)
    assert len(first) == 12
    assert first == second
    assert first[0::3] == first[2::3]  # in one process, the HTML twice


def test_the_same_call_shown_twice_is_the_same_html(run):
    run(
        "def loss(w, x):\n"
        "    return jnp.sum(jnp.tanh(x @ w) ** 2) + jnp.sum(jnp.sin(x @ w)) * jnp.cos(x @ w).mean()\n"
        "w, x = jnp.ones((4, 8)), jnp.ones((3, 4))"
    ).assert_ok()
    first = run("%jaxpr loss(w, x)").assert_ok().html
    again = run("%jaxpr loss(w, x)").assert_ok().html
    assert 'type="radio"' in first  # a listing with ids: its filters and their scoped rules
    assert hashlib.sha256(first.encode()).digest() == hashlib.sha256(again.encode()).digest()
