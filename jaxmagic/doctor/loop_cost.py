"""What a Python loop unrolled under ``jit`` would cost as ``lax.fori_loop``: the user's function
with its ``for i in range(...)`` loop rewritten (``branch_rewrites.fori_rewrite``), checked by value
on the user's arguments (``fix_check``: the rewrite jitted against their function without jit), and
both traced, lowered and compiled from scratch, so that ``%jaxpr --compile-time`` can say what the
loop costs to compile each way, and show the rewrite, only once it gives the same values.

>>> import jax.numpy as jnp
>>> def smooth(x):
...     for i in range(40):
...         x = jnp.sin(x) * 0.5 + i
...     return x
>>> found = fori_alternative(smooth, (jnp.ones(3),), {}, line=smooth.__code__.co_firstlineno + 2)
>>> found.check, found.equations_before > 40 * found.equations_after
('same', True)
>>> print(found.code.splitlines()[-2])
    x = jax.lax.fori_loop(0, 40, loop_body, x)
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import time
from dataclasses import dataclass
from typing import Any

import jax

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.fix_check as fix_check
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.branch_rewrites import fori_rewrite
from jaxmagic.recompiles.programs import line_in_loop
from jaxmagic.tracing import jitting
from jaxmagic.tracing.callables import python_function
from jaxmagic.tracing.sources import SourceLine, source_line

UNROLLED_LEAST = 200  # equations: a program smaller than this compiles quickly however it was written


@dataclass(frozen=True)
class LoopAlternative:
    """The unrolled loop (``loop_line``) rewritten as ``lax.fori_loop`` (``code``: the function),
    with what compiling each took (``seconds_before`` / ``seconds_after``: trace, lower and compile,
    from scratch), their equations, and the check of its values (``check``: ``fix_check``'s outcome;
    ``difference`` where they differ)."""

    loop_line: int
    code: str
    seconds_before: float
    seconds_after: float
    equations_before: int
    equations_after: int
    check: str
    difference: Any = None
    where: SourceLine | None = None  # the loop's line, as the views name it


def _loops_around(function: ast.AST, line: int) -> list[ast.For]:
    """The ``for`` loops of ``function`` that hold ``line``, the outermost first."""
    found = [n for n in ast.walk(function) if isinstance(n, ast.For) and n.lineno <= line <= (n.end_lineno or 0)]
    return sorted(found, key=lambda n: n.lineno)


def _compiled(function: Any, args: tuple, kwargs: dict, statics: dict) -> tuple[float, int]:
    """Seconds to trace, lower and compile ``function`` from scratch, and its equations."""
    start = time.perf_counter()
    with jitting.own_work():
        traced = jax.jit(function, **statics).trace(*args, **kwargs)
        traced.lower().compile()
    return time.perf_counter() - start, len(traced.jaxpr.eqns)


def fori_alternative(
    function: Any, args: tuple, kwargs: dict, *, line: int, static_argnums=(), static_argnames=()
) -> LoopAlternative | None:
    """``function`` (a plain Python function) with the ``for`` loop around ``line`` as
    ``lax.fori_loop``, measured and checked on ``args`` / ``kwargs``; ``None`` where no loop there
    can be rewritten, or the rewrite does not run."""
    located = clues.function_of_code(function.__code__)
    if located is None:
        return None
    parsed, node = located
    lax = rewrites.jax_names(function.__globals__).lax
    rewritten = ((loop, fori_rewrite(loop, node, parsed.lines, lax=lax)) for loop in _loops_around(node, line))
    loop, edit = next(((loop, edit) for loop, edit in rewritten if edit is not None), (None, None))
    if loop is None or edit is None:
        return None
    code = rewrites.definition_with_edits(parsed.lines, node, [edit])
    if lax.split(".")[0] not in function.__globals__:  # the user's code names no jax: the rewrite imports it
        code = f"import jax\n\n{code}"
    call = fix_check.UserCall(globals=function.__globals__, callee_name=function.__name__, args=args, kwargs=kwargs,
                              function=function)  # fmt: skip
    checked = fix_check.check(code, call)
    fixed = fix_check.fixed_function(code, call)
    if checked.outcome not in (fix_check.SAME, fix_check.DIFFERS) or fixed is None:
        return None
    statics = {"static_argnums": static_argnums, "static_argnames": static_argnames}
    before, after = _compiled(function, args, kwargs, statics), _compiled(fixed, args, kwargs, statics)
    return LoopAlternative(loop.lineno, code, before[0], after[0], before[1], after[1], checked.outcome,
                           checked.difference)  # fmt: skip


def unrolled_line(report) -> SourceLine | None:
    """The user's line that made most (over half) of a program of ``UNROLLED_LEAST`` equations or
    more from inside a Python loop of theirs (a ``for`` or ``while`` above it, or a comprehension on
    it): a loop that runs at trace time. A line that made as many through a library's own loop (a
    model's layers) has no loop of the user's to rewrite: ``None``."""
    counts = report.line_counts
    total = sum(counts.values())
    if not counts or total < UNROLLED_LEAST:
        return None
    label, most = next(iter(counts.items()))
    line = next((line for line in report.source_lines.values() if line.label == label), None)
    if most / total < 0.5 or line is None:
        return None
    return line if line_in_loop(line.file, line.line) or " for " in f" {line.text} " else None


def for_report(report) -> LoopAlternative | None:
    """``fori_alternative`` of the report's function at its unrolled line, on the call's arguments
    (none under ``-t`` transforms, whose arguments are not the function's own)."""
    line = unrolled_line(report)
    function = python_function(inspect.unwrap(report.callee)) if report.callee is not None else None
    if line is None or function is None or report.differentiated is not None:
        return None
    args, kwargs, static_argnums, static_argnames = report.arguments
    found = fori_alternative(
        function, args, kwargs, line=line.line, static_argnums=static_argnums, static_argnames=static_argnames
    )
    if found is None:
        return None
    return dataclasses.replace(found, where=source_line(line.file, found.loop_line, "", cell_namer=report.cell_namer))
