"""The house rules that keep jaxmagic easy to change, checked on the code itself.

Engines (everything outside ``magics/`` and ``render/``) never import IPython, ipywidgets or the
renderers at module level: they work from a plain script and are tested without a shell.
"""

import ast
import pathlib
import subprocess
import sys

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "jaxmagic"
FRONT_ENDS = ("IPython", "ipywidgets", "jaxmagic.render", "jaxmagic.magics")
ENGINES = sorted(
    p for p in PACKAGE.rglob("*.py")
    if "__pycache__" not in p.parts and p.relative_to(PACKAGE).parts[0] not in ("magics", "render")
)


def module_level_imports(path: pathlib.Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = []
    for node in tree.body:  # top level only: imports inside functions load lazily
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@pytest.mark.parametrize("path", ENGINES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_engines_import_no_front_end_at_module_level(path):
    offending = [n for n in module_level_imports(path) if n.startswith(FRONT_ENDS)]
    assert offending == []


def test_importing_every_engine_loads_neither_ipython_nor_ipywidgets():
    names = [module_name(p) for p in ENGINES]
    code = "import importlib, sys\n" + "".join(f"importlib.import_module({n!r})\n" for n in names)
    code += "print(sorted(m for m in ('IPython', 'ipywidgets') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_modules_stay_small():
    big = {str(p.relative_to(PACKAGE)): p.stat().st_size for p in PACKAGE.rglob("*.py") if p.stat().st_size > 32_000}
    assert big == {}, "split these into modules with one job each"


def test_no_unused_or_undefined_names():
    ruff = pathlib.Path(sys.executable).with_name("ruff")
    root = PACKAGE.parent
    done = subprocess.run([str(ruff), "check", "--output-format", "concise", "jaxmagic", "tests", "benchmarks", "demo"],
                          capture_output=True, text=True, cwd=root)
    assert done.returncode == 0, done.stdout
