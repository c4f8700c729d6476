"""%jaxpr / %%jaxpr in a real IPython shell with real JAX: every option and every kind of callee."""

import os
import re

import jax
import pytest
from conftest import assert_no_internals

from jaxmagic.tracing.stages import JaxprReport


def eqn_primitives(html: str) -> list[str]:
    return re.findall(r'class="jm-l jm-eqn" data-primitive="([^"]+)"', html)


@pytest.fixture
def f_defined(run):
    run("x = jnp.ones(3)\ndef f(x, n):\n    y = jnp.sin(x) * n\n    return jnp.sum(y)").assert_ok()


def test_line_form_shows_each_equation_with_its_source_line(run, f_defined):
    shown = run("%jaxpr f(x, 3)").assert_ok()
    assert eqn_primitives(shown.html) == ["sin", "convert_element_type", "mul", "reduce_sum"]
    assert re.search(r"In \[\d+\] line 3: y = jnp.sin\(x\) \* n", shown.html)
    assert re.search(r"In \[\d+\] line 4: return jnp.sum\(y\)", shown.html)
    assert "4 equations" in shown.html and "(f32[3], i32[]) → (f32[])" in shown.html
    assert_no_internals(shown)


def test_html_is_highlighted_and_self_contained(run, f_defined):
    html = run("%jaxpr f(x, 3)").assert_ok().html
    assert "<style>" in html and "<script" not in html
    assert 'class="jm-tnf">sin<' in html  # the primitive, as a highlighted function name
    assert 'class="jm-tkt">f32[3]<' in html  # a type
    assert (
        "var(--jm-function)" in html and 'body[data-jp-theme-light="false"] .jaxmagic{' in html
    )  # light and dark palettes


def test_text_form_has_summary_and_indented_listing(run, f_defined):
    shown = run("%jaxpr --plain f(x, 3)").assert_ok()
    assert shown.outputs == []  # --plain prints text, displays nothing rich
    lines = shown.stdout.splitlines()
    assert lines[0].startswith("f: 4 equations")
    heading = next(i for i, line in enumerate(lines) if re.match(r"\s+# In \[\d+\] line 3: y = jnp.sin", line))
    assert re.match(r"\s+c:f32\[3\] = sin a$", lines[heading + 1])  # the line's equations beneath it


def test_no_source_hides_the_annotations(run, f_defined):
    shown = run("%jaxpr --no-source f(x, 3)").assert_ok()
    assert 'class="jm-src' not in shown.html and "line 3" not in shown.html
    assert eqn_primitives(shown.html)


def test_static_by_name_and_by_position_removes_the_argument_from_the_inputs(run, f_defined):
    for option in ("-s n", "-s 1", "--static n"):
        report = run(f"%jaxpr -o {option} f(x, 3)").assert_ok().result
        assert report.in_types == ["f32[3]"], option
        assert "convert_element_type" not in report.primitive_counts  # n was baked in as 3


def test_jitted_callee_keeps_its_own_static_argnums(run):
    run(
        "@jax.jit(static_argnums=(1,))\n"
        "def good_example(x, n):\n"
        "    result = 0.0\n"
        "    for i in range(n):\n"
        "        result += x[i]\n"
        "    return result\n"
        "x = jnp.array([1.0, 2.0, 3.0, 4.0])"
    ).assert_ok()
    report = run("%jaxpr -o good_example(x, 4)").assert_ok().result
    assert report.in_types == ["f32[4]"]
    assert report.primitive_counts["add"] == 4  # the loop unrolled n=4 times


@pytest.mark.parametrize(
    "setup, call, name",
    [
        ("", "(lambda a: a * 2)(x)", "<lambda>"),
        ("import functools\ng = functools.partial(lambda a, k: a * k, k=2.0)", "g(x)", "partial(<lambda>)"),
        ("class Model:\n    def apply(self, a):\n        return jnp.tanh(a)\nm = Model()", "m.apply(x)", "Model.apply"),
        ("class Scale:\n    def __call__(self, a):\n        return a * 3\ns = Scale()", "s(x)", "Scale"),
        ("h = jax.jit(lambda a: jnp.cos(a))", "h(x)", "<lambda>"),
        ("", "jnp.sin(x)", "sin"),
    ],
)
def test_every_kind_of_callee(run, setup, call, name):
    run("x = jnp.ones(3)\n" + setup).assert_ok()
    report = run(f"%jaxpr -o {call}").assert_ok().result
    assert isinstance(report, JaxprReport)
    assert report.name == name
    assert report.n_eqns >= 1


def test_lambda_in_the_magic_line_points_at_that_line(run):
    run("x = jnp.ones(3)").assert_ok()
    shown = run("y = 1\n%jaxpr (lambda a: a * 2)(x)").assert_ok()
    assert re.search(r"In \[\d+\] line 2: %jaxpr \(lambda a: a \* 2\)\(x\)", shown.html)


def test_cell_form_runs_the_cell_but_traces_the_last_call_instead_of_running_it(run):
    run("calls = []").assert_ok()
    shown = run(
        "%%jaxpr\ndef g(a):\n    calls.append('ran')\n    b = a * 2\n    return jnp.cos(b)\nz = jnp.ones(2)\ng(z)"
    ).assert_ok()
    assert eqn_primitives(shown.html) == ["mul", "cos"]
    assert re.search(r"In \[\d+\] line 5: return jnp.cos\(b\)", shown.html)
    check = run("(callable(g), z.shape, calls)").assert_ok()
    assert check.result == (True, (2,), ["ran"])  # defined; traced once, never run eagerly


def test_cell_form_with_the_call_on_the_magic_line_runs_every_statement(run):
    run("log = []").assert_ok()
    run("%%jaxpr -o k(w)\ndef k(a):\n    return a + 1\nw = jnp.zeros(2)\nlog.append('last statement ran')").assert_ok()
    assert run("log").result == ["last statement ran"]


def test_nested_jaxprs_are_collapsible_in_html_and_indented_in_text(run):
    run(
        "@jax.jit\n"
        "def inner(a):\n"
        "    return a * 2\n"
        "def nested(x, n):\n"
        "    y = inner(x)\n"
        "    z = jax.lax.cond(n > 0, lambda a: a + 1, lambda a: a - 1, y)\n"
        "    c, ys = jax.lax.scan(lambda c, a: (c + a, c * a), 0.0, z)\n"
        "    w = jax.lax.while_loop(lambda v: v < 10, lambda v: v + 1, c)\n"
        "    return jax.nn.relu(ys).sum() + w\n"
        "x = jnp.ones(3)"
    ).assert_ok()
    shown = run("%jaxpr nested(x, 1)").assert_ok()
    titles = re.findall(r'<details class="jm-nested"><summary[^>]*><b>([^<]+)</b>', shown.html)
    for title in ("jaxpr", "branches[0]", "branches[1]", "body_jaxpr", "cond_jaxpr", "call_jaxpr"):
        assert title in titles, titles
    assert shown.html.count("<details") == shown.html.count("</details>")
    text = run("%jaxpr --plain nested(x, 1)").assert_ok().stdout
    assert re.search(r"^ {8}▸ branches\[0\] \(runs when false\): \{ lambda", text, re.M)
    assert re.search(r"^ {12}\w+:f32\[3\] = (sub|add) ", text, re.M)  # nested equations indented deeper


def test_primitive_counts_include_nested_jaxprs(run):
    run("x = jnp.ones(3)\ndef c(x):\n    return jax.lax.cond(x.sum() > 0, jnp.sin, jnp.cos, x)").assert_ok()
    report = run("%jaxpr -o c(x)").assert_ok().result
    assert report.primitive_counts["sin"] == 1 and report.primitive_counts["cos"] == 1
    assert report.n_eqns == sum(report.primitive_counts.values())


def test_report_attributes(run, f_defined):
    report = run("%jaxpr -o f(x, 3)").assert_ok().result
    assert isinstance(report.jaxpr, jax.extend.core.ClosedJaxpr)
    assert "sin" in report.text and "\x1b[" not in report.text
    assert report.n_eqns == 4
    assert report.source_lines[0].line == 3 and report.source_lines[0].text == "y = jnp.sin(x) * n"
    assert report.source_lines[3].text == "return jnp.sum(y)"
    assert "stablehlo.sine" in report.stablehlo
    assert "HloModule" in report.hlo
    assert report.cost["flops"] > 0
    if jax.default_backend() == "cpu":  # a TPU pads each argument to its tiles
        assert report.memory["arguments"] == 3 * 4 + 4  # f32[3] and an int32
    assert report.memory["arguments"] == report.compiled.memory_analysis().argument_size_in_bytes


def test_output_returns_the_report_and_echoes_it_once_as_one_line(run, ip, f_defined):
    shown = run("%jaxpr -o f(x, 3)").assert_ok()
    assert len(shown.outputs) == 1 and "text/html" in shown.outputs[0]  # the full view, once
    echo = re.search(r"Out\[(\d+)\]: <JaxprReport f: 4 equations", shown.stdout)  # the echo: one line
    assert echo
    later = run(f"Out[{echo.group(1)}]").assert_ok()
    assert "c:f32[3] = sin a" in later.stdout  # shown again later: the full view


def test_stage_stablehlo_and_hlo(run, f_defined):
    stablehlo = run("%jaxpr --stage stablehlo f(x, 3)").assert_ok()
    assert "stablehlo.sine" in stablehlo.html and 'class="jm-block jm-stablehlo"' in stablehlo.html
    hlo = run("%jaxpr --stage hlo f(x, 3)").assert_ok()
    assert "HloModule" in hlo.html and "fusion" in hlo.html
    assert "FileNames" not in hlo.html and "stack_frame_id" not in hlo.html  # XLA's debug tables hidden
    assert_no_internals(hlo)


def test_cost_table(run, f_defined):
    shown = run("%jaxpr --cost f(x, 3)").assert_ok()
    assert "FLOPs" in shown.html and "memory: arguments" in shown.html
    assert "transcendentals" in shown.html  # sin


@pytest.mark.parametrize(
    "transforms, name, out_types",
    [
        ("-t grad", "grad(loss)", ["f32[3]"]),
        ("-t value_and_grad", "value_and_grad(loss)", ["f32[]", "f32[3]"]),
        ("-t vmap", "vmap(loss)", ["f32[4]"]),
        ("-t vmap -t grad", "vmap(grad(loss))", ["f32[4,3]"]),
    ],
)
def test_transforms_compose_outermost_first(run, transforms, name, out_types):
    run("def loss(w):\n    return jnp.sum(jnp.tanh(w) ** 2)\nw = jnp.ones(3)\nws = jnp.ones((4, 3))").assert_ok()
    arg = "ws" if "vmap" in transforms else "w"
    report = run(f"%jaxpr -o {transforms} loss({arg})").assert_ok().result
    assert report.name == name
    assert report.out_types == out_types


def test_grad_with_a_static_argument_differentiates_the_dynamic_one(run):
    run("def scaled(n, w):\n    return jnp.sum(w * n)\nw = jnp.ones(3)").assert_ok()
    report = run("%jaxpr -o -t grad -s n scaled(2.0, w)").assert_ok().result
    assert report.in_types == ["f32[3]"] and report.out_types == ["f32[3]"]


def test_large_jaxprs_are_shortened_with_a_marker_and_the_report_keeps_everything(run):
    run("def many(x):\n    for _ in range(50):\n        x = jnp.sin(x)\n    return x\nx = jnp.ones(2)").assert_ok()
    shown = run("%jaxpr -o --max-eqns 10 many(x)").assert_ok()
    assert len(eqn_primitives(shown.outputs[0]["text/html"])) == 10
    assert "40 more equations" in shown.outputs[0]["text/html"]
    assert shown.result.n_eqns == 50


def test_user_exception_shows_the_users_traceback_not_jaxmagic(run):
    run("def broken(x):\n    y = x * 2\n    return y + undefined_name\nx = jnp.ones(2)").assert_ok()
    shown = run("%jaxpr broken(x)")
    assert isinstance(shown.error.original, NameError)
    assert "undefined_name" in shown.shown_traceback
    assert "return y + undefined_name" in shown.shown_traceback
    assert_no_internals(shown)


def test_strings_from_the_user_are_escaped_in_html(run):
    run(
        "def tag(x, label):\n    y = x * 2  # </span></div><script>alert(1)</script>\n    return y\nx = jnp.ones(2)"
    ).assert_ok()
    html = run("%jaxpr -s label tag(x, '<img src=x onerror=alert(1)>')").assert_ok().html
    assert "<script>" not in html and "<img" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_after_a_module_is_edited_and_reloaded_the_listing_shows_its_new_source(run, tmp_path, monkeypatch):
    module = tmp_path / "edited_module.py"
    module.write_text("import jax.numpy as jnp\ndef f(x):\n    return jnp.sin(x)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    run("import importlib, edited_module").assert_ok()
    assert "return jnp.sin(x)" in run("%jaxpr --plain edited_module.f(jnp.ones(2))").assert_ok().stdout
    module.write_text("import jax.numpy as jnp\ndef f(x):\n    return jnp.cos(x)\n")  # the same size
    stat = module.stat()
    os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    shown = run("importlib.reload(edited_module)\n%jaxpr --plain edited_module.f(jnp.ones(2))").assert_ok().stdout
    assert "return jnp.cos(x)" in shown and "jnp.sin" not in shown
    run("import sys; sys.modules.pop('edited_module', None)")


def test_a_static_value_whose_repr_raises_is_shown_as_what_it_is(run):
    run(
        "class Unprintable:\n"
        "    def __init__(self, n): self.n = n\n"
        "    def __hash__(self): return hash(self.n)\n"
        "    def __eq__(self, o): return isinstance(o, Unprintable) and o.n == self.n\n"
        "    def __repr__(self): raise RuntimeError('no repr')\n"
        "scaled = lambda x, b: x * b.n\n"
        "jscaled = jax.jit(scaled, static_argnums=1)"
    ).assert_ok()
    for cell in ("%jaxpr -s b scaled(jnp.ones(3), Unprintable(2))", "%jaxpr jscaled(jnp.ones(3), Unprintable(2))"):
        shown = run(cell).assert_ok()
        assert "Traceback" not in shown.stdout + shown.stderr and "no repr" not in shown.text
        assert "Unprintable object; its repr failed" in shown.html, cell
    logged = run("%%recompiles\njscaled(jnp.ones(3), Unprintable(3))\njscaled(jnp.ones(3), Unprintable(4))").assert_ok()
    assert "Traceback" not in logged.stdout + logged.stderr and "static value" in logged.text


def test_debug_after_a_failure_opens_in_the_users_frame(run, ip):
    """``%debug`` starts in the innermost frame of the last exception's traceback."""
    import sys

    run("def broken(x):\n    y = x * 2\n    return y.no_such_attribute").assert_ok()
    failed = run("%jaxpr broken(jnp.ones(2))")
    assert failed.error is not None
    tb = sys.last_value.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    assert tb.tb_frame.f_code.co_name == "broken" and "y" in tb.tb_frame.f_locals


def test_quiet_shows_nothing_and_returns_nothing_without_output(run, f_defined):
    for cell in ("%jaxpr -q f(x, 3)", "%jaxpr --quiet --plain --memory f(x, 3)"):
        quiet = run(cell).assert_ok()
        assert quiet.stdout == "" and quiet.outputs == [] and quiet.result is None, cell


def test_quiet_with_output_returns_the_report_of_the_asked_view_echoed_as_one_line(run, f_defined):
    quiet = run("%jaxpr -q -o --memory f(x, 3)").assert_ok()
    assert quiet.outputs == [] and isinstance(quiet.result, JaxprReport)
    echo = re.search(r"^Out\[(\d+)\]: <JaxprReport f: 4 equations[^\n]*$", quiet.stdout, re.M)
    assert echo and quiet.stdout.count("\n") == 1  # only the one-line echo, as with %jitcompare -q -o
    shown = run("%jaxpr -o --memory f(x, 3)").assert_ok().result
    assert quiet.result.peak_bytes == shown.peak_bytes  # computed as without -q
    later = run(f"Out[{echo.group(1)}]").assert_ok()
    assert "c:f32[3] = sin a" in later.stdout and "peak" in later.stdout  # the view asked for, memory too


def test_quiet_cell_form_runs_the_cell_and_hides_the_doctors_warnings(run):
    shown = run(
        "%%jaxpr -q -o\ndef noisy(a):\n    print('traced')\n    return a + 1\nw = jnp.zeros(2)\nnoisy(w)"
    ).assert_ok()
    assert isinstance(shown.result, JaxprReport) and shown.result.n_eqns == 1
    assert shown.outputs == [] and "print-side-effect" not in shown.stdout
    assert "traced" in shown.stdout  # the user's own print still reaches the screen
    assert run("w.shape").result == (2,)
