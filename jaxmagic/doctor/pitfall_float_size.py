"""``float-size``: a size computed with ``/`` (a float, ``x.shape[0] / 2``) where JAX needs an int.
Not a traced-value trap (it fails the same without ``jit``): the fix is floor division, ``//``.

>>> import jax.numpy as jnp
>>> from jaxmagic.doctor.case import Case
>>> def half(x):
...     return jnp.zeros(x.shape[0] / 2)
>>> try:
...     half(jnp.ones(4))
... except TypeError as exc:
...     found = FLOAT_SIZE.diagnose(Case(exc, None, lambda filename: None))
>>> found.fix.splitlines()[-1].strip()
'return jnp.zeros(x.shape[0] // 2)'
"""

from __future__ import annotations

import ast
import re

from jaxmagic.doctor.declared import Declared, Line, Replace

_GOT = re.compile(r"got \((?P<sizes>[^)]*)\)")


def float_size(line: Line) -> dict | None:
    """JAX got a float where a size goes, and the user's call divides with ``/``: the divisions."""
    got = _GOT.search(line.message)
    sizes = got.group("sizes") if got else ""
    if "Tracer" in sizes or not re.search(r"\d\.\d*|\d[eE]|nan|inf", sizes):
        return None  # a traced size (traced-shape), or no float among the sizes
    call = line.expression(ast.Call)
    if not isinstance(call, ast.Call):
        return None
    arguments = list(call.args) + [k.value for k in call.keywords]
    divisions = [n for a in arguments for n in ast.walk(a) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div)]
    return {"call": call, "divisions": divisions, "sizes": sizes.strip(", ")} if divisions else None


FLOAT_SIZE = Declared(
    "float-size",
    "A size computed with / (a float, not an int)",
    float_size,
    raised=TypeError,
    messages=("Shapes must be 1D sequences of concrete values of integer type",),
    order=65,
    explanation="{call} ({where}) asks for an array of size {divisions}, but {divisions} divides with `/`, which "
    "always gives a float in Python ({sizes} here), and a size must be an int. It fails the same without `jit`.",
    rewrite=(Replace("divisions", "{left} // {right}"),),
    fix_note="Divide with `//` (floor division), which keeps ints as ints.",
)
