"""Call -> trace -> lower -> compile, kept as a ``JaxprReport``: what JAX traced, lowered and compiled.

Each stage past tracing runs only when first asked for (``report.stablehlo``, ``report.hlo``,
``report.cost``), so a report of the jaxpr alone never pays for XLA.

>>> import jax.numpy as jnp
>>> from jaxmagic.tracing.call import Call
>>> def f(x):
...     return jnp.sum(jnp.sin(x) ** 2)
>>> report = trace(Call(f, (jnp.ones(3),), {}), transforms=["grad"])
>>> report.name, report.in_types, report.out_types
('grad(f)', ['f32[3]'], ['f32[3]'])
>>> report.primitive_counts["cos"]
1
"""

from __future__ import annotations

import collections
import contextlib
import functools
import inspect
import time
from typing import Any, Callable, Sequence

import jax

from jaxmagic.compiled import peak_memory, profiling, remat
from jaxmagic.compiled.collective_causes import sharding_request
from jaxmagic.compiled.memory import compiled_memory, platform, xla_peak
from jaxmagic.errors import UsageProblem, UserCodeError
from jaxmagic.report import Report
from jaxmagic.tracing import blowups, derivative_fixes, names, trace_sampling, values
from jaxmagic.tracing.call import Call, check_traceable
from jaxmagic.tracing.callables import python_function
from jaxmagic.tracing.jitting import own_work
from jaxmagic.tracing.listing import count_eqns, equations_by_line, folded, listing, primitive_counts
from jaxmagic.tracing.nnx_copies import call_on_nnx_copies
from jaxmagic.tracing.sources import CellNamer, SourceLine, no_cells, source_line
from jaxmagic.tracing.transform_misuse import transform_problem

STAGES = ("jaxpr", "stablehlo", "hlo")
TRANSFORMS: dict[str, Callable] = {
    "grad": jax.grad,
    "value_and_grad": jax.value_and_grad,
    "vmap": jax.vmap,
    "jacfwd": jax.jacfwd,
    "jacrev": jax.jacrev,
}


class JaxprReport(Report):
    """What JAX made of one call: the jaxpr, and on demand StableHLO, optimized HLO and costs.

    Attributes: ``jaxpr`` (``ClosedJaxpr``), ``text`` (JAX's own plain print of it),
    ``stablehlo`` and ``hlo`` (text, computed on first access), ``cost`` (``flops``,
    ``bytes accessed``, ``transcendentals``, ...), ``memory`` (byte counts),
    ``primitive_counts`` (nested jaxprs included), ``n_eqns`` (equations, nested included),
    ``source_lines`` (top-level equation index -> the user's ``SourceLine``), ``in_types`` and
    ``out_types`` (``f32[3]``...), ``name`` (``vmap(grad(f))``), ``input_names`` and
    ``output_names`` (what each of the top-level jaxpr's inputs and outputs stands for, as the user
    writes it: ``params['w1']``, ``grad of x``). With ``trace(..., profile=N)``:
    ``profile`` (a ``profiling.Profile``), ``line_times`` (source line label -> device seconds per
    call, hottest first) and ``kernels`` (each with ``name``, ``seconds``, ``lines``); ``None``
    otherwise. ``collectives``: the communication in the optimized program (each a
    ``collectives.Collective``: ``kind``, ``line``, ``bytes``, ``before`` / ``after``, ``axes``),
    computed on first access.

    Computed when first read: ``values`` (what each equation computed on the call's own
    arguments, a ``values.EquationValue`` each, in the order they ran), ``first_nonfinite`` (the first of them that made a NaN or an inf, with its
    ``source`` line; ``None`` when all is finite), ``value_run`` (the whole ``values.ValueRun``);
    ``peak_bytes``, ``live_at_peak`` (``peak_memory.LiveBuffer`` each: ``bytes``, ``shape``,
    ``kind``, ``source``) and ``peak`` (the whole ``peak_memory.PeakMemory``, by source line);
    for ``-t grad``, ``residuals`` (what the compiled gradient's backward pass keeps, by line) and
    ``checkpoint_policies`` (each of JAX's checkpoint policies measured: peak and FLOPs).
    With ``%jaxpr --compile-time``: ``loop_alternative``, a Python loop that unrolled into most of
    the program rewritten as ``lax.fori_loop``, with both compile times and the check of its values
    (``None`` where there is none).

    The report holds facts only. How it is shown (which stage, which views, how many equations) is
    a ``jaxmagic.JaxprView`` of it; shown on its own, a report is its default view: the jaxpr
    listing, and the views of what it has already computed (``computed``), or, for the report
    ``%jaxpr -o`` returns, the view the user asked for (``asked_view``).
    """

    _renderer = "jaxmagic.render.jaxpr"

    def __init__(
        self,
        traced: jax.stages.Traced,
        *,
        name: str,
        cell_namer: CellNamer = no_cells,
    ):
        self.traced = traced
        # The call's own arguments, as traced: (args, kwargs, static_argnums, static_argnames); set by trace()
        self.arguments: tuple = ((), {}, (), ())
        # For a gradient (-t grad): the function before the transforms, and the transforms; set by trace()
        self.differentiated: tuple | None = None
        # The call as the user's code makes it: (function, args, kwargs), static arguments included; set by trace()
        self.forward_call: tuple = (None, (), {})
        self.jaxpr = traced.jaxpr
        self.name = name
        self.cell_namer = cell_namer
        self.asked_out_shardings = None  # the out_shardings of the user's jax.jit, set by trace()
        self.sharding_request: SourceLine | None = None  # the line that asked for them, set by trace()
        self.profile: profiling.Profile | None = None
        self.trace_seconds: float | None = None  # set by trace()
        self.lower_seconds: float | None = None  # set when first lowered
        self.compile_seconds: float | None = None  # set when first compiled
        self.trace_samples: trace_sampling.Samples | None = None  # trace(..., sample_trace=True)
        # What each input and output stands for, as the user writes it (``params['w1']``); set by trace()
        self.input_names: list[str] = []
        self.static_arguments: list[tuple[str, object]] = []  # (parameter, value) jit traced with
        self.receiver: str | None = None  # the object whose method was called, as the user wrote it
        self.output_names: list[str] = []
        self.callee: Any = None  # the function traced, as the user called it; set by trace()
        # The view the user asked %jaxpr for (a ``jaxmagic.JaxprView``: stage, views, options), set
        # by the magic: the report ``-o`` hands back shows what the magic displayed
        self.asked_view: Any = None
        # With --compile-time, where one Python loop of the user's unrolled into most of the program:
        # that loop as lax.fori_loop, measured and checked by value (a ``doctor.loop_cost.LoopAlternative``)
        self.loop_alternative: Any = None

    @functools.cached_property
    def line_counts(self) -> dict[str, int]:
        """Source line label -> equations it made (nested jaxprs included), the most first."""
        return equations_by_line(self.jaxpr, self.cell_namer)

    @property
    def trace_line_texts(self) -> dict[str, str] | None:
        """Source line label -> its text, for the lines the trace samples found."""
        if self.trace_samples is None:
            return None
        return {
            line.label: line.text
            for line in (source_line(file, number, "", self.cell_namer) for file, number in self.trace_samples.by_line)
        }

    @property
    def trace_line_seconds(self) -> dict[str, float] | None:
        """Source line label -> seconds of tracing spent there (sampled), the most first; empty
        when the samples were too few or too uneven to split the time (``trace_samples.reliable``)."""
        if self.trace_samples is None:
            return None
        if not self.trace_samples.reliable:
            return {}
        return {
            source_line(file, line, "", self.cell_namer).label: seconds
            for (file, line), seconds in self.trace_samples.line_seconds().items()
        }

    @property
    def line_times(self) -> dict[str, float] | None:
        """Source line label -> device seconds per call, hottest first (``--profile`` only)."""
        return self.profile.line_times if self.profile is not None else None

    @property
    def kernels(self) -> tuple | None:
        """The kernels XLA ran, hottest first: ``name``, ``seconds`` per call, ``lines`` (``--profile`` only)."""
        return self.profile.kernels if self.profile is not None else None

    # -- stages ------------------------------------------------------------------------------
    @functools.cached_property
    def text(self) -> str:
        """JAX's own plain (uncoloured) print of the jaxpr."""
        return self.jaxpr.pretty_print(use_color=False)

    @functools.cached_property
    def lowered(self) -> jax.stages.Lowered:
        start = time.perf_counter()
        with own_work():
            lowered = self.traced.lower()
        self.lower_seconds = time.perf_counter() - start
        return lowered

    @functools.cached_property
    def stablehlo(self) -> str:
        """The StableHLO (MLIR) module the jaxpr lowers to."""
        return self.lowered.as_text()

    @functools.cached_property
    def compiled(self) -> jax.stages.Compiled:
        lowered = self.lowered
        start = time.perf_counter()
        with own_work():
            compiled = lowered.compile()
        self.compile_seconds = time.perf_counter() - start
        return compiled

    @functools.cached_property
    def hlo(self) -> str:
        """XLA's optimized HLO, after compilation for the default device (empty where the backend
        cannot write its program as text)."""
        text = self.compiled.as_text()
        return text if text is not None else ""

    @functools.cached_property
    def cost(self) -> dict[str, float]:
        """XLA's cost estimate: ``flops``, ``bytes accessed``, ``transcendentals``, ..."""
        analysis = self.compiled.cost_analysis()
        if isinstance(analysis, (list, tuple)):  # older JAX: one dict per device
            analysis = analysis[0] if analysis else {}
        return dict(analysis or {})

    @functools.cached_property
    def memory(self) -> dict[str, int]:
        """Bytes XLA's memory analysis gives: ``arguments``, ``outputs``, ``aliased``, ``temporaries``, ``code``."""
        return compiled_memory(self.compiled)

    @functools.cached_property
    @own_work()  # computed when first read, maybe long after the trace: never the user's
    def collectives(self) -> list:
        """Every collective in the optimized program, with its source line, bytes per device,
        shardings before and after, and mesh axes (``jaxmagic.compiled.collectives.Collective``)."""
        from jaxmagic.compiled.collectives import compiled_collectives

        return compiled_collectives(
            self.compiled,
            self.hlo,
            self.jaxpr,
            input_names=self.input_names,
            output_names=self.output_names,
            asked_out_shardings=self.asked_out_shardings,
            asked_at=self.sharding_request,
            cell_namer=self.cell_namer,
        )

    # -- what a run computes and holds -------------------------------------------------------
    @functools.cached_property
    @own_work()  # computed when first read, maybe long after the trace: never the user's
    def value_run(self) -> values.ValueRun:
        """The program evaluated on the call's own arguments, one equation at a time."""
        args, kwargs, static_argnums, static_argnames = self.arguments
        flat = values.flat_arguments(self.jaxpr.in_avals, args, kwargs, static_argnums, static_argnames)
        if flat is None:
            raise UsageProblem(
                f"--values cannot line up the arguments of `{self.name}` with the inputs of its jaxpr.",
                example="%jaxpr --values f(x)",
            )
        return values.evaluate(self.jaxpr, flat, self.cell_namer)

    @functools.cached_property
    @own_work()  # computed when first read: never the user's
    def derivative_blowup(self) -> blowups.DerivativeBlowup | None:
        """In a gradient, the derivative that made the first NaN or inf: the user's forward
        operation and line, the point where its derivative is infinite, and how the NaN came of
        it (``blowups.DerivativeBlowup``); ``None`` where the values say otherwise (the forward
        value itself is not finite: the user's own code made the inf)."""
        blowup = self.value_run.blowup
        if blowup is None:
            return None
        forward, args, kwargs = self._forward_call()
        if forward is not None and derivative_fixes.forward_is_finite(forward, args, kwargs) is False:
            return None
        return blowup

    @functools.cached_property
    @own_work()  # computed when first read: never the user's
    def gradient_fix(self) -> derivative_fixes.GradientFix | None:
        """For ``derivative_blowup``, JAX's documented fix (the double ``where``, a safe square
        root or norm) written into the user's function, shown only when the rewritten function
        returns the same values on the call's arguments and its gradient there is finite."""
        blowup = self.derivative_blowup
        forward, args, kwargs = self._forward_call()
        if blowup is None or forward is None:
            return None
        return derivative_fixes.fix_for(blowup, forward, args, kwargs)

    def _forward_call(self) -> tuple[Any, tuple, dict]:
        """``(function, args, kwargs)``: the Python function whose gradient the program computes
        (the one ``-t grad`` differentiates; the one a ``jax.grad`` wrapper wraps), and the call's
        arguments, static ones included."""
        fn, args, kwargs = self.forward_call
        return python_function(inspect.unwrap(fn)) if fn is not None else None, args, kwargs

    @property
    def values(self) -> list[values.EquationValue]:
        """What each equation computed (a ``Summary`` per output), in the order they ran."""
        return self.value_run.equations

    @property
    def first_nonfinite(self) -> values.EquationValue | None:
        """The first equation that made a NaN or an inf (with its ``source`` line), or ``None``."""
        return self.value_run.first_nonfinite

    @functools.cached_property
    @own_work()  # computed when first read, maybe long after the trace: never the user's
    def _buffers(self) -> tuple[str, str, int | None, str]:
        """One compile with XLA's buffer assignment written out: the optimized HLO, the dump's
        text, XLA's own peak (where the backend gives one counting temporaries) and the platform."""
        start = time.perf_counter()
        compiled, dumped = peak_memory.compile_with_buffers(self.lowered)
        if "compiled" not in self.__dict__:  # the one compile serves every other view too
            self.__dict__["compiled"] = compiled
            self.compile_seconds = time.perf_counter() - start
        return compiled.as_text(), dumped, xla_peak(compiled), platform(compiled)

    @functools.cached_property
    def _naming(self) -> dict:
        """How the memory views name buffers: cells, the user's names of inputs and constants, and
        the module before XLA's optimizations (where the calls it inlines keep their lines)."""
        return {
            "cell_namer": self.cell_namer,
            "input_names": self.input_names,
            "jaxpr": self.jaxpr,
            "constants": names.captured_names(self.jaxpr, self.callee),
            "output_names": self.output_names,
            "before": self.lowered.as_text(dialect="hlo", debug_info=True),
        }

    @functools.cached_property
    @own_work()  # computed when first read, maybe long after the trace: never the user's
    def peak(self) -> peak_memory.PeakMemory:
        """The compiled program's peak memory and the buffers live there, by source line."""
        hlo_text, dumped, xla, on = self._buffers
        naming = self._naming
        return peak_memory.peak_memory(
            hlo_text, dumped, self.memory, naming["cell_namer"], naming["input_names"], naming["jaxpr"],
            xla_peak=xla, constants=naming["constants"], platform=on, output_names=naming["output_names"],
            before=naming["before"],
        )  # fmt: skip

    @functools.cached_property
    @own_work()  # computed when first read, maybe long after the trace: never the user's
    def residuals(self) -> list[remat.Residual] | None:
        """For ``-t grad`` / ``-t value_and_grad``: what the compiled gradient's backward pass
        keeps from its forward pass, largest first, each with ``bytes``, ``shape``, ``source`` and
        ``label``; ``None`` otherwise."""
        if self.differentiated is None or len(self.differentiated[1]) > 1:
            return None  # under an outer transform the arguments are not the function's own
        hlo_text, dumped, _, _ = self._buffers
        return remat.kept_for_backward(hlo_text, dumped, **self._naming)

    @functools.cached_property
    @own_work()  # computed when first read, maybe long after the trace: never the user's
    def checkpoint_policies(self) -> list[remat.PolicyCost] | None:
        """For ``-t grad`` / ``-t value_and_grad``: each of JAX's checkpoint policies measured by
        compiling the gradient with it (``policy``, ``peak_bytes``, ``flops``, ``code``)."""
        if self.differentiated is None:
            return None
        fn, transforms = self.differentiated
        args, kwargs, _, _ = self.arguments

        def build(wrap):
            wrapped = wrap(fn)
            for t in reversed(transforms):
                wrapped = TRANSFORMS[t](wrapped)
            return jax.jit(wrapped).trace(*args, **kwargs).lower()

        return remat.policy_costs(build, name=self.name.rsplit("(", 1)[-1].rstrip(")"))

    @property
    def peak_bytes(self) -> int:
        """Bytes live at once at the compiled program's peak."""
        return self.peak.peak_bytes

    @property
    def live_at_peak(self) -> list[peak_memory.LiveBuffer]:
        """The buffers live at the peak, largest first: ``bytes``, ``shape``, ``kind``, ``source``."""
        return self.peak.live_at_peak

    def prepare(
        self,
        *,
        values: bool = False,
        memory: bool = False,
        collectives: bool = False,
        stablehlo: bool = False,
        compiled: bool = False,
    ) -> "JaxprReport":
        """Compute now what is named, each otherwise computed when first read, so that a failure
        shows here (as a ``UserCodeError``): ``values`` (``value_run``), ``memory`` (``peak``,
        ``residuals``, ``checkpoint_policies``), ``collectives``, ``stablehlo``, ``compiled``
        (``hlo``, ``cost``, ``memory``). Returns the report."""
        if values:
            try:
                _ = self.value_run, self.derivative_blowup, self.gradient_fix
            except UsageProblem:
                raise
            except Exception as exc:
                raise UserCodeError(exc, during=f"evaluating {self.name} one equation at a time") from None
        try:
            if memory:
                _ = self.peak, self.residuals, self.checkpoint_policies
            if stablehlo:
                _ = self.stablehlo
            if compiled:
                _ = self.hlo, self.cost, self.memory
            if collectives:
                _ = self.collectives
        except Exception as exc:
            raise UserCodeError(exc, during=f"lowering and compiling {self.name}") from None
        return self

    def computed(self, name: str) -> bool:
        """Whether ``name``, one of the attributes computed when first read (``value_run``,
        ``peak``, ``collectives``, ``hlo``, ``cost``, ...), is computed already: reading it now
        costs nothing.

        >>> import jax.numpy as jnp
        >>> report = trace(Call(jnp.sin, (jnp.ones(2),), {}))
        >>> report.computed("value_run"), len(report.values), report.computed("value_run")
        (False, 1, True)
        """
        return name in self.__dict__

    # -- structure ---------------------------------------------------------------------------
    @functools.cached_property
    def primitive_counts(self) -> collections.Counter:
        """Primitive name -> number of equations, nested jaxprs included."""
        return primitive_counts(self.jaxpr)

    @functools.cached_property
    def n_eqns(self) -> int:
        """Number of equations, nested jaxprs included."""
        return count_eqns(self.jaxpr)

    @functools.cached_property
    def source_lines(self) -> dict[int, SourceLine]:
        """Top-level equation index -> the user's source line that produced it (where known)."""
        found = {}
        for record in listing(self.jaxpr, cell_namer=self.cell_namer):
            if record.kind == "eqn" and record.depth == 0 and record.source is not None:
                found[record.path[-1]] = record.source
        return found

    @property
    def in_types(self) -> list[str]:
        return [a.str_short(short_dtypes=True) for a in self.jaxpr.in_avals]

    @property
    def out_types(self) -> list[str]:
        return [a.str_short(short_dtypes=True) for a in self.jaxpr.out_avals]

    def top_primitives(self, n: int = 4) -> list[tuple[str, int]]:
        return self.primitive_counts.most_common(n)

    @property
    def summary(self) -> str:
        """One line: equations, the most frequent primitives, input and output types."""
        eqns = f"{self.n_eqns} equation{'s' * (self.n_eqns != 1)}"
        top = ", ".join(f"{name} ×{count}" for name, count in self.top_primitives())
        ins = folded(self.in_types, ", ", limit=16)
        outs = folded(self.out_types, ", ", limit=16)
        parts = [f"{self.name}: {eqns}"]
        if top:
            parts.append(top)
        parts.append(f"({ins}) -> ({outs})")
        return " · ".join(parts)

    def __repr__(self) -> str:
        return f"<JaxprReport {self.summary}>"


def transformed_name(name: str, transforms: Sequence[str]) -> str:
    """``vmap(grad(f))`` for ``transforms=["vmap", "grad"]``."""
    for t in reversed(transforms):
        name = f"{t}({name})"
    return name


DISPLAY_OPTIONS = ("stage", "show_source", "show_cost", "max_eqns")  # a JaxprView's, not trace()'s


def _refuse_display_options(given: dict[str, Any]) -> None:
    """A clear ``TypeError`` for keywords ``trace`` does not take: for one of how a report is
    shown, where it is given now.

    >>> _refuse_display_options({"stage": "hlo"})
    Traceback (most recent call last):
    TypeError: trace() takes no 'stage': how a report is shown is a JaxprView's: JaxprView(trace(call), stage='hlo')
    """
    name, value = next(iter(given.items()))
    if name in DISPLAY_OPTIONS:
        raise TypeError(
            f"trace() takes no {name!r}: how a report is shown is a JaxprView's: "
            f"JaxprView(trace(call), {name}={value!r})"
        )
    raise TypeError(f"trace() got an unexpected keyword argument {name!r}")


def _cells(cell_namer: CellNamer) -> list[str]:
    """The notebook cells Python's linecache holds (every file a cell namer names), oldest first."""
    import linecache

    return [name for name in list(linecache.cache) if cell_namer(name) is not None]


@own_work()
def trace(
    call: Call,
    *,
    transforms: Sequence[str] = (),
    cell_namer: CellNamer = no_cells,
    profile: int = 0,
    sample_trace: bool = False,
    show_collectives: bool = False,
    show_values: bool = False,
    show_memory: bool = False,
    **asked_view: Any,
) -> JaxprReport:
    """Trace ``call`` (after ``transforms``, outermost first) and return its ``JaxprReport``;
    with ``profile=N``, also run the compiled call N times under the profiler (``report.profile``);
    with ``sample_trace``, sample where tracing spends its time (``report.trace_line_seconds``).
    ``show_values``, ``show_memory`` and ``show_collectives`` compute at once what each equation
    computed (``report.values``), the peak memory (``report.peak``) and the communication
    (``report.collectives``), which the report, shown on its own, then shows; otherwise each is
    computed when first read. How the report is shown otherwise is a ``jaxmagic.JaxprView``."""
    if asked_view:
        _refuse_display_options(asked_view)
    unknown = [t for t in transforms if t not in TRANSFORMS]
    if unknown:
        raise UsageProblem(
            f"unknown transform {unknown[0]!r}; choose from: {', '.join(TRANSFORMS)}.",
            example="%jaxpr -t vmap -t grad f(x)",
        )
    check_traceable(call)
    # NNX traces change the objects they are given, and --profile runs a training step: copies
    users_call, call = call, call_on_nnx_copies(call, copy_arrays=bool(profile))
    if transforms:
        fn, args, kwargs = call.dynamic()
        base = fn
        if not args:
            raise UsageProblem(
                f"-t {transforms[-1]} needs a positional array argument to act on, and "
                f"`{call.source}` has no dynamic positional argument.",
                example="%jaxpr -t grad loss(params, x)",
            )
        for t in reversed(transforms):
            fn = TRANSFORMS[t](fn)
        jitted = jax.jit(fn)
        arguments = (args, kwargs, (), ())
        differentiated = (base, list(transforms)) if transforms[-1] in ("grad", "value_and_grad") else None
    else:
        args, kwargs = call.args, call.kwargs
        jitted = call.jit()
        arguments = (args, kwargs, call.static_argnums, call.static_argnames)
        differentiated = None
    sampling = trace_sampling.sampled_lines() if sample_trace else contextlib.nullcontext()
    try:
        start = time.perf_counter()
        with sampling as samples:
            traced = jitted.trace(*args, **kwargs)
        trace_seconds = time.perf_counter() - start
    except (TypeError, ValueError) as exc:
        problem = transform_problem(exc, transforms, call)
        if problem is not None:
            raise problem from None
        raise UserCodeError(exc, during=f"tracing {call.name}") from None
    except Exception as exc:
        raise UserCodeError(exc, during=f"tracing {call.name}") from None
    report = JaxprReport(
        traced,
        name=transformed_name(names.callee_title(call), transforms),
        cell_namer=cell_namer,
    )
    report.arguments, report.differentiated = arguments, differentiated
    report.forward_call = (call.fn, call.args, call.kwargs)
    report.trace_seconds, report.trace_samples = trace_seconds, samples
    report.asked_out_shardings = None if transforms else call.jit_shardings.get("out_shardings")
    if report.asked_out_shardings is not None:
        request = sharding_request(call.function, report.asked_out_shardings, files=_cells(cell_namer))
        report.sharding_request = request.line(cell_namer) if request is not None else None
    report.input_names = names.input_names(users_call, traced, transforms)
    report.static_arguments = users_call.static_values() if users_call.library is None else []
    report.receiver = users_call.receiver
    report.callee = users_call.fn
    report.output_names = names.output_names(users_call, traced, transforms)
    if profile:
        report.profile = profiling.profile(
            jitted,
            args,
            kwargs,
            name=report.name,
            calls=profile,
            cell_namer=cell_namer,
            copy_arguments=bool(call.donate_argnums or (call.library is not None and call.library.donates)),
            jaxpr=report.jaxpr,
        )
    return report.prepare(values=show_values, memory=show_memory, collectives=show_collectives)
