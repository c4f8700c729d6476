"""The doctor in ordinary cells: the diagnosis first, then the traceback trimmed to the user's
frames (the full one folded under the card, and printed by ``%tb``), ``%debug`` and
``sys.last_value`` as without the doctor, its switch, its removal on unload, and living alongside
a custom exception handler installed before it."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest
from conftest import assert_no_internals, strip_ansi

from jaxmagic import doctor
from jaxmagic.magics import doctor as doctor_magics

TRAP = """
@jax.jit
def activation(x, use_relu):
    if use_relu:
        return jnp.maximum(0, x)
    return jnp.tanh(x)
"""


def cards(result) -> list[str]:
    """The pitfall ids of the diagnosis cards a cell showed."""
    return [
        o["text/html"].split('data-pitfall="')[1].split('"')[0]
        for o in result.outputs
        if "data-pitfall" in o.get("text/html", "")
    ]


@pytest.fixture
def trap(run):
    run(TRAP).assert_ok()
    return "activation(jnp.ones(3), True)"


@pytest.fixture
def pristine(ip):
    """Whatever a test does to the shell's exception handling, it is as it was afterwards: the
    handler the shell had before jaxmagic, with jaxmagic's own loaded over it."""
    ip.run_line_magic("unload_ext", "jaxmagic")
    before = (ip.custom_exceptions, ip.CustomTB)
    ip.run_line_magic("load_ext", "jaxmagic")
    yield ip
    ip.run_line_magic("unload_ext", "jaxmagic")
    ip.custom_exceptions, ip.CustomTB = before
    if hasattr(ip, "_jaxmagic_doctor_hook"):
        del ip._jaxmagic_doctor_hook
    ip.run_line_magic("load_ext", "jaxmagic")
    assert ip._jaxmagic_doctor_hook.previous_handler is before[1]  # one doctor hook, over the original


def test_a_trap_in_an_ordinary_cell_shows_the_diagnosis_then_the_users_frames(run, trap):
    result = run(trap)
    assert type(result.error).__name__ == "TracerBoolConversionError"  # the cell still fails
    assert "TracerBoolConversionError" in result.shown_traceback  # the traceback, trimmed
    assert "if use_relu:" in result.shown_traceback and "activation(jnp.ones(3), True)" in result.shown_traceback
    assert "jax/_src" not in result.shown_traceback  # JAX's own frames are left out...
    assert "frames inside JAX and other libraries are not shown" in result.shown_traceback
    assert cards(result) == ["python-control-flow"]
    (card,) = [o for o in result.outputs if "data-pitfall" in o.get("text/html", "")]
    assert "static_argnames" in card["text/html"] and "In [" in card["text/plain"]
    folded = card["text/html"].split("<details", 1)[1]  # ...and folded under the card, in full
    assert "the full traceback" in folded and "jax/_src/core.py" in folded and "if use_relu:" in folded
    assert "\x1b[" not in folded
    assert_no_internals(result)


def test_the_hook_records_the_error_for_debug_and_tb(ip, run, trap):
    result = run(trap)
    assert sys.last_value is result.error  # %debug and %tb see it, as without the doctor
    assert sys.last_traceback is result.error.__traceback__ and sys.last_type is type(result.error)
    assert ip.InteractiveTB.tb is result.error.__traceback__  # %debug opens the original frames
    full = run("%tb")
    assert "jax/_src/core.py" in full.shown_traceback and "if use_relu:" in full.shown_traceback


def test_debug_opens_the_frame_that_raised(ip, run, trap, monkeypatch):
    import io

    run(trap)
    monkeypatch.setattr(sys, "stdin", io.StringIO("up\np use_relu\nq\n"))
    ip.InteractiveTB.pdb = None  # a debugger made for this stdin
    try:
        result = run("%debug")
    finally:
        ip.InteractiveTB.pdb = None
    assert "Traced<" in result.stdout or "Tracer" in result.stdout, result.stdout  # the traced flag, seen


def test_errors_that_are_not_traps_show_only_their_traceback(run):
    for code in ("1 / 0", "jnp.no_such_function(jnp.ones(2))", "int('x')", "[][1]", "import no_such_module"):
        result = run(code)
        assert result.error is not None and cards(result) == [], code
        assert type(result.error).__name__ in result.shown_traceback


def test_syntax_errors_still_show_as_syntax_errors(run):
    result = run("def f(:\n    pass")
    assert "SyntaxError" in result.shown_traceback and cards(result) == []


def test_doctor_off_and_on(ip, run, trap):
    try:
        assert "off" in run("%jaxmagic doctor off").assert_ok().stdout
        assert not doctor_magics.hook_installed(ip)
        result = run(trap)
        assert result.error is not None and cards(result) == []
        assert "TracerBoolConversionError" in result.shown_traceback
        assert "doctor: off" in run("%jaxmagic doctor").stdout
    finally:
        run("%jaxmagic doctor on").assert_ok()
    assert doctor_magics.hook_installed(ip)
    assert "doctor: on" in run("%jaxmagic doctor status").stdout
    assert cards(run(trap)) == ["python-control-flow"]


def test_doctor_last_explains_the_last_error_again(run, trap):
    run("%jaxmagic doctor off").assert_ok()
    try:
        run(trap)
        again = run("%jaxmagic doctor last").assert_ok()
        assert cards(again) == ["python-control-flow"]
        run("1 / 0")
        assert "not a JIT trap" in run("%jaxmagic doctor last").stdout
    finally:
        run("%jaxmagic doctor on").assert_ok()


@pytest.mark.parametrize("line", ["doctor maybe", "doctor on off", "nothing"])
def test_jaxmagic_usage_errors(run, line):
    result = run(f"%jaxmagic {line}")
    assert result.usage_error and "Example: %jaxmagic doctor off" in result.usage_error


def test_jaxmagic_without_arguments_lists_its_commands(run):
    assert "%jaxmagic doctor [on|off|status|last]" in run("%jaxmagic").assert_ok().stdout


def test_unload_removes_the_hook_and_load_puts_exactly_one_back(ip, run, pristine):
    ours = ip.CustomTB
    ip.run_line_magic("unload_ext", "jaxmagic")
    assert ip.custom_exceptions == () and ip.CustomTB is not ours
    assert not hasattr(ip, "_jaxmagic_doctor_hook")
    for _ in range(20):
        ip.run_line_magic("load_ext", "jaxmagic")
        ip.run_line_magic("unload_ext", "jaxmagic")
        ip.run_line_magic("reload_ext", "jaxmagic")
    state = ip._jaxmagic_doctor_hook
    assert ip.CustomTB is state.handler
    assert state.previous_types == ()  # chained to nothing: no earlier doctor hook under this one
    assert len(ip.custom_exceptions) == len(set(ip.custom_exceptions)) == len(doctor_magics.TRAP_TYPES)
    run(TRAP).assert_ok()
    assert cards(run("activation(jnp.ones(3), True)")) == ["python-control-flow"]  # shown once


def test_a_custom_handler_installed_before_keeps_working_and_is_restored(ip, run, pristine):
    ip.run_line_magic("unload_ext", "jaxmagic")
    seen = []

    def custom(shell, etype, value, tb, tb_offset=None):
        seen.append(etype.__name__)
        print(f"custom handler: {etype.__name__}")
        return [f"custom: {value}"]

    ip.set_custom_exc((ZeroDivisionError, TypeError), custom)
    theirs_types, theirs = ip.custom_exceptions, ip.CustomTB
    ip.run_line_magic("load_ext", "jaxmagic")
    assert ip.CustomTB is not theirs

    result = run("1 / 0")  # theirs alone
    assert "custom handler: ZeroDivisionError" in result.stdout and cards(result) == []
    run(TRAP).assert_ok()
    result = run("activation(jnp.ones(3), True)")  # a TypeError: theirs first, then the diagnosis
    assert "custom handler: TracerBoolConversionError" in result.stdout
    assert cards(result) == ["python-control-flow"]
    result = run("jax.jit(lambda x, n: x[:n])(jnp.ones(3), 2)")  # an IndexError: not theirs
    assert "custom handler" not in result.stdout and "IndexError" in result.shown_traceback
    assert cards(result) == ["traced-shape"]
    assert seen == ["ZeroDivisionError", "TracerBoolConversionError"]

    ip.run_line_magic("unload_ext", "jaxmagic")
    assert ip.custom_exceptions == theirs_types and ip.CustomTB is theirs  # exactly as it was
    result = run("activation(jnp.ones(3), True)")
    assert "custom handler" in result.stdout and cards(result) == []


def test_a_handler_installed_after_ours_is_left_alone_on_unload(ip, run, pristine):
    def later(shell, etype, value, tb, tb_offset=None):
        print("later handler")
        return []

    ours_types = ip.custom_exceptions
    ip.set_custom_exc(ours_types + (KeyError,), later)
    theirs = ip.CustomTB
    ip.run_line_magic("unload_ext", "jaxmagic")
    assert ip.CustomTB is theirs  # not ours to remove
    assert "later handler" in run("{}['k']").stdout


def test_magic_failures_are_not_diagnosed_twice(run):
    run("def f(x, use_relu):\n    if use_relu:\n        return x\n    return -x").assert_ok()
    result = run("%jaxpr f(jnp.ones(3), True)")
    assert type(result.error).__name__ == "MagicFailure"
    assert cards(result) == ["python-control-flow"]


def test_a_failing_diagnosis_never_hides_the_error(ip, run, trap, monkeypatch):
    from jaxmagic import doctor

    def broken(*args, **kwargs):
        raise RuntimeError("the doctor is out")

    monkeypatch.setattr(doctor, "diagnose", broken)
    result = run(trap)
    assert "TracerBoolConversionError" in result.shown_traceback and cards(result) == []
    assert doctor_magics.hook_installed(ip)  # IPython did not have to unregister it


IPYTHON = pathlib.Path(sys.executable).with_name("ipython")


def test_terminal_ipython_prints_the_diagnosis_then_the_users_frames_and_tb_the_full_one():
    session = (
        "%load_ext jaxmagic\nimport jax, jax.numpy as jnp\n"
        "def first(x, n): return x[:n]\n\n"
        "jax.jit(first)(jnp.ones(3), 2)\nprint('--- tb ---')\n%tb\nexit\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env.update(JAX_PLATFORMS="cpu", TERM="dumb")
    done = subprocess.run(
        [str(IPYTHON), "--simple-prompt"], input=session, capture_output=True, text=True, timeout=120, env=env
    )
    out = strip_ansi(done.stdout + done.stderr)
    doctor_at, traceback_at, tb_at = out.find("jaxmagic doctor · error"), out.find("IndexError"), out.find("--- tb ---")
    assert 0 <= doctor_at < traceback_at < tb_at, out
    assert "[traced-shape]" in out and 'static_argnames=("n",)' in out
    trimmed, full = out[traceback_at:tb_at], out[tb_at:]
    assert "return x[:n]" in trimmed and "jax/_src" not in trimmed and "%tb prints the full traceback" in trimmed
    assert "return x[:n]" in full and "jax/_src" in full


def test_in_a_jupyter_kernel_the_card_comes_before_the_error_output(tmp_path):
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(source)
        for source in (
            "%load_ext jaxmagic\nimport jax, jax.numpy as jnp",
            TRAP.strip(),
            "activation(jnp.ones(3), True)",
            "1 / 0",
        )
    ]
    client = NotebookClient(
        notebook, timeout=120, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    trap_outputs = notebook.cells[2].outputs
    kinds = [o.output_type for o in trap_outputs]
    assert kinds == ["display_data", "error"], kinds  # the card, then the traceback as a real error
    card, error = trap_outputs
    assert 'data-pitfall="python-control-flow"' in card.data["text/html"]
    assert "<details" in card.data["text/html"] and "jax/_src/core.py" in card.data["text/html"]
    assert error.ename == "TracerBoolConversionError"
    shown = strip_ansi("\n".join(error.traceback))
    assert "if use_relu:" in shown and "jax/_src" not in shown and "folded under the card above" in shown
    assert [o.output_type for o in notebook.cells[3].outputs] == ["error"]
    assert "jax/_src" not in "\n".join(notebook.cells[3].outputs[0].traceback)

    from nbconvert import HTMLExporter

    exported, _ = HTMLExporter().from_notebook_node(notebook)  # an export shows the card first too
    card_at = exported.find('data-pitfall="python-control-flow"')
    assert 0 <= card_at < exported.find("folded under the card above")  # that line is the error output's


NOISY = "@jax.jit\ndef noisy(x):\n    print('x is', x)\n    return x * 2"


def test_a_jitted_print_in_an_ordinary_cell_is_explained_after_it_once(ip, run):
    from jaxmagic.doctor import trace_watch

    run(NOISY).assert_ok()
    first = run("noisy(jnp.ones(2))").assert_ok()
    assert "x is JitTracer" in first.stdout  # what the user saw: a tracer, once
    assert cards(first) == ["print-side-effect"]
    assert "jax.debug.print" in first.html
    again = run("noisy(jnp.ones(2))").assert_ok()
    assert "x is" not in again.stdout and cards(again) == []  # no trace, no print, no second warning
    assert cards(run("noisy(jnp.ones(3))").assert_ok()) == []  # traced again: said once is enough

    watch = trace_watch.TraceWatch()  # the warning's fix, run: the real values, on every call
    watch.traced(ip.user_ns["noisy"], (ip.user_ns["jnp"].ones(2),))
    (found,) = watch.warnings(lambda filename: None)
    assert found.pitfall == "print-side-effect"
    run(found.fix).assert_ok()
    fixed = run("result = noisy(jnp.ones(2))\njax.effects_barrier()").assert_ok()
    assert "x is [1. 1.]" in fixed.stdout and cards(fixed) == []
    assert (ip.user_ns["result"] == 2).all()


def test_three_jitted_prints_in_one_cell_get_one_explanation_and_a_fix_each(ip, run):
    """The cards of one pitfall after one cell: the first explains it and offers the other fix; the
    others name the first instead, and each keeps its own line, its own fix and that fix's check."""
    for name in ("f", "g", "h"):
        run(f"@jax.jit\ndef {name}(x):\n    print('{name} got', x)\n    return x + 1").assert_ok()
    shown = run("f(jnp.ones(2)); g(jnp.ones(2)); h(jnp.ones(2))").assert_ok()
    assert cards(shown) == ["print-side-effect"] * 3
    shown_cards = [o for o in shown.outputs if "data-pitfall" in o.get("text/html", "")]
    text = "\n".join(o["text/plain"] for o in shown_cards)
    explanation = "is plain Python: it runs while JAX traces"
    assert text.count(explanation) == 1 and text.count("Or print outside") == 1, text
    assert text.count("The same trap as in `f` (In [") == 2, text
    for name in ("f", "g", "h"):  # each card's own fix, run: the real values, on every call
        assert f'jax.debug.print("{name} got {{}}", x)' in text
    htmls = [o["text/html"] for o in shown_cards]
    assert [explanation in page for page in htmls] == [True, False, False]
    assert all("the card above says why" in page for page in htmls[1:])
    fixes = re.findall(r"    @jax\.jit\n    def \w\(x\):\n(?:      .*\n)+", text)
    assert len(fixes) == 3, text
    for fix in fixes:
        run(textwrap.dedent(fix)).assert_ok()
    fixed = run("results = [f(jnp.ones(2)), g(jnp.ones(2)), h(jnp.ones(2))]\njax.effects_barrier()").assert_ok()
    assert [fixed.stdout.count(f"{name} got [1. 1.]") for name in "fgh"] == [1, 1, 1], fixed.stdout
    assert all((r == 2).all() for r in ip.user_ns["results"]) and cards(fixed) == []


COUNTER = """
from functools import partial
class Counter:
    def __init__(self):
        self.n = 0
    @partial(jax.jit, static_argnums=0)
    def step(self, x):
        self.n += 1
        return x + self.n
counter = Counter()
"""


def test_a_jitted_method_that_changes_its_object_in_an_ordinary_cell_is_explained_after_it(ip, run):
    """It prints 1 1 1: the object changed once, while JAX traced."""
    run(COUNTER).assert_ok()
    ran = run("print(*(int(counter.step(0)) for _ in range(3)))").assert_ok()
    assert "1 1 1" in ran.stdout
    assert "state-mutation" in cards(ran)


STATIC_SELF = """
from functools import partial
class Scaler:
    def __init__(self, mul):
        self.mul = mul
    @partial(jax.jit, static_argnums=0)
    def calc(self, y):
        if self.mul:
            return y * 2
        return y
scaler = Scaler(True)
"""


def test_a_static_self_changed_between_calls_in_a_cell_is_explained_after_it(ip, run):
    run(STATIC_SELF).assert_ok()
    ran = run("first = scaler.calc(3)\nscaler.mul = False\nsecond = scaler.calc(3)").assert_ok()
    assert int(ip.user_ns["second"]) == 6  # the old compiled code ran: 6, where 3 is meant
    assert cards(ran) == ["static-self"]


GLOBAL_KEY = """
key = jax.random.key(0)
@jax.jit
def noisy(x):
    global key
    key, sub = jax.random.split(key)
    return x + jax.random.normal(sub, x.shape)
"""


def test_a_global_key_split_inside_jit_draws_the_same_numbers_and_is_explained_after_the_cell(ip, run):
    run(GLOBAL_KEY).assert_ok()
    ran = run("a = noisy(jnp.zeros(2))\nb = noisy(jnp.zeros(2))").assert_ok()
    assert (ip.user_ns["a"] == ip.user_ns["b"]).all()  # the trap: the same numbers on every call
    assert cards(ran) == ["global-key"]
    found = doctor.observe_trace(ip.user_ns["noisy"].__wrapped__)[0]
    assert found.pitfall == "global-key" and "def noisy(x, key):" in found.fix
    run(
        found.fix + "\nkey = jax.random.key(0)\na, key = noisy(jnp.zeros(2), key)\nb, key = noisy(jnp.zeros(2), key)"
    ).assert_ok()
    assert not (ip.user_ns["a"] == ip.user_ns["b"]).all()  # fixed: new numbers on every call


def test_a_print_under_eqx_filter_jit_is_explained_after_the_cell_with_its_own_jit(ip, run):
    """Equinox traces a wrapper of its own: the user's function and arguments are found behind it."""
    run("import equinox as eqx\n@eqx.filter_jit\ndef shout(x):\n    print('x is', x)\n    return x * 2").assert_ok()
    first = run("shout(jnp.ones(2))").assert_ok()
    assert "x is JitTracer" in first.stdout and cards(first) == ["print-side-effect"]
    from jaxmagic.doctor import trace_watch

    watch = trace_watch.TraceWatch()
    watch.traced(ip.user_ns["shout"].__wrapped__, (ip.user_ns["jnp"].ones(2),))
    (found,) = watch.warnings(lambda filename: None)
    assert found.checked and found.fix.splitlines()[0] == "@eqx.filter_jit" and "jax.debug.print" in found.fix
    run(found.fix).assert_ok()
    fixed = run("result = shout(jnp.ones(2))\njax.effects_barrier()").assert_ok()
    assert "x is [1. 1.]" in fixed.stdout and cards(fixed) == []


def test_a_print_in_an_equinox_module_jitted_as_it_is_is_explained_and_its_fix_checked_on_the_module(run):
    """``eqx.filter_jit(model)``: the module is the first argument of the ``__call__`` JAX traces."""
    run(
        "import equinox as eqx\nclass Scaled(eqx.Module):\n    w: jax.Array\n"
        "    def __call__(self, x):\n        print('w is', self.w)\n        return self.w * x\n"
        "fast = eqx.filter_jit(Scaled(jnp.arange(3.0)))"
    ).assert_ok()
    first = run("fast(jnp.ones(3))").assert_ok()
    assert cards(first) == ["print-side-effect"]
    assert "Checked on your arguments: jitted, the fix gives the same values" in first.html
    (card,) = [o["text/plain"] for o in first.outputs if "data-pitfall" in o.get("text/html", "")]
    assert "result = fast(...)" in card  # printed outside, on what the name the user calls returns


def test_a_print_in_a_recompiles_cell_is_explained_after_it(run):
    """``%%recompiles`` runs the cell as it is: what traced there is explained as in an ordinary cell."""
    run(NOISY).assert_ok()
    watched = run("%%recompiles\nnoisy(jnp.ones(2))\nnoisy(jnp.ones(3))").assert_ok()
    assert "x is JitTracer" in watched.stdout and cards(watched) == ["print-side-effect"]


MAX_TRACES_ABOVE = """
import chex
from flax import nnx
import equinox as eqx
@chex.assert_max_traces(n=1)
@{jit}
def doubled(x):
    return 2 * x
"""


@pytest.mark.parametrize("jit", ["eqx.filter_jit", "nnx.jit"])
def test_chex_above_a_library_jit_never_fires_and_its_card_puts_it_under(ip, run, jit):
    from jaxmagic.doctor import trace_watch

    run(MAX_TRACES_ABOVE.format(jit=jit)).assert_ok()
    try:
        ran = run("doubled(jnp.ones(3))\ndoubled(jnp.ones(4))").assert_ok()  # the trap: traced twice, silent
        assert cards(ran) == ["max-traces-outside"]
        watch = trace_watch.TraceWatch()
        watch.traced(ip.user_ns["doubled"].__wrapped__.__wrapped__, (ip.user_ns["jnp"].ones(3),))
        (found,) = watch.warnings(lambda filename: None)
        assert found.pitfall == "max-traces-outside" and found.checked
        assert found.fix.splitlines()[:2] == [f"@{jit}", "@chex.assert_max_traces(n=1)"]
        watched = run("%%recompiles\ndoubled(jnp.ones(5))").assert_ok()  # the cell runs as it is: said once
        assert cards(watched) == [] and "doubled" in watched.html
        run(found.fix).assert_ok()
        assert cards(run("doubled(jnp.ones(3))").assert_ok()) == []
        refused = run("doubled(jnp.ones(4))")
        assert isinstance(refused.error, AssertionError) and "traced > 1 times" in str(refused.error)  # fixed
    finally:
        ip.user_ns["chex"].clear_trace_counter()


def test_a_jitted_print_is_not_explained_when_the_doctor_is_off_or_a_magic_traced(run):
    run(NOISY).assert_ok()
    run("%jaxmagic doctor off").assert_ok()
    try:
        assert cards(run("noisy(jnp.ones(2))").assert_ok()) == []
    finally:
        run("%jaxmagic doctor on").assert_ok()
    assert cards(run("noisy(jnp.ones(2))").assert_ok()) == []  # the trace happened while off: forgotten
    run(NOISY).assert_ok()
    shown = run("%jaxpr noisy(jnp.ones(2))").assert_ok()
    assert cards(shown) == ["print-side-effect"]  # %jaxpr's own warning, not a second one after it


def test_a_moved_name_in_an_ordinary_cell_gets_its_card_first(run):
    result = run("leaves = jax.tree_leaves({'a': jnp.ones(2)})")
    assert isinstance(result.error, AttributeError) and cards(result) == ["moved-name"]
    assert "jax.tree.leaves" in result.html
    result = run("from jax import tree_map")
    assert isinstance(result.error, ImportError) and cards(result) == ["moved-name"]


def test_in_a_jupyter_kernel_the_trap_still_stops_run_all(tmp_path):
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(source)
        for source in (
            "%load_ext jaxmagic\nimport jax, jax.numpy as jnp",
            "jax.jit(lambda x, n: x[:n])(jnp.ones(3), 2)",
            "print('ran after the error')",
        )
    ]
    client = NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    with pytest.raises(CellExecutionError) as stopped:
        client.execute()
    assert stopped.value.ename == "IndexError"
    assert [o.output_type for o in notebook.cells[1].outputs] == ["display_data", "error"]
    assert notebook.cells[2].outputs == [] and notebook.cells[2].execution_count is None
