"""The doctor's cost, against the JAX work it comes with, side by side in one process.

- ``diagnose`` of a JIT trap, against the failing ``jax.jit`` call that raised it (a fresh
  function each time, so the call traces until the error, as a user's first call does).
  Goals: the card (``check_seconds=0``) costs no more than the error itself; checking its fixes
  by value, no more than one eager call of the user's function plus one compile per fix checked.
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


def _reference(namespace) -> tuple[float, float]:
    """What checking a fix by value may cost: one eager call of the user's function on their
    arguments, and one compile of a fixed function (``training`` static, as the lead fix makes it)."""
    params = {"w1": jnp.ones((8, 16)), "b1": jnp.zeros(16), "w2": jnp.ones((16, 4))}
    x = jnp.ones((2, 8))
    start = time.perf_counter()
    jax.block_until_ready(namespace["step"](params, x, True))
    eager_s = time.perf_counter() - start
    fixed = jax.jit(_define(TRAP)["step"], static_argnames="training")
    start = time.perf_counter()
    fixed.lower(params, x, True).compile()
    return eager_s, time.perf_counter() - start


def measure_diagnose(repeat: int) -> dict:
    """The card alone (``check_seconds=0``) against the failing call; the check by value (the
    whole diagnosis less the card) against one eager call plus one compile per fix it checks."""
    call_times, card_times, check_times, references = [], [], [], []
    for _ in range(repeat):
        call_s, error = _failing_call()
        start = time.perf_counter()
        card = doctor.diagnose(error, check_seconds=0)
        card_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        found = doctor.diagnose(error)
        check_times.append(time.perf_counter() - start - card_times[-1])
        call_times.append(call_s)
        assert card is not None and found is not None and found.pitfall == "python-control-flow" and found.checked
        fixes = 1 + len(found.alternatives)
        eager_s, compile_s = _reference(_define(TRAP))
        references.append((eager_s + fixes * compile_s, eager_s, compile_s, fixes))
    reference = min(references)
    return {
        "ratio": min(card_times) / min(call_times),
        "call_s": min(call_times),
        "card_s": min(card_times),
        "check_ratio": min(check_times) / reference[0],
        "check_s": min(check_times),
        "eager_s": reference[1],
        "compile_s": reference[2],
        "fixes": reference[3],
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
            "goal": "doctor: the card (no check by value) / the failing jit call",
            "measured": d["ratio"],
            "target": "<= 1.0",
            "met": d["ratio"] <= 1.0,
            "detail": f"failing call {d['call_s'] * 1e3:.1f} ms, card {d['card_s'] * 1e3:.2f} ms",
        }
    )
    rows.append(
        {
            "goal": "doctor: checking the fixes by value / one eager call + one compile per fix",
            "measured": d["check_ratio"],
            "target": "<= 1.0",
            "met": d["check_ratio"] <= 1.0,
            "detail": (
                f"check {d['check_s'] * 1e3:.1f} ms for {d['fixes']} fixes; eager call {d['eager_s'] * 1e3:.1f} ms, "
                f"compile {d['compile_s'] * 1e3:.1f} ms"
            ),
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
