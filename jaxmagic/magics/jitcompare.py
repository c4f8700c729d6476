"""``%jitcompare`` / ``%%jitcompare``: time the cell's call eager and jitted (and sharded and
pmapped on several devices), its first call split out, and say when jit pays off."""

from __future__ import annotations

from IPython.core.magic import Magics, line_cell_magic, magics_class, needs_local_scope, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments

from jaxmagic.magics import common, echo
from jaxmagic.magics.status_line import StatusLine
from jaxmagic.render import comparison as render
from jaxmagic.timing import DEFAULT_BUDGET_S, DEFAULT_REPEAT, check_settings, compare
from jaxmagic.timing.modes import MODES


@magics_class
class JitCompareMagics(Magics):
    """The ``%jitcompare`` magic."""

    @magic_arguments()
    @argument("--modes", metavar="MODES", default=None,
              help=f"modes to compare, comma-separated, from {', '.join(MODES)} or all (default: eager,jit)")
    @argument("-n", dest="loops", type=int, default=None, metavar="N",
              help="calls per repeat (default: as many as fill 0.2 s)")
    @argument("-r", dest="repeat", type=int, default=DEFAULT_REPEAT, metavar="R",
              help=f"repeats per mode (default {DEFAULT_REPEAT})")
    @argument("--budget", type=float, default=DEFAULT_BUDGET_S, metavar="SECONDS",
              help=f"time allowed for the whole comparison, first calls included (default {DEFAULT_BUDGET_S:g})")
    @common.STATIC_OPTION
    @argument("--split", metavar="NAMES",
              help="sharded/pmap: arguments whose leading axis is split over the devices (default: every array argument)")
    @argument("--rtol", type=float, default=None, help="relative tolerance when comparing results with eager's")
    @argument("--atol", type=float, default=None, help="absolute tolerance when comparing results with eager's")
    @argument("-q", "--quiet", action="store_true", help="show nothing (use with -o)")
    @common.shared_options("Comparison")
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
        options, call_text = common.split_options(self.jitcompare.parser, line, magic)
        found = None
        status = StatusLine(None if options.quiet else self.shell)
        with common.guarded(self.shell, fn_hint=lambda: found.call.fn if found else None, full_traceback=options.tb) as config:
            settings = dict(modes=options.modes, repeat=options.repeat, loops=options.loops,
                            budget=options.budget, rtol=options.rtol, atol=options.atol, split=options.split)
            check_settings(**settings)  # before the cell runs: bad options leave the namespace alone
            found = common.find_call(
                self.shell, line_call=call_text, cell=cell, magic="jitcompare", magic_line=line,
                static=options.static, local_ns=local_ns, after_body=config.accept_current,
            )
            name = found.call.source or found.call.name
            try:
                report = compare(found.call, **settings,
                                 on_progress=lambda step: status.show(render.progress_line(name, step)))
            except BaseException:
                status.done()
                raise
        if options.quiet:
            pass
        elif status.replace(report, text=render.text(report) if options.plain else None):
            pass
        else:
            status.done()
            common.show(self.shell, report, plain=options.plain, text=render.text)
        if options.output:
            return echo.returned(self.shell, report, shown=True)
        return None
