"""The comparison views as pure functions of a report: bars in proportion, the break-even sentence
in each case, escaping, colours, aligned text. Reports are built by hand: no timing runs here."""

import math
import re

import pytest

from jaxmagic.render import comparison as render
from jaxmagic.render.terminal import paint
from jaxmagic.timing.comparison import Comparison, CompileCost, Timing


def report(eager=1e-3, jit=1e-4, jit_first=0.05, warnings=(), name="f(x)", **extra):
    return Comparison(
        name=name,
        modes={
            "eager": Timing("eager", [eager, eager * 1.1, eager * 0.9], loops=200),
            "jit": Timing("jit", [jit, jit * 1.2, jit], loops=2000),
        },
        pipelined={
            "eager": Timing("eager", [eager * 0.9, eager, eager * 0.8], loops=200),
            "jit": Timing("jit", [jit * 0.3, jit * 0.4, jit * 0.3], loops=2000),
        },
        first_calls={
            "eager": CompileCost(0.001, 0.002, 0.02, 0.03, compilations=4),
            "jit": CompileCost(0.004, 0.006, jit_first - 0.015, jit_first, compilations=1),
        },
        memory={
            "jit": {"arguments": 4096, "outputs": 4, "aliased": 0, "temporaries": 0, "code": 0},
            "eager": {"intermediates": 16384},
        },
        warnings=list(warnings),
        notes=extra.pop("notes", []),
        setups={"eager": "op by op under jax.disable_jit()", "jit": "jax.jit"},
        budget=6.0,
        elapsed=2.5,
        interrupted=extra.pop("interrupted", False),
        devices="1 × cpu",
        requested=("eager", "jit"),
    )


def bar_widths(html: str) -> dict[str, float]:
    return {
        mode: float(width)
        for mode, width in re.findall(r'class="jm-bar jm-bar-(\w+)" x="0" y="2" width="([\d.]+)"', html)
    }


def test_bars_are_in_proportion_to_the_medians_and_whiskers_span_best_to_worst():
    html = render.html(report(eager=1e-3, jit=2.5e-4))
    modes_table = re.search(r'<table class="jm-table jm-modes">(.*?)</table>', html).group(1)
    widths = bar_widths(modes_table)
    assert widths["jit"] / widths["eager"] == pytest.approx(0.25, rel=0.01)
    whiskers = re.findall(r'<line class="jm-whisker" x1="([\d.]+)" x2="([\d.]+)" y1="7.0"', modes_table)
    (eager_best, eager_worst), _ = whiskers
    assert float(eager_best) < widths["eager"] < float(eager_worst)


def test_first_call_segments_add_up_to_the_bar():
    html = render.html(report())
    table = re.search(r'<table class="jm-table jm-first-calls">(.*?)</table>', html).group(1)
    jit_row = re.search(r'<tr data-mode="jit">(.*?)</tr>', table).group(1)
    segments = dict(
        re.findall(r'class="jm-bar jm-bar-(trace|lower|compile|run)" x="[\d.]+" y="2" width="([\d.]+)"', jit_row)
    )
    assert set(segments) == {"trace", "lower", "compile", "run"}
    assert sum(map(float, segments.values())) == pytest.approx(render.BAR_WIDTH, abs=0.5)


def test_break_even_sentences():
    assert "pays off after 56 calls" in render.text(report(eager=1e-3, jit=1e-4, jit_first=0.05))
    assert "never pays off" in render.text(report(eager=1e-4, jit=2e-4))
    assert math.isinf(report(eager=1e-4, jit=2e-4).break_even_calls)
    assert "ahead from the first call" in render.text(report(eager=1e-1, jit=1e-4, jit_first=0.05))


def test_headline_says_faster_or_slower():
    assert render.summary(report(eager=1e-3, jit=1e-4)).startswith("f(x): jit is 10× faster than eager")
    assert "jit is 2× slower than eager" in render.summary(report(eager=1e-4, jit=2e-4))
    assert render.summary(report(interrupted=True)).startswith("interrupted: f(x)")


def test_user_text_is_escaped_in_html():
    hostile = "<img src=x onerror=alert(1)>"
    html = render.html(report(name=f"f('{hostile}')", warnings=[f"output[{hostile}]: differs"], notes=[hostile]))
    assert "<img" not in html
    assert html.count("&lt;img src=x onerror=alert(1)&gt;") == 3
    assert "<script" not in html


def test_text_colours_warnings_only_when_asked():
    plain = render.text(report(warnings=["careful"]))
    coloured = render.text(report(warnings=["careful"]), color=True)
    assert "\x1b[" not in plain and "! careful" in plain
    assert paint("! careful", "yellow") in coloured


def test_text_table_columns_line_up():
    lines = render.text(report()).splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("mode "))
    head, rows = lines[header], lines[header + 1 : header + 3]
    for column in ("median", "best", "worst", "calls × repeats", "vs eager"):
        end = head.index(column) + len(column)  # right-aligned: every cell ends under its heading
        assert all(row[end - 1] != " " and row[end] == " " for row in rows), (column, rows)


def test_the_answer_is_one_table_and_the_rest_is_folded():
    html = render.html(report(eager=1e-3, jit=2.5e-4))
    shown, folded = html.split('<details class="jm-details">', 1)
    assert shown.count("<table") == 1 and "jm-modes" in shown  # the verdict line, then one table
    jit_row = re.search(r'<tr data-mode="jit">(.*?)</tr>', shown).group(1)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", jit_row)
    assert cells[0] == "jit" and cells[1] == "250 µs"
    assert cells[3] == "75 µs"  # per call in a pipelined loop
    assert cells[4].startswith("4× (") and cells[-1].endswith("calls")  # speed with its interval; repaid after
    for kind in ("jm-stats", "jm-first-calls", "jm-memory", "jm-notes", "jm-break-even"):
        assert kind in folded, kind
    assert "mean ± std" in folded and "mean ± std" not in shown
