"""%jaxpr rendering against JAX's own printer, side by side in one process.

For jaxprs of about 1,000 and 11,000 equations (an unrolled MLP), the time to render the HTML and
the text views is measured against ``ClosedJaxpr.pretty_print`` of the same jaxpr, in the same run.
Goals: each view at most 2x JAX's own time; the displayed HTML under 2 MB.
"""

from __future__ import annotations

import functools
import time

import jax.numpy as jnp

from jaxmagic.render import jaxpr as render
from jaxmagic.tracing.call import Call
from jaxmagic.tracing.stages import trace

EQNS_PER_LAYER = 4  # dot_general, broadcast_in_dim, add, tanh


def unrolled_mlp(layers: int):
    def mlp(x, w, b):
        for _ in range(layers):
            x = jnp.tanh(x @ w + b)
        return x

    return mlp


def report_for(target_eqns: int):
    layers = max(1, target_eqns // EQNS_PER_LAYER)
    x, w, b = jnp.ones((4, 16)), jnp.ones((16, 16)), jnp.ones(16)
    return trace(Call(unrolled_mlp(layers), (x, w, b), {}))


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def measure(target_eqns: int, repeat: int) -> dict:
    report = report_for(target_eqns)
    anchor = best_of(lambda: report.jaxpr.pretty_print(use_color=False), repeat)
    html_time = best_of(lambda: render.html(report), repeat)
    text_time = best_of(lambda: render.text(report), repeat)
    whole = render.JaxprView(report, max_eqns=report.n_eqns)  # the whole listing, nothing shortened
    full_html_time = best_of(lambda: render.html(whole), repeat)
    return {
        "full_html_ratio": full_html_time / anchor,
        "eqns": report.n_eqns,
        "anchor_s": anchor,
        "html_ratio": html_time / anchor,
        "text_ratio": text_time / anchor,
        "html_bytes": len(render.html(report).encode()),
    }


def run(quick: bool = False) -> list[dict]:
    """One row per goal: ``goal``, ``measured``, ``target``, ``met``, ``detail``."""
    sizes = (100, 300) if quick else (1_000, 11_000)
    repeat = 2 if quick else 5
    rows = []
    for size in sizes:
        m = measure(size, repeat)
        detail = f"{m['eqns']} equations; JAX's pretty_print {m['anchor_s'] * 1e3:.1f} ms"
        rows.append(
            {
                "goal": f"%jaxpr HTML render / JAX pretty_print ({m['eqns']} eqns)",
                "measured": m["html_ratio"],
                "target": "<= 2.0",
                "met": m["html_ratio"] <= 2.0,
                "detail": detail,
            }
        )
        rows.append(
            {
                "goal": f"%jaxpr text render / JAX pretty_print ({m['eqns']} eqns)",
                "measured": m["text_ratio"],
                "target": "<= 2.0",
                "met": m["text_ratio"] <= 2.0,
                "detail": detail,
            }
        )
        rows.append(
            {
                "goal": f"%jaxpr HTML of every equation / JAX pretty_print ({m['eqns']} eqns)",
                "measured": m["full_html_ratio"],
                "target": "(info)",
                "met": True,
                "detail": detail,
            }
        )
        rows.append(
            {
                "goal": f"%jaxpr displayed HTML size, MB ({m['eqns']} eqns)",
                "measured": m["html_bytes"] / 1e6,
                "target": "< 2.0",
                "met": m["html_bytes"] < 2e6,
                "detail": detail,
            }
        )
    return rows


def scaling(quick: bool = False) -> dict:
    """Render time against equation count, beside JAX's own printer (for the scale plot)."""
    sizes = (100, 300, 1_000) if quick else (1_000, 3_000, 10_000, 30_000)
    shown, full, anchor = [], [], []
    for size in sizes:
        report = report_for(size)
        n = report.n_eqns
        shown.append((n, best_of(functools.partial(render.html, report), 3)))
        anchor.append((n, best_of(functools.partial(report.jaxpr.pretty_print, use_color=False), 3)))
        full.append((n, best_of(functools.partial(render.html, render.JaxprView(report, max_eqns=n)), 3)))
    return {
        "%jaxpr render time": {
            "x": "equations",
            "y": "seconds",
            "series": {
                "HTML as displayed (400 shown)": shown,
                "HTML of every equation": full,
                "JAX pretty_print": anchor,
            },
        }
    }


if __name__ == "__main__":
    for row in run():
        print(
            f"{row['goal']:<60} {row['measured']:8.3f}  target {row['target']:<7} {'met' if row['met'] else 'NOT MET'}  ({row['detail']})"
        )
