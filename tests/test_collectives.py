"""Communication on one device: ``%jaxpr --collectives`` says there is none, budgets pass, bad budgets
say what is expected; the reading of XLA's replica groups and the capped rows, on XLA's own
spellings. The sharded programs themselves run on 8 simulated devices in
``test_collectives_devices.py``."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import pytest

import jaxmagic
from jaxmagic import _jax_private
from jaxmagic.compiled.collectives import Collective, MeshAxes, Placement, _groups, find_collectives
from jaxmagic.render import collectives as view


def test_jaxpr_collectives_on_one_device_says_there_is_no_communication(run):
    run("def scale(x):\n    return jnp.tanh(x) * 2\n")
    shown = run("%jaxpr --collectives --plain scale(jnp.ones(4))")
    assert shown.error is None, shown.error
    lines = shown.stdout.splitlines()
    assert lines[1].startswith("No communication: the optimized program has no collective")
    report = run("%jaxpr --collectives -o --plain scale(jnp.ones(4))").result
    assert report.collectives == []
    assert jaxmagic.JaxprView.default(report).show_collectives  # shown on its own, it shows them too
    assert "No communication" in report.to_html()


def test_without_the_option_nothing_about_communication_is_shown(run):
    run("def scale(x):\n    return x * 2\n")
    shown = run("%jaxpr --plain scale(jnp.ones(4))")
    assert "communication" not in shown.stdout


def test_the_option_is_in_the_help(run):
    shown = run("%jaxpr?")
    assert "--collectives" in str(shown.outputs) + shown.stdout


def test_a_program_without_communication_passes_any_budget():
    double = jax.jit(lambda x: x * 2)
    with jaxmagic.expect_collectives(double) as log:
        double(jnp.ones(5))
    assert log.collectives == [] and list(log.counts.values()) == [1]
    assert next(iter(log.counts)).startswith("<lambda> (line ")  # a lambda is named by its line


@pytest.mark.parametrize(
    "options, words",
    [
        ({"forbid": ["all-gathers"]}, ["unknown kind of collective 'all-gathers'", "all-gather, reduce-scatter"]),
        ({"max": {"all-gather": -1}}, ["non-negative whole number", "-1"]),
        ({"max": 1}, ["max takes a dict of kind -> count", "total=N"]),
        ({"total": 1.5}, ["total takes a non-negative whole number"]),
    ],
)
def test_a_bad_budget_says_what_is_expected(options, words):
    with pytest.raises((ValueError, TypeError)) as raised:
        jaxmagic.expect_collectives(jax.jit(jnp.sin), **options)
    for word in words:
        assert word in str(raised.value)


def test_kinds_are_taken_with_underscores_too():
    budget = jaxmagic.expect_collectives("step", max={"all_gather": 2}, forbid="all_to_all")
    assert budget.limits.maxima == {"all-gather": 2} and budget.limits.forbid == ("all-to-all",)
    assert repr(budget) == "expect_collectives('step', max={'all-gather': 2}, forbid=('all-to-all',))"


def test_the_compiled_program_text_is_read_at_the_compile_event():
    """The hub hands budgets the program JAX just compiled: the same text as ``Compiled.as_text()``."""
    from jaxmagic.recompiles.collective_budget import ProgramLog

    texts = []

    class Keeping(ProgramLog):
        def record_program(self, event, hlo_text, shardings=(), jaxpr=None, asked=None):
            texts.append((event.function, hlo_text, list(shardings), jaxpr))

    def cube(v):
        return v**3

    log = Keeping().start()
    try:
        jax.jit(cube)(jnp.ones(3))
    finally:
        log.stop()
    assert [name for name, _, _, _ in texts] == ["cube"]
    expected = jax.jit(cube).trace(jnp.ones(3)).lower().compile().as_text()

    def program(text: str) -> str:
        """The entry computation's instructions, less the backend's own configuration of each (a TPU
        writes its fusions' tiling and cost estimates there, in another order at the compile event)."""
        return "\n".join(re.sub(r", backend_config=.*$", "", line) for line in text.split("ENTRY")[1].splitlines())

    assert program(texts[0][1]) == program(expected)
    assert len(texts[0][2]) == 1 and texts[0][2][0] is not None
    assert _jax_private.jaxpr_argument_names(texts[0][3]) == ["v"]


@pytest.mark.parametrize(
    "spelling, groups",
    [
        ("replica_groups={{0,2,4,6},{1,3,5,7}}", ((0, 2, 4, 6), (1, 3, 5, 7))),
        ("replica_groups=[4,2]<=[8]", ((0, 1), (2, 3), (4, 5), (6, 7))),
        ("replica_groups=[2,4]<=[4,2]T(1,0)", ((0, 2, 4, 6), (1, 3, 5, 7))),
        ("replica_groups=mesh['axis_0'=4,'axis_1'=2] {'axis_0'}", ((0, 2, 4, 6), (1, 3, 5, 7))),
        (
            "replica_groups=mesh['axis_0'=2,'axis_1'=4], device_ids=([4,2]T(1,0)) {'axis_1'}",
            ((0, 2, 4, 6), (1, 3, 5, 7)),
        ),
        ("replica_groups={}", ((0, 1, 2, 3, 4, 5, 6, 7),)),
    ],
)
def test_replica_groups_in_each_of_xlas_spellings(spelling, groups):
    assert _groups(f"all-reduce(%p), channel_id=1, {spelling}, use_global_device_ids=true", 8) == groups
    assert MeshAxes(("data", "model"), (4, 2)).axes_of(groups) == (
        ("data",) if len(groups[0]) == 4 else ("model",) if len(groups[0]) == 2 else ("data", "model")
    )


def test_an_async_collective_counts_once_with_its_result():
    hlo = """HloModule m, num_partitions=4

ENTRY %main (p: f32[8]) -> f32[32] {
  %p = f32[8]{0} parameter(0)
  %ags = (f32[8]{0}, f32[32]{0}) all-gather-start(%p), replica_groups={{0,1,2,3}}, dimensions={0}
  ROOT %agd = f32[32]{0} all-gather-done(%ags)
}
"""
    (found,) = find_collectives(hlo)
    assert found.kind == "all-gather" and found.result == "f32[32]"
    assert found.bytes == 32 * 4 * 3 // 4 and found.group_size == 4


def _collective(n: int) -> Collective:
    placement = Placement("whole", None, ("data",))
    return Collective("all-reduce", f"r{n}", None, "psum", n, 4, ("data",), (), "f32[4]", placement, placement)


def test_rows_are_capped_and_the_report_keeps_them_all():
    many = [_collective(n) for n in range(view.MAX_ROWS + 5)]
    text = view.text(many)
    assert text.splitlines()[0].startswith(f"{view.MAX_ROWS + 5} collectives move")
    assert "… 5 more (the report's .collectives holds them all)" in text
    assert len(re.findall(r"<tr><td[^>]*><code>all-reduce", view.html(many))) == view.MAX_ROWS
