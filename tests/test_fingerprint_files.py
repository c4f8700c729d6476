"""Fingerprint files from anyone, output read by anything: ``diff`` and ``merge`` on malformed and
hostile files answer in one line with exit status 2, never a traceback; names never reach the
terminal raw; every file is written whole, never through a link nor over an input; output is
bounded; nothing is lost silently. In process (``jaxmagic.__main__.main``), as a CI job runs them.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

from jaxmagic.__main__ import main
from jaxmagic.files import OutputRefused, check_output, write_atomically
from jaxmagic.recompiles.fingerprint import Fingerprint, FunctionFingerprint, ProgramRecord
from jaxmagic.recompiles.fingerprint_diff import compare
from jaxmagic.words.untrusted import one_line, safe_text

SEEDS = pathlib.Path(__file__).parent / "fixtures" / "fingerprints"
WIDTH8 = json.loads((SEEDS / "width8.json").read_text())
CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029\u202a-\u202e\u2066-\u2069]")
COMMAND_LINE = re.compile(r"^\s*(::|##\[)", re.MULTILINE)


def run(*argv: str) -> tuple[int, str, str]:
    """``python -m jaxmagic ARGV`` in this process: exit status, standard output, standard error."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(list(argv))
        except SystemExit as exit_:
            status = exit_.code if isinstance(exit_.code, int) else 1
    return status, out.getvalue(), err.getvalue()


def write(folder: pathlib.Path, name: str, data) -> str:
    path = folder / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8", errors="surrogatepass")
    return str(path)


def assert_clear_error(status: int, out: str, err: str, *words: str) -> None:
    assert status == 2, (out, err)
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and not CONTROL.search(err)
    for word in words:
        assert word in err, err


def mutated(edit) -> dict:
    data = copy.deepcopy(WIDTH8)
    edit(data)
    return data


def first_program(data: dict) -> dict:
    return data["functions"]["loss"]["programs"][0]


MALFORMED = {
    "nan_peak": ('"peak_bytes": 704', '"peak_bytes": NaN', "peak_bytes", "NaN"),
    "infinite_flops": ('"flops": 792.0', '"flops": 1e999', "flops", "not finite"),
    "negative_bytes": ('"peak_bytes": 704', '"peak_bytes": -704', "peak_bytes", "≥ 0"),
    "huge_integer": ('"fusions": 2', '"fusions": ' + "9" * 5000, "fusions", "5,000 digits"),
    "unknown_cause": ('"kind": "first_call"', '"kind": "cosmic_ray"', "kind", "cosmic_ray"),
    "wrong_type": ('"compilations": 2', '"compilations": "two"', "compilations", "whole number"),
    "bool_for_count": ('"fusions": 2', '"fusions": true', "fusions", "true"),
    "list_for_object": ('"versions": {', '"versions": [], "x": {', "versions", "list"),
    "not_json": ('{\n "format"', "{\n format", "not JSON", "line 2"),
    "twice": ('"cut": 0,', '"cut": 0, "cut": 0,', "given twice", "cut"),
    "newer_format": ("jaxmagic-fingerprint/2", "jaxmagic-fingerprint/9", "not a jaxmagic fingerprint", "/9"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_file_is_one_line_naming_the_file_the_field_and_what_was_expected(tmp_path, case):
    old, new, *words = MALFORMED[case]
    text = (SEEDS / "width8.json").read_text()
    assert old in text
    path = write(tmp_path, "bad.json", text.replace(old, new, 1))
    status, out, err = run("diff", str(SEEDS / "width8.json"), path)
    assert_clear_error(status, out, err, "bad.json", *words)
    assert out == ""


def test_deep_nesting_a_lone_surrogate_and_bytes_that_are_not_utf8_are_clear_errors(tmp_path):
    deep = write(tmp_path, "deep.json", "[" * 100_000 + "]" * 100_000)
    assert_clear_error(*run("diff", deep, deep), "deep.json", "nested deeper")
    deep_object = mutated(lambda d: first_program(d).update(facts={"ops": json.loads("[" * 50 + "]" * 50)}))
    assert_clear_error(*run("diff", write(tmp_path, "d2.json", deep_object), deep), "d2.json", "ops")
    binary = tmp_path / "binary.json"
    binary.write_bytes(b'{"format": "\xff\xfe"}')
    assert_clear_error(*run("merge", str(binary)), "binary.json", "not UTF-8")
    surrogate = (SEEDS / "width8.json").read_text().replace('"loss"', '"lo\\ud800ss"')
    status, out, err = run("diff", str(SEEDS / "width8.json"), write(tmp_path, "s.json", surrogate))
    assert status == 0 and err == "" and "lo\\ud800ss" in out and not CONTROL.search(out)


def test_a_hostile_name_never_reaches_the_terminal_raw(tmp_path):
    hostile = "step\n::error file=x::forged\x1b[2J\x07\u202e::set-output name=a::b"
    data = mutated(lambda d: d["functions"].__setitem__(hostile, d["functions"].pop("loss")))
    data["versions"]["jax"] = "\n::warning::x"
    first = data["functions"][hostile]["programs"][0]
    first["facts"]["line_text"] = {k: "::error::line\r\n##[error]x" for k in first["facts"]["line_text"]}
    status, out, err = run("diff", str(SEEDS / "width8.json"), write(tmp_path, "hostile.json", data))
    assert status == 0 and err == ""  # a function renamed: one new, one gone, no budget broken
    assert not CONTROL.search(out) and not COMMAND_LINE.search(out), out
    assert "step\\n::error file=x::forged\\x1b[2J\\x07\\u202e::set-output" in out  # shown, escaped
    merged = run("merge", write(tmp_path, "p0.json", data), str(SEEDS / "width8.json"))
    assert not CONTROL.search(merged[1] + merged[2]) and not COMMAND_LINE.search(merged[1])


def test_safe_text_keeps_only_line_breaks_and_jaxmagics_own_colours():
    assert safe_text("a\x1b[1mb\x1b[0m\x1b]0;title\x07", colour=True) == "a\x1b[1mb\x1b[0m\\x1b]0;title\\x07"
    assert safe_text("\x1b[1m  ::error::x", colour=True).startswith("\x1b[1m  \\x3a:")
    assert one_line("a\u2028b\x85") == "a\\u2028b\\x85"


def test_merge_tells_files_apart_by_file_not_by_what_they_claim(tmp_path):
    one = write(tmp_path, "one.json", mutated(lambda d: d["versions"].update(process="process 0 of 2")))
    extra = mutated(lambda d: d["versions"].update(process="process 0 of 2"))
    extra["functions"]["loss"]["programs"].append(copy.deepcopy(extra["functions"]["loss"]["programs"][0]))
    extra["functions"]["loss"]["compilations"] = 3
    two = write(tmp_path, "two.json", extra)
    status, out, err = run("merge", one, two)
    assert status == 1, out + err
    assert "two.json (process 0 of 2)" in out.splitlines()[0]
    assert "all say they are process 0 of 2" in out


def test_a_cut_file_is_said_and_counted_in_full():
    def function(kept, cut=0):
        programs = [ProgramRecord(f"(x: f32[{n}])", None, (), None) for n in range(kept)]
        return Fingerprint({}, {"step": FunctionFingerprint("step", None, programs, cut)})

    found = compare(function(1000), function(1000, cut=100))
    assert [(c.kind, c.before, c.after) for c in found.changes] == [("compilations", 1000, 1100)]
    text = found.to_text(color=False)
    assert "only the last 1,000 of 1,100 compilations were kept" in text
    assert Fingerprint.from_json(function(5, cut=2).to_json()).functions["step"].compilations == 7


def test_output_is_bounded_and_the_largest_changes_come_first(tmp_path):
    def many(scale):
        programs = {
            f"f{n:05d}_" + "x" * 2000: {
                "compilations": 1,
                "programs": [first_program(copy.deepcopy(WIDTH8)) | {"signature": "()"}],
            }
            for n in range(3000)
        }
        for n, entry in enumerate(programs.values()):
            entry["programs"][0]["facts"]["peak_bytes"] = 1000 + n * scale
            entry["programs"][0]["facts"]["memory"] = {"arguments": 1000 + n * scale}
        return {"format": "jaxmagic-fingerprint/2", "versions": {}, "functions": programs}

    old, new = write(tmp_path, "old.json", many(0)), write(tmp_path, "new.json", many(1))
    page = tmp_path / "page.html"
    status, out, err = run("diff", "--html", str(page), old, new)
    assert status == 1 and err == ""
    assert len(out.encode()) <= 1_000_000 and page.stat().st_size <= 1_000_000
    assert "and 2,899 more functions changed" in out and "and 2,799 more changes" in out
    assert out.splitlines()[0].startswith("2,900 budgets broken: `f02999_")  # the largest growth first


def test_writes_are_whole_never_through_a_link_nor_over_an_input(tmp_path):
    fingerprint = str(SEEDS / "width8.json")
    before = pathlib.Path(fingerprint).read_bytes()
    status, out, err = run("diff", "--html", fingerprint, fingerprint, fingerprint)
    assert_clear_error(status, out, err, "also an input")
    assert pathlib.Path(fingerprint).read_bytes() == before
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    (tmp_path / "page.html").symlink_to(target)
    assert_clear_error(*run("diff", "--html", str(tmp_path / "page.html"), fingerprint, fingerprint), "symbolic link")
    assert target.read_text() == "keep me"
    assert_clear_error(*run("merge", "--html", "", fingerprint), "empty path")
    assert_clear_error(*run("diff", "--html", str(tmp_path / "no" / "p.html"), fingerprint, fingerprint), "not exist")
    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    assert_clear_error(*run("watch", "--fingerprint", str(script), str(script)), "also an input")
    assert script.read_text() == "print('hi')\n"
    with pytest.raises(OutputRefused, match="is a folder"):
        check_output(tmp_path)
    written = write_atomically(tmp_path / "new.txt", "x\ud800")
    assert pathlib.Path(written).read_text() == "x\\ud800"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.txt", "page.html", "precious.txt", "train.py"]


def test_diff_and_merge_never_import_jax(tmp_path):
    probe = (
        "import sys, runpy\n"
        f"sys.argv = ['jaxmagic', 'diff', {str(SEEDS / 'width8.json')!r}, {str(SEEDS / 'width16.json')!r}]\n"
        "try:\n    runpy.run_module('jaxmagic', run_name='__main__')\nexcept SystemExit as e:\n    code = e.code\n"
        "print('LOADED', sorted(m for m in ('jax', 'jaxlib', 'numpy', 'IPython') if m in sys.modules), code)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip().splitlines()[-1] == "LOADED [] 1", done.stdout + done.stderr


def test_a_real_process_exits_2_with_one_line(tmp_path):
    bad = write(tmp_path, "bad.json", (SEEDS / "width8.json").read_text().replace('"flops": 792.0', '"flops": NaN'))
    done = subprocess.run(
        [sys.executable, "-m", "jaxmagic", "diff", bad, str(SEEDS / "width8.json")],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONIOENCODING": "ascii"},
    )
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and "flops" in done.stderr, done.stderr


def test_a_log_that_could_not_keep_every_compilation_makes_a_fingerprint_that_says_so():
    import jax
    import jax.numpy as jnp

    from jaxmagic.recompiles.fingerprint import fingerprint_of
    from jaxmagic.recompiles.log import RecompileLog

    log = RecompileLog(keep_programs=True, capacity=2).start()
    try:
        grows = jax.jit(lambda x: x * 2)
        for n in (3, 4, 5):
            grows(jnp.ones(n))
    finally:
        log.stop()
    (function,) = fingerprint_of(log).functions.values()
    assert (function.compilations, function.cut, len(function.programs)) == (3, 1, 2)  # as JAX compiled it


def test_watch_refuses_an_output_it_cannot_write_before_the_script_runs(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("print('RAN')\n")
    for flag, path in (("--fingerprint", tmp_path / "missing" / "fp.json"), ("--html", ""), ("--html", tmp_path)):
        status, out, err = run("watch", flag, str(path), str(script))
        assert_clear_error(status, out, err, flag)
        assert "RAN" not in out


def test_budget_failures_show_a_hostile_function_name_on_its_own_line_escaped():
    from jaxmagic.recompiles.budget import CompileBudgetExceeded
    from jaxmagic.recompiles.events import RecompileLimitExceeded

    hostile = "step\n::error::forged\x1b[2J"
    for error in (RecompileLimitExceeded(hostile, 2, 1, []), CompileBudgetExceeded(hostile, 2, 1, [])):
        text = str(error)
        assert not CONTROL.search(text) and not COMMAND_LINE.search(text), text
        assert "step\\n::error::forged\\x1b[2J" in text.splitlines()[0]
