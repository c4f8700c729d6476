"""``expect_collectives`` and ``expect_compiles`` in every process of a ``jax.distributed`` run: two
CPU processes on localhost (two simulated devices each, Gloo between them) each check the program
they compile, and each fails with its own message."""

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]

WORKER = textwrap.dedent(
    r"""
    import json, os, sys
    process, port = int(sys.argv[1]), sys.argv[2]
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
    os.environ["JAX_PLATFORMS"] = "cpu"
    import jax
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=f"localhost:{port}", num_processes=2, process_id=process)
    import jax.numpy as jnp, numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    import jaxmagic

    mesh = Mesh(np.array(jax.devices()), ("hosts",))
    rows = jax.make_array_from_callback(
        (8, 4), NamedSharding(mesh, P("hosts")), lambda index: np.ones((8, 4), np.float32)[index]
    )

    @jax.jit
    def column_sums(x):
        return x.sum(0)

    facts = {"process": jax.process_index(), "devices": len(jax.devices()), "local": len(jax.local_devices())}
    try:
        with jaxmagic.expect_collectives(column_sums, forbid=["all-reduce"]):
            column_sums(rows).block_until_ready()
        facts["failure"] = None
    except AssertionError as failure:
        facts["failure"] = str(failure)
    with jaxmagic.expect_compiles(column_sums, max=1) as log:
        column_sums(rows).block_until_ready()
    facts["compiled_again"] = log.total
    print("FACTS" + json.dumps(facts), flush=True)
    jax.distributed.shutdown()
    """
)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return probe.getsockname()[1]


def test_budgets_hold_in_every_process_of_a_distributed_run(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    port = str(_free_port())
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("XLA_FLAGS", None)
    workers = [
        subprocess.Popen(
            [sys.executable, str(script), str(process), port],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for process in (0, 1)
    ]
    facts = []
    try:
        for worker in workers:
            out, err = worker.communicate(timeout=240)
            line = next((text for text in out.splitlines() if text.startswith("FACTS")), None)
            assert line is not None, f"a process failed:\n{out[-2000:]}\n{err[-3000:]}"
            facts.append(json.loads(line[len("FACTS") :]))
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
    assert sorted(f["process"] for f in facts) == [0, 1]
    for found in facts:
        assert found["devices"] == 4 and found["local"] == 2
        headline, *items = found["failure"].splitlines()
        assert headline == "`column_sums` compiled 1 all-reduce (1 in all) in the block; expected no all-reduce."
        assert "over `hosts`" in items[0] and "`return x.sum(0)`" in items[0]
        assert found["compiled_again"] == 0  # the program compiled in the first block is reused
