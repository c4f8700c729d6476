"""``float-size``: a size computed with ``/`` (a float, ``x.shape[0] / 2``) where JAX needs an int.
Not a traced-value trap (it fails the same without ``jit``): the fix is floor division, ``//``.

>>> import jax.numpy as jnp
>>> def half(x):
...     return jnp.zeros(x.shape[0] / 2)
>>> try:
...     half(jnp.ones(4))
... except TypeError as exc:
...     case = Case(exc, None, lambda filename: None)
>>> found = describe(case, float_size(case))
>>> found.fix.splitlines()[-1].strip()
'return jnp.zeros(x.shape[0] // 2)'
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.case import Case, function_source
from jaxmagic.doctor.clues import Span
from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.registry import describes, pitfall
from jaxmagic.words import code, place, say

_SHAPES = "Shapes must be 1D sequences of concrete values of integer type"
_GOT = re.compile(r"got \((?P<sizes>[^)]*)\)")


def _divisions(node: ast.AST) -> list[ast.BinOp]:
    return [n for n in ast.walk(node) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div)]


@dataclass(frozen=True)
class FloatSize:
    """What ``match`` found: the call given a float size, the divisions that made it, the sizes JAX got."""

    call: ast.Call
    divisions: tuple[ast.BinOp, ...]
    sizes: str


@pitfall("float-size", "A size computed with / (a float, not an int)", "error", order=65, messages=(_SHAPES,))
def float_size(case: Case) -> FloatSize | None:
    """``float-size``: JAX got a float where a size goes, and the user's line divides with ``/``."""
    if not (isinstance(case.exc, TypeError) and case.says("float-size")):
        return None
    got = _GOT.search(case.message)
    sizes = got.group("sizes") if got else ""
    if "Tracer" in sizes or not re.search(r"\d\.\d*|\d[eE]|nan|inf", sizes):
        return None  # a traced size (traced-shape), or no float among the sizes
    frame = case.innermost
    call = case.expression(frame, ast.Call) if frame is not None else None
    if not isinstance(call, ast.Call):
        return None
    divisions = tuple(d for arg in list(call.args) + [k.value for k in call.keywords] for d in _divisions(arg))
    return FloatSize(call, divisions, sizes.strip(", ")) if divisions else None


@describes("float-size")
def describe(case: Case, found: FloatSize) -> Diagnosis:
    """Each ``/`` of the size made ``//``, in words and as the user's code changed."""
    frame = case.innermost
    parsed = case.parsed(frame)
    edits = [
        rewrites.Edit(Span.of(d), f"{clues.source_of(parsed, d.left)} // {clues.source_of(parsed, d.right)}")
        for d in found.divisions
    ]
    where = case.where(frame)
    first = clues.source_of(parsed, found.divisions[0])
    return case.diagnosis(
        "float-size",
        explanation=say(
            "{} ({}) asks for an array of size {}, but {} divides with {}, which always gives a float in Python "
            "({} here), and a size must be an int. It fails the same without {}.",
            code(clues.source_of(parsed, found.call)),
            place(where),
            code(first),
            code(first),
            code("/"),
            code(found.sizes),
            code("jit"),
        ),
        fix=function_source(case, frame, edits) or edits[0].text,
        fix_note=say("Divide with {} (floor division), which keeps ints as ints.", code("//")),
        where=where,
    )
