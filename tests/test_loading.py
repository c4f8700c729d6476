"""Loading, unloading and reloading the extension; what importing jaxmagic costs."""

import subprocess
import sys


def test_import_pulls_in_neither_ipython_nor_ipywidgets_nor_jax():
    code = "import sys, jaxmagic; print(sorted(m for m in ('IPython', 'ipywidgets', 'jax', 'pygments') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _jaxmagic_magics(shell):
    found = {}
    for kind, table in shell.magics_manager.magics.items():
        for name, fn in table.items():
            owner = getattr(fn, "__self__", None)
            if owner is not None and type(owner).__module__.startswith("jaxmagic."):
                found.setdefault(kind, set()).add(name)
    return found


def test_load_registers_jaxpr_line_and_cell_magics(ip):
    magics = _jaxmagic_magics(ip)
    assert "jaxpr" in magics["line"] and "jaxpr" in magics["cell"]


def test_unload_removes_every_magic_and_reload_restores_them_once(ip):
    before = _jaxmagic_magics(ip)
    ip.run_line_magic("unload_ext", "jaxmagic")
    try:
        assert _jaxmagic_magics(ip) == {}
        assert not any(name.startswith("Jaxpr") for name in ip.magics_manager.registry)
    finally:
        ip.run_line_magic("load_ext", "jaxmagic")
    for _ in range(3):
        ip.run_line_magic("reload_ext", "jaxmagic")
    assert _jaxmagic_magics(ip) == before
    jaxpr_owners = {type(ip.magics_manager.magics["line"]["jaxpr"].__self__)}
    assert len(jaxpr_owners) == 1


def test_magics_work_after_reload(ip, run):
    ip.run_line_magic("reload_ext", "jaxmagic")
    run("x = jnp.ones(2)").assert_ok()
    assert 'data-primitive="sin"' in run("%jaxpr jnp.sin(x)").assert_ok().html


def test_every_public_name_is_listed_once_and_loads():
    """``__all__`` is written out (type checkers read it literally) and names exactly what loads."""
    import jaxmagic

    listed = set(jaxmagic.__all__)
    assert len(listed) == len(jaxmagic.__all__)
    assert listed == set(jaxmagic._PUBLIC) | {"load_ipython_extension", "unload_ipython_extension"}
    for name in jaxmagic.__all__:
        assert getattr(jaxmagic, name) is not None, name


def test_the_type_stub_names_what_loads_from_where_it_loads():
    """``__init__.pyi`` (what type checkers read) imports each public name from the module that
    ``__init__.py`` loads it from at run time."""
    import ast
    import pathlib

    import jaxmagic

    stub = ast.parse(pathlib.Path(jaxmagic.__file__).with_suffix(".pyi").read_text(encoding="utf-8"))
    imported = {
        alias.name: node.module for node in stub.body if isinstance(node, ast.ImportFrom) for alias in node.names
    }
    defined = {node.name for node in stub.body if isinstance(node, ast.FunctionDef)}
    assert imported == jaxmagic._PUBLIC
    assert defined == set(jaxmagic.__all__) - set(jaxmagic._PUBLIC)
