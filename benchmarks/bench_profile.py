"""``%jaxpr --profile`` measured against what it explains, side by side in one process.

- Overhead: a call while the profiler records, against a plain timed call of the same compiled
  function (what recording costs each call); and the whole ``--profile`` (compiling, the
  profiler's start, reading the trace back, mapping kernels to lines) per profiled call.
  Reported, not judged: the profiler's fixed start-up dominates small calls.
- Attribution: the share of the device time the profiler measured that lands on a user source
  line, on three models: an MLP, a scan-based RNN and a convolution; on an accelerator, also on
  the four models recorded in ``tests/fixtures/tpu`` (an MLP, a transformer block's gradient, a
  ``lax.scan`` RNN, a conv net). Goal: at least 95%.
- Reading a trace from disk (``python -m jaxmagic profile``): seconds per MB of trace, and the
  share on user lines of the four recorded TPU traces (no accelerator needed).

Runs on its own too, where ``make bench`` cannot (an accelerator's machine without matplotlib or
the test extra): ``python benchmarks/bench_profile.py [--json FILE]`` from the repository's root.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # run on its own from anywhere: the repository's jaxmagic
    sys.path.insert(0, ROOT)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

from jaxmagic.compiled import profiling, trace_profile  # noqa: E402

TPU_FIXTURES = os.path.join(ROOT, "tests", "fixtures", "tpu")


def mlp(params, x):
    hidden = jnp.tanh(x @ params["w1"] + params["b1"])
    logits = hidden @ params["w2"]
    return jax.nn.log_softmax(logits)


def rnn(w, xs):
    def step(h, x):
        h = jnp.tanh(h @ w + x)
        return h, h.sum()

    return lax.scan(step, jnp.zeros(w.shape[0]), xs)[1]


def conv(kernel, images):
    features = lax.conv_general_dilated(images, kernel, (1, 1), "SAME")
    return jax.nn.relu(features).mean()


def recorded_models() -> dict:
    """The four models recorded on a TPU (``tests/fixtures/tpu/models.py``), at their own sizes."""
    spec = importlib.util.spec_from_file_location("tpu_models", os.path.join(TPU_FIXTURES, "models.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {f"recorded {name}": (fn, make(jax.random.key(0))) for name, (fn, make) in module.MODELS.items()}


def models(quick: bool):
    scale = 1 if quick else 4
    found = {
        "MLP": (
            mlp,
            (
                {
                    "w1": jnp.ones((64 * scale, 128 * scale)) * 0.01,
                    "b1": jnp.ones(128 * scale),
                    "w2": jnp.ones((128 * scale, 10)),
                },
                jnp.ones((32 * scale, 64 * scale)),
            ),
        ),
        "scan RNN": (rnn, (jnp.ones((32 * scale, 32 * scale)) * 0.01, jnp.ones((50, 32 * scale)))),
        "convolution": (conv, (jnp.ones((8, 3, 3, 3)), jnp.ones((2 * scale, 3, 16 * scale, 16 * scale)))),
    }
    if jax.default_backend() != "cpu" and not quick:
        found.update(recorded_models())
    return found


def trace_rows() -> list[dict]:
    """Reading the recorded TPU traces from disk: speed per MB and the share on user lines."""
    rows = []
    for name in ("mlp", "block_grad", "rnn", "convnet"):
        path = os.path.join(TPU_FIXTURES, f"{name}.xplane.pb")
        start = time.perf_counter()
        found = trace_profile.read_trace(path)
        seconds = time.perf_counter() - start
        megabytes = os.path.getsize(path) / 1e6
        rows.append(
            {
                "goal": f"profile TRACE: device time on user source lines, recorded TPU {name}",
                "measured": found.profile.attributed_share,
                "target": ">= 0.95",
                "met": found.profile.attributed_share >= 0.95,
                "detail": f"read in {seconds * 1e3:.0f} ms ({seconds / megabytes:.2f} s per MB of trace)",
            }
        )
    return rows


def plain_call_seconds(jitted, args, repeat: int) -> float:
    jax.block_until_ready(jitted(*args))
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        jax.block_until_ready(jitted(*args))
        times.append(time.perf_counter() - start)
    return min(times)


def run(quick: bool = False) -> list[dict]:
    """One row per goal: ``goal``, ``measured``, ``target``, ``met``, ``detail``."""
    calls = 2 if quick else 5
    rows = trace_rows()
    device = jax.devices()[0].device_kind
    for name, (fn, args) in models(quick).items():
        jitted = jax.jit(fn)
        plain = plain_call_seconds(jitted, args, repeat=calls * 2)
        start = time.perf_counter()
        found = profiling.profile(jitted, args, {}, calls=calls)
        profiled = (time.perf_counter() - start) / (calls + 1)  # the warm-up call is in there too
        rows.append(
            {
                "goal": f"profile: device time on user source lines, {name}",
                "measured": found.attributed_share,
                "target": ">= 0.95",
                "met": found.attributed_share >= 0.95,
                "detail": f"{device}: {len(found.kernels)} kernels, {len(found.line_times)} lines, "
                f"{found.device_seconds * 1e6:.0f} µs device time per call",
            }
        )
        rows.append(
            {
                "goal": f"profile: a call while the profiler records / a plain call, {name}",
                "measured": found.wall_seconds / plain,
                "target": "(info)",
                "met": True,
                "detail": f"plain call {plain * 1e6:.0f} µs, recorded call {found.wall_seconds * 1e6:.0f} µs",
            }
        )
        rows.append(
            {
                "goal": f"profile: all of --profile per profiled call / a plain call, {name}",
                "measured": profiled / plain,
                "target": "(info)",
                "met": True,
                "detail": f"plain call {plain * 1e6:.0f} µs; profiling includes the profiler's start and read-back",
            }
        )
    return rows


if __name__ == "__main__":
    measured = run()
    for row in measured:
        print(f"{row['goal']:<70} {row['measured']:8.3f}  {row['target']}  {row['detail']}")
    if "--json" in sys.argv[1:]:
        with open(sys.argv[sys.argv.index("--json") + 1], "w", encoding="utf-8") as out:
            json.dump({"device": jax.devices()[0].device_kind, "jax": jax.__version__, "rows": measured}, out, indent=1)
