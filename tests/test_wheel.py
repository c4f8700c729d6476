"""The wheel is a product too: built from this checkout, installed (not editable) in a clean virtual
environment without the test extra, it loads in IPython, its Pygments lexers are found by name, and
each magic renders its HTML and text."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

IN_THE_NEW_ENVIRONMENT = textwrap.dedent("""
    import os, pathlib, sys
    os.environ["JAX_PLATFORMS"] = "cpu"
    import jaxmagic
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output
    from pygments.lexers import get_lexer_by_name

    print("FROM", pathlib.Path(jaxmagic.__file__).resolve())
    for alias in ("jaxpr", "stablehlo", "hlo"):
        print("LEXER", alias, type(get_lexer_by_name(alias)).__name__)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "jaxmagic")
    shell.run_cell("import jax, jax.numpy as jnp\\nx = jnp.ones(3)\\n@jax.jit\\ndef f(v):\\n    return jnp.sin(v) * 2")
    for cell in ("%jaxpr f(x)", "%jitcompare -n 2 -r 2 f(x)", "%%recompiles\\nf(x)\\nf(jnp.ones(4))",
                 "%jaxpr (lambda v: v if v.sum() > 0 else -v)(x)"):
        with capture_output() as shown:
            outcome = shell.run_cell(cell)
        bundles = [o.data for o in shown.outputs]
        kinds = sorted({mime for b in bundles for mime in b})
        html = sum(len(b.get("text/html", "")) for b in bundles)
        text = sum(len(b.get("text/plain", "")) for b in bundles)
        print("MAGIC", cell.splitlines()[0], "ok" if outcome.success else "failed", kinds, html, text)
""")


def run(command, **kwargs):
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, **kwargs)
    assert done.returncode == 0, f"{command} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.slow
def test_the_wheel_installs_and_works_without_the_test_extra(tmp_path):
    dist = tmp_path / "dist"
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(dist), str(ROOT)])
    (wheel,) = dist.glob("jaxmagic-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "jaxmagic/magics/jaxpr.py" in names and not [n for n in names if n.startswith("tests/")]
    assert "jaxmagic/py.typed" in names, "the wheel does not say it carries type hints (PEP 561)"
    import jaxmagic

    assert wheel.name.startswith(f"jaxmagic-{jaxmagic.__version__}-"), "the version has one source"
    entry_points = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    assert entry_points, "the wheel declares no entry points: Pygments cannot find the lexers"
    assert "[pygments.lexers]" in zipfile.ZipFile(wheel).read(entry_points[0]).decode()

    venv = tmp_path / "clean venv"
    run([sys.executable, "-m", "venv", str(venv)])
    python = venv / "bin" / "python"
    install = [str(python), "-m", "pip", "install", "--quiet", str(wheel)]
    constraints = os.environ.get("JAXMAGIC_CONSTRAINTS")  # the floor run installs its pinned versions
    if constraints:
        install += ["--constraint", constraints]
    run(install)
    installed = {line.split("==")[0].lower() for line in run([str(python), "-m", "pip", "freeze"]).splitlines()}
    assert not installed & {"pytest", "hypothesis", "nbclient", "playwright"}, "no test extra"

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    out = run([str(python), "-c", IN_THE_NEW_ENVIRONMENT], cwd=tmp_path, env=env)
    installed_at = next(line for line in out.splitlines() if line.startswith("FROM "))
    assert str(venv.resolve()) in installed_at and str(ROOT) not in installed_at, installed_at
    lexers = [line.split()[1:] for line in out.splitlines() if line.startswith("LEXER ")]
    assert lexers == [["jaxpr", "JaxprLexer"], ["stablehlo", "StableHloLexer"], ["hlo", "HloLexer"]]
    magics = [line for line in out.splitlines() if line.startswith("MAGIC ")]
    assert len(magics) == 4, out
    for line in magics[:3]:
        assert " ok " in line and "'text/html', 'text/plain'" in line, line
        html, text = (int(n) for n in line.split()[-2:])
        assert html > 500 and text > 50, line
    assert " failed " in magics[3] and "'text/html'" in magics[3], "the doctor's card under a trap"

    # The commands CI runs need nothing beyond what the wheel declares.
    fingerprints = ROOT / "tests" / "fixtures" / "fingerprints"
    diff = subprocess.run(
        [str(python), "-m", "jaxmagic", "diff", str(fingerprints / "width8.json"), str(fingerprints / "width16.json")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
        check=False,
    )
    assert diff.returncode in (0, 1) and "Traceback" not in diff.stderr, diff.stderr[-2000:]
    assert "peak memory +245%" in diff.stdout, diff.stdout  # width 8 -> 16 quadruples `loss`'s peak
