"""NumPy inside a jitted function: ``numpy-in-jit`` (a NumPy or SciPy function called on a traced
value raised) and ``numpy-on-traced-value`` (one that happened to work, by handing the work to
the array's own method: a warning).

>>> from jaxmagic.doctor.registry import PITFALLS
>>> PITFALLS["numpy-in-jit"].severity, PITFALLS["numpy-on-traced-value"].severity
('error', 'warning')
"""

from __future__ import annotations

import ast
import os
import types
from dataclasses import dataclass
from typing import Any, Iterator

import jax
import jax.numpy as jnp
import numpy as np

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic import _jax_private
from jaxmagic.doctor.case import Case, depends_on, function_source
from jaxmagic.doctor.clues import MISSING, Span, UserFrame
from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.registry import describes, pitfall
from jaxmagic.doctor.traced_code import Traced, codes, function_node, global_loads, with_edits
from jaxmagic.tracing import sources
from jaxmagic.words import code, names, place, say


def _jnp_path(func_node: ast.AST, frame: UserFrame) -> tuple[str, str] | None:
    """For ``np.linalg.norm``: ``("np.linalg.norm", "linalg.norm")`` when ``jax.numpy`` has it."""
    parts = []
    node = func_node
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    base = frame.lookup(node.id)
    if base is MISSING or not (base is np or getattr(base, "__name__", "").startswith("numpy.")):
        return None
    path = ".".join(reversed(parts))
    target = jnp
    for part in reversed(parts):
        target = getattr(target, part, None)
        if target is None:
            return None
    return ast.unparse(func_node), path


@dataclass(frozen=True)
class NumpyUse:
    """What ``numpy_in_jit`` found: ``numpy`` (a NumPy function called on a traced value), ``indexed``
    (a NumPy array indexed by one) or ``library`` (another library's function converting it), and
    the expression."""

    kind: str
    node: ast.AST


@pitfall("numpy-in-jit", "NumPy called on a traced value", "error", order=40)
def numpy_in_jit(case: Case) -> NumpyUse | None:
    """``numpy-in-jit``: a NumPy (or SciPy) function called on a traced value.

    >>> import jax, jax.numpy as jnp, numpy as np
    >>> from jaxmagic.doctor.case import Case
    >>> def smooth(x):
    ...     return np.exp(x) + 1
    >>> try:
    ...     jax.jit(smooth)(jnp.ones(2))
    ... except TypeError as exc:
    ...     case = Case(exc, None, lambda filename: None)
    >>> found = describe(case, numpy_in_jit(case))
    >>> found.fix.splitlines()[-1].strip()
    'return jnp.exp(x) + 1'
    """
    exc = case.exc
    frame = case.innermost
    if frame is None:
        return None
    conversion = isinstance(exc, jax.errors.TracerArrayConversionError)
    tracer_in_numpy = isinstance(exc, (TypeError, jax.errors.TracerIntegerConversionError)) and "Tracer" in case.message
    if not (conversion or tracer_in_numpy):
        return None
    parsed = case.parsed(frame)
    if parsed is None:
        return None
    indexed = case.expression(frame, ast.Subscript)
    if conversion and isinstance(indexed, ast.Subscript) and isinstance(frame.resolve(indexed.value), np.ndarray):
        return NumpyUse("indexed", indexed)
    call = case.expression(frame, ast.Call)
    if not isinstance(call, ast.Call):
        return None
    if _jnp_path(call.func, frame) is not None:
        return NumpyUse("numpy", call)
    return NumpyUse("library", call) if conversion and _library_module(frame, call) else None


@describes("numpy-in-jit")
def describe(case: Case, found: NumpyUse) -> Diagnosis:
    """The NumPy call made ``jnp`` (every one on the line), the array made a JAX array, or the library
    function replaced by JAX's own (or called outside)."""
    frame = case.innermost
    if found.kind == "indexed":
        return _numpy_array_indexed(case, frame, found.node)
    if found.kind == "library":
        return _library_conversion(case, frame, found.node)
    call = found.node
    parsed = case.parsed(frame)
    written, path = _jnp_path(call.func, frame)
    jn = case.names(frame)
    statement = clues.statement_at(parsed.tree, frame.line)
    edits, replaced = [], []
    for node in clues.nodes_in(statement or call, ast.Call):
        other = _jnp_path(node.func, frame)
        if other is not None:
            edits.append(rewrites.Edit(Span.of(node.func), f"{jn.jnp}.{other[1]}"))
            replaced.append(other[0])
    depends = depends_on(case, frame, call)
    variable = depends[0] if depends else None
    fname = case.function_name or frame.function
    where = case.where(frame)
    settings = _settings_in(case, frame, call)
    use = _jit_decorator(case, frame) if settings else None
    if use is not None:
        # np.split(v, 2, axis) with a traced axis: jnp.split needs the axis as a plain int too
        edits.append(rewrites.add_static_edit(use, settings, parsed.lines, jn.jit))
    rewritten = function_source(case, frame, edits)
    explanation = say(
        "{} is NumPy: it needs real numbers, but inside {} {} is traced, a stand-in with a shape and a dtype and "
        "no values yet, so NumPy cannot read it ({}). {} does the same computation as part of the compiled code.",
        code(written),
        code(fname),
        code(variable) if variable else "its argument",
        place(where),
        code(f"{jn.jnp}.{path}"),
    )
    note = say("Use {} instead of NumPy inside a jitted function", code(jn.jnp))
    note += say(" ({}).", names(dict.fromkeys(replaced))) if replaced else "."
    if use is not None:
        note += say(" {} set an axis or a count, so they are made static.", names(settings))
    return case.diagnosis(
        "numpy-in-jit",
        explanation=explanation,
        fix=rewritten or f"{jn.jnp}.{path}({', '.join(ast.unparse(a) for a in call.args)})",
        fix_note=note,
        where=where,
        variable=variable,
        alternatives=(
            (
                "If you need NumPy itself, call it outside the jitted function, on its result:",
                f"result = {fname}(...)\n{written}(result)",
            ),
        ),
    )


def _settings_in(case: Case, frame: UserFrame, call: ast.Call) -> list[str]:
    """Traced scalar parameters passed to the call after its first argument (an axis, a count)."""
    later = [n for arg in call.args[1:] + [k.value for k in call.keywords] for n in clues.names_in(arg)]
    return case.scalar_arguments(list(dict.fromkeys(later)))


def _jit_decorator(case: Case, frame: UserFrame):
    """The ``jax.jit`` decorator of the traced function, when the user wrote one on it."""
    found = clues.function_of_code(frame.code)
    if found is None or frame is not case.traced_frame:
        return None
    use = rewrites.decorator_jit(found[1], frame.lookup)
    return use if use is not None and use.library != "eqx" else None


def _numpy_array_indexed(case: Case, frame: UserFrame, node: ast.Subscript) -> Diagnosis:
    """``table[i]`` with ``table`` a NumPy array and ``i`` traced: NumPy cannot index with a tracer."""
    jn = case.names(frame)
    table, index = case.text(frame, node.value), case.text(frame, node.slice)
    converted = f"{jn.jnp}.asarray({table})"
    where = case.where(frame)
    depends = depends_on(case, frame, node.slice)
    return case.diagnosis(
        "numpy-in-jit",
        explanation=say(
            "{} ({}) indexes the NumPy array {} with {}, which is traced: NumPy needs a real index, and "
            "while JAX traces {} it has no value yet.",
            code(case.text(frame, node)),
            place(where),
            code(table),
            code(index),
            code(case.function_name or frame.function),
        ),
        fix=function_source(case, frame, [rewrites.Edit(Span.of(node.value), converted)]) or f"{converted}[{index}]",
        fix_note=say("Index a JAX array instead: {} can be indexed by a traced value.", code(converted)),
        where=where,
        variable=depends[0] if depends else None,
    )


def _scipy_equivalent(func: ast.AST, frame: UserFrame) -> str | None:
    """``jax.scipy.signal.convolve`` for ``scipy.signal.convolve`` (or ``signal.convolve``), when JAX has it."""
    parts = []
    node = func
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    base = frame.lookup(node.id) if isinstance(node, ast.Name) else MISSING
    module = getattr(base, "__name__", "") if base is not MISSING else ""
    if not (module == "scipy" or module.startswith("scipy.")):
        return None
    path = module.split(".")[1:] + list(reversed(parts))
    try:
        import jax.scipy as target
    except ImportError:  # pragma: no cover
        return None
    for part in path:
        target = getattr(target, part, None)
        if target is None:
            return None
    return ".".join(["scipy", *path])


def _library_module(frame: UserFrame, call: ast.Call) -> str | None:
    """The module of a non-JAX library function the call makes (SciPy...), ``None`` otherwise."""
    callee = frame.resolve(call.func)
    module = getattr(callee, "__module__", "") or ""
    if callee is MISSING or not module or module.startswith(("jax", "jaxlib")):
        return None
    return module


def _library_conversion(case: Case, frame: UserFrame, call: ast.Call) -> Diagnosis:
    """A library function (SciPy, ...) that turns its argument into a NumPy array."""
    module = _library_module(frame, call)
    written = ast.unparse(call.func)
    fname = case.function_name or frame.function
    jn = case.names(frame)
    equivalent = _scipy_equivalent(call.func, frame)
    alternative = f"{jn.jax}.{equivalent}" if equivalent else None
    depends = depends_on(case, frame, call)
    explanation = say(
        "{} (from {}) turns its input into a NumPy array, which needs real numbers; inside {} its input is traced "
        "and has no values yet ({}).",
        code(written),
        code(module.split(".")[0]),
        code(fname),
        place(case.where(frame)),
    )
    if alternative:
        fix = function_source(case, frame, [rewrites.Edit(Span.of(call.func), alternative)]) or alternative
        note = say("Use JAX's own {}, which traces.", code(alternative))
    else:
        fix = f"result = {fname}(...)   # the jitted part\n{written}(result)   # the NumPy-based part, after it"
        note = say("Call {} outside the jitted function, on arrays with values.", code(written))
    return case.diagnosis(
        "numpy-in-jit",
        explanation=explanation,
        fix=fix,
        fix_note=note,
        where=case.where(frame),
        variable=depends[0] if depends else None,
    )


def _numpy_file(filename: str) -> bool:
    return f"{os.sep}numpy{os.sep}" in filename


def _reads_numpy(function: types.FunctionType) -> bool:
    """True when the function reads a global that is NumPy or comes from it (``np``, ``mean``)."""
    for load in global_loads(function):
        value = function.__globals__.get(load.name)
        module = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", None)
        if value is not None and (
            module == "numpy" or str(module).startswith("numpy.") or type(value).__name__ == "ufunc"
        ):
            return True
    return False


def _numpy_uses(closed_jaxpr: Any) -> Iterator[tuple[str, int, str]]:
    """``(file, line, numpy function)`` for each equation that a NumPy function made from user code."""
    from jaxmagic.tracing.listing import all_equations

    kinds: dict[str, str] = {}  # file name -> "jax", "numpy", "user" or "other", worked out once each

    def kind(filename: str) -> str:
        found = kinds.get(filename)
        if found is None:
            if _jax_private.is_jax_internal_file(filename):
                found = "jax"
            elif _numpy_file(filename):
                found = "numpy"
            else:
                found = "user" if clues.is_user_file(filename) else "other"
            kinds[filename] = found
        return found

    for eqn in all_equations(closed_jaxpr):
        numpy_function = None
        for file, line, function in _jax_private.traceback_frames(eqn.source_info):  # innermost first
            where = kind(file)
            if where == "jax":
                continue
            if where == "numpy":
                numpy_function = function.rsplit(".", 1)[-1]  # the outermost NumPy frame names the call
                continue
            if numpy_function is not None and where == "user":
                yield file, line, numpy_function
            break


@dataclass(frozen=True)
class NumpyOnTracer:
    """What ``numpy_on_tracers`` found: a NumPy call on a traced value, where JAX recorded it."""

    function: types.FunctionType
    located: tuple | None
    parsed: clues.ParsedSource
    call: ast.Call
    np_name: str
    file: str
    line: int


@pitfall("numpy-on-traced-value", "NumPy that worked on a traced value, for now", "warning", stage="trace", order=30)
def numpy_on_tracers(traced: Traced) -> list[NumpyOnTracer]:
    """``numpy-on-traced-value``: NumPy functions that worked on a traced value by handing the work
    to the array's own method, found from the source line JAX recorded for each equation.

    >>> import jax, jax.numpy as jnp, numpy as np
    >>> def f(x):
    ...     return np.mean(x) * x
    >>> traced = Traced([f], jax.make_jaxpr(f)(jnp.ones(2)), None, lambda filename: None)
    >>> (found,) = describe_numpy_on_tracers(traced, numpy_on_tracers(traced))
    >>> found.severity, found.fix.splitlines()[-1].strip()
    ('warning', 'return jnp.mean(x) * x')
    """
    if traced.closed_jaxpr is None or not any(_reads_numpy(function) for function in traced.functions):
        return []  # no NumPy in sight: no need to walk every equation's traceback
    by_file = {}
    for function in traced.functions:
        for code_object in codes(function.__code__):
            by_file.setdefault(code_object.co_filename, function)
    found, seen = [], set()
    for file, line, np_name in _numpy_uses(traced.closed_jaxpr):
        if (file, line, np_name) in seen or file not in by_file:
            continue
        seen.add((file, line, np_name))
        function = by_file[file]
        lookup = rewrites.lookup_in(function.__globals__)
        located = function_node(function)
        parsed = located[0] if located else clues.parse_around(file, line)
        call = None
        if parsed is not None:
            for node in clues.nodes_in(parsed.tree, ast.Call):
                if node.lineno == line and isinstance(node.func, ast.Attribute) and node.func.attr == np_name:
                    base = clues.resolve(node.func.value, lookup)
                    if base is np or getattr(base, "__name__", "").startswith("numpy"):
                        call = node
                        break
        if call is not None and hasattr(jnp, np_name):
            found.append(NumpyOnTracer(function, located, parsed, call, np_name, file, line))
    return found


@describes("numpy-on-traced-value")
def describe_numpy_on_tracers(traced: Traced, found: list[NumpyOnTracer]) -> list[Diagnosis]:
    """Each NumPy call that worked by luck, made the ``jnp`` function of the same name."""
    diagnoses = []
    for use in found:
        function, located, parsed, call, np_name = use.function, use.located, use.parsed, use.call, use.np_name
        jn = rewrites.jax_names(function.__globals__)
        file, line = use.file, use.line
        written = clues.source_of(parsed, call.func)
        where = sources.source_line(file, line, function.__name__, traced.cell_namer)
        fix = with_edits(located, [rewrites.Edit(Span.of(call.func), f"{jn.jnp}.{np_name}")]) if located else None
        diagnoses.append(
            Diagnosis(
                "numpy-on-traced-value",
                explanation=say(
                    "{} ({}) calls NumPy on a traced value. It worked here only because {} hands the work to the array's "
                    "own {} method; most NumPy functions ({}...) fail on traced values, and a change of argument can "
                    "break this one too.",
                    code(clues.source_of(parsed, call)),
                    place(where),
                    code(written),
                    code(f".{np_name}"),
                    names(["np.sin", "np.dot", "np.asarray"]),
                ),
                fix=fix or "",  # no source to rewrite: the fix in words
                fix_note=say(
                    "Use {}: the same result, computed by JAX as part of the compiled code.",
                    code(f"{jn.jnp}.{np_name}"),
                ),
                where=where,
                variable=(clues.names_in(call.args[0]) or [None])[0] if call.args else None,
                function=function.__name__,
            )
        )
    return diagnoses
