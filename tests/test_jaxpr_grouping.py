"""%jaxpr groups equations under the source line that made them: the line's text as its own row
with how many equations the run holds, readable without scrolling sideways; a new row where the
line, the phase (forward / backward under grad) or the named scope changes; long parameters cut
in the notebook view only, whole on hover and in the report."""

import re

import jax
import jax.numpy as jnp


def test_each_source_line_heads_its_equations_with_the_count_jax_made(run):
    run(
        "def unrolled(x):\n    for i in range(40):\n        x = jnp.sin(x) * 1.5\n    return x\nx = jnp.ones(3)"
    ).assert_ok()
    shown = run("%jaxpr --plain unrolled(x)").assert_ok()

    def same_program(x):
        for _ in range(40):
            x = jnp.sin(x) * 1.5
        return x

    truth = len(jax.make_jaxpr(same_program)(jnp.ones(3)).jaxpr.eqns)
    lines = shown.stdout.splitlines()
    rows = [i for i, line in enumerate(lines) if "line 3: x = jnp.sin(x) * 1.5" in line]
    assert len(rows) == 1  # one row for the line, its equations beneath
    assert lines[rows[0]].endswith(f"· {truth} equations") and truth == 80
    assert lines[rows[0]].index("#") < 100
    assert lines[rows[0] + 1].strip() == "b:f32[3] = sin a"
    equations = [line for line in lines if " = " in line and not line.strip().startswith("#")]
    assert equations and not any("#" in line for line in equations)  # no comment trails an equation


def test_under_grad_the_same_line_heads_its_forward_and_its_backward_run(run):
    run(
        "def loss(w, x):\n    h = jnp.tanh(x @ w)\n    return jnp.sum(h ** 2)\n"
        "w = jnp.ones((4, 3))\nx = jnp.ones((5, 4))"
    ).assert_ok()
    shown = run("%jaxpr --plain -t grad loss(w, x)").assert_ok()
    headings = [line.strip() for line in shown.stdout.splitlines() if line.strip().startswith("# In [")]
    phases = [
        (re.search(r"line (\d+)", h).group(1), re.search(r"\[(forward|backward)\]", h).group(1)) for h in headings
    ]
    assert phases == [("2", "forward"), ("3", "forward"), ("3", "backward"), ("2", "backward")]
    counts = [int(re.search(r"· (\d+) equations?$", h).group(1)) for h in headings]
    grad = jax.grad(lambda w, x: jnp.sum(jnp.tanh(x @ w) ** 2))
    truth = len(jax.make_jaxpr(grad)(jnp.ones((4, 3)), jnp.ones((5, 4))).jaxpr.eqns)
    assert sum(counts) == truth


def test_html_puts_the_source_text_on_its_own_row_and_cuts_long_lines_to_the_width(run):
    run("def mlp(w, x):\n    return jnp.tanh(x @ w)\nw = jnp.ones((4, 3))\nx = jnp.ones((5, 4))").assert_ok()
    shown = run("%jaxpr mlp(w, x)").assert_ok()
    row = re.search(
        r'<div class="jm-l jm-srcrow"[^>]*><span class="jm-src" title="[^"]*">(.*?)</span>'
        r'<span class="jm-plain">  · </span><span class="jm-muted">(.*?)</span></div>'
        r'(<div class="jm-l jm-eqn" data-primitive="([a-z_]+)")',
        shown.html,
    )
    assert row and re.fullmatch(r"# In \[\d+\] line 2: return jnp.tanh\(x @ w\)", row.group(1))
    assert row.group(2) == "2 equations" and row.group(4) == "dot_general"
    dot = re.search(r'data-primitive="dot_general"[^>]* title="([^"]*)"', shown.html)
    assert dot and "preferred_element_type=float32]" in dot.group(1)  # whole on hover
    code = re.search(r'data-primitive="dot_general"[^>]*>(.*?)</div>', shown.html).group(1)
    shown_code = re.sub(r"<[^>]+>", "", code)
    # whole in the markup: the stylesheet cuts it to the output's width, not a count of characters
    assert shown_code.endswith("preferred_element_type=float32] b a") and "…" not in shown_code
    assert re.search(r"\.jm-l \.jm-code\{[^}]*overflow:hidden;text-overflow:ellipsis", shown.html)
    report = run("r = %jaxpr -o mlp(w, x)\nr").assert_ok().result
    assert "preferred_element_type=float32" in report.text  # whole in the report
