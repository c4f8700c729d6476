"""Terminal IPython: each magic prints text (coloured on a colour terminal, plain on a dumb one)."""

import os
import pathlib
import subprocess
import sys

from conftest import internals_in

IPYTHON = pathlib.Path(sys.executable).with_name("ipython")
SESSION = "%load_ext jaxmagic\nimport jax.numpy as jnp\nx = jnp.ones(3)\n{magic}\nexit\n"


def terminal_session(magic: str, **env) -> str:
    environment = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    environment.update(JAX_PLATFORMS="cpu", **env)
    args = [str(IPYTHON), "--simple-prompt"] + (["--colors=linux"] if env.get("TERM") != "dumb" else [])
    done = subprocess.run(
        args, input=SESSION.format(magic=magic), capture_output=True, text=True, timeout=120, env=environment
    )
    return done.stdout + done.stderr


def test_jaxpr_in_a_colour_terminal_is_highlighted():
    out = terminal_session("%jaxpr jnp.sin(x)", TERM="xterm-256color")
    assert "sin: 1 equation" in out
    assert "\x1b[38;5;" in out and "sin\x1b[39m" in out


def test_jaxpr_in_a_dumb_terminal_is_plain_text():
    out = terminal_session("%jaxpr jnp.sin(x)", TERM="dumb")
    assert "    b:f32[3] = sin a" in out
    assert "\x1b[" not in out.split("sin: 1 equation", 1)[1].split("In [5]", 1)[0]


def test_no_color_is_honoured():
    out = terminal_session("%jaxpr jnp.sin(x)", TERM="xterm-256color", NO_COLOR="1")
    assert "    b:f32[3] = sin a" in out


def test_jitcompare_in_a_terminal_prints_an_aligned_table():
    out = terminal_session("%jitcompare -n 3 -r 2 jnp.sin(x)", TERM="dumb")
    rows = [line for line in out.splitlines() if line.startswith(("eager ", "jit "))]
    assert len(rows) >= 2, out
    header = next(line for line in out.splitlines() if line.startswith("mode "))
    assert header.index("median") < header.index("best") < header.index("worst")
    assert "jit pays off after" in out or "never" in out


def test_doctor_in_a_terminal_explains_a_trap_in_a_magic():
    out = terminal_session("%jaxpr (lambda v: v if v.sum() > 0 else -v)(x)", TERM="dumb")
    assert "jaxmagic doctor" in out and "python-control-flow" in out
    assert internals_in(out) == []
