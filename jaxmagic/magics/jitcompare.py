"""``%jitcompare`` / ``%%jitcompare``: time the cell's call eager and jitted (and sharded and
pmapped on several devices), its first call split out, and say when jit pays off."""

from __future__ import annotations

import ast
import contextlib
from typing import Any

from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics, line_cell_magic, magics_class, needs_local_scope, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments

from jaxmagic.magics import echo, failures, line_options, notebook, output
from jaxmagic.magics.status_line import StatusLine
from jaxmagic.render import comparison as render
from jaxmagic.render import side_by_side as render_side
from jaxmagic.timing import DEFAULT_BUDGET_S, DEFAULT_REPEAT, check_settings, compare, side_by_side
from jaxmagic.timing.modes import MODES
from jaxmagic.tracing import cell as cells


@magics_class
class JitCompareMagics(Magics):
    """The ``%jitcompare`` magic."""

    shell: InteractiveShell  # registered on a shell by load_ipython_extension, never without one

    @magic_arguments()
    @argument(
        "--modes",
        metavar="MODES",
        default=None,
        help=f"modes to compare, comma-separated, from {', '.join(MODES)} or all (default: eager,jit)",
    )
    @argument(
        "-n",
        dest="loops",
        type=int,
        default=None,
        metavar="N",
        help="calls per repeat (default: as many as fill 0.2 s)",
    )
    @argument(
        "-r",
        dest="repeat",
        type=int,
        default=DEFAULT_REPEAT,
        metavar="R",
        help=f"repeats per mode (default {DEFAULT_REPEAT})",
    )
    @argument(
        "--budget",
        type=float,
        default=DEFAULT_BUDGET_S,
        metavar="SECONDS",
        help=f"time allowed for the whole comparison, first calls included (default {DEFAULT_BUDGET_S:g})",
    )
    @line_options.STATIC_OPTION
    @argument(
        "--split",
        metavar="NAMES",
        help="sharded/pmap: arguments whose leading axis is split over the devices (default: every array argument)",
    )
    @argument("--rtol", type=float, default=None, help="relative tolerance when comparing results with eager's")
    @argument("--atol", type=float, default=None, help="absolute tolerance when comparing results with eager's")
    @argument("-q", "--quiet", action="store_true", help="show nothing (use with -o)")
    @line_options.shared_options("Comparison")
    @no_var_expand
    @needs_local_scope
    @line_cell_magic
    def jitcompare(self, line: str, cell: str | None = None, local_ns: dict | None = None):
        """Time the cell's call eager and jitted, with warm-up and compile cost apart.

        Line form:  %jitcompare [options] f(x, 3)
        Cell form:  %%jitcompare [options]   -- the cell runs; its last statement is the call to time

        Every timed call waits for its results. The first call of each mode is shown apart, split
        into trace, lower, compile and run; then repeats of many calls give median, mean ± std,
        best and worst. The report says after how many calls jit pays for its compile.
        """
        __tracebackhide__ = True
        magic = "%%jitcompare" if cell is not None else "%jitcompare"
        options, call_text = line_options.split_options(line_options.parser_of(self.jitcompare), line, magic)
        several = _several_calls(call_text) if cell is None else None
        if several is not None:
            return self._side_by_side(several, options, line, local_ns)
        if cell is not None and not call_text.strip():
            body, trailing = cells.trailing_calls(self.shell.transform_cell(cell))
            if len(trailing) >= 2:  # several calls end the cell: timed side by side
                return self._side_by_side(trailing, options, line, local_ns, body=body, cell=cell)
        found = None
        status = StatusLine(None if options.quiet else self.shell)
        with failures.guarded(
            self.shell, fn_hint=lambda: found.call.fn if found else None, full_traceback=options.tb
        ) as config:
            settings = _settings(options)
            check_settings(**settings)  # before the cell runs: bad options leave the namespace alone
            found = notebook.find_call(
                self.shell,
                line_call=call_text,
                cell=cell,
                magic="jitcompare",
                magic_line=line,
                static=options.static,
                local_ns=local_ns,
                after_body=config.accept_current,
            )
            with _progress_shown(found, status) as on_progress:
                report = compare(found.call, **settings, on_progress=on_progress)
        self._show(report, options, status, render.text)
        if options.output:
            return echo.returned(self.shell, report, shown=True)
        return None

    def _side_by_side(self, texts: list[str], options, line: str, local_ns, *, body=None, cell: str | None = None):
        """``%jitcompare a(x), b(x)`` (or a cell ending in several calls): each call timed eager and
        jit in its share of the budget, shown in one table; ``-o`` returns the list of
        ``Comparison``, in order."""
        status = StatusLine(None if options.quiet else self.shell)
        reports = []
        found = None
        with failures.guarded(
            self.shell, fn_hint=lambda: found.call.fn if found else None, full_traceback=options.tb
        ) as config:
            settings = _settings(options)
            check_settings(**settings)
            if body is not None:  # the cell's statements before its calls run as in any cell
                assert cell is not None  # the body is the start of the cell
                filename = notebook.cache_cell(self.shell, f"%%jitcompare {line}".rstrip() + "\n" + cell)
                cells.run_body(body, self.shell.user_ns, filename, runner=notebook.loop_runner(self.shell))
                config.accept_current()
            calls = [
                notebook.find_call(
                    self.shell,
                    line_call=text,
                    cell=None,
                    magic="jitcompare",
                    magic_line=line,
                    static=options.static,
                    local_ns=local_ns,
                )
                for text in texts
            ]
            for found, share in zip(calls, side_by_side.shares(options.budget, len(calls)), strict=True):
                shared: dict[str, Any] = {**settings, "budget": share}
                with _progress_shown(found, status) as on_progress:
                    reports.append(compare(found.call, **shared, on_progress=on_progress))
        self._show(side_by_side.SideBySide(reports), options, status, render_side.text)
        return reports if options.output else None

    def _show(self, report, options, status, text) -> None:
        if options.quiet:
            return
        if status.replace(report, text=text(report) if options.plain else None):
            return
        status.done()
        output.show(self.shell, report, plain=options.plain, text=text)


def _settings(options) -> dict:
    return dict(
        modes=options.modes,
        repeat=options.repeat,
        loops=options.loops,
        budget=options.budget,
        rtol=options.rtol,
        atol=options.atol,
        split=options.split,
    )


@contextlib.contextmanager
def _progress_shown(found, status: StatusLine):
    """What keeps the status line up to date while ``compare`` runs (its ``on_progress``); the line
    is removed if the timing fails. A block, not a wrapper: the timed calls run no deeper."""
    name = found.call.source or found.call.name
    try:
        yield lambda step: status.show(render.progress_line(name, step))
    except BaseException:
        status.done()
        raise


def _several_calls(text: str) -> list[str] | None:
    """The calls of ``a(x), b(x)`` as written (``None`` unless the line is a tuple of two or more calls).

    >>> _several_calls("naive(x), vectorized(x)")
    ['naive(x)', 'vectorized(x)']
    >>> _several_calls("f(x, (1, 2))") is None
    True
    """
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(tree, ast.Tuple) or len(tree.elts) < 2 or not all(isinstance(e, ast.Call) for e in tree.elts):
        return None
    # Every element parsed from the text has its place in it, so each has its segment.
    segments = (ast.get_source_segment(text.strip(), element) for element in tree.elts)
    return [segment for segment in segments if segment is not None]
