"""``traced-shape``: a size, slice bound, ``range()`` count or boolean mask that depends on a traced
value. Fixes: a static argument, ``jax.lax.fori_loop``, padding + mask, ``lax.dynamic_slice_in_dim``,
a fixed ``size=``.
"""

from __future__ import annotations

import ast

import jax

from jaxmagic.doctor import branch_rewrites, clues, rewrites
from jaxmagic.doctor.clues import MISSING, Span, UserFrame
from jaxmagic.doctor import Diagnosis
from jaxmagic.doctor.pitfalls import Case, cell_of, depends_on, function_source, magic_hint, plural, static_fix


# traced-shape


_SHAPE_MESSAGES = (
    "Slice entries must be static integers",
    "Array slice indices must have static start/stop/step",
    "Shapes must be 1D sequences of concrete values of integer type",
    "must be statically specified",
    "argument of jnp.",
    "argument of jax.numpy.",
    "arose in the jnp.",
    "for the first argument of jnp.",
)


def traced_shape(case: Case) -> Diagnosis | None:
    """``traced-shape``: a size, slice bound, ``range()`` count or mask from a traced value.

    >>> import jax, jax.numpy as jnp
    >>> from jaxmagic.doctor.pitfalls import Case
    >>> def zeros_like_n(x, n):
    ...     return jnp.zeros(n)
    >>> try:
    ...     jax.jit(zeros_like_n)(jnp.ones(2), 3)
    ... except TypeError as exc:
    ...     found = traced_shape(Case(exc, None, lambda filename: None))
    >>> found.pitfall, found.variable, found.static_argnames
    ('traced-shape', 'n', ('n',))
    """
    exc = case.exc
    frame = case.innermost
    if frame is None:
        return None
    boolean_mask = isinstance(exc, jax.errors.NonConcreteBooleanIndexError)
    index_call = isinstance(exc, jax.errors.TracerIntegerConversionError)
    by_message = isinstance(exc, (TypeError, IndexError)) and any(m in case.message for m in _SHAPE_MESSAGES)
    if not (boolean_mask or index_call or by_message):
        return None
    parsed = case.parsed(frame)
    if parsed is None:
        return None
    node = case.expression(frame)
    statement = clues.statement_at(parsed.tree, frame.line)
    if node is None:
        return None
    jn = case.names(frame)
    fname = case.function_name or frame.function
    where = case.where(frame)

    kind, size_node = "size", node
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
        kind = "range"
    elif isinstance(node, ast.Subscript):
        kind = "mask" if boolean_mask else "slice"
        size_node = node.slice
    elif index_call:
        return None  # int() of a traced value somewhere else: not a size
    depends = depends_on(case, frame, size_node)
    if kind == "slice":
        depends = [d for d in depends if d not in clues.names_in(node.value)] or depends
    variable = depends[0] if depends else None
    shown = case.text(frame, node)
    subject = f"`{variable}`" if variable else f"`{case.text(frame, size_node)}`"
    if kind == "range":
        what = f"`{shown}` needs a real int to know how many times to loop"
    elif kind == "slice":
        what = f"`{shown}` would make an array whose length depends on {subject}"
    elif kind == "mask":
        what = f"`{shown}` keeps only the elements where the mask is True, so the result's length depends on values"
    else:
        what = f"`{shown}` makes an array whose shape depends on {subject}"
    explanation = (
        f"{what}, but {subject} is traced: while JAX traces `{fname}` it has no value yet. "
        f"XLA compiles for fixed shapes, so every size must be a plain Python int when JAX traces ({cell_of(where)})."
    )
    if kind == "mask":
        explanation = (f"{what}; XLA compiles for fixed shapes, so a size that depends on the data cannot be "
                       f"compiled ({cell_of(where)}).")

    fixes: list[tuple[str, str]] = []
    static_names = case.scalar_arguments(depends) if kind != "mask" else []
    if static_names:
        code = static_fix(case, static_names)
        if code:
            fixes.append((f"Mark {plural(static_names)} static: it is then a plain int while JAX traces "
                          f"(each new value compiles `{fname}` once more).", code))
    rewrite = _shape_rewrite(case, frame, kind, node, statement, jn)
    if rewrite is not None:
        fixes.append(rewrite)
    if not fixes:
        fixes.append(("Take the size from an input's shape (a plain int while tracing), or pass it as a static argument:",
                      f"n = x.shape[0]   # a Python int, even under {jn.jit}\n{shown}"))
    fixes += magic_hint(case, static_names)
    (note, fix), *others = fixes
    return case.diagnosis(
        "traced-shape",
        explanation=explanation,
        fix=fix,
        fix_note=note,
        alternatives=tuple(others),
        where=where,
        variable=variable,
        static_argnames=tuple(static_names) if static_names and note.startswith("Mark") else (),
    )


def _shape_rewrite(case: Case, frame: UserFrame, kind: str, node: ast.AST, statement: ast.stmt | None, jn):
    parsed = case.parsed(frame)
    found = clues.function_of_code(frame.code)
    function = found[1] if found else parsed.tree
    if kind == "range":
        loop = clues.enclosing(parsed.tree, node, ast.For)
        if loop is not None and loop.iter is node:
            edit = branch_rewrites.fori_rewrite(loop, function, parsed.lines, lax=jn.lax)
            if edit is not None:
                code = function_source(case, frame, [edit])
                return (f"Keep it traced and loop inside the compiled code with `{jn.lax}.fori_loop`:", code) if code else None
        return None
    if kind == "slice" and isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice) and statement is not None:
        return _slice_rewrite(case, frame, node, statement, jn)
    if kind == "mask" and isinstance(node, ast.Subscript):
        array, mask = case.text(frame, node.value), case.text(frame, node.slice)
        edit = rewrites.Edit(Span.of(node), f"{jn.jnp}.where({mask}, {array}, 0)", comment="same shape; masked-out elements are 0")
        code = function_source(case, frame, [edit])
        return (f"Keep the shape fixed: `{jn.jnp}.where` zeroes the elements you would drop "
                f"(sums and means over them stay right).", code) if code else None
    if kind == "size" and isinstance(node, ast.Call):
        callee = frame.resolve(node.func)
        name = getattr(callee, "__name__", "")
        if name in ("nonzero", "argwhere", "flatnonzero", "unique", "where") and node.args and not any(k.arg == "size" for k in node.keywords):
            first = case.text(frame, node.args[0])
            if not isinstance(node.args[0], (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
                first = f"({first})"
            at = Span(node.end_lineno, node.end_lineno, node.end_col_offset - 1, node.end_col_offset - 1)
            edit = rewrites.Edit(at, f", size={first}.size")
            code = function_source(case, frame, [edit])
            return (f"Give `{ast.unparse(node.func)}` a fixed output size (padded with the fill value):", code) if code else None
    return None


def _slice_rewrite(case: Case, frame: UserFrame, node: ast.Subscript, statement: ast.stmt, jn):
    sl = node.slice
    if sl.step is not None:
        return None
    array = case.text(frame, node.value)
    lower = case.text(frame, sl.lower) if sl.lower is not None else None
    # x[i:i + 3]: a fixed length at a traced position is what lax.dynamic_slice_in_dim is for.
    if sl.lower is not None and isinstance(sl.upper, ast.BinOp) and isinstance(sl.upper.op, ast.Add):
        if ast.dump(sl.upper.left) == ast.dump(sl.lower) and isinstance(sl.upper.right, ast.Constant):
            edit = rewrites.Edit(Span.of(node), f"{jn.lax}.dynamic_slice_in_dim({array}, {lower}, {sl.upper.right.value})")
            code = function_source(case, frame, [edit])
            return (f"The length is fixed, only the start is traced: `{jn.lax}.dynamic_slice_in_dim` takes a traced start.", code) if code else None
    edits = mask_edits(case, frame, node, statement, jn)
    code = function_source(case, frame, edits) if edits else None
    return ("Keep the shape fixed and mask instead (pad + mask): rows outside the slice become 0.", code) if code else None


def mask_edits(case: Case, frame: UserFrame, node: ast.Subscript, statement: ast.stmt, jn) -> list[rewrites.Edit] | None:
    """``x[a:b]`` -> ``jnp.where(keep, x, 0)`` with ``keep`` computed just before the statement:
    the same shape on every call, the rows outside the slice zeroed (``None`` for a strided slice).

    See ``docs/pitfalls.md#traced-shape`` for the code it writes.
    """
    sl = node.slice
    if not isinstance(sl, ast.Slice) or sl.step is not None:
        return None
    array = case.text(frame, node.value)
    conditions = []
    if sl.lower is not None:
        conditions.append(f"(index >= {case.text(frame, sl.lower)})")
    if sl.upper is not None:
        conditions.append(f"(index < {case.text(frame, sl.upper)})")
    if not conditions:
        return None
    value = case.traced_value(array, frame) if isinstance(node.value, ast.Name) else MISSING
    ndim = getattr(value, "ndim", 1) or 1
    keep = " & ".join(conditions) if len(conditions) > 1 else conditions[0][1:-1]
    expand = "" if ndim <= 1 else "[:, " + ", ".join(["None"] * (ndim - 1)) + "]"
    insert = rewrites.Edit(
        Span(statement.lineno, statement.lineno, statement.col_offset, statement.col_offset),
        f"index = {jn.jnp}.arange({array}.shape[0])\nkeep = {keep}\n",
    )
    replace = rewrites.Edit(Span.of(node), f"{jn.jnp}.where(keep{expand}, {array}, 0)", comment="fixed shape: the rows outside the slice are 0")
    return [insert, replace]


# ------------------------------------------------------------------------------------------------
