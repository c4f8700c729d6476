"""``%jaxpr --collectives`` and ``expect_collectives`` on 8 CPU devices simulated with XLA_FLAGS, in a
subprocess (the flag must be set before JAX starts): a real shell there runs sharded programs
(NamedSharding on a Mesh, ``shard_map`` with psum / all_gather / ppermute / all_to_all /
psum_scatter, ``with_sharding_constraint``) and reports back; every count is checked against the
optimized HLO text itself."""

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow

KINDS_IN_HLO = re.compile(r"\s(all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute)(?:-start)?\(")

SCRIPT = textwrap.dedent(
    r"""
    import json, os
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
    os.environ["JAX_PLATFORMS"] = "cpu"
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "jaxmagic")
    facts = {}

    def cell(source):
        with capture_output() as captured:
            outcome = ip.run_cell(source)
        error = outcome.error_in_exec or outcome.error_before_exec
        return outcome.result, error, captured

    _, error, _ = cell('''
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    mesh = Mesh(np.array(jax.devices()).reshape(4, 2), ("data", "model"))
    x = jax.device_put(jnp.ones((16, 32)), NamedSharding(mesh, P("data", "model")))
    y = jax.device_put(jnp.ones((16, 32)), NamedSharding(mesh, P("model", "data")))
    w = jax.device_put(jnp.ones((32, 64)), NamedSharding(mesh, P("model", None)))
    def add(x, y):
        return x + y
    def project(x, w):
        h = x @ w
        h = jax.lax.with_sharding_constraint(h, NamedSharding(mesh, P(None, "data")))
        return h.sum(0)
    def body(a):
        s = jax.lax.psum(a, "data")
        g = jax.lax.all_gather(a, "model", axis=1, tiled=True)
        p = jax.lax.ppermute(a, "data", [(i, (i + 1) % 4) for i in range(4)])
        t = jax.lax.all_to_all(a, "data", 0, 0, tiled=True)
        r = jax.lax.psum_scatter(a, "model", scatter_dimension=0, tiled=True)
        return s.sum() + g.sum() + p.sum() + t.sum() + r.sum()
    explicit = jax.shard_map(body, mesh=mesh, in_specs=P("data", "model"), out_specs=P(), check_vma=False)
    def looped(a):
        def step(i, v):
            return jax.lax.ppermute(v, "data", [(j, (j + 1) % 4) for j in range(4)]) * 0.5
        return jax.lax.fori_loop(0, 3, step, a)
    in_loop = jax.shard_map(looped, mesh=mesh, in_specs=P("data", "model"), out_specs=P("data", "model"))
    def local(x):
        return jnp.tanh(x) * 2
    def mix_rows(x):
        return x - x.mean(0)
    big = jnp.ones((256, 64))
    import functools
    @functools.partial(jax.jit, out_shardings=NamedSharding(mesh, P(None, "data")))
    def transposed(x):
        return x * 2
    def double(v):
        return v * 2
    replicated = jax.jit(double, out_shardings=NamedSharding(mesh, P()))
    line_mesh = Mesh(np.array(jax.devices()), ("x",))
    rows = jax.device_put(jnp.ones((16, 32)), NamedSharding(line_mesh, P("x", None)))
    resharded = jax.jit(double, out_shardings=NamedSharding(line_mesh, P(None, "x")))
    def constrained(v):
        v = jax.lax.with_sharding_constraint(v, NamedSharding(line_mesh, P(None, "x")))
        return v + 1
    ''')
    facts["setup_error"] = repr(error)
    facts["devices"] = ip.user_ns["jax"].device_count()

    from jaxmagic.words.collectives import item

    def collected(report):
        return [
            {
                "kind": c.kind, "bytes": c.bytes, "n": c.group_size, "axes": list(c.axes), "result": c.result,
                "line": c.line.label if c.line else None, "text": c.line.text if c.line else None,
                "primitive": c.primitive, "requested": c.requested, "mismatch": c.mismatch,
                "operands": [list(o) for o in c.operands], "wanted": list(c.wanted) if c.wanted else None,
                "before": [c.before.state, c.before.dimension, list(c.before.axes)],
                "after": [c.after.state, c.after.dimension, list(c.after.axes)], "in_loop": c.in_loop,
                "asked_at": c.asked_at.label if c.asked_at else None,
                "asked_text": c.asked_at.text if c.asked_at else None,
                "said": str(item(c)),
            }
            for c in report.collectives
        ]

    for name, call in {
        "mismatch": "add(x, y)",
        "constraint": "project(x, w)",
        "explicit": "explicit(x)",
        "loop": "in_loop(x)",
        "none": "local(x)",
        "output": "transposed(x)",
        "replicated": "replicated(x)",
        "resharded": "resharded(rows)",
        "constrained": "constrained(rows)",
    }.items():
        report, error, captured = cell(f"%jaxpr --collectives -o --plain {call}")
        if error is not None:
            facts[name] = {"error": repr(error)}
            continue
        facts[name] = {
            "error": "None",
            "collectives": collected(report),
            "hlo": report.hlo,
            "shown": captured.stdout,
            "html": report.to_html(),
        }

    report, error, captured = cell("%jaxpr --collectives --profile 2 -o --plain add(x, y)")
    facts["timed"] = {"error": repr(error), "shown": captured.stdout,
                      "kernels": [k.name for k in report.kernels] if report is not None else None}

    # %jitcompare's sharded mode: how much of the step went to communication
    compared, error, _ = cell("%jitcompare -o -q -n 2 -r 2 --budget 20 --modes jit,sharded mix_rows(big)")
    facts["jitcompare"] = {"error": repr(error), "notes": compared.notes if compared else None,
                           "facts": [[n.kind, {k: v for k, v in n.facts.items()}] for n in compared.facts] if compared else None,
                           "kinds": [c.kind for c in compared.communication.get("collectives", [])] if compared else None}
    compared, error, _ = cell("%jitcompare -o -q -n 2 -r 2 --budget 20 --modes jit,sharded local(big)")
    facts["jitcompare_quiet"] = {"error": repr(error), "notes": compared.notes if compared else None}

    # A corpus: the sharded programs of JAX's own docs ("Distributed arrays and automatic
    # parallelization", "Manual parallelism with shard_map"), written as a user would.
    _, error, _ = cell('''
    import functools
    grid = Mesh(np.array(jax.devices()).reshape(4, 2), ("i", "j"))
    line = Mesh(np.array(jax.devices()), ("i",))
    @jax.jit
    @functools.partial(jax.shard_map, mesh=grid, in_specs=(P("i", "j"), P("j", None)), out_specs=P("i", None))
    def matmul_basic(a, b):
        c = jnp.dot(a, b)
        return jax.lax.psum(c, "j")
    @jax.jit
    @functools.partial(jax.shard_map, mesh=grid, in_specs=(P("i", "j"), P("j", None)), out_specs=P("i", "j"))
    def matmul_reduce_scatter(a, b):
        c = jnp.dot(a, b)
        return jax.lax.psum_scatter(c, "j", scatter_dimension=1, tiled=True)
    @jax.jit
    @functools.partial(jax.shard_map, mesh=line, in_specs=(P("i", None), P("i", None)), out_specs=P("i", None))
    def matmul_allgather(lhs_block, rhs_block):
        rhs = jax.lax.all_gather(rhs_block, "i", tiled=True)
        return lhs_block @ rhs
    def loss(w, xs, ys):
        return jnp.mean((xs @ w - ys) ** 2)
    @jax.jit
    def grad_step(w, xs, ys):
        return w - 0.1 * jax.grad(loss)(w, xs, ys)
    def f_contract(x):
        return x.sum(axis=0)
    def f_transpose(x):
        x = x + 1
        return jax.lax.with_sharding_constraint(x, NamedSharding(grid, P("j", "i")))
    a = jax.device_put(jnp.ones((8, 16)), NamedSharding(grid, P("i", "j")))
    b = jax.device_put(jnp.ones((16, 4)), NamedSharding(grid, P("j", None)))
    lhs = jax.device_put(jnp.ones((16, 8)), NamedSharding(line, P("i", None)))
    rhs = jax.device_put(jnp.ones((8, 8)), NamedSharding(line, P("i", None)))
    w0 = jax.device_put(jnp.ones((4, 1)), NamedSharding(line, P()))
    xs = jax.device_put(jnp.ones((64, 4)), NamedSharding(line, P("i", None)))
    ys = jax.device_put(jnp.ones((64, 1)), NamedSharding(line, P("i", None)))
    ''')
    facts["corpus_error"] = repr(error)
    corpus = {}
    for call in ("matmul_basic(a, b)", "matmul_reduce_scatter(a, b)", "matmul_allgather(lhs, rhs)",
                 "grad_step(w0, xs, ys)", "f_contract(a)", "f_transpose(a)"):
        report, error, _ = cell(f"%jaxpr --collectives -o --plain {call}")
        corpus[call] = {"error": repr(error)} if error is not None else {
            "error": "None", "collectives": collected(report), "hlo": report.hlo,
        }
    facts["corpus"] = corpus

    # The budget in plain Python, on the same programs
    budget = {}
    _, error, _ = cell('''
    from jaxmagic import expect_collectives
    jitted_add = jax.jit(add)
    try:
        with expect_collectives(jitted_add, max={"all-gather": 1}):
            jitted_add(x, y)
        failure = None
    except AssertionError as caught:
        failure = caught
    with expect_collectives(jitted_add, forbid=["all-to-all"], max={"all-gather": 4}) as cached:
        jitted_add(x, y + 1)  # compiled before the block: nothing new to read
    @jax.jit
    def fresh_add(x, y):
        return x + y
    with expect_collectives(fresh_add, forbid=["all-to-all"], max={"all-gather": 4}) as kept:
        fresh_add(x, y)
    jitted_local = jax.jit(local)
    with expect_collectives(jitted_local) as quiet:
        jitted_local(x)
    try:
        with expect_collectives(replicated, forbid=["all-gather"]):
            replicated(x + 1)
        gathered = None
    except AssertionError as caught:
        gathered = caught
    @expect_collectives(forbid=["collective-permute"])
    def uses_permute():
        return jax.jit(in_loop)(x)
    try:
        uses_permute()
        decorated = None
    except AssertionError as caught:
        decorated = caught
    ''')
    budget["error"] = repr(error)
    failure = ip.user_ns.get("failure")
    budget["failure"] = [type(failure).__name__, str(failure), failure.counts, failure.over] if failure else None
    budget["kept"] = [c.kind for c in ip.user_ns["kept"].collectives] if "kept" in ip.user_ns else None
    budget["cached"] = [c.kind for c in ip.user_ns["cached"].collectives] if "cached" in ip.user_ns else None
    budget["quiet"] = ip.user_ns["quiet"].collectives if "quiet" in ip.user_ns else None
    gathered = ip.user_ns.get("gathered")
    budget["gathered"] = str(gathered) if gathered else None
    decorated = ip.user_ns.get("decorated")
    budget["decorated"] = [type(decorated).__name__, str(decorated)] if decorated else None
    facts["budget"] = budget
    print("FACTS" + json.dumps(facts))
    """
)


@pytest.fixture(scope="module")
def facts():
    env = dict(os.environ)
    env.pop("XLA_FLAGS", None)
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300, env=env)
    line = next((text for text in done.stdout.splitlines() if text.startswith("FACTS")), None)
    assert line is not None, f"the subprocess failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return json.loads(line[len("FACTS") :])


def kinds_in_hlo(hlo: str) -> dict[str, int]:
    found: dict[str, int] = {}
    for kind in KINDS_IN_HLO.findall(hlo):
        found[kind] = found.get(kind, 0) + 1
    return found


def kinds_found(case) -> dict[str, int]:
    found: dict[str, int] = {}
    for c in case["collectives"]:
        found[c["kind"]] = found.get(c["kind"], 0) + 1
    return found


def test_eight_simulated_devices(facts):
    assert facts["setup_error"] == "None"
    assert facts["devices"] == 8


CASES = ["mismatch", "constraint", "explicit", "loop", "none", "output", "replicated", "resharded", "constrained"]


@pytest.mark.parametrize("case", CASES)
def test_every_collective_of_the_optimized_hlo_is_found(facts, case):
    found = facts[case]
    assert found["error"] == "None", found
    assert kinds_found(found) == kinds_in_hlo(found["hlo"])


def test_operands_sharded_differently_are_named_with_their_shardings(facts):
    found = facts["mismatch"]["collectives"]
    assert found and {c["kind"] for c in found} == {"all-gather"}
    for c in found:
        assert c["text"] == "return x + y" and c["primitive"] == "add"
        assert c["mismatch"] == "operands"
        assert c["operands"] == [["x", "P('data', 'model')"], ["y", "P('model', 'data')"]]
        assert c["before"][0] == "split" and c["after"][0] == "whole" and c["before"][1] == c["after"][1]
    assert {tuple(c["axes"]) for c in found} == {("data",), ("model",)}
    shown = facts["mismatch"]["shown"]
    assert "`x` and `y` disagree in sharding for `add`" in shown
    # bytes: an all-gather receives R·(n−1)/n, R its result on one device
    for c in found:
        dims = [int(d) for d in re.findall(r"\d+", c["result"])]
        size = 4 * dims[0] * dims[1]
        assert c["bytes"] == size * (c["n"] - 1) // c["n"]


def test_a_sharded_contraction_and_a_constraint(facts):
    found = {c["kind"]: c for c in facts["constraint"]["collectives"]}
    reduce = found["all-reduce"]
    assert reduce["axes"] == ["model"] and reduce["mismatch"] == "partial" and reduce["text"] == "h = x @ w"
    assert reduce["before"][0] == "partial" and reduce["after"][0] == "whole"
    # 2·R·(n−1)/n with R = f32[16,16] and n = 2
    assert reduce["result"] == "f32[16,16]" and reduce["bytes"] == 2 * 16 * 16 * 4 * 1 // 2
    gather = found["all-gather"]
    assert gather["axes"] == ["data"] and gather["mismatch"] == "constraint"
    assert gather["wanted"][:2] == ["constraint", "P(None, 'data')"]
    assert gather["wanted"][2].endswith("line 11")  # the with_sharding_constraint line of the cell
    shown = facts["constraint"]["shown"]
    first = shown.splitlines()[1]
    assert first.startswith("2 collectives move 1.8 KiB per device; the largest, an all-reduce of 1.0 KiB, comes from")
    assert first.endswith("`h = x @ w`")


CORPUS = {  # call -> the axes of its mesh
    "matmul_basic(a, b)": {"i", "j"},
    "matmul_reduce_scatter(a, b)": {"i", "j"},
    "matmul_allgather(lhs, rhs)": {"i"},
    "grad_step(w0, xs, ys)": {"i"},
    "f_contract(a)": {"i", "j"},
    "f_transpose(a)": {"i", "j"},
}


@pytest.mark.parametrize("call", CORPUS)
def test_the_docs_sharded_programs_by_rule(facts, call):
    """Over JAX's own sharding examples: every collective of the HLO is found, comes from a line of
    the cell, runs over axes of the mesh in use, and moves bytes by its kind's formula."""
    assert facts["corpus_error"] == "None"
    found = facts["corpus"][call]
    assert found["error"] == "None", found
    assert kinds_found(found) == kinds_in_hlo(found["hlo"])
    assert found["collectives"], "each of these programs communicates"
    for c in found["collectives"]:
        assert c["line"] is not None and c["line"].startswith("In ["), c
        assert c["axes"] and set(c["axes"]) <= CORPUS[call], c
        assert c["bytes"] > 0


def test_an_output_sharding_asked_for_by_jit_is_honoured_and_named(facts):
    found = facts["output"]["collectives"]
    assert found, "the jit's own out_shardings were not compiled in"
    for c in found:
        assert c["mismatch"] == "output" and c["wanted"] == ["output", "P(None, 'data')", "result"]
        assert c["operands"] == [["x", "P('data', 'model')"]] and c["text"] == "return x * 2"
    assert "the sharding `P(None, 'data')` its out_shardings ask for" in facts["output"]["shown"]


def every_collective(facts):
    yield from (c for case in CASES for c in facts[case].get("collectives", []))
    yield from (c for found in facts["corpus"].values() for c in found.get("collectives", []))


def test_every_collective_names_the_line_that_asked_for_it(facts):
    """Over every sharded program here (JAX's docs' included): a line of the cell, never "your code"."""
    found = list(every_collective(facts))
    assert found
    for c in found:
        assert c["asked_at"] is not None and c["asked_at"].startswith("In ["), {k: c[k] for k in c if k != "said"}
        assert "from your code" not in c["said"], c["said"]


def test_a_gather_to_meet_out_shardings_names_the_jit_line_and_the_layouts(facts):
    gathers = facts["replicated"]["collectives"]
    assert gathers and {c["kind"] for c in gathers} == {"all-gather"}
    for gather in gathers:  # x is split over both axes of the mesh: one gather per axis
        assert gather["mismatch"] == "output", gather
        assert gather["asked_text"] == "replicated = jax.jit(double, out_shardings=NamedSharding(mesh, P()))"
        assert gather["before"][0] == "split" and gather["after"][0] == "replicated"
    assert "replicated = jax.jit(double, out_shardings=NamedSharding(mesh, P()))" in facts["replicated"]["shown"]
    failure = facts["budget"]["gathered"]
    assert failure and "replicated = jax.jit(double, out_shardings=NamedSharding(mesh, P()))" in failure, failure


@pytest.mark.parametrize("case", ["resharded", "constrained"])
def test_a_resharding_says_its_layouts_by_dimension(facts, case):
    """``P('x', None)`` -> ``P(None, 'x')``: dim 0 split over `x` -> dim 1 split over `x`, as the
    shardings on either side say (the HLO's own all-to-all does not)."""
    found = facts[case]["collectives"]
    assert found
    for c in found:
        assert c["before"] == ["split", 0, ["x"]] and c["after"] == ["split", 1, ["x"]], c
        assert "dim 0 split over `x` → dim 1 split over `x`" in c["said"]
    asked = {c["asked_text"] for c in found}
    expected = {
        "resharded": 'resharded = jax.jit(double, out_shardings=NamedSharding(line_mesh, P(None, "x")))',
        "constrained": 'v = jax.lax.with_sharding_constraint(v, NamedSharding(line_mesh, P(None, "x")))',
    }[case]
    assert asked == {expected}


def test_shard_map_collectives_are_asked_for_on_their_axes(facts):
    found = {c["kind"]: c for c in facts["explicit"]["collectives"]}
    assert set(found) == {"all-reduce", "all-gather", "collective-permute", "all-to-all", "reduce-scatter"}
    assert all(c["requested"] for c in facts["explicit"]["collectives"])
    # named as the user calls them, not by JAX's internal primitive names (psum_invariant, reduce_scatter)
    assert {c["primitive"] for c in facts["explicit"]["collectives"]} == {
        "psum",
        "all_gather",
        "ppermute",
        "all_to_all",
        "psum_scatter",
    }
    assert found["all-gather"]["axes"] == ["model"] and found["all-gather"]["text"].startswith("g = jax.lax.all_gather")
    assert found["collective-permute"]["axes"] == ["data"]
    assert found["all-to-all"]["axes"] == ["data"]
    assert found["reduce-scatter"]["axes"] == ["model"]
    assert found["all-reduce"]["axes"] == ["data"]
    # psum of the f32[4,16] block over 4 devices: 2·R·(n−1)/n; ppermute sends the whole block
    assert found["all-reduce"]["bytes"] == 2 * 4 * 16 * 4 * 3 // 4
    assert found["collective-permute"]["bytes"] == 4 * 16 * 4
    assert "asked for: `jax.lax.psum`" in facts["explicit"]["shown"]


def test_with_the_profiler_the_time_communication_took(facts):
    timed = facts["timed"]
    assert timed["error"] == "None"
    assert any(name.startswith("all-gather") for name in timed["kernels"]), timed["kernels"]
    took = re.search(
        r"communication took (.+) of (.+) device time per call \((\d+)%\), by the profiler", timed["shown"]
    )
    assert took, timed["shown"]
    assert 0 < int(took.group(3)) <= 100


def test_jitcompare_says_how_much_of_the_sharded_step_went_to_communication(facts):
    compared = facts["jitcompare"]
    assert compared["error"] == "None", compared
    assert compared["kinds"] and set(compared["kinds"]) <= {"all-reduce", "all-gather", "reduce-scatter", "all-to-all"}
    (note,) = [facts for kind, facts in compared["facts"] if kind == "sharded_communication"]
    assert note["count"] == len(compared["kinds"]) and note["moved"] > 0
    assert 0 < note["seconds"] <= note["device_seconds"]
    assert any("communication took" in n and "%jaxpr --collectives" in n for n in compared["notes"])
    quiet = facts["jitcompare_quiet"]
    assert quiet["error"] == "None"
    assert "sharded: the program needs no communication between the devices." in quiet["notes"]


def test_a_collective_in_a_loop_runs_every_step(facts):
    found = facts["loop"]["collectives"]
    assert [c["kind"] for c in found] == ["collective-permute"]
    assert found[0]["in_loop"] and found[0]["axes"] == ["data"]
    assert "per step" in facts["loop"]["shown"]


def test_a_program_without_communication_says_so(facts):
    found = facts["none"]
    assert found["collectives"] == []
    assert found["shown"].splitlines()[1].startswith("No communication")
    assert "No communication" in found["html"]


def test_the_html_answers_first_and_folds_the_rows(facts):
    html = facts["explicit"]["html"]
    answer = html.index("jm-collectives-answer")
    assert answer < html.index("<details") < html.index("<th>before → after</th>")


def test_budget_fails_naming_the_line_that_added_the_communication(facts):
    budget = facts["budget"]
    assert budget["error"] == "None", budget
    kind, message, counted, over = budget["failure"]
    assert kind == "CollectiveBudgetExceeded"
    assert counted == {"all-gather": 4} and over == ["all-gather"]
    assert (
        message.splitlines()[0]
        == "`add` compiled 4 all-gathers (4 in all) in the block; expected at most 1 all-gather."
    )
    assert "return x + y" in message and "over `data`" in message and "over `model`" in message
    assert (
        "`x` and `y` disagree in sharding for `add` (inputs: `x` `P('data', 'model')`, `y` `P('model', 'data')`)"
        in message
    )
    assert len([line for line in message.splitlines() if line.startswith("  ")]) == 4


def test_budget_kept_and_a_quiet_program(facts):
    budget = facts["budget"]
    assert budget["kept"] == ["all-gather"] * 4
    assert budget["cached"] == []  # served from JAX's cache: no program compiled in the block
    assert budget["quiet"] == []


def test_budget_as_a_decorator_forbids_a_kind(facts):
    kind, message = facts["budget"]["decorated"]
    assert kind == "CollectiveBudgetExceeded"
    assert "expected no collective-permute" in message
    assert "jax.lax.ppermute" in message and "per loop step" in message


MARKED_TESTS = """
    import jax, jax.numpy as jnp, numpy as np, pytest
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()).reshape(4, 2), ("data", "model"))

    def sharded(spec):
        return jax.device_put(jnp.ones((16, 32)), NamedSharding(mesh, spec))

    @pytest.mark.max_collectives({"all-gather": 1})
    def test_transposed_layout_gathers_too_much():
        @jax.jit
        def combine(a, b):
            return a * b
        combine(sharded(P("data", "model")), sharded(P("model", "data")))

    @pytest.mark.max_collectives(forbid=["all-gather"])
    def test_same_layouts_need_no_gather():
        @jax.jit
        def combine(a, b):
            return a - b
        combine(sharded(P("data", "model")), sharded(P("data", "model")))

    @pytest.mark.max_collectives(forbid=["all-gather"])
    def test_gathered_whole_on_every_device():
        def double(a):
            return a * 2
        gather_all = jax.jit(double, out_shardings=NamedSharding(mesh, P()))
        gather_all(sharded(P("data", "model")))

    @pytest.mark.max_collectives(0, "total_of")
    def test_only_the_named_function_counts():
        @jax.jit
        def total_of(a):
            return a.sum()
        @jax.jit
        def other(a, b):
            return a / b
        other(sharded(P("data", "model")), sharded(P("model", "data")))
        total_of(sharded(P(None, None)))
"""


def test_the_max_collectives_marker(tmp_path):
    import test_recompiles_pytest_plugin as plugin_tests

    os.environ["XLA_FLAGS"], before = "--xla_force_host_platform_device_count=8", os.environ.get("XLA_FLAGS")
    try:
        done = plugin_tests.run_pytest(tmp_path, MARKED_TESTS, "--strict-markers")
    finally:
        if before is None:
            os.environ.pop("XLA_FLAGS")
        else:
            os.environ["XLA_FLAGS"] = before
    out = done.stdout + done.stderr
    assert "FAILED test_user_code.py::test_transposed_layout_gathers_too_much" in out, out
    assert "PASSED test_user_code.py::test_same_layouts_need_no_gather" in out, out
    assert "PASSED test_user_code.py::test_only_the_named_function_counts" in out, out
    assert "CollectiveBudgetExceeded: `combine` compiled 4 all-gathers (4 in all) in the block" in out
    assert (
        "from test_user_code.py:14: `return a * b`" in out and "(in `combine`, compiled at test_user_code.py:15)" in out
    )
    assert "FAILED test_user_code.py::test_gathered_whole_on_every_device" in out, out
    asked = re.search(
        r"from test_user_code.py:\d+: `gather_all = jax.jit\(double, out_shardings=NamedSharding\(mesh, P\(\)\)\)`", out
    )
    assert asked, out
