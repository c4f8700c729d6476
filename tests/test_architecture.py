"""The house rules that keep jaxmagic easy to change, checked on the code itself.

Engines (everything outside ``magics/`` and ``render/``) never import IPython, ipywidgets, the
renderers or the magics, at module level or inside a function: they work from a plain script and
are tested without a shell. No two modules import each other, however indirectly, counting the
imports inside functions too.
"""

import ast
import pathlib
import subprocess
import sys

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "jaxmagic"
FRONT_ENDS = ("IPython", "ipywidgets", "jaxmagic.render", "jaxmagic.magics")
# The package's entry points (``%load_ext``, ``python -m jaxmagic``) wire the front ends in.
ENTRY_POINTS = ("__init__.py", "__main__.py")
ENGINES = sorted(
    p
    for p in PACKAGE.rglob("*.py")
    if "__pycache__" not in p.parts and p.relative_to(PACKAGE).parts[0] not in ("magics", "render", *ENTRY_POINTS)
)


def imports(path: pathlib.Path) -> list[str]:
    """Every module ``path`` imports, at any level (``from a import b`` counts as ``a`` and ``a.b``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
    return names


def package_import_graph() -> dict[str, set[str]]:
    modules = {module_name(p) for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
    imported = {
        module_name(p): {n for n in imports(p) if n in modules and n != module_name(p)}
        for p in PACKAGE.rglob("*.py")
        if "__pycache__" not in p.parts
    }
    graph = {}
    for name, targets in imported.items():
        parents = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
        # A module importing its own parent package is how a package's parts find each other; it is
        # a circle only when that parent imports the module back.
        graph[name] = {n for n in targets if n not in parents or name in imported.get(n, ())}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@pytest.mark.parametrize("path", ENGINES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_engines_import_no_front_end_at_any_level(path):
    offending = [n for n in imports(path) if n.startswith(FRONT_ENDS)]
    assert offending == []


def test_no_import_circles_counting_imports_inside_functions():
    assert circles(package_import_graph()) == []


def test_the_circle_finder_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_importing_every_engine_loads_neither_ipython_nor_ipywidgets():
    names = [module_name(p) for p in ENGINES]
    code = "import importlib, sys\n" + "".join(f"importlib.import_module({n!r})\n" for n in names)
    code += "print(sorted(m for m in ('IPython', 'ipywidgets') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_modules_stay_small():
    big = {str(p.relative_to(PACKAGE)): p.stat().st_size for p in PACKAGE.rglob("*.py") if p.stat().st_size > 32_000}
    assert big == {}, "split these into modules with one job each"


RUFF = pathlib.Path(sys.executable).with_name("ruff")
CHECKED = ["jaxmagic", "tests", "benchmarks", "demo"]


def test_ruff_is_clean():
    """pyproject.toml's rules: errors (F), style (E), import order (I), likely bugs (B), simpler
    spellings (SIM) and no function more branchy than 12 (C901)."""
    done = subprocess.run(
        [str(RUFF), "check", "--no-cache", "--output-format", "concise", *CHECKED],
        capture_output=True,
        text=True,
        cwd=PACKAGE.parent,
    )
    assert done.returncode == 0, done.stdout


def test_code_is_formatted():
    """``ruff format`` is the house formatter: ``make format`` applies it."""
    done = subprocess.run(
        [str(RUFF), "format", "--check", "--no-cache", *CHECKED], capture_output=True, text=True, cwd=PACKAGE.parent
    )
    assert done.returncode == 0, done.stdout


# Where sentences may be written: the words layer, and the renderers and magics that call it. The
# doctor's pitfalls write theirs as templates of their declarations, filled by ``words.tell``.
WORDS_WRITERS = ("words", "render", "magics")


def sentence_calls(source: str) -> list[int]:
    """The lines of ``source`` that write a sentence with the words layer: a call of ``say``
    (however it was imported, ``words.say(...)`` included) or an import of it under another name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            if (isinstance(func, ast.Name) and func.id == "say") or (
                isinstance(func, ast.Attribute) and func.attr == "say"
            ):
                found.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("jaxmagic.words"):
            found += [node.lineno for alias in node.names if alias.name == "say"]
    return sorted(set(found))


def test_engines_write_no_sentences():
    """Engines return facts (kinds, paths, values, lines); ``jaxmagic.words`` turns them into
    sentences. An engine that needs a sentence for a documented attribute asks a words module."""
    writers = {
        str(p.relative_to(PACKAGE)): lines
        for p in PACKAGE.rglob("*.py")
        if "__pycache__" not in p.parts and p.relative_to(PACKAGE).parts[0] not in WORDS_WRITERS
        for lines in [sentence_calls(p.read_text(encoding="utf-8"))]
        if lines
    }
    assert writers == {}, "move these sentences into a module of jaxmagic/words/"


def test_the_sentence_finder_finds_a_sentence():
    source = (
        "from jaxmagic.words import code, say as write\n"
        "import jaxmagic.words as words\n"
        "def f(n):\n"
        "    return words.say('{} changed', code(n)), say('x'), n.sayable()\n"
    )
    assert sentence_calls(source) == [1, 4]
