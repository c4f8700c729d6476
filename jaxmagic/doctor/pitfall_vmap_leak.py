"""``tracer-leak-vmap``: a function mapped with ``jax.vmap`` kept a traced value outside itself (in
a global, an attribute, a container; a closure over it counts), and using it after the map raised
``UnexpectedTracerError``. JAX's message names no function: the mapped one is the function the
failing code passes to ``jax.vmap``. The fix returns the value instead of keeping it (``vmap``
returns it for every element).

>>> import jax, jax.numpy as jnp
>>> from jaxmagic.doctor.case import Case
>>> kept = {}
>>> def sketch(x):
...     kept["last"] = x
...     return x * 2
>>> def run(xs):
...     jax.vmap(sketch)(xs)
...     return kept["last"] + 1
>>> try:
...     run(jnp.arange(3))
... except Exception as exc:
...     found = TRACER_LEAK_VMAP.diagnose(Case(exc, None, lambda filename: None))
>>> found.variable, found.fix.splitlines()[-1]
('x', '# the caller keeps it:  result, x = jax.vmap(sketch)(...)')
"""

from __future__ import annotations

import ast

import jax

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.declared import Declared, HandedBack, Line, user_function
from jaxmagic.doctor.pitfall_leak import stores
from jaxmagic.tracing import callables, sources


def vmap_leak(line: Line) -> dict | None:
    """The function the failing code maps with ``jax.vmap``, the store that kept a traced value, and the value's name."""
    if "BatchTracer" not in line.message:
        return None
    for call in clues.nodes_in(user_function(line), ast.Call):
        mapped = callables.python_function(line.frame.resolve(call.args[0])) if call.args else None
        if line.frame.resolve(call.func) is not jax.vmap or mapped is None:
            continue
        located = clues.function_of_code(mapped.__code__)
        kept = stores(located[1]) if located is not None and isinstance(located[1], ast.FunctionDef) else []
        own = set(clues.names_in(located[1], ast.Store)) | {a.arg for a in located[1].args.args} if kept else set()  # type: ignore[union-attr]
        names = [n for statement, *_ in kept for n in clues.names_in(statement) if n in own]
        if names and located is not None:
            store = kept[0][0]
            return {"mapped": mapped.__name__, "vmap": call, "name": names[0], "target": kept[0][1], "located": located,
                    "caller": f"{line.text(call)}(...)",
                    "store": clues.Span.of(store), "kind": rewrites.returned_at(located[1], names[0]) is not None and "returned",
                    "at": sources.source_line(located[0].file, store.lineno, mapped.__name__, line.case.cell_namer)}  # fmt: skip  # pyright: ignore[reportOptionalSubscript]
    return None


_BATCH = (
    "Inside `vmap`, {name} stands for the whole batch at once (a tracer): outside the map it has no value, so using "
    "it fails ({where})."
)

TRACER_LEAK_VMAP = Declared(
    "tracer-leak-vmap",
    "A traced value kept outside a function mapped with jax.vmap",
    vmap_leak,
    raised=jax.errors.UnexpectedTracerError,
    messages=("wrapped in a BatchTracer",),
    order=31,
    explanation="{mapped} is mapped with {vmap}, and it keeps {name} in {target} ({at}) instead of returning it. "
    + _BATCH,
    rewrite=(HandedBack(),),
    fix_note="Return {name} from {mapped}: `jax.vmap` gives it back for every element, as one array over the batch.",
    kinds={
        "returned": {
            "explanation": "{mapped} is mapped with {vmap}, and it keeps {name} in {target} ({at}) as well as returning "
            "it. " + _BATCH,
            "fix_note": "Use what {vmap} returns, not {target}: it gives {name} back for every element, as one array "
            "over the batch.",
        }
    },
    variable="name",
    function="mapped",
)
