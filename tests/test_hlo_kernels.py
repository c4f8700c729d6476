"""``%jaxpr --stage hlo`` shows what XLA fused: the optimized module's kernels in the order XLA runs
them, each with the user's source lines fused into it; the whole module stays a click away."""

import os

import jax
import pytest

from jaxmagic.compiled import hlo_kernels, hlo_sources
from jaxmagic.words import kernels as words

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
    # (a TPU fuses the product and its sum in too: every line of the kernel, in order)
    assert f'<code class="jm-kernel-source">{"; ".join(fused.sources)}</code>' in shown.html
    assert "y = jnp.sin(x) * 2; z = jnp.cos(y) + 1" in shown.text


TPU = os.path.join(os.path.dirname(__file__), "fixtures", "tpu")


def _tpu_hlo(name: str) -> str:
    with open(os.path.join(TPU, f"{name}.hlo.txt"), encoding="utf-8") as file:
        return file.read()


def test_an_asynchronous_start_and_done_are_one_kernel_that_names_what_it_overlaps():
    hlo = _tpu_hlo("mlp")
    instructions = hlo_sources.parse(hlo)
    groups = hlo_kernels.kernel_groups(hlo)
    names = [g.name for g in groups]
    starts = [n for n, i in instructions.items() if i.opcode.endswith("-start") and i.computation.startswith("main")]
    dones = [n for n, i in instructions.items() if i.opcode.endswith("-done") and i.computation.startswith("main")]
    assert starts and set(starts) <= set(names) and not set(dones) & set(names), names
    order = [
        line.split(" = ")[0].strip().removeprefix("ROOT ").lstrip("%") for line in hlo.split("ENTRY", 1)[1].splitlines()
    ]
    for group in (g for g in groups if g.is_async):
        assert instructions[group.done].opcode.endswith("-done") and group.name in instructions[group.done].operands
        between = order[order.index(group.name) + 1 : order.index(group.done)]
        assert set(group.overlaps) <= set(between)
        assert all(
            instructions[o].opcode == "fusion" or instructions[o].opcode == "custom-call" for o in group.overlaps
        )
    assert any(g.overlaps for g in groups if g.is_async), "the prefetches overlap the matrix products"
    text = words.overlap_note(groups[1].name, groups[1].done, groups[1].overlaps)
    assert "waited for at" in text and groups[1].done in text


def test_a_pallas_kernel_is_named_and_a_backend_helper_by_its_target():
    (pallas,) = [g for g in hlo_kernels.kernel_groups(_tpu_hlo("pallas_add")) if g.opcode == "custom-call"]
    assert pallas.custom_call is not None and pallas.custom_call.name == "add_kernel"
    assert "add_kernel" in words.kind_words(pallas.opcode, pallas.kind, pallas.custom_call, False)
    (helper,) = [g for g in hlo_kernels.kernel_groups(_tpu_hlo("mlp")) if g.opcode == "custom-call"]
    assert helper.custom_call is not None and helper.custom_call.target == "ConcatBitcast"
    assert "ConcatBitcast" in words.kind_words(helper.opcode, helper.kind, helper.custom_call, False)


def test_a_library_call_is_named_by_its_target(run):
    run("def solve(a, b):\n    return jnp.linalg.solve(a, b)\n").assert_ok()
    shown = run("%jaxpr -o --stage hlo solve(jnp.eye(4) * 2, jnp.ones(4))").assert_ok()
    calls = [g for g in hlo_kernels.kernel_groups(shown.result.hlo) if g.opcode == "custom-call"]
    assert calls, "LU factorisation runs in a library routine (LAPACK on the CPU, the TPU backend's own)"
    assert all(g.custom_call is not None and g.custom_call.target for g in calls)
    if jax.default_backend() == "cpu":
        assert all(g.custom_call is not None and g.custom_call.library == "LAPACK" for g in calls)
        assert "LAPACK call" in shown.text
    else:  # a TPU's routines (``LuDecompositionBlock``) are its backend's own: named by their target
        assert all(f"the backend's `{g.custom_call.target}`" in shown.text for g in calls if g.custom_call)
