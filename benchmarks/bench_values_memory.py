"""``%jaxpr --values`` and ``%jaxpr --memory`` measured against what they stand beside, in one process.

- ``--values``: running the traced program with a summary of every value (one compiled program),
  against one eager call of the same function: the first run of each (JAX's caches and the
  recording programs emptied before each: the eager call compiles each of its operations, the
  recording program compiles once) and a run once warm. Goal: at most 3× for both.
- ``--memory``: compiling with XLA's buffer assignment written out and reading the peak and what
  the backward pass keeps by source line, against one plain compile of the same lowered program.
  Goal: at most 1.5×. Reading the dump alone (the peak's sweep over the schedule, naming each
  buffer), against the same compile: at most 0.25×. The checkpoint-policy table compiles the
  gradient once per policy: at most 8× one compile (four compiles of a checkpointed gradient).
- Attribution: the share of the peak's bytes held by buffers with a user source line or an
  argument name. Goal: at least 95%.

On five models: an MLP, a CNN, a transformer block, a scan RNN and a Flax NNX model, each with
its gradient (the peak of a training step is in its backward pass); and ``--values`` also on the
four models recorded on a TPU (``tests/fixtures/tpu/models.py``) at sizes a CPU runs in seconds.
``accelerated()`` gives the same rows at the recorded sizes, for a run on the accelerator::

    JAX_PLATFORMS=tpu,cpu python -c "import sys; sys.path.insert(0, 'benchmarks'); import bench_values_memory as b; b.report(b.accelerated())"
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
    for name, (fn, args) in recorded_models(quick).items():
        rows += values_rows(f"{name} (TPU fixture, small)", fn, args, 1 if quick else 3)
    return rows


def recorded_models(quick: bool, full: bool = False) -> dict:
    """The four models of ``tests/fixtures/tpu/models.py``: at their recorded sizes with ``full``,
    else at sizes a CPU evaluates in seconds."""
    import pathlib
    import sys

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
    from tests.fixtures.tpu import models as recorded

    key = jax.random.PRNGKey(0)
    if full:
        sizes = {name: {} for name in recorded.MODELS}
    else:
        small = 1 if quick else 4
        sizes = {
            "mlp": {"batch": 32 * small, "width": 64 * small, "depth": 4},
            "block_grad": {"batch": 1 if quick else 2, "seq": 16 * small, "d": 32 * small, "dtype": jnp.float32},
            "rnn": {"steps": 20 * small, "batch": 8 * small, "hidden": 32 * small, "features": 16 * small},
            "convnet": {"batch": 2 * small, "size": 8 * small, "channels": (3, 8, 16, 32)},
        }
    return {name: (fn, make(key, **sizes[name])) for name, (fn, make) in recorded.MODELS.items()}


def accelerated() -> list[dict]:
    """The ``--values`` rows of the four recorded models at their recorded sizes (for the TPU)."""
    rows = []
    for name, (fn, args) in recorded_models(False, full=True).items():
        rows += values_rows(f"{name} ({jax.default_backend()})", fn, args, 3)
    return rows


def first_runs(fn, args, repeat: int) -> tuple[float, float]:
    """``(eager, --values)``: the best first call of each, JAX's caches emptied before each."""
    traced = jax.jit(fn).trace(*args)
    flat = values.flat_arguments(traced.jaxpr.in_avals, args, {})
    eager, evaluated = [], []
    for _ in range(repeat):
        jax.clear_caches()
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        eager.append(time.perf_counter() - start)
        jax.clear_caches()
        start = time.perf_counter()
        jax.block_until_ready(values.evaluate(traced.jaxpr, flat).outputs)
        evaluated.append(time.perf_counter() - start)
    return min(eager), min(evaluated)


def values_rows(name: str, fn, args: tuple, repeat: int) -> list[dict]:
    """``--values`` against one eager call of ``fn``: first runs, and runs once warm."""
    traced = jax.jit(fn).trace(*args)
    flat = values.flat_arguments(traced.jaxpr.in_avals, args, {})
    eager_first, values_first = first_runs(fn, args, repeat)

    def eager():
        return jax.block_until_ready(fn(*args))

    def evaluated():
        return jax.block_until_ready(values.evaluate(traced.jaxpr, flat).outputs)

    eager(), evaluated()
    eager_s, values_s = best(eager, repeat), best(evaluated, repeat)
    run = values.evaluate(traced.jaxpr, flat)
    how = f"summaries on the {run.summarised_on}"
    return [
        {
            "goal": f"values: --values / one eager call, first run, {name}",
            "measured": values_first / eager_first,
            "target": "<= 3",
            "met": values_first / eager_first <= 3,
            "detail": f"eager {eager_first * 1e3:.0f} ms, --values {values_first * 1e3:.0f} ms "
            f"({len(run.equations)} equations, {how})",
        },
        {
            "goal": f"values: --values / one eager call, warm, {name}",
            "measured": values_s / eager_s,
            "target": "<= 3",
            "met": values_s / eager_s <= 3,
            "detail": f"eager {eager_s * 1e3:.2f} ms, --values {values_s * 1e3:.2f} ms",
        },
    ]


def measure(name: str, fn, args: tuple, repeat: int) -> list[dict]:
    """The rows of one model, measured on its gradient."""
    step = jax.grad(fn)
    rows = values_rows(f"grad of {name}", step, args, max(1, repeat // 2))

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
    return rows + [
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


def report(rows: list[dict]) -> None:
    for row in rows:
        print(f"{row['goal']:<80} {row['measured']:8.3f}  {row['target']}  {row['detail']}")


if __name__ == "__main__":
    report(run())
