"""What watching for recompilations costs, measured side by side in one process.

Per call: a ~10 µs jitted function called 100,000 times with the session watch on against the
same calls with it off, in alternating rounds so that a busy machine weighs on both alike.
Goal: within 2% (a call that hits JAX's caches runs no jaxmagic code at all).

Per compilation: a real compilation with the watch on (reading the call, describing and comparing
its signature, recording the event) against the same compilation with it off. Goal: within 5%
(JAX explains its cache misses only when a log asks for its text, so it costs nothing here).

The log: recording one event into a log already holding 10 to 10,000 events (a ring buffer: the
cost must not grow with the log), and rendering the log's HTML (at most ``MAX_ROWS`` rows shown).
Goal: recording at 10,000 events within 3x of recording at 10.
"""

from __future__ import annotations

import os
import statistics
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import jax.numpy as jnp

from jaxmagic.recompiles import RecompileEvent, RecompileLog
from jaxmagic.recompiles.causes import Cause
from jaxmagic.recompiles.hub import watch_seconds
from jaxmagic.render import recompiles as render
from jaxmagic.tracing.sources import SourceLine

PER_CALL_TOLERANCE = 0.02
PER_COMPILE_TOLERANCE = 0.05
LOG_GROWTH_LIMIT = 3.0


def _small(x):
    return x * 2.0 + 1.0


def _seconds_per_call(fn, x, calls: int) -> float:
    """Seconds per call of ``fn(x).block_until_ready()``, over ``calls`` calls."""
    start = time.perf_counter()
    for _ in range(calls):
        fn(x).block_until_ready()
    return (time.perf_counter() - start) / calls


def per_call(quick: bool = False) -> dict:
    """The session watch on against off, for a ~10 µs jitted function: adjacent rounds in
    alternating order, judged by the median of the paired ratios (drift cancels out)."""
    fn = jax.jit(_small)
    x = jnp.ones(16)
    fn(x).block_until_ready()
    total = 20_000 if quick else 100_000
    rounds = 10 if quick else 40
    calls = total // rounds
    off, on, ratios = [], [], []
    for round_ in range(rounds):
        order = ("off", "on") if round_ % 2 == 0 else ("on", "off")
        timed = {}
        for state in order:
            log = RecompileLog().start() if state == "on" else None
            try:
                timed[state] = _seconds_per_call(fn, x, calls)
            finally:
                if log is not None:
                    assert log.total == 0, "a cache hit must not be recorded"
                    log.stop()
        off.append(timed["off"])
        on.append(timed["on"])
        ratios.append(timed["on"] / timed["off"])
    ratio = statistics.median(ratios)
    return {
        "goal": "per call, session watch on / off (~10 µs jitted function)",
        "measured": ratio,
        "target": f"<= {1 + PER_CALL_TOLERANCE:.2f}",
        "met": ratio <= 1 + PER_CALL_TOLERANCE,
        "detail": (
            f"{total:,} calls each way in {rounds} alternating rounds; median per call "
            f"{statistics.median(off) * 1e6:.2f} µs off, {statistics.median(on) * 1e6:.2f} µs on"
        ),
    }


def per_compile(quick: bool = False) -> list[dict]:
    """A compilation with the watch on against off (fresh shapes each time, alternating): the time
    the watch itself spends reading each compilation (its listeners' own clock) against an
    unwatched compilation, and the end-to-end ratio of paired rounds (noisy on a shared machine)."""

    def compiled(x, params):
        return jnp.tanh(x @ params["w"] + params["b"]).sum()

    fn = jax.jit(compiled)
    sizes = iter(range(3, 10_000))
    rounds = 6 if quick else 30
    off, on, inside = [], [], []
    for round_ in range(rounds):
        order = ("off", "on") if round_ % 2 == 0 else ("on", "off")
        for state in order:
            n = next(sizes)
            args = (jnp.ones((8, n)), {"w": jnp.ones((n, 4)), "b": jnp.ones(4)})
            log = RecompileLog().start() if state == "on" else None
            try:
                before = watch_seconds()
                start = time.perf_counter()
                fn(*args).block_until_ready()
                (on if log else off).append(time.perf_counter() - start)
                if log is not None:
                    inside.append(watch_seconds() - before)
            finally:
                if log is not None:
                    assert log.total == 1
                    log.stop()
    share = statistics.median(inside) / statistics.median(off)
    paired = statistics.median(b / a for a, b in zip(off, on, strict=True))
    return [
        {
            "goal": "per compilation, the watch's own time / an unwatched compilation",
            "measured": 1 + share,
            "target": f"<= {1 + PER_COMPILE_TOLERANCE:.2f}",
            "met": share <= PER_COMPILE_TOLERANCE,
            "detail": (
                f"{rounds} compilations; the watch's listeners took a median {statistics.median(inside) * 1e3:.2f} ms "
                f"of each, an unwatched compilation {statistics.median(off) * 1e3:.1f} ms"
            ),
        },
        {
            "goal": "per compilation, session watch on / off, end to end",
            "measured": paired,
            "target": "(info)",
            "met": True,
            "detail": (
                f"median of {rounds} paired rounds; median {statistics.median(off) * 1e3:.1f} ms off, "
                f"{statistics.median(on) * 1e3:.1f} ms on (the shared machine's noise is of the same size)"
            ),
        },
    ]


def _synthetic_event(i: int) -> RecompileEvent:
    site = SourceLine(file="<cell-3>", line=2, function="<module>", text="step(batch)", cell="In [3]")
    cause = Cause(
        "shape",
        argument="batch",
        before=f"f32[{i},3]",
        after=f"f32[{i + 1},3]",
        detail=f"axis 0: {i} → {i + 1}",
        axes=((0, i, i + 1),),
    )
    return RecompileEvent(function=f"step{i % 7}", defined_at=None, call_site=site, compile_s=0.03, causes=[cause])


def log_costs(quick: bool = False) -> dict[str, list[tuple[int, float]]]:
    """Seconds to record one event into a log holding N events, and to render it, for each N."""
    sizes = (10, 100, 1_000) if quick else (10, 100, 1_000, 10_000)
    record, html = [], []
    for n in sizes:
        log = RecompileLog(capacity=10_000)
        events = [_synthetic_event(i) for i in range(n)]
        for e in events:
            log.record(e)
        probe = [_synthetic_event(i) for i in range(200)]
        start = time.perf_counter()
        for e in probe:
            log.record(e)
        record.append((n, (time.perf_counter() - start) / len(probe)))
        start = time.perf_counter()
        render.html(log)
        html.append((n, time.perf_counter() - start))
    return {"record one event": record, "render the log's HTML": html}


def run(quick: bool = False) -> list[dict]:
    rows = [per_call(quick), *per_compile(quick)]
    costs = log_costs(quick)
    record = costs["record one event"]
    growth = record[-1][1] / record[0][1]
    rows.append(
        {
            "goal": f"recording an event at {record[-1][0]:,} events / at {record[0][0]} events",
            "measured": growth,
            "target": f"<= {LOG_GROWTH_LIMIT:.0f}",
            "met": growth <= LOG_GROWTH_LIMIT,
            "detail": "; ".join(f"{n:,} events: {s * 1e6:.1f} µs" for n, s in record),
        }
    )
    html = costs["render the log's HTML"]
    rows.append(
        {
            "goal": f"rendering the log's HTML at {html[-1][0]:,} events (s)",
            "measured": html[-1][1],
            "target": "(info)",
            "met": True,
            "detail": "; ".join(f"{n:,} events: {s * 1e3:.1f} ms" for n, s in html)
            + f" (at most {render.MAX_ROWS} rows shown)",
        }
    )
    return rows


def scaling(quick: bool = False) -> dict:
    """Log costs against the number of events it holds (for the scale plot)."""
    return {"recompile log": {"x": "events in the log", "y": "seconds", "series": log_costs(quick)}}


if __name__ == "__main__":
    for row in run():
        print(
            f"{row['goal']:<64} {row['measured']:8.3f}  target {row['target']:<7} "
            f"{'met' if row['met'] or row['target'] == '(info)' else 'NOT MET'}  ({row['detail']})"
        )
