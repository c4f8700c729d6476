"""Real fingerprint files, mutated as a careless user or an attacker would (Hypothesis): wrong
types, NaN and infinite figures, huge and negative numbers, unknown cause kinds, hostile names
(terminal escapes, workflow commands, forged lines, lone surrogates, right-to-left marks), deep
nesting, cut and broken JSON. ``diff`` and ``merge`` run in process (a few in a real process, to
prove the exit status), and every run must:

- exit with 0 or 1 (a comparison) or 2 (one line of error), never a traceback;
- write no byte of control character to its output, nor a line that starts a workflow command;
- write nothing but the page it was asked for, and leave its inputs as they were;
- give the same answer for a file that loads and for the same file compared with itself (no change).

Each file's outcome is counted (right, clear error, wrong, traceback, injection, data lost) and
printed at the end (``-s``); ``JAXMAGIC_MUTATIONS`` sets how many files (2,000 by default).
"""

from __future__ import annotations

import collections
import hashlib
import json
import math
import os
import pathlib
import re
import subprocess
import sys
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.test_fingerprint_files import SEEDS, run

EXAMPLES = int(os.environ.get("JAXMAGIC_MUTATIONS", "2000"))
OUTCOMES: collections.Counter = collections.Counter()
CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029\u202a-\u202e\u2066-\u2069]")
COMMAND_LINE = re.compile(r"^\s*(::|##\[)", re.MULTILINE)
SEED_TEXTS = [(SEEDS / name).read_text() for name in ("width8.json", "width16.json")]

HOSTILE_TEXT = st.sampled_from(
    [
        "::error::forged",
        "\n::set-output name=x::1",
        "##[error]x",
        "a\nb: compiled 1 time",
        "\x1b[2J\x1b]0;title\x07",
        "\u202egnp.exe",
        "\ud800",
        "x" * 5000,
        "",
        "%0A::error::x",
        "<script>alert(1)</script>",
        "\r\n  ::warning::y",
    ]
)
VALUES = st.one_of(
    HOSTILE_TEXT,
    st.text(max_size=30),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
    st.sampled_from(["first_call", "cosmic_ray", "shape", "jaxmagic-fingerprint/1", "jaxmagic-fingerprint/3"]),
)


def paths_of(value, prefix=()):
    """Every place in a JSON value: ``(path, value)`` pairs."""
    yield prefix, value
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from paths_of(inner, (*prefix, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from paths_of(inner, (*prefix, index))


def set_at(data, path, value):
    if not path:
        return value
    target = data
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return data


@st.composite
def mutated_files(draw) -> str:
    """The text of a real fingerprint with one to three mutations of its JSON, or of its text."""
    text = draw(st.sampled_from(SEED_TEXTS))
    data = json.loads(text)
    for _ in range(draw(st.integers(1, 3))):
        places = list(paths_of(data))
        path, value = draw(st.sampled_from(places))
        how = draw(st.sampled_from(["replace", "delete", "rename", "add", "nest"]))
        if how == "replace":
            alike = st.one_of(HOSTILE_TEXT, st.text()) if isinstance(value, str) else st.integers(0, 10**6)
            keep_type = isinstance(value, (str, int)) and not isinstance(value, bool) and draw(st.booleans())
            data = set_at(data, path, draw(alike if keep_type else VALUES))
        elif how == "delete" and path:
            parent = data
            for step in path[:-1]:
                parent = parent[step]
            del parent[path[-1]]
        elif how == "rename" and path and isinstance(path[-1], str):
            parent = data
            for step in path[:-1]:
                parent = parent[step]
            parent[draw(HOSTILE_TEXT)] = parent.pop(path[-1])
        elif how == "add" and isinstance(value, dict):
            value[draw(st.one_of(HOSTILE_TEXT, st.text(max_size=8)))] = draw(VALUES)
        elif how == "nest":
            data = set_at(data, path, json.loads("[" * 400 + "]" * 400) if draw(st.booleans()) else [value])
    out = json.dumps(data, allow_nan=True, ensure_ascii=draw(st.booleans()))
    return broken_text(draw, out)


def broken_text(draw, out: str) -> str:
    """The JSON text itself mutated (most often kept): cut short, a huge number, NaN, a field
    given twice, an array nested 200,000 deep."""
    raw = draw(st.sampled_from(["keep", "keep", "keep", "truncate", "huge", "nan", "dup", "deep"]))
    if raw == "truncate":
        out = out[: draw(st.integers(0, max(0, len(out) - 1)))]
    elif raw == "huge":
        out = out.replace('"fusions": ', '"fusions": ' + "7" * draw(st.sampled_from([31, 5000])), 1)
    elif raw == "nan":
        out = out.replace("0.0", draw(st.sampled_from(["NaN", "-Infinity", "1e999", "-0.0"])), 1)
    elif raw == "dup":
        out = out.replace('"versions": {', '"versions": {"jax": "1", "jax": "2", ', 1)
    elif raw == "deep":
        out = out.replace('"timing": {', '"timing": {"x": ' + "[" * 200_000 + "]" * 200_000 + ", ", 1)
    return out


def digest(folder: pathlib.Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}


def outcome(status: int, out: str, err: str) -> str:
    """How one run ended: ``right``, ``clear error``, ``traceback`` or ``injection``."""
    if "Traceback" in out + err or status not in (0, 1, 2):
        return "traceback"
    if CONTROL.search(out + err) or COMMAND_LINE.search(out) or COMMAND_LINE.search(err):
        return "injection"
    if status == 2:
        return "clear error" if len(err.strip().splitlines()) == 1 and out == "" else "traceback"
    return "right" if err == "" and len(out.encode()) <= 1_000_000 else "wrong"


def judged(text: str, command: str) -> str:
    """Run ``command`` on the mutated ``text`` (and a real seed) in a folder of its own."""
    with tempfile.TemporaryDirectory() as temporary:
        folder = pathlib.Path(temporary)
        mutated = folder / "mutated.json"
        mutated.write_text(text, encoding="utf-8", errors="surrogatepass")
        seed = folder / "seed.json"
        seed.write_text(SEED_TEXTS[0])
        before = digest(folder)
        page = folder / "page.html"
        if command == "diff":
            status, out, err = run("diff", "--html", str(page), str(seed), str(mutated))
        elif command == "diff-reverse":
            status, out, err = run("diff", str(mutated), str(seed))
        else:
            status, out, err = run("merge", "--html", str(page), str(seed), str(mutated))
        found = outcome(status, out, err)
        after = digest(folder)
        asked = {"page.html"} if status in (0, 1) and command != "diff-reverse" else set()
        if {k: v for k, v in after.items() if k not in asked} != before or set(after) - set(before) - asked:
            return "data lost"
        if found == "right" and command == "diff":
            same = run("diff", str(mutated), str(mutated))
            if same[0] != 0 or not same[1].startswith("No change"):
                return "wrong"
        return found


@pytest.fixture(scope="module", autouse=True)
def report_outcomes():
    yield
    if OUTCOMES:
        total = sum(OUTCOMES.values())
        print(f"\n{total:,} mutated fingerprints: " + ", ".join(f"{k} {v:,}" for k, v in sorted(OUTCOMES.items())))


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
@given(text=mutated_files(), command=st.sampled_from(["diff", "diff-reverse", "merge"]))
def test_mutated_fingerprints_give_an_answer_or_one_clear_line(text, command):
    found = judged(text, command)
    OUTCOMES[found] += 1
    assert found in ("right", "clear error"), (found, command, text[:2000])


@pytest.mark.parametrize("edit", ["nan", "surrogate", "command", "deep"])
def test_a_real_process_ends_with_status_0_1_or_2_and_clean_output(tmp_path, edit):
    text = SEED_TEXTS[0]
    text = {
        "nan": text.replace('"flops": 792.0', '"flops": NaN'),
        "surrogate": text.replace('"loss"', '"\\ud800\\n::error::x"'),
        "command": text.replace('"train.py:13"', '"\\n::set-output name=a::b\\u001b[2J"'),
        "deep": "[" * 500_000,
    }[edit]
    path = tmp_path / "fp.json"
    path.write_text(text)
    done = subprocess.run(
        [sys.executable, "-m", "jaxmagic", "diff", str(SEEDS / "width8.json"), str(path)],
        capture_output=True,
        timeout=60,
    )
    out, err = done.stdout.decode("utf-8"), done.stderr.decode("utf-8")
    assert outcome(done.returncode, out, err) in ("right", "clear error"), (done.returncode, out, err)
    assert math.isfinite(len(out))
