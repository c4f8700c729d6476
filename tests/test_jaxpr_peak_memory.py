"""``%jaxpr --memory``: the compiled program's peak and the buffers live there by the user's source
line. Truth from XLA itself: its memory analysis, its buffer assignment and the arrays' own sizes."""

import glob
import os
import re
import tempfile
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmagic.compiled import peak_memory
from jaxmagic.compiled.buffer_dump import read_dump
from jaxmagic.tracing.call import Call
from jaxmagic.tracing.stages import trace
from tests import memory_properties as props

SETUP = """def wide(x):
    h = jnp.einsum("ik,jk->ij", x, x)
    top, _ = jax.lax.top_k(h, 2)
    return top.sum(axis=1)

def loss(w, x):
    h = jnp.tanh(x @ w)
    g = jnp.exp(h) @ w.T
    return jnp.mean(g ** 2)

x = jnp.ones((512, 8))
w = jnp.ones((64, 64)) * 0.01
batch = jnp.ones((256, 64))
"""


@pytest.fixture
def defined(run):
    run(SETUP).assert_ok()


def test_the_line_that_makes_the_largest_temporary_holds_the_peak(ip, run, defined):
    shown = run("%jaxpr --memory -o wide(x)").assert_ok()
    report = shown.result
    cell = report.live_at_peak[0].label.split(" line ")[0]
    einsum = [b for b in report.live_at_peak if b.shape == "f32[512,512]"]
    assert einsum, [b.shape for b in report.live_at_peak]  # the einsum's result, 1 MiB, is live at the peak
    assert all(b.label == f"{cell} line 2" and b.kind == "temporary" for b in einsum), [
        (b.label, b.kind) for b in einsum
    ]
    top = report.peak.by_line[0]
    assert top.label == f"{cell} line 2" and top.source.text == 'h = jnp.einsum("ik,jk->ij", x, x)'
    text = report.to_text()
    answer = text.splitlines()[1]
    assert answer.startswith("peak ") and f"held by {cell} line 2" in answer and "jnp.einsum" in answer
    assert "jm-peak" in report.to_html()


def test_the_peak_is_the_sum_of_its_buffers_and_is_reconciled_with_xla_s_totals(run, defined):
    report = run("%jaxpr --memory -o -t grad loss(w, batch)").assert_ok().result
    assert report.peak.live_bytes == sum(b.bytes for b in report.live_at_peak) > 0
    stats = report.compiled.memory_analysis()
    reserved = stats.argument_size_in_bytes + stats.output_size_in_bytes + stats.temp_size_in_bytes
    assert report.peak.reserved_bytes == reserved - stats.alias_size_in_bytes
    # whatever is live at once fits in what XLA reserves, but for constants it keeps apart
    constants = sum(b.bytes for b in report.live_at_peak if b.kind == "constant")
    props.check_within_xla(report.peak_bytes, constants, stats)
    assert ("XLA reserves" if not props.reports_program_peak() else "memory_analysis") in report.to_text()


def test_arguments_are_named_and_sized_as_the_user_s_arrays(ip, run, defined):
    report = run("%jaxpr --memory -o -t grad loss(w, batch)").assert_ok().result
    arguments = {b.label: b for b in report.live_at_peak if b.kind == "argument"}
    assert set(arguments) == {"argument w", "argument x"}  # named as the jaxpr's legend names them
    # sized as XLA holds them: the arrays' own bytes, padded to its tiles on a TPU
    held = jax.jit(jax.grad(ip.user_ns["loss"])).trace(ip.user_ns["w"], ip.user_ns["batch"]).lower().compile()
    held = held.memory_analysis().argument_size_in_bytes
    assert arguments["argument w"].bytes + arguments["argument x"].bytes == held
    if jax.default_backend() == "cpu":
        assert arguments["argument w"].bytes == ip.user_ns["w"].nbytes
        assert arguments["argument x"].bytes == ip.user_ns["batch"].nbytes
    assert arguments["argument x"].shape == "f32[256,64]"


def test_a_gradient_s_peak_says_which_pass_it_is_in(run, defined):
    report = run("%jaxpr --memory -o -t grad loss(w, batch)").assert_ok().result
    assert report.peak.phase in ("forward", "backward")
    assert f"at the {report.peak.phase} pass" in report.to_text()
    plain = run("%jaxpr --memory -o wide(x)").assert_ok().result
    assert plain.peak.phase == "" and " pass" not in plain.to_text().splitlines()[1]


def test_the_output_buffer_is_an_output(run, defined):
    report = run("%jaxpr --memory -o -t grad loss(w, batch)").assert_ok().result
    outputs = [b for b in report.live_at_peak if b.kind == "output"]
    assert all(b.shape == "f32[64,64]" for b in outputs)


def test_every_byte_at_the_peak_has_a_line_or_an_argument_on_a_corpus(run):
    run(
        "def mlp(p, v):\n    h = jax.nn.relu(v @ p['w1'])\n    return jax.nn.log_softmax(h @ p['w2']).mean()\n"
        "def conv(k, im):\n    f = jax.lax.conv_general_dilated(im, k, (1, 1), 'SAME')\n    return jax.nn.relu(f).mean()\n"
        "def rnn(w, xs):\n    def step(h, r):\n        h = jnp.tanh(h @ w + r)\n        return h, h.sum()\n"
        "    return jax.lax.scan(step, jnp.zeros(w.shape[0]), xs)[1].sum()\n"
        "p = {'w1': jnp.ones((32, 64)), 'w2': jnp.ones((64, 10))}\nv = jnp.ones((16, 32))\n"
        "k = jnp.ones((8, 3, 3, 3))\nim = jnp.ones((2, 3, 16, 16))\nrw = jnp.ones((16, 16))\nrxs = jnp.ones((20, 16))"
    ).assert_ok()
    for line in ("-t grad mlp(p, v)", "-t grad conv(k, im)", "-t grad rnn(rw, rxs)", "mlp(p, v)"):
        report = run(f"%jaxpr --memory -o {line}").assert_ok().result
        assert report.peak.attributed_share >= 0.95, (line, [(b.name, b.label) for b in report.live_at_peak])


CUMULATIVE = """
def running(v):
    c = jnp.cumsum(v)
    return (c * 2).sum()

def shifted(v):
    s = jnp.sin(v)
    c = jnp.cumsum(s)
    return (c * s).sum()

def maxima(v):
    c = jax.lax.cummax(v)
    return (c * 2).sum()

ramp = jnp.linspace(0.0, 1.0, 1_000_000)
"""


@pytest.mark.parametrize(
    "call, scan, alone",
    [
        ("running(ramp)", "c = jnp.cumsum(v)", jnp.cumsum),
        ("shifted(ramp)", "c = jnp.cumsum(s)", jnp.cumsum),  # the lowering traced first for running's line
        ("maxima(ramp)", "c = jax.lax.cummax(v)", jax.lax.cummax),
    ],
)
def test_a_cumulative_reduction_s_temporaries_are_on_its_line(run, call, scan, alone):
    """JAX lowers a cumulative reduction through a lowering it caches, whose operations carry no
    line, inside a call XLA inlines: the temporaries XLA makes for it are on its line, not on the
    line that reads its result. Truth: the temporaries XLA makes for the reduction compiled alone,
    each found on its line (another line may make one of the same shape: sin's values laid out as
    the cumsum reads them)."""
    run(CUMULATIVE).assert_ok()
    report = run(f"%jaxpr --memory -o {call}").assert_ok().result
    _, dumped = peak_memory.compile_with_buffers(jax.jit(alone).trace(jnp.ones(1_000_000)).lower())
    dump = read_dump(dumped)
    made_alone = Counter(v.shape for v in dump.values.values() if dump.allocations[v.allocation].kind == "temporary")
    temporaries = [b for b in report.live_at_peak if b.kind == "temporary"]
    live = Counter(b.shape for b in temporaries)
    on_its_line = [b for b in temporaries if b.source is not None and b.source.text == scan]
    found = Counter(b.shape for b in on_its_line)
    expected = {shape: min(count, live[shape]) for shape, count in made_alone.items() if live[shape]}
    assert expected, (made_alone, live)
    labels = [(b.shape, b.label) for b in temporaries]
    assert all(found[shape] >= count for shape, count in expected.items()), (expected, labels)
    held = next(share for share in report.peak.by_line if share.source is not None and share.source.text == scan)
    assert held.bytes >= 4 * 1_000_000  # its largest block holds the whole array


def test_rows_are_capped(run):
    lines = "\n".join(f"    a{i} = jnp.sin(v + {i})" for i in range(20))
    total = " + ".join(f"a{i}" for i in range(20))
    run(f"def many(v):\n{lines}\n    return ({total}).sum(), a0, a1\nbig = jnp.ones((64, 64))").assert_ok()
    report = run("%jaxpr --memory -o many(big)").assert_ok().result
    text = report.to_text()
    table_rows = [row for row in text.splitlines() if "%  " in row and " B" in row]
    assert len(table_rows) <= 12
    if len(report.peak.by_line) > 12:
        assert "more lines" in text


def test_the_dump_folder_is_removed(run, defined):
    ours = os.path.join(tempfile.gettempdir(), f"jaxmagic-buffers-{os.getpid()}-*")  # other processes' aside
    before = set(glob.glob(ours))
    run("%jaxpr --memory wide(x)").assert_ok()
    assert set(glob.glob(ours)) == before


def test_the_one_compile_serves_the_cost_view_too(run, defined):
    report = run("%jaxpr --memory --cost -o wide(x)").assert_ok().result
    assert report.memory["arguments"] == 512 * 8 * 4
    assert report.peak.totals == report.memory


def test_the_engine_runs_without_a_shell():
    def f(v):
        big = jnp.outer(v, v)
        return jnp.sin(big).sum()

    report = trace(Call(f, (jnp.ones(300),), {}), show_memory=True).prepare()
    assert any(b.shape == "f32[300,300]" for b in report.live_at_peak) or report.peak_bytes >= 300 * 4
    lowered = jax.jit(f).trace(jnp.ones(300)).lower()
    compiled, dumped = peak_memory.compile_with_buffers(lowered)
    assert "Live ranges at" in dumped
    assert np.isclose(peak_memory.peak_memory(compiled.as_text(), dumped, {}).peak_bytes, report.peak_bytes)


DONATED_STEP = """
from functools import partial

@partial(jax.jit, donate_argnums=(0,))
def update_step(params, x):
    def loss(p):
        return jnp.sum(jnp.tanh(x @ p["w"]) ** 2)
    grads = jax.grad(loss)(params)
    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)

params = {"w": jnp.ones((256, 256))}
xs = jnp.ones((64, 256))
"""


def test_a_value_written_into_a_donated_argument_is_counted_once_and_named_by_the_users_names(run):
    """XLA lists the update written in place into the donated ``params['w']`` beside the argument
    it replaces, at the instruction that writes it: one buffer, counted once, and every argument
    named as the user's inputs are (never by XLA's operation name)."""
    run(DONATED_STEP).assert_ok()
    report = run("%jaxpr --memory -o update_step(params, xs)").assert_ok().result
    stats = report.compiled.memory_analysis()
    reserved = stats.argument_size_in_bytes + stats.output_size_in_bytes + stats.temp_size_in_bytes
    constants = sum(b.bytes for b in report.live_at_peak if b.kind == "constant")
    assert stats.alias_size_in_bytes == 256 * 256 * 4  # the donation took
    assert reserved  # (its parts, the CPU's bound, below)
    props.check_within_xla(report.peak_bytes, constants, stats)
    named = {f"argument {name}" for name in report.input_names}
    assert {b.label for b in report.live_at_peak if b.kind == "argument"} <= named
    assert not any("jit(" in b.label for b in report.live_at_peak)


# A press that lands while the interpreter runs a garbage-collector callback (JAX's own
# ``_xla_gc_callback``) cannot be raised: Python prints it as "Exception ignored" and goes on, in
# any program, and the probe presses again. Only what follows such reports is the code's own.
_DROPPED_PRESS = re.compile(
    r"Exception ignored in: [^\n]*\nTraceback \(most recent call last\):\n(?:(?:  [^\n]*)?\n)*KeyboardInterrupt:?[^\n]*\n?"
)


def _without_presses_python_dropped(stderr: str) -> str:
    """``stderr`` less the interrupts Python itself reported as ignored.

    >>> _without_presses_python_dropped(
    ...     "Exception ignored in: <function cb>\\nTraceback (most recent call last):\\n"
    ...     '  File "x", line 1, in cb\\nKeyboardInterrupt: \\nOSError: Directory not empty\\n')
    'OSError: Directory not empty\\n'
    >>> _without_presses_python_dropped(  # a frame of a function whose line is blank, as weakref's can be
    ...     "Exception ignored in: <function remove>\\nTraceback (most recent call last):\\n"
    ...     '  File "w", line 9, in remove\\n    def remove(k):\\n\\n  File "s", line 1, in on\\nKeyboardInterrupt: \\n')
    ''
    """
    return _DROPPED_PRESS.sub("", stderr)


def test_ctrl_c_during_memory_leaves_no_buffer_folder_and_no_error(tmp_path):
    """Ctrl-C while XLA compiles for ``--memory``: a KeyboardInterrupt and nothing else, and no
    ``jaxmagic-buffers-*`` folder left behind (it was left, with "OSError: Directory not empty")."""
    import subprocess
    import sys

    probe = """
import os, signal, threading, time, tempfile
import jax, jax.numpy as jnp
from jaxmagic.compiled.peak_memory import compile_with_buffers

def body(x):
    for _ in range(400):
        x = jnp.sin(x @ x.T) + x
    return x

lowered = jax.jit(body).lower(jnp.ones((64, 64)))
handled, answered = threading.Event(), threading.Event()

def on_ctrl_c(signum, frame):  # Python's own handler, noting that it ran
    handled.set()
    raise KeyboardInterrupt

signal.signal(signal.SIGINT, on_ctrl_c)

def press_ctrl_c():  # again only where the first was lost: XLA's compile may swallow the exception
    while not answered.is_set():
        handled.clear()
        os.kill(os.getpid(), signal.SIGINT)
        # Python runs the handler only between bytecodes: on a busy machine a compile holds it off
        # for long; pressed again before it ran, the second lands in whatever runs next
        handled.wait(120.0)
        answered.wait(30.0)

threading.Timer(0.3, press_ctrl_c).start()
try:
    while True:
        compile_with_buffers(lowered)
        lowered = jax.jit(lambda x, f=body: f(x) + 1).lower(jnp.ones((64, 64)))
except KeyboardInterrupt:
    answered.set()
    print("INTERRUPTED")
"""
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TMPDIR": str(tmp_path), "JAX_PLATFORMS": "cpu"},
    )
    assert "INTERRUPTED" in done.stdout, done.stderr[-2000:]
    said = _without_presses_python_dropped(done.stderr)
    assert "Directory not empty" not in said and "Traceback" not in said, done.stderr[-2000:]
    left = [p for p in tmp_path.iterdir() if p.name.startswith("jaxmagic-buffers")]
    assert left == [], [sorted(q.name for q in p.iterdir()) for p in left]
