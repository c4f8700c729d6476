"""The doctor's cost, against the JAX work it comes with, side by side in one process.

- ``diagnose`` of a JIT trap, against the failing ``jax.jit`` call that raised it (a fresh
  function each time, so the call traces until the error, as a user's first call does).
  Goal: the explanation costs no more than the error itself.
- ``observe_trace`` (the warnings ``%jaxpr`` shows), against ``jax.jit(f).trace`` of the same
  function, for unrolled MLPs of about 1,000 and 11,000 equations. A function that reads NumPy is
  the worst case: every equation's recorded traceback is then searched for NumPy frames.
  Goals: at most 0.25x the trace with NumPy, 0.05x without.
"""

from __future__ import annotations

import itertools
import linecache
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxmagic import doctor

_cells = itertools.count(1)

TRAP = """
def step(params, x, training):
    hidden = jnp.tanh(x @ params["w1"] + params["b1"])
    hidden = hidden * 0.5 + 0.1
    scores = hidden @ params["w2"]
    total = jnp.sum(scores ** 2)
    if training:
        total = total + 1e-3 * jnp.sum(params["w1"] ** 2)
    return total
"""


def _define(source: str, **names):
    """Define the functions of ``source`` as a notebook cell would (its text in linecache)."""
    filename = f"<bench-doctor-{next(_cells)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"jax": jax, "jnp": jnp, "np": np, **names}
    exec(compile(source, filename, "exec"), namespace)
    return namespace


def _failing_call():
    namespace = _define(TRAP)
    params = {"w1": jnp.ones((8, 16)), "b1": jnp.zeros(16), "w2": jnp.ones((16, 4))}
    start = time.perf_counter()
    try:
        jax.jit(namespace["step"])(params, jnp.ones((2, 8)), True)
    except Exception as exc:
        return time.perf_counter() - start, exc
    raise AssertionError("the benchmark's trap did not raise")


def measure_diagnose(repeat: int) -> dict:
    call_times, diagnose_times = [], []
    for _ in range(repeat):
        call_s, error = _failing_call()
        start = time.perf_counter()
        found = doctor.diagnose(error)
        diagnose_times.append(time.perf_counter() - start)
        call_times.append(call_s)
        assert found is not None and found.pitfall == "python-control-flow"
    return {
        "ratio": min(diagnose_times) / min(call_times),
        "call_s": min(call_times),
        "diagnose_s": min(diagnose_times),
    }


def _mlp(layers: int, with_numpy: bool):
    scale = "np.float32(0.5)" if with_numpy else "0.5"
    source = (
        f"def mlp(x, w, b):\n    for _ in range({layers}):\n        x = jnp.tanh(x @ w + b) * {scale}\n    return x\n"
    )
    return _define(source)["mlp"]


def measure_observe(layers: int, with_numpy: bool, repeat: int) -> dict:
    fn = _mlp(layers, with_numpy)
    args = (jnp.ones((4, 16)), jnp.ones((16, 16)), jnp.ones(16))
    trace_times, observe_times = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        traced = jax.jit(_mlp(layers, with_numpy)).trace(*args)  # a fresh function: a real trace
        trace_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        warnings = doctor.observe_trace(fn, traced.jaxpr, "")
        observe_times.append(time.perf_counter() - start)
        assert warnings == []
    eqns = len(traced.jaxpr.jaxpr.eqns)
    return {"ratio": min(observe_times) / min(trace_times), "trace_s": min(trace_times), "eqns": eqns}


def run(quick: bool = False) -> list[dict]:
    """One row per goal: ``goal``, ``measured``, ``target``, ``met``, ``detail``."""
    repeat = 2 if quick else 5
    rows = []
    d = measure_diagnose(repeat)
    rows.append(
        {
            "goal": "doctor: diagnose a JIT trap / the failing jit call",
            "measured": d["ratio"],
            "target": "<= 1.0",
            "met": d["ratio"] <= 1.0,
            "detail": f"failing call {d['call_s'] * 1e3:.1f} ms, diagnose {d['diagnose_s'] * 1e3:.2f} ms",
        }
    )
    for layers in (100,) if quick else (250, 2750):
        for with_numpy, target in ((True, 0.25), (False, 0.05)):
            m = measure_observe(layers, with_numpy, repeat)
            kind = "reading NumPy" if with_numpy else "no NumPy"
            rows.append(
                {
                    "goal": f"doctor: trace warnings / jit trace, {kind} ({m['eqns']} eqns)",
                    "measured": m["ratio"],
                    "target": f"<= {target}",
                    "met": m["ratio"] <= target,
                    "detail": f"jit trace {m['trace_s'] * 1e3:.1f} ms",
                }
            )
    return rows


if __name__ == "__main__":
    for row in run():
        print(f"{row['goal']:<70} {row['measured']:8.3f}  {row['target']}  {row['detail']}")
