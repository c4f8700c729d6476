"""``static-self``: a method jitted with ``self`` static (``static_argnums=0``) in a class that
keeps Python's identity hash. JAX finds the compiled code again by ``hash(self)``, which does not
change when an attribute does: after ``obj.flag = False`` the method silently reuses the code
compiled for ``True``. The fix jits a function of the attributes instead (the Sharp Bits' first
strategy), so a changed attribute is seen.

>>> import functools, jax
>>> class Scaler:
...     def __init__(self, on):
...         self.on = on
...     @functools.partial(jax.jit, static_argnums=0)
...     def apply(self, y):
...         return y * 2 if self.on else y
>>> traced = Traced([Scaler.apply.__wrapped__], None, None, lambda filename: None, (Scaler(True),))
>>> (found,) = describe(traced, static_self(traced))
>>> found.fix.splitlines()[0]
'@jax.jit(static_argnames=("on",))'
"""

from __future__ import annotations

import ast
import types
from dataclasses import dataclass
from typing import Any

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.method_rewrites as method_rewrites
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.registry import describes, pitfall
from jaxmagic.doctor.traced_code import Traced, with_source
from jaxmagic.tracing import sources
from jaxmagic.words import code, names, place, say


@dataclass(frozen=True)
class StaticSelf:
    """What ``static_self`` found: the method, its class, the attributes it reads, the object."""

    function: types.FunctionType
    located: tuple
    cls: ast.ClassDef
    attributes: tuple[str, ...]
    owner: Any


def _static_self(use: rewrites.JitUse) -> bool:
    options = use.options.keywords if use.options is not None else []
    for keyword in options:
        try:
            value = ast.literal_eval(keyword.value)
        except ValueError:
            continue
        values = value if isinstance(value, (tuple, list)) else (value,)
        if (keyword.arg == "static_argnums" and 0 in values) or (keyword.arg == "static_argnames" and "self" in values):
            return True
    return False


@pitfall("static-self", "self marked static, hashed by identity", "warning", stage="trace", order=35)
def static_self(traced: Traced) -> list[StaticSelf]:
    """Methods jitted with ``self`` static whose class does not define ``__hash__``."""
    found = []
    for sourced in with_source(traced.functions):
        node, parsed = sourced.node, sourced.parsed
        args = getattr(node, "args", None)
        if not isinstance(node, ast.FunctionDef) or not args.args or args.args[0].arg != "self":
            continue
        use = rewrites.decorator_jit(node, sourced.lookup)
        cls = next((c for c in clues.nodes_in(parsed.tree, ast.ClassDef) if node in c.body), None)
        if use is None or use.library != "jax" or not _static_self(use) or cls is None:
            continue
        if any(isinstance(member, ast.FunctionDef) and member.name == "__hash__" for member in cls.body):
            continue  # the user hashes by value: a changed attribute is a new key
        attributes = tuple(method_rewrites.self_reads(node))
        owner = next((a for a in traced.arguments if type(a).__name__ == cls.name), None)
        if attributes:
            found.append(StaticSelf(sourced.function, sourced.located, cls, attributes, owner))
    return found


@describes("static-self")
def describe(traced: Traced, found: list[StaticSelf]) -> list[Diagnosis]:
    """The method rewritten to call a jitted function of the attributes it reads."""
    diagnoses = []
    for facts in found:
        parsed, node = facts.located
        jn = rewrites.jax_names(facts.function.__globals__)
        written = method_rewrites.method_calling_jitted_function(parsed, node, facts.owner, jn)
        where = sources.source_line(parsed.file, node.lineno, node.name, traced.cell_namer)
        diagnoses.append(
            Diagnosis(
                "static-self",
                explanation=say(
                    "{} marks {} static, and {} keeps Python's identity hash: JAX finds the compiled {} again by "
                    "{}, which stays the same when {} changes, so after such a change the old compiled code runs with "
                    "the old values ({}).",
                    code(node.name),
                    code("self"),
                    code(facts.cls.name),
                    code(node.name),
                    code("hash(self)"),
                    names([f"self.{a}" for a in facts.attributes]),
                    place(where),
                ),
                fix=written[0] if written else "",
                fix_note=say(
                    "Jit a function of the attributes the method reads, and let the method call it: a changed "
                    "attribute is then seen on the next call."
                ),
                alternatives=(
                    (
                        say(
                            "Or give {} {} and {} over those attributes, and never change them after the first call.",
                            code(facts.cls.name),
                            code("__hash__"),
                            code("__eq__"),
                        ),
                        "",
                    ),
                ),
                where=where,
                variable="self",
                function=node.name,
            )
        )
    return diagnoses
