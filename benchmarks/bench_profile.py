"""``%jaxpr --profile`` measured against what it explains, side by side in one process.

- Overhead: a call while the profiler records, against a plain timed call of the same compiled
  function (what recording costs each call); and the whole ``--profile`` (compiling, the
  profiler's start, reading the trace back, mapping kernels to lines) per profiled call.
  Reported, not judged: the profiler's fixed start-up dominates small calls.
- Attribution: the share of the device time the profiler measured that lands on a user source
  line, on three models: an MLP, a scan-based RNN and a convolution. Goal: at least 95%.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
from jax import lax

from jaxmagic.compiled import profiling


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


def models(quick: bool):
    scale = 1 if quick else 4
    return {
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
    rows = []
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
                "detail": f"{len(found.kernels)} kernels, {len(found.line_times)} lines, "
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
    for row in run():
        print(f"{row['goal']:<70} {row['measured']:8.3f}  {row['target']}  {row['detail']}")
