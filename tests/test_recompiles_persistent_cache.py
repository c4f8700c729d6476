"""A persistent-cache miss says which part of JAX's cache key changed since the function was last
compiled into that cache — the program, the XLA flags, ... — across restarts (each run here is a
fresh Python process sharing one cache directory), or that the key is the same and the entry was
never written. The truth: the cache entries JAX itself wrote (one file per distinct key)."""

import json
import logging
import os
import subprocess
import sys

SCRIPT = r"""
import json, logging, sys
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
import jax, jax.numpy as jnp
jax.config.update("jax_compilation_cache_dir", sys.argv[1])
if sys.argv[3] == "write-all":
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
from jaxmagic import watch_recompiles
from jaxmagic.render.recompiles import persistent_miss
scale = float(sys.argv[2])

@jax.jit
def step(x):
    return jnp.sin(x) * scale

with watch_recompiles() as log:
    step(jnp.ones(3))
(event,) = [e for e in log.events if e.function == "step"]
level = logging.getLogger("jax._src.cache_key").level
print("FACTS" + json.dumps({
    "hit": event.persistent_cache,
    "parts": None if event.persistent_key_parts is None else list(event.persistent_key_parts),
    "words": None if event.persistent_cache else persistent_miss(event),
    "text": log.to_text(),
    "level_after": level,
}))
"""


def run(cache, scale, mode="write-all", **env):
    environment = {**os.environ, **env}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(cache), str(scale), mode],
        capture_output=True,
        text=True,
        timeout=240,
        env=environment,
    )
    line = next((text for text in done.stdout.splitlines() if text.startswith("FACTS")), None)
    assert line is not None, done.stderr[-3000:]
    return json.loads(line[len("FACTS") :]), done.stderr


def entries(cache) -> list[str]:
    return sorted(p.name for p in cache.iterdir() if p.name.startswith("jit_step-") and p.name.endswith("-cache"))


def test_a_miss_names_the_key_part_that_changed_across_restarts(tmp_path):
    first, stderr = run(tmp_path, 1.0)
    assert first["hit"] is False and first["parts"] is None and "no earlier key" in first["words"]
    assert "get_cache_key" not in stderr, "JAX's DEBUG lines stay hidden from the user's INFO logging"
    assert first["level_after"] == logging.NOTSET, "the logger's level is put back"
    again, _ = run(tmp_path, 1.0)
    assert again["hit"] is True and len(entries(tmp_path)) == 1  # JAX: the same key, served
    changed, _ = run(tmp_path, 2.0)  # the constant baked into the program changed
    assert changed["hit"] is False and changed["parts"] == ["computation"]
    assert len(entries(tmp_path)) == 2  # JAX: a second key
    assert "the program (its StableHLO) changed" in changed["words"] and changed["words"] in changed["text"]
    more_flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_cpu_enable_fast_math=false".strip()
    flags, _ = run(tmp_path, 2.0, XLA_FLAGS=more_flags)  # the same devices, one more flag
    assert flags["hit"] is False and flags["parts"] == ["XLA flags"] and len(entries(tmp_path)) == 3


def test_a_fast_compilation_is_never_written_and_the_miss_says_so(tmp_path):
    run(tmp_path, 1.0, mode="defaults")
    second, _ = run(tmp_path, 1.0, mode="defaults")
    assert entries(tmp_path) == []  # JAX wrote nothing: the compilation took less than its minimum
    assert second["hit"] is False and second["parts"] == []
    assert "jax_persistent_cache_min_compile_time_secs" in second["words"]


def test_a_cache_the_index_cannot_be_written_to_still_compares_within_the_process(tmp_path):
    from jaxmagic.recompiles.cache_keys import KeyIndex

    index = KeyIndex(str(tmp_path / "not" / "a" / "folder"))  # every write fails
    index.record("step", {"computation": "a"})
    assert index.compare("step", {"computation": "b"}).parts == ("computation",)
    assert not (tmp_path / "not").exists()
