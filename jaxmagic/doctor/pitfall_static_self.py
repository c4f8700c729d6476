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
>>> from jaxmagic.doctor.traced_code import Traced
>>> traced = Traced([Scaler.apply.__wrapped__], None, None, lambda filename: None, (Scaler(True),))
>>> (found,) = STATIC_SELF.notice(traced)
>>> found.fix.splitlines()[0]
'@jax.jit(static_argnames=("on",))'
"""

from __future__ import annotations

import ast

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.method_rewrites as method_rewrites
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.declared import Declared, Function, Given


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


def static_self(function: Function) -> dict | None:
    """A method jitted with ``self`` static whose class does not define ``__hash__``: the attributes it reads."""
    node, traced = function.node, function.traced
    if not isinstance(node, ast.FunctionDef) or not node.args.args or node.args.args[0].arg != "self":
        return None
    use = rewrites.decorator_jit(node, function.lookup)
    cls = next((c for c in clues.nodes_in(function.parsed.tree, ast.ClassDef) if node in c.body), None)
    if use is None or use.library != "jax" or not _static_self(use) or cls is None:
        return None
    if any(isinstance(member, ast.FunctionDef) and member.name == "__hash__" for member in cls.body):
        return None  # the user hashes by value: a changed attribute is a new key
    attributes = method_rewrites.self_reads(node)
    if not attributes:
        return None
    owner = next((a for a in traced.arguments if type(a).__name__ == cls.name), None)
    written = method_rewrites.method_calling_jitted_function(function.parsed, node, owner, function.jax_names)
    return {"at": node, "method": node.name, "cls": cls.name, "reads": [f"self.{a}" for a in attributes],
            "fixed": written[0] if written else "", "self": "self"}  # fmt: skip


STATIC_SELF = Declared(
    "static-self",
    "self marked static, hashed by identity",
    static_self,
    severity="warning",
    stage="trace",
    order=35,
    explanation="{method} marks `self` static, and {cls} keeps Python's identity hash: JAX finds the compiled "
    "{method} again by `hash(self)`, which stays the same when {reads} changes, so after such a change the old "
    "compiled code runs with the old values ({where}).",
    rewrite=(Given("fixed"),),
    fix_note="Jit a function of the attributes the method reads, and let the method call it: a changed attribute "
    "is then seen on the next call.",
    alternatives=(
        (
            "Or give {cls} `__hash__` and `__eq__` over those attributes, and never change them after the first call.",
            "",
        ),
    ),  # fmt: skip
    variable="self",
)
