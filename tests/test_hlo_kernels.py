"""``%jaxpr --stage hlo`` shows what XLA fused: the optimized module's kernels in the order XLA runs
them, each with the user's source lines fused into it; the whole module stays a click away."""

import pytest

from jaxmagic.compiled import hlo_kernels, hlo_sources

SETUP = """def f(x):
    y = jnp.sin(x) * 2
    z = jnp.cos(y) + 1
    return (z @ x.T).sum()

x = jnp.ones((64, 64))
"""


@pytest.fixture
def f_defined(run):
    run(SETUP).assert_ok()


def test_elementwise_lines_fused_into_one_kernel_are_named_together(run, f_defined):
    shown = run("%jaxpr -o --stage hlo f(x)").assert_ok()
    report = shown.result
    groups = hlo_kernels.kernel_groups(report.hlo, report.cell_namer)
    instructions = hlo_sources.parse(report.hlo)
    assert groups and {g.name for g in groups} <= set(instructions), "kernels are the module's own instructions"
    cell = next(line for g in groups for line in g.lines).split(" line ")[0]
    fused = [g for g in groups if {f"{cell} line 2", f"{cell} line 3"} <= set(g.lines)]
    assert fused and fused[0].opcode == "fusion", [(g.name, g.lines) for g in groups]
    assert f"← {cell} line 2, {cell} line 3" in shown.text
    assert 'class="jm-kernels"' in shown.html and "XLA fused" in shown.html
    assert "the whole module" in shown.html and "HloModule" in shown.html


def test_a_loop_s_kernels_are_listed_inside_it(run):
    run(
        "def g(w, xs):\n    def step(h, v):\n        h = jnp.tanh(h @ w + v)\n        return h, h\n"
        "    return jax.lax.scan(step, jnp.zeros(8), xs)[1]\n"
    ).assert_ok()
    report = run("%jaxpr -o --stage hlo g(jnp.ones((8, 8)), jnp.ones((300, 8)))").assert_ok().result

    def every(groups):
        for g in groups:
            yield g
            yield from every(g.inner)

    loops = [g for g in every(hlo_kernels.kernel_groups(report.hlo, report.cell_namer)) if g.opcode == "while"]
    assert loops and loops[0].inner, "the scan's body kernels are inside the loop"
    assert any(line.endswith(" line 3") for inner in loops[0].inner for line in inner.lines)


def test_each_kernel_shows_the_source_text_of_its_lines(run, f_defined):
    shown = run("%jaxpr -o --stage hlo f(x)").assert_ok()
    report = shown.result
    groups = hlo_kernels.kernel_groups(report.hlo, report.cell_namer)
    fused = next(g for g in groups if len(g.lines) >= 2)
    assert fused.sources[:2] == ("y = jnp.sin(x) * 2", "z = jnp.cos(y) + 1")
    assert '<code class="jm-kernel-source">y = jnp.sin(x) * 2; z = jnp.cos(y) + 1</code>' in shown.html
    assert "y = jnp.sin(x) * 2; z = jnp.cos(y) + 1" in shown.text
