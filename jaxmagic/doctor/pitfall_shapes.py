"""``traced-shape``: a size, slice bound, ``range()`` count or boolean mask that depends on a traced
value. Fixes: a static argument, ``jax.lax.fori_loop``, padding + mask, ``lax.dynamic_slice_in_dim``,
a fixed ``size=`` (``shape_rewrites``).

>>> import jax, jax.numpy as jnp
>>> from jaxmagic.doctor.case import Case
>>> def zeros_like_n(x, n):
...     return jnp.zeros(n)
>>> try:
...     jax.jit(zeros_like_n)(jnp.ones(2), 3)
... except TypeError as exc:
...     found = TRACED_SHAPE.diagnose(Case(exc, None, lambda filename: None))
>>> found.pitfall, found.variable, found.static_argnames
('traced-shape', 'n', ('n',))
"""

from __future__ import annotations

import ast

import jax

import jaxmagic.doctor.clues as clues
from jaxmagic.doctor.case import Case, depends_on
from jaxmagic.doctor.chosen import Chosen, MagicHint, Offer, Static, StaticField
from jaxmagic.doctor.declared import Line
from jaxmagic.doctor.registry import Written
from jaxmagic.doctor.shape_rewrites import masked_update, shape_rewrite


def _reads_as_traced_size(case: Case, by_class: bool) -> bool:
    """JAX's error is one about a traced size (by its class or its message), and the size is traced."""
    if not (by_class or case.says("traced-shape")):
        return False
    return not ("Shapes must be" in case.message and "Tracer" not in case.message)  # a float size: not this trap


def _kind_of_size(case: Case, node: ast.AST, statement: ast.stmt | None, boolean_mask: bool, index_call: bool):
    """``(kind, node, the part that sets the size)`` for the failing expression; ``None``: not a size."""
    found = masked_update(node, statement) if boolean_mask else None
    if found is not None:
        return "masked-update", found[0], found[2]
    if "must be known statically" in case.message:
        return "setting", node, node
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
        return "range", node, node
    if isinstance(node, ast.Subscript):
        return ("mask" if boolean_mask else "slice"), node, node.slice
    return None if index_call else ("size", node, node)


def traced_shape(line: Line) -> dict | None:
    """The kind of size (``slice``, ``range``, ``mask``, ``masked-update``, ``setting`` or ``size``),
    the expression, the part that sets the size, the traced names it depends on, and the rewrite."""
    case, node, statement = line.case, line.expression(), line.statement()
    boolean_mask = isinstance(case.exc, jax.errors.NonConcreteBooleanIndexError)
    index_call = isinstance(case.exc, jax.errors.TracerIntegerConversionError)
    if node is None or not _reads_as_traced_size(case, boolean_mask or index_call):
        return None
    if index_call and isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Slice):
        return None  # items[i]: one element picked by an index, not a size (python-scalar-conversion's case)
    found = _kind_of_size(case, node, statement, boolean_mask, index_call)
    if found is None:
        return None  # int() of a traced value somewhere else: not a size
    kind, node, size_node = found
    depends = depends_on(case, line.frame, size_node)
    if kind == "slice" and isinstance(node, ast.Subscript):
        depends = [d for d in depends if d not in clues.names_in(node.value)] or depends
    shaped = kind in ("mask", "masked-update")
    return {"kind": kind, "what": kind, "node": node, "size": None if kind == "mask" else size_node,
            "subject": depends[0] if depends else line.text(size_node), "variable": depends[0] if depends else None,
            "fname": case.function_name or line.frame.function, "static_names": [] if shaped else case.static_candidates(depends),
            **shape_rewrite(line, kind, node, statement)}  # fmt: skip


_SIZE = (
    "Give `{func}` a fixed output size. The result is padded with `fill_value` (0 by default, which is also a "
    "valid index: leave the padding out of what you compute from it)."
)
_STATIC = "it is then a plain int while JAX traces (each new value compiles {fname} once more)."
_FROM_SHAPE = "Take the size from an input's shape (`x.shape[0]` is a plain int while tracing), or pass it as a static argument."  # fmt: skip
_DATA = "{what}; XLA compiles for fixed shapes, so a size that depends on the data cannot be compiled ({where})."

TRACED_SHAPE = Chosen(
    "traced-shape",
    "A size or slice that depends on a traced value",
    traced_shape,
    raised=(TypeError, IndexError),
    messages=(
        "argument must be known statically",
        Written("Slice entries must be static integers", since="0.8.2"),
        Written("Array slice indices must have static start/stop/step", until="0.8.2"),
        "Shapes must be 1D sequences of concrete values of integer type",
        "must be statically specified",
        "argument of jnp.",
        "arose in the jnp.",
        "for the first argument of jnp.",
    ),
    says=False,
    order=70,
    explanation="{what}, but {subject} is traced: while JAX traces {fname} it has no value yet. XLA compiles for "
    "fixed shapes, so every size must be a plain Python int when JAX traces ({where}).",
    phrases={
        "what": {
            "range": "{node} needs a real int to know how many times to loop",
            "slice": "{node} would make an array whose length depends on {subject}",
            "mask": "{node} keeps only the elements where the mask is True, so the result's length depends on values",
            "masked-update": "{node} indexes with a boolean mask, which picks a number of elements that depends on values",
            "setting": "{node} needs {subject} as a plain Python value (an axis, a count, a setting)",
            "size": "{node} makes an array whose shape depends on {subject}",
        },
        "also": {"size": _SIZE},
        "bounds": {"slice": "a Python slice", "arange": "`{jnp}.arange`"},
        "how": {
            "fori": "Keep it traced and loop inside the compiled code with `{lax}.fori_loop`:",
            "where-update": "Keep the shape fixed: `{jnp}.where` takes the new value where the mask is True and the "
            "old one elsewhere.",
            "where-mask": "Keep the shape fixed: `{jnp}.where` puts 0 where the mask is False, in place of the "
            "elements you would drop.",
            "where-reduce": "Reduce only the elements the mask keeps, at a fixed shape: pass the mask as `where=`.",
            "size": _SIZE,
            "product": "Use `{elements}`: the number of elements, a plain int while JAX traces.",
            "numpy": "`{made}` is traced only because `{jnp}` computed it from plain numbers (sizes, Python "
            "ints); NumPy's function of the same name keeps it a plain int while JAX traces:",
            "dynamic": "The length is fixed, only the start is traced: `{lax}.dynamic_slice_in_dim` takes a traced "
            "start.",
            "shift": "The length is fixed, only the start is traced: shift a range of plain ints by it.",
            "pad": "Keep the shape fixed and mask instead (pad + mask): rows outside the slice become 0.",
        },
    },
    choices=(
        StaticField("size"),
        Static("static_names", _STATIC),
        Offer("{how}", "edits"),
        Offer("{also}", "also_edits"),
        Offer(_FROM_SHAPE, otherwise=True),
        MagicHint("static_names"),
    ),
    kinds={
        "mask": {"explanation": _DATA},
        "masked-update": {"explanation": _DATA},
        "start": {
            "explanation": "{node} starts at {subject}, which is traced: while JAX traces {fname} it has no "
            "value yet. Its length ({length!s}) is fixed, but the start and stop of {bounds} must be plain "
            "ints while JAX traces ({where}).",
            "choices": (Offer("{how}", "edits"), Static("static_names", _STATIC), MagicHint("static_names")),
        },
    },
    variable="variable",
)
