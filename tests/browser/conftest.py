"""A real Jupyter server on loopback and a headless Chromium driven by Playwright: each notebook test
runs in JupyterLab 4 and in Notebook 7 (the same server serves both: ``/lab/tree/NAME`` and
``/notebooks/NAME``), through the ``app`` fixture.

Chromium is Debian's (``/usr/bin/chromium``), launched through Playwright's ``executable_path``:
browser downloads do not work here. Without Chromium (or Playwright, or JupyterLab) the tests are
skipped with a loud reason, unless ``JAXMAGIC_REQUIRE_BROWSER=1`` (set by ``.ci/run``), which turns
the skip into a failure. Screenshots land in a temporary folder (``$JAXMAGIC_ARTIFACTS`` if set).
"""

from __future__ import annotations

import json
import os
import pathlib
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import nbformat
import pytest

# Screenshots go to a temporary folder (the checkout may be read-only), or to JAXMAGIC_ARTIFACTS.
ARTIFACTS = pathlib.Path(
    os.environ.get("JAXMAGIC_ARTIFACTS") or pathlib.Path(tempfile.gettempdir()) / "jaxmagic-screenshots"
)
# With JAXMAGIC_UPDATE_DOCS_IMAGES=1 the screenshots also replace those the README and docs show.
DOCS_IMAGES = pathlib.Path(__file__).resolve().parents[2] / "docs" / "images"
CHROMIUM = os.environ.get("JAXMAGIC_CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")
LAUNCH_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]
REQUIRED = os.environ.get("JAXMAGIC_REQUIRE_BROWSER") == "1"


def _missing() -> str | None:
    if not os.path.exists(CHROMIUM):
        return f"Chromium not found at {CHROMIUM} (install Debian's `chromium`)"
    try:
        import jupyterlab  # noqa: F401
        import notebook  # noqa: F401
        import playwright  # noqa: F401
    except ImportError as exc:
        return f"{exc.name} is not installed (pip install -e '.[test]')"
    return None


def _unavailable():
    """Skip (loudly), or fail where browser tests are required, when something is missing."""
    reason = _missing()
    if reason is None:
        return
    if REQUIRED:
        pytest.fail(f"browser tests are required here (JAXMAGIC_REQUIRE_BROWSER=1), but {reason}")
    pytest.skip(f"BROWSER TESTS SKIPPED: {reason}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A running JupyterLab server: its URL, token and notebook folder."""

    def __init__(self, root: pathlib.Path):
        self.root = root
        self.port = _free_port()
        self.token = secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = env = {
            **os.environ,
            "JAX_PLATFORMS": "cpu",
            "JUPYTER_CONFIG_DIR": str(root / ".jupyter"),
            "JUPYTERLAB_SETTINGS_DIR": str(root / ".settings"),
            "JUPYTERLAB_WORKSPACES_DIR": str(root / ".workspaces"),
        }
        # No news or update toasts over the views the tests look at and photograph.
        settings = root / ".settings" / "@jupyterlab" / "apputils-extension"
        settings.mkdir(parents=True, exist_ok=True)
        (settings / "notification.jupyterlab-settings").write_text(
            json.dumps({"fetchNews": "false", "checkForUpdates": False})
        )
        self.log = open(root / "lab.log", "w")  # noqa: SIM115 -- open while the server runs; closed in stop()
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyterlab",
                "--no-browser",
                "--ip=127.0.0.1",
                f"--port={self.port}",
                f"--IdentityProvider.token={self.token}",
                f"--ServerApp.root_dir={root}",
                "--ServerApp.open_browser=False",
                "--allow-root",
                "--LabApp.news_url=",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        self._wait_ready()

    def _wait_ready(self, timeout: float = 90):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"JupyterLab exited: {(self.root / 'lab.log').read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/status?token={self.token}", timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.5)
        raise RuntimeError("JupyterLab did not start in time")

    def write_notebook(self, name: str, cells: list[str]) -> str:
        notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
        notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(notebook, str(self.root / name))
        return name

    def notebook_url(self, name: str, app: str = "lab") -> str:
        """The notebook's address in JupyterLab (``app="lab"``) or in Notebook 7 (``"notebook7"``)."""
        if app == "notebook7":
            return f"{self.url}/notebooks/{name}?token={self.token}"
        return f"{self.url}/lab/tree/{name}?token={self.token}&reset"

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    _unavailable()
    server = Lab(tmp_path_factory.mktemp("lab"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def browser():
    _unavailable()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_FLAGS)
        yield chromium
        chromium.close()


# The front ends every notebook test runs in: JupyterLab 4 and Notebook 7 (its single-document view).
APPS = ("lab", "notebook7")
FIRST_SCREEN = {"width": 1366, "height": 768}
FIRST_SCREEN_VIEW_HEIGHT = 700  # px: a magic's default view fits the first screen below its cell


@pytest.fixture
def page(browser):
    # A newcomer's laptop screen: every view's answer must be on it.
    context = browser.new_context(viewport=FIRST_SCREEN)
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture(params=APPS)
def app(request) -> str:
    """The front end a notebook test runs in: ``"lab"`` (JupyterLab 4) or ``"notebook7"``."""
    return request.param


class Notebook:
    """A notebook open in JupyterLab or Notebook 7 (``app``): run its cells, read its outputs, take
    screenshots (Notebook 7's are named ``NAME-notebook7``; only JupyterLab's go to the docs)."""

    def __init__(self, page, lab: Lab, name: str, app: str = "lab"):
        self.page, self.lab, self.name, self.app = page, lab, name, app
        page.goto(lab.notebook_url(name, app))
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
        self.wait_idle(timeout=120_000)

    def wait_idle(self, timeout: int = 120_000):
        """Wait until a kernel is connected and idle (before one starts, the indicator also says idle)."""
        self.page.wait_for_function(
            """() => {
                const el = document.querySelector('.jp-Notebook-ExecutionIndicator');
                const kernel = document.querySelector('.jp-Toolbar-kernelName');
                return el && el.getAttribute('data-status') === 'idle'
                    && kernel && !/No Kernel/.test(kernel.textContent);
            }""",
            timeout=timeout,
        )

    def run_all(self, timeout: int = 240_000):
        """Run every cell (Run > Run All Cells) and wait until each has an execution count."""
        self.page.click(".lm-MenuBar-itemLabel:text-is('Run')")
        self.page.click(".lm-Menu-itemLabel:text-is('Run All Cells')")
        self.page.wait_for_function(
            """() => {
                const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')];
                return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
            }""",
            timeout=timeout,
        )
        self.wait_idle(timeout=timeout)

    def cell(self, index: int):
        return self.page.locator(".jp-Notebook .jp-Cell").nth(index)

    def output(self, index: int):
        return self.cell(index).locator(".jp-OutputArea-output")

    def screenshot(self, name: str, locator=None):
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        if self.app != "lab":
            name = f"{name}-{self.app}"
        path = ARTIFACTS / f"{name}.png"
        (locator or self.page).screenshot(path=str(path))
        shown = DOCS_IMAGES / path.name
        if os.environ.get("JAXMAGIC_UPDATE_DOCS_IMAGES") == "1" and self.app == "lab" and shown.exists():
            shutil.copyfile(path, shown)
        return path


@pytest.fixture
def open_notebook(page, lab, app):
    """``open_notebook(name, cells) -> Notebook`` written into the server's folder and opened in
    ``app`` (each test that uses it runs in JupyterLab and in Notebook 7)."""

    def open_(name: str, cells: list[str]) -> Notebook:
        if app != "lab":
            name = name.replace(".ipynb", f"-{app}.ipynb")
        lab.write_notebook(name, cells)
        return Notebook(page, lab, name, app)

    return open_
