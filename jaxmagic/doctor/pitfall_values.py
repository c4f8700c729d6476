"""Traced values asked to be something they are not yet: ``numpy-in-jit`` (NumPy or SciPy called on
one), ``python-scalar-conversion`` (``int()``, ``float()``, ``.item()``, ``math.*``, a Python list
indexed by one), and ``print-side-effect`` when formatting one in ``print`` / logging raises.
"""

from __future__ import annotations

import ast

import jax

from jaxmagic.doctor import clues, rewrites
from jaxmagic.doctor.clues import MISSING, Span, UserFrame
from jaxmagic.doctor import Diagnosis
from jaxmagic.doctor.pitfalls import Case, cell_of, depends_on, function_source, plural, static_fix


# numpy-in-jit


def _jnp_path(func_node: ast.AST, frame: UserFrame) -> tuple[str, str] | None:
    """For ``np.linalg.norm``: ``("np.linalg.norm", "linalg.norm")`` when ``jax.numpy`` has it."""
    import jax.numpy as jnp

    parts = []
    node = func_node
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    base = frame.lookup(node.id)
    import numpy

    if base is MISSING or not (base is numpy or getattr(base, "__name__", "").startswith("numpy.")):
        return None
    path = ".".join(reversed(parts))
    target = jnp
    for part in reversed(parts):
        target = getattr(target, part, None)
        if target is None:
            return None
    return ast.unparse(func_node), path


def numpy_in_jit(case: Case) -> Diagnosis | None:
    """``numpy-in-jit``: a NumPy (or SciPy) function called on a traced value.

    >>> import jax, jax.numpy as jnp, numpy as np
    >>> from jaxmagic.doctor.pitfalls import Case
    >>> def smooth(x):
    ...     return np.exp(x) + 1
    >>> try:
    ...     jax.jit(smooth)(jnp.ones(2))
    ... except TypeError as exc:
    ...     found = numpy_in_jit(Case(exc, None, lambda filename: None))
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
    call = case.expression(frame, ast.Call)
    if parsed is None or not isinstance(call, ast.Call):
        return None
    np_func = _jnp_path(call.func, frame)
    if np_func is None:
        return _library_conversion(case, frame, call) if conversion else None
    written, path = np_func
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
    code = function_source(case, frame, edits)
    traced = f"`{variable}`" if variable else "its argument"
    explanation = (
        f"`{written}` is NumPy: it needs real numbers, but inside `{fname}` {traced} is traced, a stand-in "
        f"with a shape and a dtype and no values yet, so NumPy cannot read it ({cell_of(where)}). "
        f"`{jn.jnp}.{path}` does the same computation as part of the compiled code."
    )
    return case.diagnosis(
        "numpy-in-jit",
        explanation=explanation,
        fix=code or f"{jn.jnp}.{path}({', '.join(ast.unparse(a) for a in call.args)})",
        fix_note=f"Use `{jn.jnp}` instead of NumPy inside a jitted function" + (f" ({', '.join(f'`{r}`' for r in dict.fromkeys(replaced))})." if replaced else "."),
        where=where,
        variable=variable,
        alternatives=(("If you need NumPy itself, call it outside the jitted function, on its result:", f"result = {fname}(...)\n{written}(result)"),),
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


def _library_conversion(case: Case, frame: UserFrame, call: ast.Call) -> Diagnosis | None:
    """A library function (SciPy, ...) that turns its argument into a NumPy array."""
    callee = frame.resolve(call.func)
    module = getattr(callee, "__module__", "") or ""
    if callee is MISSING or not module or module.startswith(("jax", "jaxlib")):
        return None
    written = ast.unparse(call.func)
    fname = case.function_name or frame.function
    jn = case.names(frame)
    equivalent = _scipy_equivalent(call.func, frame)
    alternative = f"{jn.jax}.{equivalent}" if equivalent else None
    depends = depends_on(case, frame, call)
    explanation = (
        f"`{written}` (from `{module.split('.')[0]}`) turns its input into a NumPy array, which needs real "
        f"numbers; inside `{fname}` its input is traced and has no values yet ({cell_of(case.where(frame))})."
    )
    if alternative:
        fix = function_source(case, frame, [rewrites.Edit(Span.of(call.func), alternative)]) or alternative
        note = f"Use JAX's own `{alternative}`, which traces."
    else:
        fix = f"result = {fname}(...)   # the jitted part\n{written}(result)   # the NumPy-based part, after it"
        note = f"Call `{written}` outside the jitted function, on arrays with values."
    return case.diagnosis(
        "numpy-in-jit",
        explanation=explanation,
        fix=fix,
        fix_note=note,
        where=case.where(frame),
        variable=depends[0] if depends else None,
    )


# ------------------------------------------------------------------------------------------------

# python-scalar-conversion


def _later_slice_by(case: Case, frame: UserFrame, conversion: ast.AST):
    """For ``k = int(...)``: the first later ``x[:k]`` (and its statement) in the same function."""
    parsed = case.parsed(frame)
    found = clues.function_of_code(frame.code)
    statement = clues.statement_at(parsed.tree, frame.line) if parsed else None
    if found is None or not isinstance(statement, ast.Assign) or statement.value is not conversion:
        return None
    if len(statement.targets) != 1 or not isinstance(statement.targets[0], ast.Name):
        return None
    name = statement.targets[0].id
    function = found[1]
    for node in sorted(clues.nodes_in(function, ast.Subscript), key=lambda n: (n.lineno, n.col_offset)):
        if node.lineno <= statement.end_lineno or not isinstance(node.slice, ast.Slice):
            continue
        bounds = [b for b in (node.slice.lower, node.slice.upper) if b is not None]
        if any(name in clues.names_in(b) for b in bounds):
            later = clues.statement_at(function, node.lineno)
            return (node, later) if later is not None else None
    return None


def _math_function(node: ast.AST, frame: UserFrame) -> str | None:
    """``"sqrt"`` for a call of ``math.sqrt`` (when ``jax.numpy`` has a ``sqrt``)."""
    import math

    import jax.numpy as jnp

    if not isinstance(node, ast.Call):
        return None
    callee = frame.resolve(node.func)
    name = getattr(callee, "__name__", "")
    if callee is MISSING or getattr(math, name, None) is not callee or not hasattr(jnp, name):
        return None
    return name


def python_scalar_conversion(case: Case) -> Diagnosis | None:
    """``python-scalar-conversion``: ``int()``, ``float()``, ``.item()``, ``math.*`` on a traced value,
    or a Python list indexed by one.

    >>> import jax, jax.numpy as jnp
    >>> from jaxmagic.doctor.pitfalls import Case
    >>> def mean(x):
    ...     return x.sum().item() / 2
    >>> try:
    ...     jax.jit(mean)(jnp.ones(2))
    ... except TypeError as exc:
    ...     found = python_scalar_conversion(Case(exc, None, lambda filename: None))
    >>> found.fix.splitlines()[-1].strip()
    'return x.sum() / 2'
    """
    exc = case.exc
    frame = case.innermost
    if frame is None or isinstance(exc, jax.errors.TracerBoolConversionError):
        return None
    if not isinstance(exc, (jax.errors.ConcretizationTypeError, jax.errors.TracerIntegerConversionError)):
        return None
    node = case.expression(frame)
    if node is None:
        return None
    jn = case.names(frame)
    math_function = _math_function(node, frame)
    if math_function is not None:
        # math.sqrt(x) -> jnp.sqrt(x): math works on Python floats only.
        value_node = node.args[0] if node.args else node
        edit, shown = rewrites.Edit(Span.of(node.func), f"{jn.jnp}.{math_function}"), case.text(frame, node)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("int", "float", "complex") and node.args:
        # float(loss) -> loss.astype(float): the same number, still an array the compiled code computes.
        value_node = node.args[0]
        inner = case.text(frame, value_node)
        atomic = isinstance(value_node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript))
        target = node.func.id
        new = f"{inner}.astype({target})" if atomic else f"{jn.jnp}.asarray({inner}, dtype={target})"
        edit, shown = rewrites.Edit(Span.of(node), new), f"{target}({inner})"
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("item", "tolist") and not node.args:
        value_node = node.func.value
        inner = case.text(frame, value_node)
        edit, shown = rewrites.Edit(Span.of(node), inner), f"{inner}.{node.func.attr}()"
    elif isinstance(node, ast.Subscript) and isinstance(exc, jax.errors.TracerIntegerConversionError):
        # weights[i] on a Python list: one stacked array can be indexed by a traced i.
        container = frame.resolve(node.value) if isinstance(node.value, (ast.Name, ast.Attribute)) else MISSING
        if not isinstance(container, (list, tuple)):
            return None
        value_node = node.slice
        seq, index = case.text(frame, node.value), case.text(frame, node.slice)
        edit, shown = rewrites.Edit(Span.of(node.value), f"{jn.jnp}.asarray({seq})"), f"{seq}[{index}]"
    else:
        return None
    edits = [edit]
    size_use = _later_slice_by(case, frame, node)
    if size_use is not None:
        # k = int(x.sum()); x[:k]: a length from the data cannot be compiled; mask to it instead.
        from jaxmagic.doctor.pitfall_shapes import mask_edits

        sliced, statement = size_use
        masked = mask_edits(case, frame, sliced, statement, jn)
        if masked:
            edits += masked
    depends = depends_on(case, frame, value_node)
    variable = depends[0] if depends else None
    fname = case.function_name or frame.function
    where = case.where(frame)
    if isinstance(node, ast.Subscript):
        what = (f"`{shown}` ({cell_of(where)}) indexes a Python {type(frame.resolve(node.value)).__name__} with a traced index: Python needs "
                f"a real int to pick an element, and while JAX traces `{fname}` the index has no value yet.")
        note = f"Turn the {type(frame.resolve(node.value)).__name__} into one array, which a traced index can index."
    elif math_function is not None:
        what = (f"`{shown}` ({cell_of(where)}) uses Python's `math`, which works on plain Python numbers only; "
                f"while JAX traces `{fname}`, `{case.text(frame, value_node)}` is traced and has no value yet.")
        note = f"Use `{jn.jnp}.{math_function}`, which computes the same inside the compiled code."
    else:
        what = (f"`{shown}` ({cell_of(where)}) asks for a plain Python number, but while JAX traces `{fname}` "
                f"`{case.text(frame, value_node)}` is traced and has no value yet, only a shape and a dtype.")
        note = "Keep it a JAX array: arithmetic works on it as is, inside the compiled code."
    alternatives = []
    static_names = case.scalar_arguments(depends)
    if static_names:
        code = static_fix(case, static_names)
        if code:
            alternatives.append((f"If you need a real Python number (a loop count, a shape), mark {plural(static_names)} static:", code))
    elif not isinstance(node, ast.Subscript) and math_function is None:
        alternatives.append(("If you need it as a Python number (a loop count, a shape), it cannot come from traced "
                             "data: XLA compiles for fixed shapes. Use a fixed maximum size and mask what is past it.", ""))
    alternatives.append(("To see the value while it runs, print it from the compiled code:", f'{jn.jax}.debug.print("{{}}", {case.text(frame, value_node)})'))
    return case.diagnosis(
        "python-scalar-conversion",
        explanation=what,
        fix=function_source(case, frame, edits) or edit.text,
        fix_note=note if len(edits) == 1 else (
            note + " It is then used as a length: a length computed from the data cannot be compiled "
            "(XLA compiles for fixed shapes), so the slice keeps its full length and masks the rest."),
        alternatives=tuple(alternatives),
        where=where,
        variable=variable,
    )


# ------------------------------------------------------------------------------------------------

# print-side-effect, as an error: a format spec on a traced value


def formatted_print(case: Case) -> Diagnosis | None:
    """``print(f"{loss:.3f}")`` (or a logging call) inside a jitted function: a traced value
    cannot be formatted as a number, and the call would run only while tracing anyway.

    >>> import jax, jax.numpy as jnp
    >>> from jaxmagic.doctor.pitfalls import Case
    >>> def show(x):
    ...     print(f"sum {x.sum():.2f}")
    ...     return x
    >>> try:
    ...     jax.jit(show)(jnp.ones(2))
    ... except TypeError as exc:
    ...     found = formatted_print(Case(exc, None, lambda filename: None))
    >>> found.fix.splitlines()[1].strip()
    'jax.debug.print("sum {:.2f}", x.sum())'
    """
    if not (isinstance(case.exc, TypeError) and "unsupported format string passed to" in case.message and "Tracer" in case.message):
        return None
    frame = case.innermost
    parsed = case.parsed(frame) if frame is not None else None
    node = case.expression(frame) if parsed is not None else None
    if node is None:
        return None
    joined = node if isinstance(node, ast.JoinedStr) else clues.enclosing(parsed.tree, node, ast.JoinedStr)
    call = node if isinstance(node, ast.Call) else clues.enclosing(parsed.tree, node, ast.Call)
    if joined is None or call is None:
        return None
    from jaxmagic.doctor.trace_checks import debug_print_call

    jn = case.names(frame)
    is_print = isinstance(call.func, ast.Name) and call.func.id == "print"
    shaped = call if is_print else ast.Call(func=ast.Name("print"), args=[joined], keywords=[])
    replacement = debug_print_call(shaped, parsed, jn.jax)
    if replacement is None:
        return None
    fname = case.function_name or frame.function
    where = case.where(frame)
    variable = next((n for n in clues.names_in(joined) if clues.is_tracer(frame.lookup(n))), None)
    written = "print" if is_print else ast.unparse(call.func)
    alternatives = () if is_print else (
        (f"To keep `{written}`, call it outside the jitted function, on the values it returns.", ""),)
    return case.diagnosis(
        "print-side-effect",
        severity="error",
        explanation=(
            f"`{written}` in `{fname}` ({cell_of(where)}) runs while JAX traces `{fname}`, when "
            f"`{variable or 'the value'}` is a tracer, a stand-in with no value yet, so it cannot be "
            f"formatted as a number. (Plain Python like this would run only at trace time anyway, "
            f"not on each call.)"
        ),
        fix=function_source(case, frame, [rewrites.Edit(Span.of(call), replacement)]) or replacement,
        fix_note=f"`{jn.jax}.debug.print` formats the real value, inside the compiled code, on every call.",
        alternatives=alternatives,
        where=where,
        variable=variable,
    )
