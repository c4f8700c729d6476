"""Sizes kept fixed where the user's size depends on a traced value (``traced-shape``): a counted
loop as ``lax.fori_loop``, a boolean mask or masked update as ``jnp.where``, ``jnp.nonzero`` with
a fixed ``size=``, ``jnp.array(x.shape).prod()`` as ``x.size``, a slice as
``lax.dynamic_slice_in_dim`` or padded and masked, ``jnp.arange(a - 1, a + 1)`` as ``a + jnp.arange(-1, 1)``,
``count = jnp.add(x.size, 1)`` as ``np.add``. Each is an ``Edit`` of the user's own source.

>>> import ast
>>> statement = ast.parse("y = x.at[keep].set(0.0)").body[0]
>>> [ast.unparse(part) for part in masked_update(statement.value, statement)[1:4]]
['x', 'keep', '0.0']
"""

from __future__ import annotations

import ast
from typing import Any

import jax

import jaxmagic.doctor.branch_rewrites as branch_rewrites
import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.clues import Span
from jaxmagic.doctor.declared import Line, user_function
from jaxmagic.doctor.masking import mask_edits
from jaxmagic.doctor.rewrites import Edit


def _at_update(call: ast.AST) -> tuple[ast.Call, ast.AST, ast.AST, ast.AST, str] | None:
    """``x.at[mask].set(v)``: ``(call, x, mask, v, method)``; ``None`` for any other call."""
    if not (isinstance(call, ast.Call) and len(call.args) == 1 and isinstance(call.func, ast.Attribute)):
        return None
    helper = call.func.value
    if isinstance(helper, ast.Subscript) and isinstance(helper.value, ast.Attribute) and helper.value.attr == "at":
        return call, helper.value.value, helper.slice, call.args[0], call.func.attr
    return None


def masked_update(node: ast.AST, statement: ast.stmt | None) -> tuple[ast.Call, ast.AST, ast.AST, ast.AST, str] | None:
    """``x.at[mask].set(v)`` in ``node`` or its statement: ``(call, x, mask, v, method)``."""
    for root in (node, statement):
        for call in clues.nodes_in(root, ast.Call) if root is not None else ():
            if _at_update(call) is not None:
                return _at_update(call)
    return None


def _range(line: Line, node: ast.AST, statement: ast.stmt | None) -> dict[str, Any] | None:
    """``for i in range(n)`` with ``n`` traced: the loop as ``lax.fori_loop``."""
    loop = clues.enclosing(line.parsed.tree, node, ast.For)
    if not isinstance(loop, ast.For) or loop.iter is not node:
        return None
    return {"how": "fori", "edits": branch_rewrites.fori_rewrite(loop, user_function(line), line.parsed.lines, lax=line.jax_names.lax)}  # fmt: skip


def _update(line: Line, node: ast.AST, statement: ast.stmt | None) -> dict[str, Any] | None:
    """``x.at[mask].set(v)``: ``jnp.where(mask, v, x)``."""
    found = masked_update(node, statement)
    call, a, m, v = (found[0], *(line.text(n) for n in found[1:4])) if found else (None, "", "", "")
    new = {"set": v, "add": f"{a} + {v}", "multiply": f"{a} * {v}", "mul": f"{a} * {v}"}.get(found[4] if found else "")
    return {"how": "where-update", "edits": Edit(Span.of(call), f"{line.jax_names.jnp}.where({m}, {new}, {a})")} if call and new else None  # fmt: skip


_MASKED_REDUCTIONS = ("mean", "std", "var", "prod")  # whose value zeros would change: reduced ``where=`` the mask holds


def _reduced(node: ast.Subscript, statement: ast.stmt | None, lookup) -> tuple[ast.Call, str] | None:
    """The reduction ``x[mask]`` is the operand of, with its name, as a method (``x[mask].mean()``)
    or as JAX's function (``jnp.mean(x[mask])``), with no other argument."""
    for call in clues.nodes_in(statement, ast.Call) if statement is not None else ():
        method = isinstance(call.func, ast.Attribute) and call.func.value is node
        if call.keywords or len(call.args) > (0 if method else 1):
            continue
        if method and isinstance(call.func, ast.Attribute) and call.func.attr in _MASKED_REDUCTIONS:
            return call, call.func.attr
        function = clues.resolve(call.func, lookup)
        name = getattr(function, "__name__", "")
        if (
            call.args
            and call.args[0] is node
            and name in _MASKED_REDUCTIONS
            and "jax" in getattr(function, "__module__", "")
        ):
            return call, name
    return None


def _mask(line: Line, node: ast.AST, statement: ast.stmt | None) -> dict[str, Any] | None:
    """``x[mask]``: ``jnp.where(mask, x, 0)``, the dropped elements zeroed; under a reduction zeros
    would change (``x[mask].mean()``), the reduction over the elements the mask holds
    (``jnp.mean(x, where=mask)``)."""
    if not isinstance(node, ast.Subscript):
        return None
    mask, values, jnp = line.text(node.slice), line.text(node.value), line.jax_names.jnp
    reduced = _reduced(node, statement, line.frame.lookup)
    if reduced is not None:
        call, name = reduced
        return {"how": "where-reduce", "edits": Edit(Span.of(call), f"{jnp}.{name}({values}, where={mask})")}
    new = f"{jnp}.where({mask}, {values}, 0)"
    return {"how": "where-mask", "edits": Edit(Span.of(node), new, comment="same shape; masked-out elements are 0")}


def _offset(node: ast.AST) -> tuple[str, int] | None:
    """``a + 2`` as ``(dump of a, 2)``, ``a - 1`` as ``(dump of a, -1)``, ``a`` as ``(dump of a, 0)``."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)) and isinstance(node.right, ast.Constant):
        step = node.right.value
        if isinstance(step, int) and not isinstance(step, bool):
            return ast.dump(node.left), step if isinstance(node.op, ast.Add) else -step
    return None if isinstance(node, ast.Constant) else (ast.dump(node), 0)


def _shifted_range(line: Line, node: ast.Call) -> dict[str, Any] | None:
    """``jnp.arange(a - 1, a + 1)``: a fixed length at a traced start, ``a + jnp.arange(-1, 1)``."""
    bounds = [_offset(arg) for arg in node.args] if len(node.args) == 2 and not node.keywords else []
    if len(bounds) != 2 or None in bounds or bounds[0][0] != bounds[1][0]:  # type: ignore[index]
        return None
    (_, low), (_, high) = bounds  # type: ignore[misc]
    start = node.args[0].left if isinstance(node.args[0], ast.BinOp) else node.args[0]
    new = f"{line.text(start)} + {ast.unparse(node.func)}({low}, {high})"
    return {"how": "shift", "kind": "start", "what": "start", "length": high - low, "bounds": "arange",
            "edits": Edit(Span.of(node), new)}  # fmt: skip


def _size(line: Line, node: ast.AST, statement: ast.stmt | None) -> dict[str, Any] | None:
    """``jnp.nonzero(x)`` (and its kin): ``size=x.size`` given, a fixed output size; where it indexes
    an array (``x[jnp.where(x > 1)]``), first ``jnp.where(x > 1, x, 0)``, the same shape as ``x``;
    ``jnp.arange`` between two bounds a fixed distance apart: a fixed range shifted."""
    if not isinstance(node, ast.Call) or not node.args or any(k.arg == "size" for k in node.keywords):
        return None
    name = getattr(line.frame.resolve(node.func), "__name__", "")
    if name == "arange":
        return _shifted_range(line, node)
    if name not in ("nonzero", "argwhere", "flatnonzero", "unique", "where"):
        return None
    first = line.text(node.args[0])
    first = first if isinstance(node.args[0], (ast.Name, ast.Attribute, ast.Call, ast.Subscript)) else f"({first})"
    found = {"how": "size", "func": ast.unparse(node.func), "edits": rewrites.keyword_edit(node, f"size={first}.size")}
    if name not in ("nonzero", "where") or len(node.args) != 1:
        return found
    function, condition = user_function(line), line.text(node.args[0])
    held = statement.targets[0] if isinstance(statement, ast.Assign) and statement.value is node else None
    for indexed in clues.nodes_in(function, ast.Subscript) if isinstance(held, ast.Name) else ():
        if isinstance(indexed.slice, ast.Name) and indexed.slice.id == held.id and indexed.lineno > node.lineno:  # type: ignore[union-attr]
            masked = Edit(Span.of(indexed), f"{line.jax_names.jnp}.where({held.id}, {line.text(indexed.value)}, 0)")  # type: ignore[union-attr]
            return {**found, "how": "where-mask", "also": "size", "also_edits": found["edits"], "edits": [Edit(Span.of(node), condition), masked]}  # fmt: skip
    indexed = clues.enclosing(function, node, ast.Subscript)
    if isinstance(indexed, ast.Subscript) and indexed.slice is node:
        masked = Edit(Span.of(indexed), f"{line.jax_names.jnp}.where({condition}, {line.text(indexed.value)}, 0)")
        return {**found, "how": "where-mask", "also": "size", "also_edits": found["edits"], "edits": masked}
    return found


def _shape_product(line: Line, node: ast.AST, statement: ast.stmt | None) -> dict[str, Any] | None:
    """``jnp.array(x.shape).prod()`` (or ``jnp.prod(jnp.array(x.shape))``): a traced product of
    sizes that are plain ints while tracing; ``x.size`` is the same number, and a plain int."""
    for sub in ast.walk(statement if statement is not None else node):
        func = sub.func if isinstance(sub, ast.Call) and not sub.keywords else None
        if not (isinstance(sub, ast.Call) and isinstance(func, ast.Attribute) and func.attr == "prod"):
            continue
        made = func.value if not sub.args else sub.args[0] if len(sub.args) == 1 else None
        shape = made.args[0] if isinstance(made, ast.Call) and len(made.args) == 1 and not made.keywords else None
        named = isinstance(made, ast.Call) and isinstance(made.func, ast.Attribute) and made.func.attr in ("array", "asarray")  # fmt: skip
        if named and isinstance(shape, ast.Attribute) and shape.attr == "shape":
            elements = f"{line.text(shape.value)}.size"
            return {"how": "product", "elements": elements, "edits": Edit(Span.of(sub), elements)}
    return None


def _slice(line: Line, node: ast.AST, statement: ast.stmt | None) -> dict[str, Any] | None:
    """``x[i:i + 3]``: a fixed length at a traced start, ``lax.dynamic_slice_in_dim``; other slices padded and masked."""
    sl = node.slice if isinstance(node, ast.Subscript) else None
    if not isinstance(node, ast.Subscript) or not isinstance(sl, ast.Slice) or sl.step is not None or statement is None:
        return None
    upper = sl.upper if isinstance(sl.upper, ast.BinOp) and isinstance(sl.upper.op, ast.Add) else None
    length = upper.right if upper is not None and isinstance(upper.right, ast.Constant) else None
    if sl.lower is not None and upper is not None and length is not None and ast.dump(upper.left) == ast.dump(sl.lower):
        array, lower = line.text(node.value), line.text(sl.lower)
        new = f"{line.jax_names.lax}.dynamic_slice_in_dim({array}, {lower}, {length.value})"
        return {
            "how": "dynamic",
            "kind": "start",
            "what": "start",
            "length": length.value,
            "bounds": "slice",
            "edits": Edit(Span.of(node), new),
        }
    return {"how": "pad", "edits": mask_edits(line, node, statement)}


def _numpy_of_plain_values(line: Line, node: ast.AST, statement: ast.stmt | None) -> dict[str, Any] | None:
    """``count = jnp.add(x.size, 1)`` before ``jnp.ones((count,))``: a size traced only because a
    ``jax.numpy`` function made it from values that are plain while tracing (sizes, Python numbers);
    NumPy's function of the same name keeps it a plain number."""
    import numpy

    function, lookup = user_function(line), line.frame.lookup
    numpy_name = rewrites.alias(line.frame.frame.f_globals, numpy, "")
    for name in clues.names_in(node) if function is not None and numpy_name else ():
        made = [a for a in clues.nodes_in(function, ast.Assign) if a.lineno < node.lineno and len(a.targets) == 1]  # type: ignore[attr-defined]
        made = [a for a in made if isinstance(a.targets[0], ast.Name) and a.targets[0].id == name]
        call = made[-1].value if made else None
        if not (isinstance(call, ast.Call) and clues.is_tracer(lookup(name)) and isinstance(call.func, ast.Attribute)):
            continue
        jnp_function = line.frame.resolve(call.func)
        if getattr(jnp_function, "__module__", "").split(".")[0] != "jax" or not hasattr(numpy, call.func.attr):
            continue
        plain = [_plain_value(argument, lookup) for argument in [*call.args, *(k.value for k in call.keywords)]]
        if plain and all(plain):
            return {"how": "numpy", "made": name, "edits": Edit(Span.of(call.func), f"{numpy_name}.{call.func.attr}")}
    return None


def _plain_value(node: ast.expr, lookup) -> bool:
    """Whether ``node`` is a plain number while tracing: a number written, a name holding a Python
    number, or a size of a JAX value (``x.size``, ``x.ndim``, ``x.shape[0]``)."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        node = node.value  # x.shape[0]: plain where x.shape is
    if isinstance(node, ast.Attribute) and node.attr in ("size", "ndim", "shape"):
        return isinstance(lookup(node.value.id) if isinstance(node.value, ast.Name) else None, jax.Array)
    value = node.value if isinstance(node, ast.Constant) else lookup(node.id) if isinstance(node, ast.Name) else None
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_BY_KIND = {"range": _range, "masked-update": _update, "mask": _mask, "size": _size, "slice": _slice}


def shape_rewrite(line: Line, kind: str, node: ast.AST, statement: ast.stmt | None) -> dict[str, Any]:
    """The rewrite that keeps the shape fixed for this kind of traced size: which it is (``how``),
    its ``edits``, and what its words name; ``{}`` where none fits."""
    found = _BY_KIND[kind](line, node, statement) if kind in _BY_KIND else None
    if kind != "slice" and not (found and found["edits"]):
        found = _shape_product(line, node, statement)
    if kind == "size" and not (found and found["edits"]):
        found = _numpy_of_plain_values(line, node, statement)
    return found if found and found["edits"] else {}
