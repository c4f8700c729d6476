"""Warnings about functions that traced fine but will not do what they seem to: ``print`` that
runs only while JAX traces (``print-side-effect``), globals baked into the compiled code
(``baked-global``), NumPy functions that happened to work on traced values (``numpy-in-jit``).

They are read from the function's bytecode (which globals it loads, whether it calls ``print``),
from what it printed while traced, and from the source lines JAX recorded for each equation.
"""

from __future__ import annotations

import ast
import builtins
import dis
import numbers
import os
import re
import types
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from jaxmagic import _jax_private, sources

from jaxmagic.doctor import clues, rewrites
from jaxmagic.doctor.clues import Span
from jaxmagic.doctor import Diagnosis
from jaxmagic.sources import CellNamer

MAX_FUNCTIONS = 20  # user functions followed from the traced one (helpers it calls)
MAX_PRINT_WARNINGS = 3
_TRACER_TEXT = re.compile(r"(?:\w*Tracer\([^)]*\)|Traced<[^>]*>(?:with<\w+>)?)")


@dataclass(frozen=True)
class Load:
    """One place a function reads a global name: which function, which code object, which line.

    >>> scale = 2.0
    >>> def f(x):
    ...     return x * scale
    >>> [(load.name, load.line) for load in _global_loads(f)]
    [('scale', 2)]
    """

    function: types.FunctionType
    code: types.CodeType
    name: str
    line: int


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def _global_loads(function: types.FunctionType) -> Iterator[Load]:
    for code in _codes(function.__code__):
        for instruction in dis.get_instructions(code):
            if instruction.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
                line = instruction.positions.lineno if instruction.positions else None
                yield Load(function, code, instruction.argval, line or code.co_firstlineno)


def user_functions(fn: Any) -> list[types.FunctionType]:
    """The traced function and the user's own functions it reads as globals (its helpers).

    >>> def helper(x):
    ...     return x + 1
    >>> def f(x):
    ...     return helper(x) * 2
    >>> [g.__name__ for g in user_functions(f)]
    ['f', 'helper']
    """
    first = rewrites.python_function(fn)
    if first is None:
        return []
    found, queue = [first], [first]
    while queue and len(found) < MAX_FUNCTIONS:
        current = queue.pop(0)
        for load in _global_loads(current):
            value = current.__globals__.get(load.name)
            helper = rewrites.python_function(value) if value is not None and callable(value) else None
            if (
                isinstance(helper, types.FunctionType)
                and helper not in found
                and clues.is_user_file(helper.__code__.co_filename)
            ):
                found.append(helper)
                queue.append(helper)
    return found


def observe(fn: Any, closed_jaxpr: Any, printed_text: str | None, cell_namer: CellNamer) -> list[Diagnosis]:
    """Every trace-time warning for ``fn`` and its helpers (``doctor.observe_trace`` calls it).

    >>> def f(x):
    ...     print(x)
    ...     return x
    >>> [d.pitfall for d in observe(f, None, "JitTracer(float32[2])", lambda filename: None)]
    ['print-side-effect']
    """
    functions = user_functions(fn)
    found: list[Diagnosis] = []
    found += print_side_effects(functions, printed_text, cell_namer)
    found += baked_globals(functions, closed_jaxpr, cell_namer)
    if closed_jaxpr is not None:
        found += numpy_on_tracers(functions, closed_jaxpr, cell_namer)
    return found


def _function_node(function: types.FunctionType):
    found = clues.function_of_code(function.__code__)
    if found is None or not isinstance(found[1], (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return None
    return found


def _with_edits(found, edits) -> str | None:
    if found is None:
        return None
    parsed, node = found
    if isinstance(node, ast.Lambda):
        return None
    return rewrites.with_edits(parsed.lines, rewrites.function_first_line(node), node.end_lineno, edits)


# ------------------------------------------------------------------------------------------------
# print-side-effect


def debug_print_call(call: ast.Call, parsed: clues.ParsedSource, jax_name: str) -> str | None:
    """``print(f"loss {loss:.3f}")`` -> ``jax.debug.print("loss {:.3f}", loss)``.

    >>> tree = ast.parse('print(f"Loss: {loss}", step)')
    >>> source = clues.ParsedSource("<demo>", ('print(f"Loss: {loss}", step)',), tree)
    >>> debug_print_call(tree.body[0].value, source, "jax")
    'jax.debug.print("Loss: {} {}", loss, step)'
    """
    separator = " "
    for keyword in call.keywords:
        if keyword.arg == "sep" and isinstance(keyword.value, ast.Constant) and isinstance(keyword.value.value, str):
            separator = keyword.value.value
        elif keyword.arg not in ("end", "flush", "file", "sep"):
            return None
    pieces, arguments = [], []
    for arg in call.args:
        if isinstance(arg, ast.Starred):
            return None
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            pieces.append(_escape_braces(arg.value))
        elif isinstance(arg, ast.JoinedStr):
            text = []
            for part in arg.values:
                if isinstance(part, ast.Constant):
                    text.append(_escape_braces(str(part.value)))
                elif isinstance(part, ast.FormattedValue):
                    conversion = {115: "!s", 114: "!r", 97: "!a"}.get(part.conversion, "")
                    spec = ""
                    if part.format_spec is not None:
                        if not all(isinstance(v, ast.Constant) for v in part.format_spec.values):
                            return None
                        spec = ":" + "".join(str(v.value) for v in part.format_spec.values)
                    text.append("{" + conversion + spec + "}")
                    arguments.append(clues.source_of(parsed, part.value))
            pieces.append("".join(text))
        else:
            pieces.append("{}")
            arguments.append(clues.source_of(parsed, arg))
    template = separator.join(pieces).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'{jax_name}.debug.print("{template}"{"".join(", " + a for a in arguments)})'


def _escape_braces(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def print_side_effects(functions, printed_text: str | None, cell_namer: CellNamer) -> list[Diagnosis]:
    """``print-side-effect``: each ``print`` call in the functions (at most ``MAX_PRINT_WARNINGS``).

    ``printed_text`` (what the trace printed) is quoted when it shows a tracer.

    >>> def f(x):
    ...     print("x is", x)
    ...     return x
    >>> (found,) = print_side_effects([f], "x is JitTracer(float32[2])", lambda filename: None)
    >>> found.fix.splitlines()[1].strip()
    'jax.debug.print("x is {}", x)'
    """
    found = []
    tracers = _TRACER_TEXT.findall(printed_text or "")
    printed_lines = [line for line in (printed_text or "").splitlines() if _TRACER_TEXT.search(line)]
    for function in functions:
        if function.__globals__.get("print", builtins.print) is not builtins.print:
            continue  # ``print`` means something else here (e.g. jax.debug.print imported as print)
        loads = [load for load in _global_loads(function) if load.name == "print"]
        if not loads:
            continue
        located = _function_node(function)
        jn = rewrites.jax_names(function.__globals__)
        for load in loads:
            if len(found) >= MAX_PRINT_WARNINGS:
                return found
            where = sources.source_line(function.__code__.co_filename, load.line, load.code.co_name, cell_namer)
            call = _print_call_at(located, load.line) if located else None
            replacement = debug_print_call(call, located[0], jn.jax) if call is not None else None
            fix = _with_edits(located, [rewrites.Edit(Span.of(call), replacement)]) if replacement else None
            fix = fix or f'{jn.jax}.debug.print("value: {{}}", value)'
            name = function.__name__
            explanation = (
                f"`print` in `{name}` ({where.label}) is plain Python: it runs while JAX traces `{name}` "
                f"(the first call for each new input shape or dtype), not each time the compiled code runs."
            )
            if printed_lines:
                explanation += (
                    f" What it printed, `{printed_lines[0].strip()}`, is a tracer: a stand-in for your "
                    f"values, which do not exist yet at that point."
                )
            elif tracers:
                explanation += " What it printed were tracers, stand-ins for values that do not exist yet."
            else:
                explanation += " Any traced value it prints is a stand-in (a tracer), not a number."
            found.append(Diagnosis(
                "print-side-effect",
                explanation=explanation,
                fix=fix,
                fix_note=f"`{jn.jax}.debug.print` runs inside the compiled code, on every call, with the real values.",
                where=where,
                variable=_printed_name(call),
                function=name,
                alternatives=(("Or print outside, on the result the jitted function returns:", f"result = {name}(...)\nprint(result)"),),
            ))
    return found


def _print_call_at(located, line: int) -> ast.Call | None:
    parsed, node = located
    for call in clues.nodes_in(node, ast.Call):
        if isinstance(call.func, ast.Name) and call.func.id == "print" and call.lineno <= line <= call.end_lineno:
            return call
    return None


def _printed_name(call: ast.Call | None) -> str | None:
    if call is None:
        return None
    for arg in call.args:
        names = clues.names_in(arg)
        if names:
            return names[0]
    return None


# ------------------------------------------------------------------------------------------------
# baked-global


def _is_baked_value(name: str, value: Any) -> bool:
    import jax

    if isinstance(value, jax.Array):
        return not clues.is_tracer(value)
    if isinstance(value, np.ndarray):
        return True
    if isinstance(value, (numbers.Number, np.generic)) and not isinstance(value, bool):
        # Names in capitals are constants by convention: meant never to change.
        return not (name.isupper() or (name.upper() == name and "_" in name))
    return False


def _array_leaves(value: Any) -> list | None:
    """The arrays of a global pytree of arrays (a dict of parameters, say); ``None`` for anything else."""
    import jax

    if not isinstance(value, (dict, list, tuple)) or not value:
        return None
    try:
        leaves = jax.tree_util.tree_leaves(value)
    except Exception:
        return None
    if not leaves or not all(isinstance(leaf, (jax.Array, np.ndarray, numbers.Number, np.generic)) for leaf in leaves):
        return None
    arrays = [leaf for leaf in leaves if isinstance(leaf, (jax.Array, np.ndarray))]
    return arrays or None


def _constant_ids(closed_jaxpr: Any) -> set[int] | None:
    consts = getattr(closed_jaxpr, "consts", None)
    if consts is None:
        return None
    return {id(c) for c in consts}


def _describe(value: Any) -> str:
    arrays = _array_leaves(value)
    if arrays is not None:
        return f"a {type(value).__name__} of {len(arrays)} array{'s' * (len(arrays) != 1)}"
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is not None and dtype is not None and shape != ():
        return f"a {dtype}{list(shape)} array"
    text = repr(value.item() if hasattr(value, "item") and shape == () else value)
    return text if len(text) <= 40 else text[:39] + "…"


def baked_globals(functions, closed_jaxpr: Any, cell_namer: CellNamer) -> list[Diagnosis]:
    """``baked-global``: global numbers and arrays a function reads (one warning per function).

    A JAX array is reported only when ``closed_jaxpr`` holds it as a constant (read for its
    shape alone, it is not compiled in); names in capitals are constants by convention.

    >>> rate, EPSILON = 0.1, 1e-6
    >>> def step(x):
    ...     return x * rate + EPSILON
    >>> (found,) = baked_globals([step], None, lambda filename: None)
    >>> found.variable, found.fix.splitlines()[0]
    ('rate', 'def step(x, rate):')
    """
    import jax

    constant_ids = _constant_ids(closed_jaxpr)
    found = []
    for function in functions:
        seen: dict[str, Load] = {}
        for load in _global_loads(function):
            if load.name in seen or load.name not in function.__globals__:
                continue
            value = function.__globals__[load.name]
            arrays = _array_leaves(value)
            if arrays is not None:
                jax_arrays = [a for a in arrays if isinstance(a, jax.Array)]
                if constant_ids is not None and jax_arrays and not any(id(a) in constant_ids for a in jax_arrays):
                    continue  # none of its arrays is in the compiled code
            elif not _is_baked_value(load.name, value):
                continue
            elif isinstance(value, jax.Array) and constant_ids is not None and id(value) not in constant_ids:
                continue  # read for its shape only, say: not in the compiled code
            seen[load.name] = load
        if not seen:
            continue
        names = list(seen)
        first = seen[names[0]]
        where = sources.source_line(function.__code__.co_filename, first.line, first.code.co_name, cell_namer)
        name = function.__name__
        described = ", ".join(f"`{n}` ({_describe(function.__globals__[n])})" for n in names)
        sample = names[0]
        explanation = (
            f"`{name}` reads the global{'s' if len(names) > 1 else ''} {described} at {where.label}. JAX reads a "
            f"global once, while it traces `{name}`, and compiles its value in as a constant: if you later "
            f"assign `{sample}` a new value, the compiled `{name}` keeps using the old one (until it happens "
            f"to be traced again)."
        )
        if any(getattr(function.__globals__[n], "size", 0) > 1 or _array_leaves(function.__globals__[n]) for n in names):
            explanation += " A large array compiled in as a constant also makes compiling slower and the program bigger."
        fix = _as_parameters(function, names)
        found.append(Diagnosis(
            "baked-global",
            explanation=explanation,
            fix=fix or f"def {name}(..., {', '.join(names)}):\n    ...\n\n{name}(..., {', '.join(names)})",
            fix_note=f"Pass {'them' if len(names) > 1 else 'it'} as {'arguments' if len(names) > 1 else 'an argument'}: each call then uses the current value.",
            where=where,
            variable=sample,
            function=name,
        ))
    return found


def _as_parameters(function: types.FunctionType, names: list[str]) -> str | None:
    located = _function_node(function)
    if located is None or isinstance(located[1], ast.Lambda):
        return None
    parsed, node = located
    args = node.args
    if args.defaults or args.kw_defaults or args.vararg or args.kwonlyargs or args.kwarg:
        return None
    added = ", ".join(names)
    if args.posonlyargs or args.args:
        last = (args.posonlyargs + args.args)[-1]
        edit = rewrites.Edit(Span(last.end_lineno, last.end_lineno, last.end_col_offset, last.end_col_offset), f", {added}")
    else:
        # ``def f():``: the parameters go between the parentheses right after the name.
        line = parsed.lines[node.lineno - 1]
        raw = line.encode()
        at = raw.find(b"(", node.col_offset)
        if at < 0:
            return None
        edit = rewrites.Edit(Span(node.lineno, node.lineno, at + 1, at + 1), added)
    params = [a.arg for a in args.posonlyargs + args.args] + names
    text = rewrites.with_edits(parsed.lines, rewrites.function_first_line(node), node.end_lineno, [edit])
    return f"{text}\n\n# call it with the current values:  {node.name}({', '.join(params)})"


# ------------------------------------------------------------------------------------------------
# numpy-in-jit, found in the jaxpr


def _numpy_file(filename: str) -> bool:
    return f"{os.sep}numpy{os.sep}" in filename


def _reads_numpy(function: types.FunctionType) -> bool:
    """True when the function reads a global that is NumPy or comes from it (``np``, ``mean``)."""
    for load in _global_loads(function):
        value = function.__globals__.get(load.name)
        module = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", None)
        if value is not None and (module == "numpy" or str(module).startswith("numpy.") or type(value).__name__ == "ufunc"):
            return True
    return False


def _numpy_uses(closed_jaxpr: Any) -> Iterator[tuple[str, int, str]]:
    """``(file, line, numpy function)`` for each equation that a NumPy function made from user code."""
    from jaxmagic.listing import sub_jaxprs

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

    stack = [getattr(closed_jaxpr, "jaxpr", closed_jaxpr)]
    while stack:
        jaxpr = stack.pop()
        for eqn in jaxpr.eqns:
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
            stack.extend(getattr(j, "jaxpr", j) for _, j in sub_jaxprs(eqn.params))


def numpy_on_tracers(functions, closed_jaxpr: Any, cell_namer: CellNamer) -> list[Diagnosis]:
    """``numpy-in-jit`` warnings: NumPy functions that worked on a traced value by handing the work
    to the array's own method, found from the source line JAX recorded for each equation.

    >>> import jax, jax.numpy as jnp, numpy as np
    >>> def f(x):
    ...     return np.mean(x) * x
    >>> (found,) = numpy_on_tracers([f], jax.make_jaxpr(f)(jnp.ones(2)), lambda filename: None)
    >>> found.severity, found.fix.splitlines()[-1].strip()
    ('warning', 'return jnp.mean(x) * x')
    """
    import jax.numpy as jnp

    if not any(_reads_numpy(function) for function in functions):
        return []  # no NumPy in sight: no need to walk every equation's traceback
    by_file = {}
    for function in functions:
        for code in _codes(function.__code__):
            by_file.setdefault(code.co_filename, function)
    found, seen = [], set()
    for file, line, np_name in _numpy_uses(closed_jaxpr):
        if (file, line, np_name) in seen or file not in by_file:
            continue
        seen.add((file, line, np_name))
        function = by_file[file]
        lookup = rewrites.lookup_in(function.__globals__)
        jn = rewrites.jax_names(function.__globals__)
        located = _function_node(function)
        parsed = located[0] if located else clues.parse_around(file, line)
        call = None
        if parsed is not None:
            for node in clues.nodes_in(parsed.tree, ast.Call):
                if node.lineno == line and isinstance(node.func, ast.Attribute) and node.func.attr == np_name:
                    base = clues.resolve(node.func.value, lookup)
                    if base is np or getattr(base, "__name__", "").startswith("numpy"):
                        call = node
                        break
        if call is None or not hasattr(jnp, np_name):
            continue
        written = clues.source_of(parsed, call.func)
        where = sources.source_line(file, line, function.__name__, cell_namer)
        fix = _with_edits(located, [rewrites.Edit(Span.of(call.func), f"{jn.jnp}.{np_name}")]) if located else None
        found.append(Diagnosis(
            "numpy-in-jit",
            explanation=(
                f"`{clues.source_of(parsed, call)}` ({where.label}) calls NumPy on a traced value. It worked here "
                f"only because `{written}` hands the work to the array's own `.{np_name}` method; most NumPy "
                f"functions (`np.sin`, `np.dot`, `np.asarray`...) fail on traced values, and a change of "
                f"argument can break this one too."
            ),
            fix=fix or f"{jn.jnp}.{np_name}(...)",
            fix_note=f"Use `{jn.jnp}.{np_name}`: the same result, computed by JAX as part of the compiled code.",
            where=where,
            variable=(clues.names_in(call.args[0]) or [None])[0] if call.args else None,
            function=function.__name__,
            severity="warning",
        ))
    return found
