"""``%jaxpr --values`` and ``%jaxpr --memory`` measured against what they stand beside, in one process.

- ``--values``: evaluating the traced program one equation at a time (with a summary of every
  value), against one eager call of the same function. Goal: at most 3×.
- ``--memory``: compiling with XLA's buffer assignment written out and reading the peak and what
  the backward pass keeps by source line, against one plain compile of the same lowered program.
  Goal: at most 1.5×. Reading the dump alone (the peak's sweep over the schedule, naming each
  buffer), against the same compile: at most 0.25×. The checkpoint-policy table compiles the
  gradient once per policy: at most 8× one compile (four compiles of a checkpointed gradient).
- Attribution: the share of the peak's bytes held by buffers with a user source line or an
  argument name. Goal: at least 95%.

On five models: an MLP, a CNN, a transformer block, a scan RNN and a Flax NNX model, each with
its gradient (the peak of a training step is in its backward pass).
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
from jax import lax

from jaxmagic.compiled import peak_memory, remat
from jaxmagic.tracing import values


def mlp(params, x):
    hidden = jnp.tanh(x @ params["w1"] + params["b1"])
    logits = hidden @ params["w2"]
    return jax.nn.log_softmax(logits).mean()


def cnn(kernels, images):
    features = jax.nn.relu(lax.conv_general_dilated(images, kernels["k1"], (1, 1), "SAME"))
    features = jax.nn.relu(lax.conv_general_dilated(features, kernels["k2"], (2, 2), "SAME"))
    return features.mean()


def transformer_block(params, x):
    q, k, v = x @ params["wq"], x @ params["wk"], x @ params["wv"]
    scores = jnp.einsum("td,sd->ts", q, k) / jnp.sqrt(q.shape[-1])
    attended = jax.nn.softmax(scores, axis=-1) @ v
    h = x + attended @ params["wo"]
    h = h / jnp.sqrt(jnp.mean(h**2, axis=-1, keepdims=True) + 1e-6)
    return (h + jax.nn.gelu(h @ params["w1"]) @ params["w2"]).mean()


def rnn(w, xs):
    def step(h, x):
        h = jnp.tanh(h @ w + x)
        return h, h.sum()

    return lax.scan(step, jnp.zeros(w.shape[0]), xs)[1].sum()


def nnx_model(scale: int):
    from flax import nnx

    class Model(nnx.Module):
        def __init__(self, rngs):
            self.first = nnx.Linear(64 * scale, 128 * scale, rngs=rngs)
            self.second = nnx.Linear(128 * scale, 10, rngs=rngs)

        def __call__(self, x):
            return self.second(nnx.relu(self.first(x))).mean()

    graphdef, state = nnx.split(Model(nnx.Rngs(0)))

    def apply(state, x):
        return nnx.merge(graphdef, state)(x)

    return apply, (state, jnp.ones((32 * scale, 64 * scale)))


def models(quick: bool):
    scale = 1 if quick else 4
    d = 32 * scale
    key = jax.random.PRNGKey(0)
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
        "CNN": (
            cnn,
            (
                {"k1": jnp.ones((8, 3, 3, 3)) * 0.1, "k2": jnp.ones((16, 8, 3, 3)) * 0.1},
                jnp.ones((2 * scale, 3, 16 * scale, 16 * scale)),
            ),
        ),
        "transformer block": (
            transformer_block,
            (
                {
                    name: jax.random.normal(jax.random.fold_in(key, i), shape) * 0.05
                    for i, (name, shape) in enumerate(
                        [
                            ("wq", (d, d)),
                            ("wk", (d, d)),
                            ("wv", (d, d)),
                            ("wo", (d, d)),
                            ("w1", (d, 4 * d)),
                            ("w2", (4 * d, d)),
                        ]
                    )
                },
                jax.random.normal(key, (16 * scale, d)),
            ),
        ),
        "scan RNN": (rnn, (jnp.ones((32 * scale, 32 * scale)) * 0.01, jnp.ones((50, 32 * scale)))),
        "Flax NNX model": nnx_model(scale),
    }


def best(run, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def best_of_fresh(prepare, run, repeat: int) -> float:
    """The best time of ``run(prepare())``, ``prepare`` left out of the time."""
    times = []
    for _ in range(repeat):
        prepared = prepare()
        start = time.perf_counter()
        run(prepared)
        times.append(time.perf_counter() - start)
    return min(times)


def run(quick: bool = False) -> list[dict]:
    """One row per goal: ``goal``, ``measured``, ``target``, ``met``, ``detail``."""
    repeat = 2 if quick else 5
    rows = []
    for name, (fn, args) in models(quick).items():
        rows += measure(name, fn, args, repeat)
    return rows


def measure(name: str, fn, args: tuple, repeat: int) -> list[dict]:
    """The three rows of one model, measured on its gradient."""
    step = jax.grad(fn)
    traced = jax.jit(step).trace(*args)
    flat = values.flat_arguments(traced.jaxpr.in_avals, args, {})

    def eager():
        return jax.block_until_ready(step(*args))

    def evaluated():
        return jax.block_until_ready(values.evaluate(traced.jaxpr, flat).outputs)

    eager(), evaluated()  # warm: each primitive compiled once, for both
    eager_s, values_s = best(eager, repeat), best(evaluated, repeat)

    def fresh_lowering():  # JAX keeps a lowered program's executable: each compile starts afresh
        return jax.jit(jax.grad(fn)).trace(*args).lower()

    def read(hlo_text: str, dumped: str, totals: dict):
        remat.kept_for_backward(hlo_text, dumped)
        return peak_memory.peak_memory(hlo_text, dumped, totals)

    def measured_peak(lowered):
        compiled, dumped = peak_memory.compile_with_buffers(lowered)
        return read(compiled.as_text(), dumped, peak_memory.compiled_memory(compiled))

    def policies(_):
        remat.policy_costs(lambda wrap: jax.jit(jax.grad(wrap(fn))).trace(*args).lower())

    compile_s = best_of_fresh(fresh_lowering, lambda lowered: lowered.compile(), repeat)
    memory_s = best_of_fresh(fresh_lowering, measured_peak, repeat)
    compiled, dumped = peak_memory.compile_with_buffers(fresh_lowering())
    hlo_text, totals = compiled.as_text(), peak_memory.compiled_memory(compiled)
    reading_s = best(lambda: read(hlo_text, dumped, totals), repeat)
    policies_s = best_of_fresh(lambda: None, policies, max(1, repeat // 2))
    peak = read(hlo_text, dumped, totals)
    return [
        {
            "goal": f"values: --values / one eager call, grad of {name}",
            "measured": values_s / eager_s,
            "target": "<= 3",
            "met": values_s / eager_s <= 3,
            "detail": f"eager {eager_s * 1e3:.1f} ms, --values {values_s * 1e3:.1f} ms "
            f"({len(values.evaluate(traced.jaxpr, flat).equations)} equations)",
        },
        {
            "goal": f"memory: --memory / one compile, grad of {name}",
            "measured": memory_s / compile_s,
            "target": "<= 1.5",
            "met": memory_s / compile_s <= 1.5,
            "detail": f"compile {compile_s * 1e3:.1f} ms, --memory {memory_s * 1e3:.1f} ms",
        },
        {
            "goal": f"memory: reading the dump / one compile, grad of {name}",
            "measured": reading_s / compile_s,
            "target": "<= 0.25",
            "met": reading_s / compile_s <= 0.25,
            "detail": f"compile {compile_s * 1e3:.1f} ms, reading {reading_s * 1e3:.1f} ms ({len(dumped)} characters)",
        },
        {
            "goal": f"memory: checkpoint policies / one compile, grad of {name}",
            "measured": policies_s / compile_s,
            "target": "<= 8",
            "met": policies_s / compile_s <= 8,
            "detail": f"compile {compile_s * 1e3:.1f} ms, four policies compiled {policies_s * 1e3:.1f} ms",
        },
        {
            "goal": f"memory: peak bytes on user lines or arguments, grad of {name}",
            "measured": peak.attributed_share,
            "target": ">= 0.95",
            "met": peak.attributed_share >= 0.95,
            "detail": f"peak {peak.peak_bytes} B in {len(peak.live_at_peak)} buffers on {len(peak.by_line)} lines",
        },
    ]


if __name__ == "__main__":
    for row in run():
        print(f"{row['goal']:<70} {row['measured']:8.3f}  {row['target']}  {row['detail']}")
