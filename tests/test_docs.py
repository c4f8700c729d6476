"""Every example in README.md and docs/ runs, so the docs cannot rot.

A fenced block marked ``python`` runs as plain Python; one marked ``ipython`` runs as one notebook
cell in a real IPython shell with jaxmagic loaded. Blocks of a page run in order in one fresh
namespace, like a notebook. A block whose first line is ``# raises`` must fail (``# raises on JAX
≥ 0.9``: on those versions; on older ones it may or may not); any other must not. Blocks marked ``text``, ``console`` or ``bash`` are shown output or shell commands, not run.
"""

from __future__ import annotations

import hashlib
import linecache
import pathlib
import re

import pytest
from conftest import jax_version

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RAISES = re.compile(r"# raises(?: on JAX ≥ (\d+\.\d+))?")
FENCE = re.compile(r"^```(python|ipython)[^\n]*\n(.*?)^```", re.M | re.S)


def examples(page: pathlib.Path) -> list[tuple[str, str]]:
    return [(kind, body) for kind, body in FENCE.findall(page.read_text(encoding="utf-8"))]


def test_pages_have_examples():
    assert (ROOT / "docs" / "index.md").exists()
    assert sum(len(examples(p)) for p in PAGES) >= 10


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_example_on_the_page_runs(ip, page):
    blocks = examples(page)
    if not blocks:
        pytest.skip("no runnable examples on this page")
    saved = dict(ip.user_ns)
    ip.user_ns.clear()
    ip.user_ns.update(
        {k: v for k, v in saved.items() if k.startswith("_") or k in ("In", "Out", "get_ipython", "exit", "quit")}
    )
    try:
        for index, (kind, body) in enumerate(blocks, start=1):
            raises = RAISES.match(body.lstrip())
            since = tuple(int(part) for part in raises.group(1).split(".")) if raises and raises.group(1) else ()
            expect_failure = raises is not None and jax_version() >= since
            if kind == "python":
                error = _run_python(ip, body)
            else:
                outcome = ip.run_cell(body, store_history=True)
                error = outcome.error_in_exec or outcome.error_before_exec
            where = f"{page.name}, example {index}:\n{body}"
            if expect_failure:
                assert error is not None, f"expected this example to fail: {where}"
            elif raises is None:
                assert error is None, f"{type(error).__name__}: {error}\nin {where}"
    finally:
        ip.user_ns.clear()
        ip.user_ns.update(saved)


def _run_python(ip, body: str):
    # the example's source is kept where Python looks for it, as it is for a file or a notebook cell
    name = f"<docs example {hashlib.sha1(body.encode()).hexdigest()[:12]}>"
    linecache.cache[name] = (len(body), None, body.splitlines(keepends=True), name)
    try:
        exec(compile(body, name, "exec"), ip.user_ns)
    except Exception as exc:  # reported by the caller with the example's text
        return exc
    return None


LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_local_link_and_image_exists(page):
    missing = [
        target
        for target in LINK.findall(page.read_text(encoding="utf-8"))
        if "://" not in target and not (page.parent / target).exists()
    ]
    assert missing == []


def test_the_api_page_describes_every_public_name():
    import jaxmagic

    page = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    described = set(re.findall(r"^### `(\w+)`$", page, re.M))
    assert described == set(jaxmagic.__all__), described ^ set(jaxmagic.__all__)
