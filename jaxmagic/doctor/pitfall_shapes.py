"""``traced-shape``: a size, slice bound, ``range()`` count or boolean mask that depends on a traced
value. Fixes: a static argument, ``jax.lax.fori_loop``, padding + mask, ``lax.dynamic_slice_in_dim``,
a fixed ``size=``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import jax

import jaxmagic.doctor.branch_rewrites as branch_rewrites
import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.case import Case, depends_on, function_source, magic_hint, static_choice, static_field_choice
from jaxmagic.doctor.clues import Span, UserFrame
from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.masking import mask_edits
from jaxmagic.doctor.registry import Written, describes, pitfall
from jaxmagic.words import code, place, say

# traced-shape


_SHAPE_MESSAGES = (
    "argument must be known statically",
    Written("Slice entries must be static integers", since="0.8.2"),
    Written("Array slice indices must have static start/stop/step", until="0.8.2"),
    "Shapes must be 1D sequences of concrete values of integer type",
    "must be statically specified",
    "argument of jnp.",
    "arose in the jnp.",
    "for the first argument of jnp.",
)


@dataclass(frozen=True)
class TracedSize:
    """What ``traced_shape`` found: the kind of size (``slice``, ``range``, ``mask``, ``masked-update``,
    ``setting`` or ``size``), the failing expression, the part that sets the size, its statement, and
    the traced names it depends on."""

    kind: str
    node: ast.AST
    size_node: ast.AST
    statement: ast.stmt | None
    depends: tuple[str, ...]


@pitfall("traced-shape", "A size or slice that depends on a traced value", "error", order=70, messages=_SHAPE_MESSAGES)
def traced_shape(case: Case) -> TracedSize | None:
    """``traced-shape``: a size, slice bound, ``range()`` count or mask from a traced value.

    >>> import jax, jax.numpy as jnp
    >>> from jaxmagic.doctor.case import Case
    >>> def zeros_like_n(x, n):
    ...     return jnp.zeros(n)
    >>> try:
    ...     jax.jit(zeros_like_n)(jnp.ones(2), 3)
    ... except TypeError as exc:
    ...     case = Case(exc, None, lambda filename: None)
    >>> found = describe(case, traced_shape(case))
    >>> found.pitfall, found.variable, found.static_argnames
    ('traced-shape', 'n', ('n',))
    """
    exc = case.exc
    frame = case.innermost
    boolean_mask = isinstance(exc, jax.errors.NonConcreteBooleanIndexError)
    index_call = isinstance(exc, jax.errors.TracerIntegerConversionError)
    if frame is None or not _reads_as_traced_size(case, boolean_mask or index_call):
        return None
    parsed = case.parsed(frame)
    if parsed is None:
        return None
    node = case.expression(frame)
    statement = clues.statement_at(parsed.tree, frame.line)
    if node is None or (index_call and _picks_one_element(node)):
        return None
    found = _kind_of_size(case, node, statement, boolean_mask, index_call)
    if found is None:
        return None  # int() of a traced value somewhere else: not a size
    kind, node, size_node = found
    depends = depends_on(case, frame, size_node)
    if kind == "slice":
        depends = [d for d in depends if d not in clues.names_in(node.value)] or depends
    return TracedSize(kind, node, size_node, statement, tuple(depends))


def _reads_as_traced_size(case: Case, by_class: bool) -> bool:
    """JAX's error is one about a traced size (by its class or its message), and the size is traced."""
    by_message = isinstance(case.exc, (TypeError, IndexError)) and case.says("traced-shape")
    if not (by_class or by_message):
        return False
    return not ("Shapes must be" in case.message and "Tracer" not in case.message)  # a float size: not this trap


def _kind_of_size(case: Case, node: ast.AST, statement, boolean_mask: bool, index_call: bool):
    """``(kind, node, the part that sets the size)`` for the failing expression; ``None``: not a size."""
    masked_update = _masked_update(node, statement) if boolean_mask else None
    if masked_update is not None:
        return "masked-update", masked_update[0], masked_update[2]
    if "must be known statically" in case.message:
        return "setting", node, node
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
        return "range", node, node
    if isinstance(node, ast.Subscript):
        return ("mask" if boolean_mask else "slice"), node, node.slice
    return None if index_call else ("size", node, node)


def _picks_one_element(node: ast.AST) -> bool:
    """``items[i]``: one element picked by an index, not a size (python-scalar-conversion's case)."""
    return isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Slice)


@describes("traced-shape")
def describe(case: Case, found: TracedSize) -> Diagnosis:
    """Why the size cannot be compiled, and the fixes: static where it is a setting, a fixed shape otherwise."""
    frame = case.innermost
    kind, node, size_node, statement, depends = (
        found.kind,
        found.node,
        found.size_node,
        found.statement,
        list(found.depends),
    )
    jn = case.names(frame)
    fname = case.function_name or frame.function
    where = case.where(frame)
    variable = depends[0] if depends else None
    shown = case.text(frame, node)
    subject = code(variable) if variable else code(case.text(frame, size_node))
    if kind == "range":
        what = say("{} needs a real int to know how many times to loop", code(shown))
    elif kind == "slice":
        what = say("{} would make an array whose length depends on {}", code(shown), subject)
    elif kind == "mask":
        what = say(
            "{} keeps only the elements where the mask is True, so the result's length depends on values", code(shown)
        )
    elif kind == "masked-update":
        what = say(
            "{} indexes with a boolean mask, which picks a number of elements that depends on values", code(shown)
        )
    elif kind == "setting":
        what = say("{} needs {} as a plain Python value (an axis, a count, a setting)", code(shown), subject)
    else:
        what = say("{} makes an array whose shape depends on {}", code(shown), subject)
    explanation = say(
        "{}, but {} is traced: while JAX traces {} it has no value yet. XLA compiles for fixed shapes, so every size "
        "must be a plain Python int when JAX traces ({}).",
        what,
        subject,
        code(fname),
        place(where),
    )
    if kind in ("mask", "masked-update"):
        explanation = say(
            "{}; XLA compiles for fixed shapes, so a size that depends on the data cannot be compiled ({}).",
            what,
            place(where),
        )

    fixes: list[tuple[str, str]] = []
    static_names = case.static_candidates(depends) if kind not in ("mask", "masked-update") else []
    field = static_field_choice(case, frame, size_node) if kind != "mask" else None
    fixes += [field] if field else []
    choice = (
        static_choice(
            case,
            static_names,
            say("it is then a plain int while JAX traces (each new value compiles {} once more).", code(fname)),
        )
        if static_names
        else None
    )
    fixed_static = choice[1] if choice else None
    fixes += [choice] if choice else []
    rewrite = _shape_rewrite(case, frame, kind, node, statement, jn)
    if rewrite is not None:
        fixes.append(rewrite)
    if not fixes:
        fixes.append(
            (
                say(
                    "Take the size from an input's shape ({} is a plain int while tracing), or pass it as a "
                    "static argument.",
                    code("x.shape[0]"),
                ),
                "",
            )
        )
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
        static_argnames=tuple(static_names) if static_names and fixes[0][1] == fixed_static else (),
    )


def _shape_rewrite(case: Case, frame: UserFrame, kind: str, node: ast.AST, statement: ast.stmt | None, jn):
    """The rewrite that keeps the shape fixed for this kind of traced size, with its label (``None``: none fits)."""
    if kind == "slice":
        sliced = isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice) and statement is not None
        return _slice_rewrite(case, frame, node, statement, jn) if sliced else None
    rewrite = _SHAPE_REWRITES.get(kind)
    found = rewrite(case, frame, node, statement, jn) if rewrite is not None else None
    found = found or _shape_product_rewrite(case, frame, node, statement)
    if found is None:
        return None
    label, edit = found
    rewritten = function_source(case, frame, [edit])
    return (label, rewritten) if rewritten else None


def _range_rewrite(case: Case, frame: UserFrame, node: ast.AST, statement, jn):
    """``for i in range(n)`` with ``n`` traced: the loop as ``lax.fori_loop``."""
    parsed = case.parsed(frame)
    found = clues.function_of_code(frame.code)
    function = found[1] if found else parsed.tree
    loop = clues.enclosing(parsed.tree, node, ast.For)
    if loop is None or loop.iter is not node:
        return None
    edit = branch_rewrites.fori_rewrite(loop, function, parsed.lines, lax=jn.lax)
    label = say("Keep it traced and loop inside the compiled code with {}:", code(f"{jn.lax}.fori_loop"))
    return (label, edit) if edit is not None else None


def _masked_update_rewrite(case: Case, frame: UserFrame, node: ast.AST, statement, jn):
    """``x.at[mask].set(v)``: ``jnp.where(mask, v, x)``."""
    call, array, mask, value, method = _masked_update(node, statement)
    a, m, v = (case.text(frame, n) for n in (array, mask, value))
    new = {"set": v, "add": f"{a} + {v}", "multiply": f"{a} * {v}", "mul": f"{a} * {v}"}.get(method)
    if new is None:
        return None
    label = say(
        "Keep the shape fixed: {} takes the new value where the mask is True and the old one elsewhere.",
        code(f"{jn.jnp}.where"),
    )
    return label, rewrites.Edit(Span.of(call), f"{jn.jnp}.where({m}, {new}, {a})")


def _mask_rewrite(case: Case, frame: UserFrame, node: ast.AST, statement, jn):
    """``x[mask]``: ``jnp.where(mask, x, 0)``, the dropped elements zeroed."""
    if not isinstance(node, ast.Subscript):
        return None
    array, mask = case.text(frame, node.value), case.text(frame, node.slice)
    label = say(
        "Keep the shape fixed: {} zeroes the elements you would drop (sums and means over them stay right).",
        code(f"{jn.jnp}.where"),
    )
    comment = "same shape; masked-out elements are 0"
    return label, rewrites.Edit(Span.of(node), f"{jn.jnp}.where({mask}, {array}, 0)", comment=comment)


def _size_rewrite(case: Case, frame: UserFrame, node: ast.AST, statement, jn):
    """``jnp.nonzero(x)`` (and its kin): ``size=x.size`` given, a fixed output size."""
    if not isinstance(node, ast.Call) or not node.args or any(k.arg == "size" for k in node.keywords):
        return None
    name = getattr(frame.resolve(node.func), "__name__", "")
    if name not in ("nonzero", "argwhere", "flatnonzero", "unique", "where"):
        return None
    first = case.text(frame, node.args[0])
    if not isinstance(node.args[0], (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
        first = f"({first})"
    at = Span(node.end_lineno, node.end_lineno, node.end_col_offset - 1, node.end_col_offset - 1)
    label = say(
        "Give {} a fixed output size. The result is padded with {} (0 by default, which is also a valid index: "
        "leave the padding out of what you compute from it).",
        code(ast.unparse(node.func)),
        code("fill_value"),
    )
    return label, rewrites.Edit(at, f", size={first}.size")


def _array_of_shape(node: ast.AST) -> ast.AST | None:
    """``E`` of ``jnp.array(E.shape)`` (or ``jnp.asarray``), else ``None``."""
    if not (isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords):
        return None
    func, arg = node.func, node.args[0]
    made = isinstance(func, ast.Attribute) and func.attr in ("array", "asarray")
    return arg.value if made and isinstance(arg, ast.Attribute) and arg.attr == "shape" else None


def _shape_product_rewrite(case: Case, frame: UserFrame, node: ast.AST, statement):
    """``jnp.array(x.shape).prod()`` (or ``jnp.prod(jnp.array(x.shape))``): a traced product of
    sizes that are plain ints while tracing; ``x.size`` is the same number, and a plain int."""
    for sub in ast.walk(statement if statement is not None else node):
        if not isinstance(sub, ast.Call) or sub.keywords:
            continue
        func = sub.func
        if isinstance(func, ast.Attribute) and func.attr == "prod" and not sub.args:
            array = _array_of_shape(func.value)
        elif isinstance(func, ast.Attribute) and func.attr == "prod" and len(sub.args) == 1:
            array = _array_of_shape(sub.args[0])
        else:
            continue
        if array is not None:
            size = f"{case.text(frame, array)}.size"
            label = say("Use {}: the number of elements, a plain int while JAX traces.", code(size))
            return label, rewrites.Edit(Span.of(sub), size)
    return None


_SHAPE_REWRITES = {
    "range": _range_rewrite,
    "masked-update": _masked_update_rewrite,
    "mask": _mask_rewrite,
    "size": _size_rewrite,
}


def _masked_update(node: ast.AST, statement: ast.stmt | None):
    """``x.at[mask].set(v)`` in ``node`` or its statement: ``(call, x, mask, v, method)``."""
    for root in (node, statement):
        for call in clues.nodes_in(root, ast.Call) if root is not None else ():
            func = call.func
            if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Subscript) and len(call.args) == 1):
                continue
            at = func.value.value
            if isinstance(at, ast.Attribute) and at.attr == "at":
                return call, at.value, func.value.slice, call.args[0], func.attr
    return None


def _slice_rewrite(case: Case, frame: UserFrame, node: ast.Subscript, statement: ast.stmt, jn):
    sl = node.slice
    if sl.step is not None:
        return None
    array = case.text(frame, node.value)
    lower = case.text(frame, sl.lower) if sl.lower is not None else None
    # x[i:i + 3]: a fixed length at a traced position is what lax.dynamic_slice_in_dim is for.
    fixed_length = (
        sl.lower is not None
        and isinstance(sl.upper, ast.BinOp)
        and isinstance(sl.upper.op, ast.Add)
        and ast.dump(sl.upper.left) == ast.dump(sl.lower)
        and isinstance(sl.upper.right, ast.Constant)
    )
    if fixed_length:
        edit = rewrites.Edit(Span.of(node), f"{jn.lax}.dynamic_slice_in_dim({array}, {lower}, {sl.upper.right.value})")
        rewritten = function_source(case, frame, [edit])
        return (
            (
                say(
                    "The length is fixed, only the start is traced: {} takes a traced start.",
                    code(f"{jn.lax}.dynamic_slice_in_dim"),
                ),
                rewritten,
            )
            if rewritten
            else None
        )
    edits = mask_edits(case, frame, node, statement, jn)
    rewritten = function_source(case, frame, edits) if edits else None
    return (
        (say("Keep the shape fixed and mask instead (pad + mask): rows outside the slice become 0."), rewritten)
        if rewritten
        else None
    )


# ------------------------------------------------------------------------------------------------
