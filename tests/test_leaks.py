"""Nothing leaks: a session watch over a thousand short-lived jitted functions keeps none of them
(or their arrays) alive and holds bounded memory; the recompile log is a ring buffer; loading and
unloading the extension twenty times leaves at most one of each hook and JAX's configuration as it was;
a magic's report, once let go, keeps the user's function and arrays alive no longer."""

from __future__ import annotations

import collections
import gc
import json
import logging
import os
import subprocess
import sys

import jax
import pytest
from IPython.utils.capture import capture_output

from jaxmagic import _jax_private
from jaxmagic.recompiles import DEFAULT_CAPACITY, watch

# Over a thousand distinct functions, each jitted, called once on its own array and dropped, under
# `%recompiles on` in a real shell. JAX's persistent compilation cache (in a fresh folder) serves
# the identical programs after the first, so each compilation costs milliseconds, not tens of them;
# jaxmagic still sees and records every one, as JAX traces, lowers and "compiles" each function.
# Once the log's ring buffer is full, a hundred more must not add to what jaxmagic holds.
THOUSAND_FUNCTIONS = r"""
import collections, gc, json, weakref
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
import jax, jax.numpy as jnp

shell = InteractiveShell.instance()
with capture_output():
    shell.run_line_magic("load_ext", "jaxmagic")
    shell.run_cell("%recompiles on")

from jaxmagic.magics.recompiles import _SESSIONS

refs = []
def churn(count):
    for i in range(count):
        def short_lived(x):
            return x * 2
        array = jnp.full(3, float(i))
        jax.jit(short_lived)(array).block_until_ready()
        refs.extend((weakref.ref(short_lived), weakref.ref(array)))

def jaxmagic_objects():
    # sentences are made when first shown and kept with their event: make them for every event the
    # log holds, so what is counted does not depend on which rows the panel happened to draw
    for event in _SESSIONS[shell].log.events:
        event.summary()
        event.advice
    gc.collect()
    return collections.Counter(type(o).__name__ for o in gc.get_objects()
                               if str(getattr(type(o), "__module__", "")).startswith("jaxmagic"))

with capture_output():
    churn(1000)  # the log holds 1,000 events: its ring buffer is full
    full = jaxmagic_objects()
    churn(100)
    after = jaxmagic_objects()

from jaxmagic.recompiles import watch
log = _SESSIONS[shell].log
panel = _SESSIONS[shell].panels[-1]
panel.flush()
print(json.dumps({
    "alive": sum(ref() is not None for ref in refs), "refs": len(refs),
    "events": len(log.events), "total": log.total, "dropped": log.dropped,
    "families": len(watch._HUB.memory._families), "remembered": watch.FUNCTIONS_REMEMBERED,
    "objects_full": full, "objects_after": after,
    "panel_rows": panel.rows.value.count("jm-recompile-row"),
    "errors": watch.internal_errors(),
}))
"""


@pytest.mark.slow
def test_a_thousand_short_lived_jitted_functions_under_the_session_watch(tmp_path):
    env = dict(
        os.environ,
        JAX_PLATFORMS="cpu",
        JAX_COMPILATION_CACHE_DIR=str(tmp_path / "cache"),
        JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
        JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="-1",
    )
    out = subprocess.run(
        [sys.executable, "-c", THOUSAND_FUNCTIONS], capture_output=True, text=True, env=env, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found["errors"] == []
    assert found["refs"] == 2200 and found["alive"] == 0, "the watch kept user functions or arrays alive"
    assert found["total"] == 1100
    assert found["events"] == DEFAULT_CAPACITY and found["dropped"] == 100
    assert found["families"] <= found["remembered"]
    assert found["panel_rows"] <= 200  # the live panel shows the latest rows only
    full, after = found["objects_full"], found["objects_after"]
    assert full["RecompileEvent"] == after["RecompileEvent"] == DEFAULT_CAPACITY
    # a hundred more compilations replace old events: what jaxmagic holds does not grow with them
    assert sum(after.values()) <= sum(full.values()) + 20, (full, after)


def test_the_session_log_is_a_bounded_ring_buffer(ip, run):
    run("%recompiles on").assert_ok()
    try:
        from jaxmagic.magics.recompiles import _SESSIONS

        log = _SESSIONS[ip].log
        assert log.capacity == DEFAULT_CAPACITY
        run("ring = jax.jit(lambda a: a + 1)\nfor n in range(1, 6):\n    ring(jnp.ones(n))").assert_ok()
        assert log.counts["<lambda> (line 1)"] == 5 and len(log.events) <= log.capacity
    finally:
        run("%recompiles off")


# ------------------------------------------------------------------------------------------------
# Loading and unloading


def _our_hooks(shell) -> dict:
    from jax._src import monitoring

    def ours(fn) -> bool:
        owner = getattr(fn, "__self__", None)
        module = getattr(owner if owner is not None else fn, "__module__", "") or ""
        return module.startswith("jaxmagic") or owner is watch._HUB

    explanation_filters = [
        f for name in _jax_private.explanation_logger_names() for f in logging.getLogger(name).filters if ours(f)
    ]

    def module_of(fn) -> str:
        owner = getattr(fn, "__self__", None)
        return getattr(owner if owner is not None else fn, "__module__", "")

    per_event_and_module = collections.Counter(
        (event, module_of(cb)) for event, callbacks in shell.events.callbacks.items() for cb in callbacks if ours(cb)
    )
    return {
        # the most hooks one module of jaxmagic holds on one of IPython's events
        "cell hooks": max(per_event_and_module.values(), default=0),
        "duration listeners": sum(ours(fn) for fn in monitoring.get_event_duration_listeners()),
        "event listeners": sum(ours(fn) for fn in monitoring.get_event_listeners()),
        "exception hooks": int(getattr(shell, "_jaxmagic_doctor_hook", None) is not None),
        "explanation filters": len(explanation_filters),
        "magics": sum(
            type(getattr(m, "__self__", None)).__module__.startswith("jaxmagic")
            for table in shell.magics_manager.magics.values()
            for m in table.values()
        ),
    }


def test_load_and_unload_twenty_times_leaves_one_of_each_hook_and_the_config_as_it_was(ip):
    config = dict(jax.config.values)
    with capture_output():
        ip.run_line_magic("unload_ext", "jaxmagic")
        unloaded = (_our_hooks(ip), ip.CustomTB, ip.custom_exceptions)
        try:
            assert unloaded[0] == dict.fromkeys(unloaded[0], 0)
            for _ in range(20):
                ip.run_line_magic("load_ext", "jaxmagic")
                ip.run_cell("%recompiles on")
                ip.run_cell("%jaxmagic doctor on")
                ip.run_line_magic("unload_ext", "jaxmagic")
            assert (_our_hooks(ip), ip.CustomTB, ip.custom_exceptions) == unloaded
            assert dict(jax.config.values) == config
        finally:
            ip.run_line_magic("load_ext", "jaxmagic")
        for _ in range(20):
            ip.run_line_magic("reload_ext", "jaxmagic")
        loaded = _our_hooks(ip)
        ip.run_cell("%recompiles on")
        watching = _our_hooks(ip)
        ip.run_cell("%recompiles off")
    assert loaded["cell hooks"] == 1 and loaded["exception hooks"] == 1
    # loaded: one duration listener, the doctor's (it notes the globals a trace reads), never more
    assert loaded["duration listeners"] == 1
    assert loaded["event listeners"] == loaded["explanation filters"] == 0
    assert watching["duration listeners"] == 2 and watching["event listeners"] == 1
    assert watching["explanation filters"] == len(_jax_private.explanation_logger_names())
    assert loaded["magics"] == watching["magics"] > 0
    assert dict(jax.config.values) == config


# ------------------------------------------------------------------------------------------------
# Reports let go


def test_magics_keep_no_user_function_or_array_alive(ip, run):
    run(
        "import weakref\n"
        "def doomed(a):\n    return jnp.sin(a) * 2\n"
        "doomed_array = jnp.ones(5)\n"
        "doomed_refs = [weakref.ref(doomed), weakref.ref(doomed_array)]"
    ).assert_ok()
    run("%jaxpr doomed(doomed_array)").assert_ok()
    run("%jitcompare -n 1 -r 1 --budget 0.2 doomed(doomed_array)").assert_ok()
    run("%%recompiles\njax.jit(doomed)(doomed_array);").assert_ok()
    refs = ip.user_ns.pop("doomed_refs")
    for name in ("doomed", "doomed_array"):
        ip.user_ns.pop(name)
    gc.collect()
    assert [ref() for ref in refs] == [None, None]
