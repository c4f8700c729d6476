"""Static arguments a tuple cannot stand in for. A dataclass: frozen, hashed by its fields. A dict
passed as a static argument that holds arrays beside its settings (JAX issue 6853:
``{"num": 5, "val": np.arange(5)}``): no hashable form keeps it whole, since an array cannot be
hashed. The fix splits it: the settings static, as a tuple of their items; the arrays traced, in a
parameter of their own; the function puts them back together first thing, so every use of the
dict in its body stays as written.

>>> import numpy as np
>>> split_items({"num": 5, "val": np.arange(5)}, "settings")
('(("num", 5),)', '{"val": settings["val"]}')
>>> split_items({"num": 5}, "settings") is None  # no array in it: a tuple of its items will do
True
"""

from __future__ import annotations

import ast
from typing import Any

import numpy as np

import jaxmagic.doctor.donations as donations
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.clues import Span
from jaxmagic.doctor.declared import Line

SETTINGS = (int, float, str, bool, type(None))
FROZEN_NOTE = (
    "Make {cls} a frozen dataclass: `@dataclass(frozen=True)` hashes it by its fields (and forbids changing them)."
)
NOTE = (
    "An array cannot be static (JAX hashes static values): pass the arrays in {parameter} traced, in `{extra}`, and "
    "the rest static as a tuple; {fname} puts them back together first thing."
)


def _written(key: Any) -> str:
    return f'"{key}"' if isinstance(key, str) and '"' not in key and "\\" not in key else repr(key)


def split_items(value: Any, name: str) -> tuple[str, str] | None:
    """``(settings, arrays)``: the settings of the dict ``value`` written as a tuple of its items,
    and its arrays read from ``name``; ``None`` unless it holds both, every key a string and every
    setting a plain Python value."""
    import jax

    if not isinstance(value, dict) or not all(isinstance(key, str) for key in value):
        return None
    arrays = [key for key, item in value.items() if isinstance(item, (jax.Array, np.ndarray))]
    settings = {key: item for key, item in value.items() if key not in arrays}
    if not arrays or not settings or not all(type(item) in SETTINGS for item in settings.values()):
        return None
    written = rewrites.tuple_of([f"({_written(key)}, {item!r})" for key, item in settings.items()])
    return written, "{" + ", ".join(f"{_written(key)}: {name}[{_written(key)}]" for key in arrays) + "}"


def split_fix(line: Line, node: ast.expr, value: Any, function: Any, parameter: str) -> dict:
    """The fix for ``unhashable-static`` where the dict ``value`` (the argument ``node``) holds
    arrays beside its settings: the function with a parameter for the arrays and the dict made
    whole again first thing, then the call; ``{}`` where that cannot be written."""
    split = split_items(value, line.text(node)) if isinstance(node, ast.Name) else None
    call, extra = line.expression(ast.Call), f"{parameter}_arrays"
    if not split or call is None:
        return {}
    body = rewrites.with_first_statement(function, f"{parameter} = {{**dict({parameter}), **{extra}}}", extra)
    edits = [rewrites.Edit(Span.of(node), split[0]), rewrites.keyword_edit(call, f"{extra}={split[1]}")]
    return {"kind": "split", "extra": extra, "fixed": f"{body}\n\n{line.fix(edits, 'statement')}"} if body else {}


def frozen_fix(line: Line, cls: type) -> dict:
    """The fix for ``unhashable-static`` where the value is a dataclass: its class frozen."""
    fixed = rewrites.frozen_dataclass(donations.candidate_sources(line.case, line.frame), cls.__name__)
    return {"kind": "dataclass", "cls": cls.__name__, "fixed": fixed} if fixed else {}
