"""``%jaxpr`` / ``%%jaxpr``: show what JAX traced the cell's call into, and what XLA made of it."""

from __future__ import annotations

from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics, line_cell_magic, magics_class, needs_local_scope, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments

from jaxmagic import doctor
from jaxmagic.doctor import loop_cost
from jaxmagic.magics import doctor as doctor_magics
from jaxmagic.magics import echo, failures, line_options, notebook, output
from jaxmagic.render import jaxpr as render
from jaxmagic.render.jaxpr import DEFAULT_MAX_EQNS, JaxprView
from jaxmagic.tracing.stages import STAGES, TRANSFORMS, trace


@magics_class
class JaxprMagics(Magics):
    """The ``%jaxpr`` magic."""

    shell: InteractiveShell  # registered on a shell by load_ipython_extension, never without one

    @magic_arguments()
    @line_options.STATIC_OPTION
    @argument(
        "-t",
        "--transform",
        action="append",
        default=[],
        choices=sorted(TRANSFORMS),
        help="apply a transform first; repeat to compose, outermost first: -t vmap -t grad shows vmap(grad(f))",
    )
    @argument(
        "--stage",
        choices=STAGES,
        default="jaxpr",
        help="what to show: the jaxpr (default), the StableHLO it lowers to, or XLA's optimized HLO",
    )
    @argument("--cost", action="store_true", help="add XLA's cost estimate (FLOPs, bytes) and memory sizes")
    @argument("--no-source", action="store_true", help="hide the source line beside each equation")
    @argument(
        "--values",
        action="store_true",
        help="run the program on the call's own arguments one equation at a time and show what each "
        "computed (small values whole, others as shape and min / mean / max); the first NaN or inf is named",
    )
    @argument(
        "--memory",
        action="store_true",
        help="show the compiled program's peak memory and which of your lines hold it, largest first",
    )
    @argument(
        "--profile",
        nargs="?",
        type=int,
        const=5,
        default=None,
        metavar="CALLS",
        help="run the compiled call CALLS times (default 5) under JAX's profiler and show the device "
        "time of each of your source lines, hottest first, and the kernels each ended up in",
    )
    @argument(
        "--compile-time",
        action="store_true",
        help="show what compiling costs: tracing, lowering and XLA's compile, where tracing spent its "
        "time by source line (sampled) and how many equations each line made",
    )
    @argument(
        "--collectives",
        action="store_true",
        help="list the communication in the optimized program: each all-reduce, all-gather, "
        "reduce-scatter, all-to-all and collective-permute with your line that caused it, the mesh "
        "axes, the sharding before and after, and the bytes it moves per device",
    )
    @argument(
        "--max-eqns",
        type=int,
        default=DEFAULT_MAX_EQNS,
        metavar="N",
        help=f"show at most N equations (default {DEFAULT_MAX_EQNS}); the report keeps them all",
    )
    @argument("-q", "--quiet", action="store_true", help="show nothing (use with -o)")
    @line_options.shared_options("JaxprReport")
    @no_var_expand
    @needs_local_scope
    @line_cell_magic
    def jaxpr(self, line: str, cell: str | None = None, local_ns: dict | None = None):
        """Show the jaxpr of the cell's call (or its StableHLO / optimized HLO).

        Line form:  %jaxpr [options] f(x, 3)
        Cell form:  %%jaxpr [options]   -- the cell runs; its last statement is the call to trace

        Each equation shows the line of your code that produced it; nested jaxprs (inner jit,
        cond branches, loop bodies) fold open on click. With ``-q`` nothing is shown (the doctor's
        warnings neither); with ``-o`` too, the report is returned, computed as the options ask.
        """
        __tracebackhide__ = True
        options, call_text = line_options.split_options(
            line_options.parser_of(self.jaxpr), line, "%%jaxpr" if cell is not None else "%jaxpr"
        )
        if options.profile is not None and options.profile < 1:
            raise UsageError("--profile takes a positive number of calls to measure, e.g. --profile 10")
        if options.max_eqns < 1:  # an int: --max-eqns has a default and takes a value
            raise UsageError("--max-eqns must be a positive number of equations, e.g. --max-eqns 200")
        found = None
        with failures.guarded(
            self.shell, fn_hint=lambda: found.call.fn if found else None, full_traceback=options.tb
        ) as config:
            found = notebook.find_call(
                self.shell,
                line_call=call_text,
                cell=cell,
                magic="jaxpr",
                magic_line=line,
                static=options.static,
                local_ns=local_ns,
                after_body=config.accept_current,
            )
            with doctor.watch_prints() as printed:
                report = trace(
                    found.call,
                    transforms=options.transform,
                    cell_namer=found.cell_namer,
                    profile=options.profile or 0,
                    sample_trace=options.compile_time,
                )
            if options.compile_time:
                report.loop_alternative = loop_cost.for_report(report)
            view = JaxprView(
                report,
                stage=options.stage,
                show_source=not options.no_source,
                show_cost=options.cost,
                max_eqns=options.max_eqns,
                show_values=options.values,
                show_memory=options.memory,
                show_collectives=options.collectives,
            ).prepare()
            report.asked_view = view
            if not options.quiet:
                output.show(self.shell, view, plain=options.plain, text=render.text)
                warnings = doctor.observe_trace(found.call, report.jaxpr, printed.text, cell_namer=found.cell_namer)
                doctor_magics.show_warnings(self.shell, warnings, plain=options.plain)
        if options.output:
            return echo.returned(self.shell, report, shown=True)
        return None
