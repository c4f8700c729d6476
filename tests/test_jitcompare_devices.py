"""%jitcompare's sharded and pmap modes on 8 CPU devices simulated with XLA_FLAGS, in a subprocess
(the flag must be set before JAX starts): a real shell there runs the cells, and reports back."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    r"""
    import json, os
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
    os.environ["JAX_PLATFORMS"] = "cpu"
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.core.error import UsageError
    from IPython.utils.capture import capture_output

    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "jaxmagic")
    facts = {}

    def cell(source):
        with capture_output() as captured:
            outcome = ip.run_cell(source)
        error = outcome.error_in_exec or outcome.error_before_exec
        return outcome.result, error, captured

    cell("import jax, jax.numpy as jnp, functools\n"
         "def rowwise(x):\n"
         "    return jnp.tanh(x) * 2 + 1\n"
         "def centred(x):\n"
         "    return x - x.mean(0)\n"
         "def total(x):\n"
         "    return jnp.sum(x)\n"
         "def layer(params, batch, scale=1.0):\n"
         "    return {'h': batch @ params['w'] + params['b'], 's': scale}\n"
         "x = jnp.arange(64 * 16, dtype=jnp.float32).reshape(64, 16) / 100\n"
         "params = {'w': jnp.ones((16, 10)), 'b': jnp.zeros(10)}\n"
         "@functools.partial(jax.jit, donate_argnums=(0,))\n"
         "def update(state, step):\n"
         "    return state + step\n"
         "state = jnp.ones((64, 4))\n")
    facts["devices"] = ip.user_ns["jax"].device_count()

    quick = "-o -q -n 3 -r 2 --budget 20"
    result, error, _ = cell(f"%jitcompare {quick} --modes eager,jit,sharded,pmap rowwise(x)")
    facts["all_modes"] = {
        "error": repr(error), "modes": list(result.modes),
        "repeats": {m: [t.loops, t.repeat] for m, t in result.modes.items()},
        "first_calls": {m: [c.compile_s > 0, c.first_call_s >= c.one_time_s] for m, c in result.first_calls.items()},
        "memory": {m: result.memory.get(m, {}).get("arguments") for m in ("jit", "sharded", "pmap")},
        "setups": result.setups, "warnings": result.warnings, "notes": result.notes,
        "speedups": sorted(result.speedups),
        "html_rows": result.to_html().count("<tr data-mode="),
    }
    result, error, _ = cell(f"%jitcompare {quick} --modes all rowwise(x)")
    facts["all_word"] = list(result.modes)
    result, error, _ = cell(f"%jitcompare {quick} --modes eager,pmap centred(x)")
    facts["pmap_mixes_rows"] = [w for w in result.warnings if "differ" in w]
    result, error, _ = cell(f"%jitcompare {quick} --modes eager,sharded centred(x)")
    facts["sharded_keeps_meaning"] = [w for w in result.warnings if "differ" in w]
    result, error, _ = cell(f"%jitcompare {quick} --modes eager,pmap total(x)")
    facts["pmap_per_device_result"] = result.notes
    result, error, _ = cell(f"%jitcompare {quick} --modes eager,jit,sharded,pmap --split batch layer(params, x, scale=2.0)")
    facts["split"] = {"error": repr(error), "modes": list(result.modes) if result else None,
                      "setups": result.setups if result else None,
                      "differ": [w for w in result.warnings if "differ" in w] if result else None}
    result, error, _ = cell(f"%jitcompare {quick} --modes jit,sharded,pmap update(state, 1.0)")
    facts["donated"] = {"error": repr(error), "modes": list(result.modes) if result else None,
                        "state_alive": not ip.user_ns["state"].is_deleted(), "notes": result.notes if result else None}
    result, error, _ = cell(f"%jitcompare {quick} --modes jit,sharded update(state=state, step=1.0)")
    facts["donated_by_keyword"] = {"error": repr(error), "state_alive": not ip.user_ns["state"].is_deleted()}

    cell("def scaled(x, n, *, shift=0.0):\n    return x * n + shift\n")
    result, error, _ = cell(f"%jitcompare {quick} --modes eager,sharded,pmap -s n scaled(x, 3, shift=1.0)")
    facts["static"] = {"error": repr(error), "modes": list(result.modes) if result else None,
                       "differ": [w for w in result.warnings if "differ" in w] if result else None}

    usage = {}
    for name, source in {
        "not_divisible": "%jitcompare --modes pmap rowwise(jnp.ones((10, 3)))",
        "not_divisible_sharded": "%jitcompare --modes sharded rowwise(jnp.ones((12, 3)))",
        "no_arrays": "%jitcompare --modes sharded rowwise(3.0)",
        "params_not_divisible": "%jitcompare --modes pmap layer(params, x)",
        "split_unknown": "%jitcompare --modes pmap --split images layer(params, x)",
        "split_bad": "%jitcompare --modes pmap --split 'a b' layer(params, x)",
        "split_position": "%jitcompare --modes pmap --split 5 layer(params, x)",
    }.items():
        _, error, _ = cell(source)
        usage[name] = [type(error).__name__, str(error)]
    facts["usage"] = usage
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


def test_eight_simulated_devices(facts):
    assert facts["devices"] == 8


def test_every_mode_runs_with_its_first_call_and_memory(facts):
    every = facts["all_modes"]
    assert every["error"] == "None"
    assert every["modes"] == ["eager", "jit", "sharded", "pmap"]
    assert set(map(tuple, every["repeats"].values())) == {(3, 2)}
    assert all(compiled and adds_up for compiled, adds_up in every["first_calls"].values())
    # per device: the jit program holds the whole array, sharded and pmap an eighth of it
    assert every["memory"] == {"jit": 64 * 16 * 4, "sharded": 8 * 16 * 4, "pmap": 8 * 16 * 4}
    assert "8 of 64 rows per device" in every["setups"]["sharded"]
    assert "8 of 64 rows per device" in every["setups"]["pmap"]
    assert not [w for w in every["warnings"] if "differ" in w]
    assert any("simulated on the CPU" in n for n in every["notes"])
    assert every["html_rows"] == 4 + 4 + 4  # the answer table, then (folded) the statistics and the first calls


def test_all_means_every_mode_on_several_devices(facts):
    assert facts["all_word"] == ["eager", "jit", "op-by-op", "sharded", "pmap"]


def test_pmap_of_a_function_that_mixes_rows_is_warned_about_and_sharded_is_not(facts):
    assert facts["pmap_mixes_rows"] and "its slice of the leading axis" in facts["pmap_mixes_rows"][0]
    assert facts["sharded_keeps_meaning"] == []
    assert any("not compared" in n for n in facts["pmap_per_device_result"])


def test_split_names_the_batch_and_replicates_the_rest(facts):
    split = facts["split"]
    assert split["error"] == "None", split
    assert split["modes"] == ["eager", "jit", "sharded", "pmap"]
    assert "params: a copy on every device" in split["setups"]["sharded"]
    assert "batch: 8 of 64 rows per device" in split["setups"]["pmap"]
    assert split["differ"] == []


def test_donated_arguments_are_copied_in_every_mode(facts):
    donated = facts["donated"]
    assert donated["error"] == "None" and donated["modes"] == ["jit", "sharded", "pmap"]
    assert donated["state_alive"]
    assert any("not donated in pmap mode" in n for n in donated["notes"])
    assert facts["donated_by_keyword"] == {"error": "None", "state_alive": True}


def test_static_and_keyword_arguments_stay_whole_on_every_device(facts):
    static = facts["static"]
    assert static["error"] == "None" and static["modes"] == ["eager", "sharded", "pmap"]
    assert static["differ"] == []


@pytest.mark.parametrize(
    "case, words",
    [
        ("not_divisible", ["`x` (shape (10, 3))", "10 is not divisible by 8", "multiple of 8"]),
        ("not_divisible_sharded", ["mode `sharded`", "12 is not divisible by 8"]),
        ("no_arrays", ["no array argument with a leading axis", "rowwise(3.0)"]),
        ("params_not_divisible", ["`params['b']` (shape (10,))", "--split"]),
        ("split_unknown", ["--split images", "no argument named `images`", "params, batch, scale"]),
        ("split_bad", ["--split takes argument names or positions"]),
        ("split_position", ["--split 5", "no positional argument 5"]),
    ],
)
def test_multi_device_usage_errors(facts, case, words):
    kind, message = facts["usage"][case]
    assert kind == "UsageError", (kind, message)
    for w in words:
        assert w in message, message
    assert "Traceback" not in message
