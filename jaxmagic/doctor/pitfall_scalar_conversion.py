"""``python-scalar-conversion``: a traced value asked to be a plain Python number (``int()``,
``float()``, ``.item()``, ``math.*``, a Python list indexed by one).

>>> from jaxmagic.doctor.registry import PITFALLS
>>> PITFALLS["python-scalar-conversion"].severity
'error'
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import jax

import jaxmagic.doctor.branch_rewrites as branch_rewrites
import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.case import Case, depends_on, function_source, static_choice
from jaxmagic.doctor.clues import MISSING, Span, UserFrame
from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.masking import mask_edits
from jaxmagic.doctor.registry import describes, pitfall
from jaxmagic.words import code, place, say

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


def _range_loop(case: Case, frame: UserFrame, node: ast.AST) -> ast.For | None:
    """``for i in range(int(n)):``: the loop, when ``node`` is a bound of its ``range``."""
    parsed = case.parsed(frame)
    loop = clues.enclosing(parsed.tree, node, ast.For) if parsed is not None else None
    if loop is None or not isinstance(loop.iter, ast.Call) or not isinstance(loop.iter.func, ast.Name):
        return None
    if loop.iter.func.id != "range" or not any(arg is node for arg in loop.iter.args):
        return None
    return loop


def _loop_count(case: Case, frame: UserFrame, node: ast.AST, value_node: ast.AST, loop: ast.For, jn) -> Diagnosis:
    """A loop count from a traced value: a Python loop needs a real int, and no array method gives
    one. Static (a setting) or ``lax.fori_loop`` (a count from the data) fix it."""
    parsed = case.parsed(frame)
    depends = depends_on(case, frame, value_node)
    static_names = case.static_candidates(depends)
    where = case.where(frame)
    fname = case.function_name or frame.function
    fixes = []
    choice = (
        static_choice(
            case,
            static_names,
            say("the count is then a plain int while JAX traces (each new value compiles {} once more).", code(fname)),
        )
        if static_names
        else None
    )
    fixed_static = choice[1] if choice else None
    fixes += [choice] if choice else []
    found = clues.function_of_code(frame.code)
    edit = branch_rewrites.fori_rewrite(loop, found[1] if found else parsed.tree, parsed.lines, lax=jn.lax, unwrap=node)
    rewritten = function_source(case, frame, [edit]) if edit is not None else None
    if rewritten:
        fixes.append(
            (
                say("Keep the count traced and loop inside the compiled code with {}:", code(f"{jn.lax}.fori_loop")),
                rewritten,
            )
        )
    if not fixes:
        fixes.append(
            (
                say("Loop inside the compiled code with {} (its bounds may be traced):", code(f"{jn.lax}.fori_loop")),
                f"result = {jn.lax}.fori_loop(0, {case.text(frame, value_node)}, body, initial)  # body(i, carry) -> carry",
            )
        )
    (note, fix), *others = fixes
    return case.diagnosis(
        "python-scalar-conversion",
        explanation=say(
            "{} ({}) asks for a plain Python int to count a Python loop, but while JAX traces {} {} is traced "
            "and has no value yet; no array method turns it into one.",
            code(case.text(frame, node)),
            place(where),
            code(fname),
            code(case.text(frame, value_node)),
        ),
        fix=fix,
        fix_note=note,
        alternatives=tuple(others),
        where=where,
        variable=depends[0] if depends else None,
        static_argnames=tuple(static_names) if fix == fixed_static else (),
    )


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


@dataclass(frozen=True)
class ScalarConversion:
    """What ``python_scalar_conversion`` found: the kind (``math``, ``cast``, ``item``, ``list-index``),
    the failing expression, the traced value in it, the ``math`` function, and the ``for`` loop
    whose ``range`` it counts, if any."""

    kind: str
    node: ast.AST
    value_node: ast.AST
    math_function: str | None
    loop: ast.For | None


@pitfall("python-scalar-conversion", "int() / float() / .item() on a traced value", "error", order=60)
def python_scalar_conversion(case: Case) -> ScalarConversion | None:
    """``python-scalar-conversion``: ``int()``, ``float()``, ``.item()``, ``math.*`` on a traced value,
    or a Python list indexed by one.

    >>> import jax, jax.numpy as jnp
    >>> from jaxmagic.doctor.case import Case
    >>> def mean(x):
    ...     return x.sum().item() / 2
    >>> try:
    ...     jax.jit(mean)(jnp.ones(2))
    ... except TypeError as exc:
    ...     case = Case(exc, None, lambda filename: None)
    >>> found = describe(case, python_scalar_conversion(case))
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
    math_function = _math_function(node, frame)
    if math_function is not None:
        kind, value_node = "math", node.args[0] if node.args else node
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("int", "float", "complex")
        and node.args
    ):
        kind, value_node = "cast", node.args[0]
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("item", "tolist")
        and not node.args
    ):
        kind, value_node = "item", node.func.value
    elif isinstance(node, ast.Subscript) and isinstance(exc, jax.errors.TracerIntegerConversionError):
        if _container_kind(frame, node.value) is None:
            return None
        kind, value_node = "list-index", node.slice
    else:
        return None
    return ScalarConversion(kind, node, value_node, math_function, _range_loop(case, frame, node))


def _printed_by(case: Case, frame: UserFrame, node: ast.AST) -> rewrites.Edit | None:
    """``print(...)`` whose arguments hold the conversion: the edit that makes it a
    ``jax.debug.print`` of the array itself (``None`` when the conversion is not printed)."""
    statement = case.statement(frame)
    parsed = case.parsed(frame)
    call = statement.value if isinstance(statement, ast.Expr) else None
    if parsed is None or not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
        return None
    if call.func.id != "print" or not any(inner is node for inner in ast.walk(call)):
        return None
    replacement = rewrites.debug_print_call(call, parsed, case.names(frame).jax)
    return rewrites.Edit(Span.of(call), replacement) if replacement else None


def _container_kind(frame, node: ast.AST) -> str | None:
    """``list`` or ``tuple`` for a Python sequence written in place (``[1, 2, 3]``) or named
    (``weights``, ``self.layers``); ``None`` for anything else."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return "list" if isinstance(node, ast.List) else "tuple"
    value = frame.resolve(node) if isinstance(node, (ast.Name, ast.Attribute)) else MISSING
    return type(value).__name__ if isinstance(value, (list, tuple)) else None


def _alternatives(case: Case, frame: UserFrame, found: ScalarConversion, depends, printed: bool, jn) -> list:
    """The other ways out: the argument made static, a fixed size and a mask, a print from the compiled code."""
    node, value_node, math_function = found.node, found.value_node, found.math_function
    alternatives = []
    static_names = case.static_candidates(depends)
    if static_names:
        choice = static_choice(case, static_names, say("it is then a real Python number (a loop count, a shape)."))
        if choice:
            alternatives.append((say("If you need a real Python number: ") + choice[0], choice[1]))
    elif not isinstance(node, ast.Subscript) and math_function is None and not printed:
        alternatives.append(
            (
                "If you need it as a Python number (a loop count, a shape), it cannot come from traced "
                "data: XLA compiles for fixed shapes. Use a fixed maximum size and mask what is past it.",
                "",
            )
        )
    if not printed:
        alternatives.append(
            (
                "To see the value while it runs, print it from the compiled code:",
                f'{jn.jax}.debug.print("{{}}", {case.text(frame, value_node)})',
            )
        )
    return alternatives


@describes("python-scalar-conversion")
def describe(case: Case, found: ScalarConversion) -> Diagnosis:
    """The conversion undone (the value stays an array), or a loop count made static / a fori_loop."""
    frame = case.innermost
    jn = case.names(frame)
    node, value_node, math_function = found.node, found.value_node, found.math_function
    if found.loop is not None:
        return _loop_count(case, frame, node, value_node, found.loop, jn)
    if found.kind == "math":
        # math.sqrt(x) -> jnp.sqrt(x): math works on Python floats only.
        edit, shown = rewrites.Edit(Span.of(node.func), f"{jn.jnp}.{math_function}"), case.text(frame, node)
    elif found.kind == "cast":
        # float(loss) -> loss.astype(float): the same number, still an array the compiled code computes.
        inner = case.text(frame, value_node)
        atomic = isinstance(value_node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript))
        target = node.func.id
        new = f"{inner}.astype({target})" if atomic else f"{jn.jnp}.asarray({inner}, dtype={target})"
        edit, shown = rewrites.Edit(Span.of(node), new), f"{target}({inner})"
    elif found.kind == "item":
        inner = case.text(frame, value_node)
        edit, shown = rewrites.Edit(Span.of(node), inner), f"{inner}.{node.func.attr}()"
    else:
        # weights[i] on a Python list: one stacked array can be indexed by a traced i.
        seq, index = case.text(frame, node.value), case.text(frame, node.slice)
        edit, shown = rewrites.Edit(Span.of(node.value), f"{jn.jnp}.asarray({seq})"), f"{seq}[{index}]"
    printed = _printed_by(case, frame, node) if found.kind in ("cast", "item") else None
    if printed is not None:
        # print(f"{float(loss):.3f}"): the number is wanted for printing; print it from the compiled code
        edit = printed
    edits = [edit]
    size_use = _later_slice_by(case, frame, node)
    if size_use is not None:
        # k = int(x.sum()); x[:k]: a length from the data cannot be compiled; mask to it instead.
        sliced, statement = size_use
        masked = mask_edits(case, frame, sliced, statement, jn)
        if masked:
            edits += masked
    depends = depends_on(case, frame, value_node)
    variable = depends[0] if depends else None
    fname = case.function_name or frame.function
    where = case.where(frame)
    if isinstance(node, ast.Subscript):
        container = _container_kind(frame, node.value)
        what = say(
            "{} ({}) indexes a Python {} with a traced index: Python needs a real int to pick an element, "
            "and while JAX traces {} the index has no value yet.",
            code(shown),
            place(where),
            container,
            code(fname),
        )
        note = say("Turn the {} into one array, which a traced index can index.", container)
    elif math_function is not None:
        what = say(
            "{} ({}) uses Python's {}, which works on plain Python numbers only; while JAX traces {}, {} is "
            "traced and has no value yet.",
            code(shown),
            place(where),
            code("math"),
            code(fname),
            code(case.text(frame, value_node)),
        )
        note = say("Use {}, which computes the same inside the compiled code.", code(f"{jn.jnp}.{math_function}"))
    else:
        what = say(
            "{} ({}) asks for a plain Python number, but while JAX traces {} {} is traced and has no value "
            "yet, only a shape and a dtype.",
            code(shown),
            place(where),
            code(fname),
            code(case.text(frame, value_node)),
        )
        note = say("Keep it a JAX array: arithmetic works on it as is, inside the compiled code.")
    if printed is not None:
        note = say(
            "To print it, print from the compiled code: {} formats the array itself, with your format, "
            "on every call (a plain {} runs only while JAX traces).",
            code(f"{jn.jax}.debug.print"),
            code("print"),
        )
    alternatives = _alternatives(case, frame, found, depends, printed is not None, jn)
    return case.diagnosis(
        "python-scalar-conversion",
        explanation=what,
        fix=function_source(case, frame, edits) or edit.text,
        fix_note=note
        if len(edits) == 1
        else (
            note + " It is then used as a length: a length computed from the data cannot be compiled "
            "(XLA compiles for fixed shapes), so the slice keeps its full length and masks the rest."
        ),
        alternatives=tuple(alternatives),
        where=where,
        variable=variable,
    )
