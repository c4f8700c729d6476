"""``--memory``'s reader on what a TPU v5e compiled, checked on any machine against the figures
XLA gave there (``tests/fixtures/tpu/summary.json``'s ``memory_analysis``).

Two kinds of record: ``memory/`` holds what ``record_memory.py`` wrote on the chip (the optimized
HLO and XLA's own buffer-assignment dump of each model, its ``memory_analysis``, the policies of the
MLP's gradient); ``NAME.derived-buffers.txt`` holds a buffer assignment in XLA's format derived
from a recorded module without loops by ``buffers_from_hlo.py``, which checks the counting rule (held
allocations in full, every memory space, TPU-tiled sizes) before the chip's own dumps are in."""

from __future__ import annotations

import gzip
import json
import os
import re

import pytest

from jaxmagic.compiled import peak_memory, remat
from jaxmagic.compiled.buffer_dump import read_dump
from jaxmagic.words.units import format_bytes

HERE = os.path.join(os.path.dirname(__file__), "fixtures", "tpu")
RECORDED = os.path.join(HERE, "memory")
TOLERANCE = 0.05


def _summary() -> dict:
    with open(os.path.join(HERE, "summary.json")) as handle:
        return json.load(handle)


def _read(path: str) -> str:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return handle.read()


@pytest.mark.parametrize("model", ["mlp", "convnet"])
def test_the_counting_rule_gives_xla_s_tpu_peak_on_a_buffer_assignment_derived_from_the_module(model):
    hlo = _read(os.path.join(HERE, f"{model}.hlo.txt"))
    peak = peak_memory.peak_memory(hlo, _read(os.path.join(HERE, f"{model}.derived-buffers.txt")), {})
    xla = _summary()[model]["memory"]["peak_memory_in_bytes"]
    assert abs(peak.peak_bytes - xla) <= TOLERANCE * xla, (peak.peak_bytes, xla)
    assert peak.by_space.get(1, 0) > 0  # the values XLA placed in memory space S(1) count too
    assert peak.attributed_share >= 0.95
    assert {b.label.split(":")[0] for b in peak.live_at_peak if b.source} <= {"models.py"}


def _recorded() -> dict:
    path = os.path.join(RECORDED, "memory.json")
    if not os.path.exists(path):
        return {}
    with open(path) as handle:
        return json.load(handle)


RECORDS = _recorded()
# XLA's CPU figure leaves the temporaries out: only records from a backend that counts them are truth here
CASES = [n for n, c in RECORDS.get("cases", {}).items() if c.get("program", {}).get("platform", "cpu") != "cpu"]
POLICIES = [n for n, c in RECORDS.get("policies", {}).items() if c.get("platform", "cpu") != "cpu"]
needs_records = pytest.mark.skipif(
    not CASES, reason="record_memory.py has not been run on a TPU into fixtures/tpu/memory"
)


def _peak_of(stem: str):
    hlo = _read(os.path.join(RECORDED, f"{stem}.hlo.txt.gz"))
    dumped = _read(os.path.join(RECORDED, f"{stem}.buffers.txt.gz"))
    return hlo, dumped, peak_memory.peak_memory(hlo, dumped, {}, platform="tpu")


@needs_records
@pytest.mark.parametrize("case", CASES)
def test_what_is_live_at_the_peak_read_from_the_tpu_s_own_dump_is_xla_s_peak_within_two_tiles(case):
    """Counted as XLA's peak counts (``peak_memory.counted``): within 1 KiB (two of the TPU's
    512-byte tiles of a scalar) of it; with every index table and sync flag counted, up to 4.5 KiB off."""
    recorded = RECORDS["cases"][case]["program"]
    _, dumped, peak = _peak_of(case)
    xla = recorded["memory"]["peak_memory_in_bytes"]
    assert abs(peak.live_bytes - xla) <= 1024, (case, peak.live_bytes, xla)
    # each buffer once: no two rows share bytes of one allocation
    values, taken = read_dump(dumped).values, {}
    for buffer in peak.live_at_peak:
        value = values[buffer.name]
        for start, end in taken.get(value.allocation, []):
            assert value.offset + value.size <= start or end <= value.offset, (case, buffer.name)
        taken.setdefault(value.allocation, []).append((value.offset, value.offset + value.size))


@needs_records
@pytest.mark.parametrize("case", CASES)
def test_the_peak_read_from_the_tpu_s_own_dump_lies_on_lines_and_arguments(case):
    """A prefetch XLA made on the chip (a ``copy-start``, or a ``slice-start`` whose slice the
    module's text does not print) is the argument it copies, not bytes of no line."""
    _, _, peak = _peak_of(case)
    unplaced = [(b.name, b.label) for b in peak.live_at_peak if not b.attributed]
    assert peak.attributed_share >= 0.95, (case, unplaced)


@needs_records
@pytest.mark.parametrize("policy", POLICIES)
def test_each_policy_s_peak_read_from_its_own_compile_is_xla_s(policy):
    _, _, peak = _peak_of(f"policy_{policy}")
    xla = RECORDS["policies"][policy]["memory"]["peak_memory_in_bytes"]
    assert abs(peak.live_bytes - xla) <= 1024, (policy, peak.live_bytes, xla)


@needs_records
def test_the_residuals_of_the_recorded_gradient_never_exceed_its_peak():
    hlo, dumped, peak = _peak_of("mlp_loss_grad")
    kept = remat.kept_for_backward(hlo, dumped)
    assert kept and sum(r.bytes for r in kept) <= peak.peak_bytes


def test_the_words_say_what_a_tpu_s_peak_is_made_of():
    """On a TPU the peak is what is held for the whole call and what is in use at once, much of it
    in memory space S(1); XLA's temporaries are 0 there, so a sum of its totals explains nothing."""
    from jaxmagic.render import peak_memory as view

    memory = _summary()["convnet"]["memory"]
    totals = {"arguments": memory["argument_size_in_bytes"], "outputs": memory["output_size_in_bytes"],
              "temporaries": memory["temp_size_in_bytes"], "aliased": memory["alias_size_in_bytes"]}  # fmt: skip
    hlo = _read(os.path.join(HERE, "convnet.hlo.txt"))
    dumped = _read(os.path.join(HERE, "convnet.derived-buffers.txt"))
    peak = peak_memory.peak_memory(hlo, dumped, totals, xla_peak=memory["peak_memory_in_bytes"])
    text = view.text(peak)
    xla, held = memory["peak_memory_in_bytes"], totals["arguments"] + totals["outputs"]
    assert text.startswith(f"peak {format_bytes(xla)}; ") and "held by models.py:99" in text.splitlines()[0]
    assert (
        f"made of {format_bytes(held)} held for the whole call (arguments {format_bytes(totals['arguments'])}" in text
    )
    assert f"{format_bytes(peak.by_space[1])} of the peak in memory space S(1)" in text and peak.by_space[1] > xla / 2
    live = format_bytes(peak.live_bytes)
    assert (
        f"the peak is XLA's own (memory_analysis), {format_bytes(xla)}; the buffers in use at it add up to {live}, within 5% of it"
        in text
    )
    assert "reserves" not in text


# Small programs of the shared corpus (tests/corpus/), recorded by record_corpus_memory.py: what
# %jaxpr --memory compiled for each, and XLA's peak of that program.
CORPUS = os.path.join(HERE, "corpus_memory")


def _corpus_records() -> dict:
    with open(os.path.join(CORPUS, "memory.json")) as handle:
        return {case: row for case, row in json.load(handle).items() if row.get("xla_of_ours")}


def _corpus_peak(case: str, xla: int | None):
    stem = os.path.join(CORPUS, case.replace("/", "__"))
    hlo, dumped = _read(stem + ".hlo.txt.gz"), _read(stem + ".buffers.txt.gz")
    return peak_memory.peak_memory(hlo, dumped, {}, xla_peak=xla, platform="tpu")


def test_on_small_tpu_programs_what_is_live_at_the_peak_is_within_5_percent_of_xla_s_peak():
    """Programs of a few KiB, whose scalars and loop state each take a 512-byte tile: counting every
    value of the main memory, 3 of the first 12 were within 5%; counting what XLA's TPU peak counts
    (one memory space's heap, a loop body's write beside the carried value it replaces), all."""
    records = _corpus_records()
    distances = {case: _corpus_peak(case, None).live_bytes / row["xla_of_ours"] - 1 for case, row in records.items()}
    outside = {case: distance for case, distance in distances.items() if abs(distance) > TOLERANCE}
    assert len(records) >= 19 and not outside, outside


# Recorded programs whose peak XLA counts in ways a sum of every memory space at one step misses:
# a scan's body writing its stack over the stack the loop carries (both count at that step), a
# program whose largest heap is the main memory's S(0), programs whose scalars' S(6) heap is larger
# than what S(1) holds at once (XLA's peak is the one larger heap, not the two added), a training
# step whose update of a parameter is written over the parameter's prefetched copy in S(1) (both
# count at that step).
HEAPS_AND_LOOPS = [
    "jax-issue/3186/grad-of-scan-memory",
    "jax-issue/3348/rnn-scan-gradient",
    "jax-issue/1832/prefix-sums-scan",
    "jax-docs/control-flow/grad-of-fori-loop",
    "jax-issue/4177/norm-of-zero-vector",
    "jax-docs/state/linear-fit-step",
    "numpyro/eight-schools/log-density",
    "memory/sgd-step-donated",
]


@pytest.mark.parametrize("case", HEAPS_AND_LOOPS)
def test_on_a_tpu_the_buffers_at_the_peak_add_up_to_xla_s_peak_with_loops_and_memory_spaces(case):
    """Within 5% of XLA's peak (to the byte on these), each value once; two rows share bytes only
    where a loop's body writes into the bytes of the value the loop carries, or a kernel into the
    bytes of an argument's prefetched copy (``copy-start{0}``), both in use then."""
    xla = _corpus_records()[case]["xla_of_ours"]
    stem = os.path.join(CORPUS, case.replace("/", "__"))
    peak = _corpus_peak(case, xla)
    assert abs(peak.live_bytes - xla) <= TOLERANCE * xla, (case, peak.live_bytes, xla)
    names = [b.name for b in peak.live_at_peak]
    assert len(names) == len(set(names)), names
    values = read_dump(_read(stem + ".buffers.txt.gz")).values
    rows = [values[name] for name in names]
    flags = {v.name for v in values.values() if v.key == f"{v.name}{{2}}" and v.space == 2}
    for i, one in enumerate(rows):
        for other in rows[i + 1 :]:
            apart = one.offset + one.size <= other.offset or other.offset + other.size <= one.offset
            copied = [v for v in (one, other) if v.key == f"{v.name}{{0}}" and v.name in flags and v.space == 1]
            rewritten = one.slice == other.slice and (one.phi != other.phi or len(copied) == 1)
            assert one.allocation != other.allocation or apart or rewritten, (case, one.key, other.key)


@pytest.mark.parametrize("case", sorted(_corpus_records()))
def test_on_a_tpu_the_peak_shown_is_xla_s_and_the_words_say_how_far_the_live_buffers_are(case):
    from jaxmagic.render import peak_memory as view

    xla = _corpus_records()[case]["xla_of_ours"]
    peak = _corpus_peak(case, xla)
    text = view.text(peak)
    assert peak.peak_bytes == xla and text.startswith(f"peak {format_bytes(xla)}")
    place = re.search(r"held by (\S+?)(?:: `(.*)`)?$", text.splitlines()[0])
    assert place is None or place.group(2) != place.group(1), text.splitlines()[
        0
    ]  # a line's text, never its place again
    distance = peak.live_bytes / xla - 1
    said = f"add up to {format_bytes(peak.live_bytes)}, "
    if abs(distance) <= TOLERANCE:
        assert said + "within 5% of it" in text, text
    else:
        assert f"{said}{abs(distance):.0%} {'above' if distance > 0 else 'below'} it" in text, text


def test_on_a_tpu_a_captured_constant_xla_keeps_in_another_dtype_is_named_by_the_users_array():
    """JAX's jit page: ``predict`` reads ``w``, an f32[1024,1024] array of an earlier cell. On a TPU,
    XLA folds it into the bf16 constant its matrix product reads (``constant.4 = bf16[1024,1024]``):
    the same array of the user's, by its dimensions, not another constant of no name."""
    stem = os.path.join(CORPUS, "jax-docs__jit__constant-captured-from-cell")
    hlo, dumped = _read(stem + ".hlo.txt.gz"), _read(stem + ".buffers.txt.gz")
    assert "bf16[1024,1024]{1,0:T(8,128)(2,1)} constant(" in hlo
    peak = peak_memory.peak_memory(hlo, dumped, {}, constants={"f32[1024,1024]": "w"}, platform="tpu")
    (constant,) = [b for b in peak.live_at_peak if b.kind == "constant"]
    assert constant.label == "captured constant `w`" and constant.bytes == 1024 * 1024 * 2, constant
