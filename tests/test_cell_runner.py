"""Every cell magic runs its cell the way IPython runs any cell: other magics inside it work, its
line numbers are the cell's, and a cell ending in ``;`` (a comment may follow) shows no value."""

import pytest

SETUP = "x = jnp.ones(3)\n@jax.jit\ndef f(v):\n    return jnp.sin(v) * 2"


@pytest.fixture
def f_defined(run):
    run(SETUP).assert_ok()


@pytest.mark.parametrize("magic", ["%%jaxpr", "%%jitcompare -q -n 2 -r 2", "%%recompiles"])
def test_a_line_magic_inside_the_cell_runs(ip, run, f_defined, magic):
    run(f"{magic}\n%time y_from_cell = 1\nf(x)").assert_ok()
    assert ip.user_ns["y_from_cell"] == 1


@pytest.mark.parametrize("ending", ["f(x);", "f(x);  # done", "f(x) ;"])
def test_a_recompiles_cell_ending_in_a_semicolon_is_quiet(run, f_defined, ending):
    shown = run(f"%%recompiles\n{ending}").assert_ok()
    assert shown.result is None and "Out[" not in shown.stdout


def test_a_recompiles_cell_ending_in_an_expression_shows_its_value(run, f_defined):
    shown = run("%%recompiles\nf(x).shape  # the value").assert_ok()
    assert shown.result == (3,)


def test_a_syntax_error_names_the_cell_s_line(run, f_defined):
    for magic in ("%%jaxpr", "%%recompiles"):
        shown = run(f"{magic}\ny = 1\nz = (\nf(x)")
        assert shown.usage_error and "not valid Python" in shown.usage_error


AWAITING = "import asyncio\nasync def scale():\n    await asyncio.sleep(0)\n    return 3.0\n"


@pytest.mark.parametrize("magic", ["%%jaxpr", "%%jitcompare -q -n 2 -r 2", "%%recompiles", "%%jaxpr --profile"])
def test_a_cell_with_a_top_level_await_runs_as_ipython_runs_it(ip, run, f_defined, magic):
    run(AWAITING).assert_ok()
    shown = run(f"{magic}\nfactor_from_await = await scale()\nf(x * factor_from_await)")
    shown.assert_ok()
    assert ip.user_ns["factor_from_await"] == 3.0
    assert "bug in jaxmagic" not in shown.stdout + shown.stderr


def test_a_recompiles_cell_whose_value_is_awaited_shows_it(run, f_defined):
    run(AWAITING).assert_ok()
    shown = run("%%recompiles\nf(x)\nawait scale()").assert_ok()
    assert shown.result == 3.0


def test_an_error_in_an_awaited_coroutine_is_the_user_s(run, f_defined):
    run(
        AWAITING + "async def broken():\n    await asyncio.sleep(0)\n    raise ValueError('from the coroutine')"
    ).assert_ok()
    for magic in ("%%jaxpr", "%%recompiles"):
        shown = run(f"{magic}\nawait broken()\nf(x)")
        assert isinstance(getattr(shown.error, "original", shown.error), ValueError), (magic, shown.error)
        assert "bug in jaxmagic" not in shown.stdout + shown.stderr


def test_an_await_inside_a_kernel_whose_loop_is_running_still_runs():
    """In a Jupyter kernel the cell itself runs inside the kernel's event loop."""
    import asyncio
    import threading

    from jaxmagic.tracing.cell import run_coroutine

    async def kernel_cell():
        async def value():
            await asyncio.sleep(0)
            return 42

        return run_coroutine(value(), runner=lambda coroutine: asyncio.get_event_loop().run_until_complete(coroutine))

    # in a thread of its own: whatever loop the suite's earlier tests left in this one stays aside
    results = []
    worker = threading.Thread(target=lambda: results.append(asyncio.run(kernel_cell())))
    worker.start()
    worker.join(timeout=60)
    assert results == [42]
