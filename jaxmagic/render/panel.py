"""The live recompile views: an ipywidgets panel of a ``RecompileLog`` that updates as JAX compiles,
and the one-line badge under a running ``%%recompiles`` cell (``RecompileBadge``).

The panel opens with its answer (how many compilations, the main cause), then headlines and
per-function counts, a filter by function and a clear button, then one row per group of the same
function and causes (``×N``), the group compiled most recently on top. Updates arrive while later cells run (at most every
``REFRESH_S`` seconds, the last one always). The panel is shown together with its ``copy``: the
same log as static HTML and text, in an output of its own, kept current after each cell. While the
live panel is on the page the copy is hidden; where it cannot be (a notebook reopened without its
kernel's widgets, an nbconvert export, GitHub's viewer) the copy shows the log and the widget
manager's "model not found" line is hidden instead — by CSS alone, so it works where no script
runs. Stable class names for browser tests: ``jm-recompile-panel``, ``jm-recompile-static``,
``jm-recompile-filter``, ``jm-recompile-clear``, ``jm-recompile-rows`` and those of
``render.recompiles``.

>>> from jaxmagic.recompiles import RecompileLog
>>> panel = RecompilePanel(RecompileLog(scope="this example"))
>>> "jm-recompile-panel" in panel.widget._dom_classes, panel.filter.value
(True, 'all functions')
>>> sorted(panel._repr_mimebundle_()), sorted(panel.copy._repr_mimebundle_())
(['application/vnd.jupyter.widget-view+json', 'text/plain'], ['text/html', 'text/plain'])
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from typing import TYPE_CHECKING

from jaxmagic.render import blocks_html, palette, theme
from jaxmagic.render import recompiles as views
from jaxmagic.render.blocks import Sentence
from jaxmagic.render.words import words_html

if TYPE_CHECKING:
    from jaxmagic.recompiles.log import RecompileLog

ALL = "all functions"
# ipywidgets' HTML widgets use the 28 px height of a form control as line height: rows of text double.
# The "stopped" chip says a warning: the palette's warning shade for each theme, on the page's own
# background (it sits outside the views' root, where the palette's variables are not defined).
_COMPACT = (
    "<style>.jm-recompile-panel .widget-html-content{line-height:1.35;}"
    ".jm-recompile-stopped{float:right;padding:0 .5em;border-radius:.6em;font-size:85%;"
    f"border:1px solid currentColor;color:{palette.STATUS['warning'][0]};}}"
    f"{theme.DARK} .jm-recompile-stopped{{color:{palette.STATUS['warning'][1]}}}</style>"
)
REFRESH_S = 0.25  # at most this often while compilations pour in
# The copy stands in for the panel only where the live panel is not on the page: in the output area
# that holds both, a live panel hides the copy; without it, the copy hides the widget manager's
# text-only placeholder ("Loading widget...", "Error displaying widget: model not found").
_STAND_IN = (
    "<style>.jp-OutputArea:has(.jm-recompile-panel) .jp-OutputArea-child:has(.jm-recompile-static)"
    "{display:none}"
    ".jp-OutputArea:has(.jm-recompile-static):not(:has(.jm-recompile-panel)) "
    ".jp-OutputArea-output.jupyter-widgets:not(:has(*)){display:none}</style>"
)


class _Following:
    """What the live views share: they follow a log (``_changed`` is its observer), with at most one
    update waiting on a timer."""

    log: RecompileLog
    _lock: threading.Lock
    _timer: threading.Timer | None
    _closed: bool

    def _changed(self, event) -> None:
        """The log's observer: each live view says how it follows a change."""
        raise NotImplementedError

    def close(self) -> None:
        """Stop following the log (what is on the page stays as it was)."""
        self._closed = True
        self.log.remove_observer(self._changed)
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = None


class RecompilePanel(_Following):
    """A live widget view of ``log``; ``function`` pre-selects the filter.

    ``header``, ``filter``, ``clear_button`` and ``rows`` are the ipywidgets it is made of;
    ``widget`` is the whole panel. ``close()`` stops the updates.
    """

    def __init__(self, log, *, function: str | None = None, max_rows: int = views.MAX_ROWS):
        import ipywidgets as widgets

        self.log = log
        self.max_rows = max_rows
        self.header = widgets.HTML()
        self.header.add_class("jm-recompile-header")
        self.filter = widgets.Dropdown(
            options=[ALL], value=ALL, description="function", layout=widgets.Layout(width="auto")
        )
        self.filter.add_class("jm-recompile-filter")
        self.clear_button = widgets.Button(
            description="Clear", icon="trash", tooltip="Forget every compilation in this log"
        )
        self.clear_button.add_class("jm-recompile-clear")
        self.rows = widgets.HTML()
        self.rows.add_class("jm-recompile-rows")
        controls = widgets.HBox([self.filter, self.clear_button])
        controls.add_class("jm-recompile-controls")
        self.widget = widgets.VBox([self.header, controls, self.rows])
        self.widget.add_class(theme.ROOT_CLASS)
        self.widget.add_class("jm-recompile-panel")
        self._lock = threading.Lock()
        # held while the rows are drawn, and while the copy is taken from them: a copy taken while the
        # timer's redraw runs would be the rows before it
        self._drawing = threading.RLock()
        self._timer: threading.Timer | None = None
        self._dirty = False
        self._last_refresh = 0.0
        self._closed = False
        self._drawn: tuple | None = None
        self.display_handle = None  # the displayed copy's handle: set by whoever displays the copy
        self.copy = PanelCopy(self)
        self._published = None
        if function:
            self._ensure_option(function)
            self.filter.value = function
        self.refresh()
        self.filter.observe(self._filtered, names="value")
        self.clear_button.on_click(self._cleared)
        log.add_observer(self._changed)

    @property
    def function(self) -> str | None:
        """The function the filter shows (``None``: all)."""
        return None if self.filter.value == ALL else self.filter.value

    def refresh(self) -> None:
        """Redraw counts, headlines and rows from the log now."""
        with self._drawing:
            self._drawn = self._state()
            self._draw()

    def _draw(self) -> None:
        for name in self.log.counts:
            self._ensure_option(name)
        function = self.function
        stopped = ""
        if not self.log.watching and self.log.started_at is not None:
            stopped = '<span class="jm-recompile-stopped" title="%recompiles off stopped this watch">stopped</span>'
        self.header.value = (
            theme.style_tag()
            + _COMPACT
            + stopped
            + blocks_html.html(views.head(self.log, selected=function, note=False))
        )
        events = views.visible(self.log, function)
        if events:
            shown = views.rows(events, newest_first=True, max_rows=self.max_rows)
        else:
            shown = (Sentence(views.empty_note(self.log), "jm-muted"),)
        self.rows.value = blocks_html.html(shown)

    def static_html(self) -> str:
        """What the panel shows, as HTML without the widget: the copy a saved or exported
        notebook keeps, in the same order as the live rows."""
        return (
            f'<div class="{theme.ROOT_CLASS} jm-recompile-log jm-recompile-panel-copy">'
            f"{self.header.value}{self.rows.value}</div>"
        )

    def shown_as(self, handle) -> None:
        """Remember the ``DisplayHandle`` its copy was displayed with (``display(panel.copy,
        display_id=True)``, right after ``display(panel)``): ``publish`` updates it."""
        self.display_handle = handle
        with self._drawing:
            self._published = self._drawn

    def _state(self) -> tuple:
        return self.log.total, self.log.cleared_at, self.log.watching, self.function

    def publish(self) -> None:
        """Replace the displayed copy (its HTML and text fallbacks) with the log as it stands, when
        it changed: what a saved notebook shows after the kernel is gone."""
        if self.display_handle is None:
            return
        with self._drawing:
            self.flush()
            if self._drawn == self._published:
                return
            self._published = self._drawn
            with contextlib.suppress(Exception):  # a closed front end must never break the user's cell
                self.display_handle.update(self.copy)

    def flush(self) -> None:
        """Apply any update still waiting for its turn (after a redraw already under way)."""
        with self._drawing:
            with self._lock:
                if self._timer is not None:
                    self._timer.cancel()
                self._timer = None
                dirty, self._dirty = self._dirty, False
                self._last_refresh = time.monotonic()
            if dirty and not self._closed:
                self.refresh()

    def _ensure_option(self, name: str) -> None:
        if name not in self.filter.options:
            value = self.filter.value
            self.filter.options = [ALL] + sorted(set(self.filter.options[1:]) | {name})
            self.filter.value = value if value in self.filter.options else ALL

    def _changed(self, event) -> None:
        """A new event (or ``None`` after a clear): redraw now, or soon if we just did."""
        if self._closed:
            return
        now = time.monotonic()
        with self._lock:
            due = event is None or (self._timer is None and now - self._last_refresh >= REFRESH_S)
            if due:
                self._last_refresh, self._dirty = now, False
            else:
                self._dirty = True
                if self._timer is None:
                    self._timer = threading.Timer(REFRESH_S, self.flush)
                    self._timer.daemon = True
                    self._timer.start()
        if due:
            if event is None:
                self.filter.options = [ALL]
                self.filter.value = ALL
            self.refresh()

    def _filtered(self, change) -> None:
        self.refresh()

    def _cleared(self, button) -> None:
        self.log.clear()

    def _repr_mimebundle_(self, include=None, exclude=None):
        self.flush()
        # No text of its own: where the widget cannot show (an untrusted or exported notebook), its
        # copy in the next output says everything.
        bundle = {"text/plain": ""}
        widget_bundle = self.widget._repr_mimebundle_() or {}
        view = "application/vnd.jupyter.widget-view+json"
        if view in widget_bundle:
            bundle[view] = widget_bundle[view]
        return {k: v for k, v in bundle.items() if (not include or k in include) and not (exclude and k in exclude)}

    def __repr__(self) -> str:
        return f"<RecompilePanel of {self.log!r}>"


class PanelCopy:
    """A ``RecompilePanel``'s log as static HTML and text, displayed in an output of its own right
    after the panel: what a saved notebook keeps (see the module's docstring)."""

    def __init__(self, panel: RecompilePanel):
        self.panel = panel

    def _repr_mimebundle_(self, include=None, exclude=None):
        panel = self.panel
        bundle = {
            "text/plain": views.text(panel.log),
            "text/html": f'<div class="jm-recompile-static">{_STAND_IN}{panel.static_html()}</div>',
        }
        return {k: v for k, v in bundle.items() if (not include or k in include) and not (exclude and k in exclude)}

    def __repr__(self) -> str:
        return f"<copy of {self.panel!r}>"


_BADGE_STYLE = (
    "<style>.jm-recompile-badge{white-space:nowrap;overflow:hidden;text-overflow:ellipsis;padding:2px 0;}</style>"
)


class RecompileBadge(_Following):
    """One line under a running ``%%recompiles`` cell: the compilations so far and the latest
    cause, updated as JAX compiles (at most every ``REFRESH_S`` seconds, the last one always),
    then replaced in place by the log's full view (``replace``), so a saved notebook keeps the
    view only. ``display`` shows a bundle and returns its handle (IPython's ``display`` with
    ``display_id=True`` by default).

    >>> from jaxmagic.recompiles import RecompileLog
    >>> badge = RecompileBadge(RecompileLog(scope="this cell"), display=lambda bundle: None)
    >>> badge.bundle()["text/plain"]
    '%%recompiles: nothing compiled yet'
    """

    def __init__(self, log, *, display=None):
        self.log = log
        self._display = display or _display_updatable
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._last_refresh = 0.0
        self._closed = False
        self.handle = self._display(self.bundle())
        log.add_observer(self._changed)

    def bundle(self) -> dict:
        """The line as text and HTML."""
        events = self.log.events
        total = self.log.total
        if not events:
            return {
                "text/plain": "%%recompiles: nothing compiled yet",
                "text/html": self._html("<b>%%recompiles</b>: nothing compiled yet"),
            }
        latest = events[-1]
        counted = f"{total} compilation{'s' * (total != 1)} so far"
        causes = "; ".join(c.message for c in latest.causes)
        site = f" ({latest.call_site.label})" if latest.call_site else ""
        causes_html = "; ".join(words_html(c.message) for c in latest.causes)
        return {
            "text/plain": f"%%recompiles: {counted} · latest: {latest.function} — {causes}{site}",
            "text/html": self._html(
                f'<b>%%recompiles</b>: <span class="jm-recompile-badge-count" data-count="{total}">{counted}</span>'
                f" · latest: <code>{theme.escape(latest.function)}</code> — {causes_html}"
                f'<span class="jm-muted">{theme.escape(site)}</span>'
            ),
        }

    @staticmethod
    def _html(line: str) -> str:
        return f'<div class="{theme.ROOT_CLASS} jm-recompile-badge">{theme.style_tag()}{_BADGE_STYLE}{line}</div>'

    def refresh(self) -> None:
        """Show the log as it stands now."""
        if self.handle is not None and not self._closed:
            with contextlib.suppress(Exception):  # a closed front end must never break the user's cell
                self.handle.update(self.bundle(), raw=True)

    def replace(self, report) -> None:
        """Stop following the log and show ``report`` (its rich view) where the line was."""
        self.close()
        if self.handle is not None:
            self.handle.update(report)

    def _flush(self) -> None:
        with self._lock:
            self._timer = None
            self._last_refresh = time.monotonic()
        self.refresh()

    def _changed(self, event) -> None:
        now = time.monotonic()
        with self._lock:
            due = self._timer is None and now - self._last_refresh >= REFRESH_S
            if due:
                self._last_refresh = now
            elif self._timer is None:
                # The kernel's output goes to the running cell from this context: the timer runs in a copy.
                self._timer = threading.Timer(REFRESH_S, contextvars.copy_context().run, args=(self._flush,))
                self._timer.daemon = True
                self._timer.start()
        if due:
            self.refresh()

    def __repr__(self) -> str:
        return f"<RecompileBadge of {self.log!r}>"


def _display_updatable(bundle: dict):
    from IPython.display import display

    return display(bundle, raw=True, display_id=True)
