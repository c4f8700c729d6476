"""Traces read by their schema, whichever device wrote them: the TPU traces recorded on a v5e
(``tests/fixtures/tpu``), a CPU trace recorded here (``tests/fixtures/cpu``), and a trace built to
the GPU profiler's layout (``tests/fixtures/gpu``). Truth from outside jaxmagic: what JAX's own
reader (``jax.profiler.ProfileData``) sees of each file, the programs' runs the trace lists (``XLA
Modules``), XLA's cost analysis recorded beside the TPU traces (``summary.json``), and the
optimized HLO ``Compiled.as_text()`` wrote there."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from jax.profiler import ProfileData

from jaxmagic.__main__ import main as command_line
from jaxmagic.compiled import device_trace, hlo_proto, hlo_sources, roofline, trace_profile, xspace

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
TPU = os.path.join(FIXTURES, "tpu")
MODELS = ("mlp", "block_grad", "rnn", "convnet")
CPU_TRACE = os.path.join(FIXTURES, "cpu", "fused_matmul.xplane.pb")
GPU_TRACE = os.path.join(FIXTURES, "gpu", "gpu_streams.xplane.pb")


def run_command(arguments: list[str]) -> int:
    """``python -m jaxmagic profile ARGUMENTS``: its exit status (a usage error's included)."""
    try:
        return command_line(["profile", *arguments])
    except SystemExit as exit_:
        return int(exit_.code or 0)


def read(path: str) -> str:
    with open(path, encoding="utf-8") as file:
        return file.read()


def open_bytes(path: str) -> bytes:
    with open(path, "rb") as file:
        return file.read()


def tpu_trace(model: str) -> str:
    return os.path.join(TPU, f"{model}.xplane.pb")


def union_ps(intervals: list[tuple[int, int]]) -> int:
    """The time covered by intervals (start, end), each instant once."""
    covered, end = 0, None
    for start, stop in sorted(intervals):
        if end is None or start >= end:
            covered += stop - start
            end = stop
        elif stop > end:
            covered += stop - end
            end = stop
    return covered


@pytest.mark.parametrize("model", MODELS)
def test_planes_lines_and_events_are_those_jax_s_own_reader_sees(model):
    ours = xspace.read(tpu_trace(model))
    theirs = ProfileData.from_file(tpu_trace(model))
    assert [p.name for p in ours.planes] == [p.name for p in theirs.planes]
    for mine, jaxs in zip(ours.planes, theirs.planes, strict=True):
        assert [line.name for line in mine.lines] == [line.name for line in jaxs.lines]
        for line, other in zip(mine.lines, jaxs.lines, strict=True):
            events = list(other.events)
            assert [e.duration_ps / 1000 for e in line.events] == pytest.approx(
                [e.duration_ns for e in events], abs=1
            )  # JAX rounds to ns
            for event, seen in zip(line.events, events, strict=True):
                assert event.name == seen.name
                assert {k: v for k, v in seen.stats} == {k: v for k, v in event.stats.items() if k in dict(seen.stats)}


@pytest.mark.parametrize("model", MODELS)
def test_a_loop_s_kernels_count_once_and_each_program_run_is_found(model):
    space = xspace.read(tpu_trace(model))
    found = device_trace.read_kernels(space)
    ops = space.plane("/device:TPU:0").line("XLA Ops").events
    covered = union_ps([(e.start_ps, e.end_ps) for e in ops]) * 1e-12
    assert found.total_seconds == pytest.approx(covered, rel=1e-9), (
        "each instant of XLA Ops once: a while's body not twice"
    )
    modules = space.plane("/device:TPU:0").line("XLA Modules").events
    assert list(found.runs.values()) == [len(modules)] == [3]
    assert sum(found.program_seconds.values()) == pytest.approx(sum(e.duration_ps for e in modules) * 1e-12)
    assert found.total_seconds <= sum(found.program_seconds.values())


@pytest.mark.parametrize("model", MODELS)
def test_the_hlo_a_trace_records_is_the_program_xla_compiled(model):
    space = xspace.read(tpu_trace(model))
    ((name, stats),) = space.plane("/host:metadata").metadata()
    recorded = hlo_sources.parse(hlo_proto.hlo_text(stats["Hlo Proto"]))
    compiled = hlo_sources.parse(read(os.path.join(TPU, f"{model}.hlo.txt")))
    assert set(compiled) <= set(recorded), "(the recorded one also spells out what an async op wraps)"
    for instruction in compiled.values():
        assert recorded[instruction.name].calls == instruction.calls or instruction.opcode.endswith(("-start", "-done"))
    assert name.startswith(hlo_sources.module_name(read(os.path.join(TPU, f"{model}.hlo.txt"))) + "(")
    # every kernel the device ran is an instruction of that program
    kernels = device_trace.read_kernels(space).kernels
    assert {k.instruction for k in kernels} <= set(recorded)


@pytest.mark.parametrize("model", MODELS)
def test_at_least_95_percent_of_device_time_lies_on_the_user_s_lines(model):
    found = trace_profile.read_trace(tpu_trace(model))
    profile = found.profile
    assert profile.attributed_share >= 0.95, profile.line_times
    assert sum(profile.line_times.values()) == pytest.approx(profile.device_seconds, rel=1e-9)
    assert all(os.path.basename(file) == "models.py" for file, _ in profile.places.values())
    source = read(os.path.join(TPU, "models.py")).splitlines()
    for label, (_, line) in profile.places.items():
        assert profile.texts[label] in ("", source[line - 1].strip()), "a label names the line its text is"


@pytest.mark.parametrize("model", MODELS)
def test_the_kernels_work_is_xla_s_cost_analysis(model):
    """XLA's cost analysis counts each instruction once (a loop's body once, whatever its trip
    count); the trace gives each kernel's count per run, and a loop's the count of its body."""
    summary = json.loads(read(os.path.join(TPU, "summary.json")))
    found = device_trace.read_kernels(xspace.read(tpu_trace(model)))
    opcodes = {n: i.opcode for n, i in hlo_sources.parse(read(os.path.join(TPU, f"{model}.hlo.txt"))).items()}
    counted = sum(k.flops or 0 for k in found.kernels if opcodes.get(k.instruction) != "while")
    assert counted == pytest.approx(summary[model]["cost"]["flops"], rel=0.05)
    profile = trace_profile.read_trace(tpu_trace(model)).profile
    per_run = sum((k.flops or 0) * k.runs for k in found.kernels if opcodes.get(k.instruction) != "while")
    assert sum(k.flops for k in profile.kernels) == pytest.approx(per_run), "a loop's work counted once, in its body"


def test_the_tpu_s_peaks_come_from_its_device_plane():
    found = trace_profile.read_trace(tpu_trace("mlp"))
    stats = xspace.read(tpu_trace("mlp")).plane("/device:TPU:0").stats
    assert found.profile.peaks == roofline.Peaks(
        stats["peak_teraflops_per_second"] * 1e12, stats["peak_hbm_bw_gigabytes_per_second"] * 1e9, "trace"
    )
    use = found.profile.total_usage()
    assert 0 < use.flops_fraction < 1.0 and use.bound in ("compute", "memory")


def test_a_cpu_trace_s_fused_kernel_gives_the_matrix_product_the_largest_share():
    profile = trace_profile.read_trace(CPU_TRACE).profile
    (kernel,) = [k for k in profile.kernels if len(k.lines) > 1]
    assert kernel.estimated and kernel.lines[0] == "record_cpu.py:19"  # c = a @ b
    assert profile.peaks is None and profile.device == "CPU"
    assert next(iter(profile.line_times)) == "record_cpu.py:19"


def test_a_gpu_trace_s_stream_kernels_are_read_once_each():
    theirs = ProfileData.from_file(GPU_TRACE)
    device = next(p for p in theirs.planes if p.name == "/device:GPU:0")
    kernel_ns = sum(e.duration_ns for line in device.lines for e in line.events if "hlo_op" in dict(e.stats))
    found = trace_profile.read_trace(GPU_TRACE)
    assert found.devices == ("/device:GPU:0",), "the launches on /host:CUPTI are not kernels"
    assert found.profile.device_seconds == pytest.approx(kernel_ns * 1e-9)
    assert found.profile.attributed_share == pytest.approx(1.0)
    two = [k for k in device_trace.read_kernels(xspace.read(GPU_TRACE)).kernels if k.runs == 6]
    assert two, "an instruction that launched two kernels per run is one kernel of the profile, timed whole"
    assert {os.path.basename(f) for f, _ in found.profile.places.values()} == {"record_layout.py"}


def test_the_command_prints_json_hottest_first_with_each_line_s_file_and_number(capsys):
    assert run_command([tpu_trace("block_grad"), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    found = trace_profile.read_trace(tpu_trace("block_grad")).profile
    assert printed["total_device_s"] == pytest.approx(found.device_seconds)
    times = [line["device_s"] for line in printed["lines"]]
    assert times == sorted(times, reverse=True)
    assert {line["file"] for line in printed["lines"]} == {"models.py"}
    assert all(isinstance(line["line"], int) for line in printed["lines"])
    assert sum(times) == pytest.approx(printed["total_device_s"] * found.attributed_share)


def test_the_command_reads_the_folder_jax_profiler_trace_wrote(tmp_path, capsys):
    run = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    (run / "host.xplane.pb").write_bytes(open_bytes(tpu_trace("mlp")))
    page = tmp_path / "out.html"
    assert run_command([str(tmp_path), "--html", str(page)]) == 0
    text = capsys.readouterr().out
    assert "models.py:16 takes" in text and "of the chip's peak FLOP/s" in text
    assert page.read_text().startswith("<!DOCTYPE html>") and "models.py:16" in page.read_text()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == [], "no partial file left"


@pytest.mark.parametrize(
    "arguments, said",
    [
        (["/no/such/trace"], "no trace at"),
        ([os.path.join(TPU, "models.py")], "is not a profiler trace"),
        ([os.path.join(TPU, "mlp.xplane.pb"), "--peaks", "fast"], "peaks are two numbers"),
        ([os.path.join(TPU, "mlp.xplane.pb"), "--peaks=-1,2"], "positive finite"),
    ],
)
def test_bad_input_is_one_line_and_exit_status_2(arguments, said, capsys):
    assert run_command(arguments) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1 and "Traceback" not in err


def test_an_empty_folder_and_a_trace_of_no_compiled_program_say_so(tmp_path, capsys):
    assert run_command([str(tmp_path)]) == 2
    assert "no trace at" in capsys.readouterr().err
    host_only = xspace.read(tpu_trace("mlp"))
    # a trace of host events only: the Task Environment plane alone
    from xspace_builder import Event, Line, Plane, Space

    bare = tmp_path / "bare.xplane.pb"
    bare.write_bytes(Space([Plane("/host:CPU", lines=[Line("python", [Event("f", 0, 10)])])]).encode())
    assert host_only.planes and run_command([str(bare)]) == 2
    assert "no kernel of a compiled program" in capsys.readouterr().err


def test_a_trace_without_hlo_says_how_to_record_one(tmp_path, capsys):
    from xspace_builder import Event, Line, Plane, Space

    stats = {"hlo_op": "fusion.1", "hlo_module": "jit_f", "program_id": 3}
    trace = tmp_path / "t.xplane.pb"
    trace.write_bytes(
        Space([Plane("/device:GPU:0", lines=[Line("Stream #1(Kernel)", [Event("k", 0, 5000, stats)])])]).encode()
    )
    assert run_command([str(trace)]) == 0
    out = capsys.readouterr().out
    assert "holds no HLO program for jit_f" in out and "jax.profiler.trace" in out


def test_the_command_does_not_import_jax():
    code = (
        "import sys; from jaxmagic.__main__ import main; "
        f"status = main(['profile', {tpu_trace('rnn')!r}, '--json']); "
        "assert status == 0, status; assert 'jax' not in sys.modules, 'jax imported'"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
