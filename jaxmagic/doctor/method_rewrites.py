"""Rewriting a method jitted with its ``self`` (the Sharp Bits' first strategy): a jitted function
of the attributes the method reads, and the method calling it, so that a changed attribute is seen
on the next call.

>>> import ast
>>> from jaxmagic.doctor.clues import ParsedSource
>>> lines = ("class C:", "    def f(self, y):", "        return self.a * y")
>>> parsed = ParsedSource("<demo>", lines, ast.parse("\\n".join(lines)))
>>> class Jn:
...     jit = "jax.jit"
>>> text, static = method_calling_jitted_function(parsed, parsed.tree.body[0].body[0], None, Jn)
>>> print(text)
@jax.jit
def _c_f(a, y):
    return a * y
<BLANKLINE>
<BLANKLINE>
class C:
    def f(self, y):
        return _c_f(self.a, y)
"""

from __future__ import annotations

import ast
from typing import Any

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.clues import Span


def self_reads(node: ast.AST) -> list[str]:
    """The attributes of ``self`` a method reads, in order."""
    return list(dict.fromkeys(n.attr for n in clues.attributes_of(node, "self") if isinstance(n.ctx, ast.Load)))


def _tests(node: ast.AST) -> list[ast.AST]:
    """What Python itself decides on in ``node``: the tests of ``if``, ``while``, ``assert`` and
    ``... if ... else ...``, and the bounds of ``range``: values that must be static under jit."""
    tests: list[ast.AST] = [n.test for n in ast.walk(node) if isinstance(n, (ast.If, ast.While, ast.Assert, ast.IfExp))]
    calls = (n for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name))
    return tests + [a for n in calls if n.func.id == "range" for a in n.args]  # type: ignore[union-attr]


def _settings(node: ast.AST, attributes: list[str], owner: Any) -> list[str]:
    """The attributes that decide Python's control flow and that ``owner`` holds as a Python value."""
    deciding = {n.attr for test in _tests(node) for n in ast.walk(test) if isinstance(n, ast.Attribute)}
    return [a for a in attributes if a in deciding and isinstance(getattr(owner, a, None), (bool, int, str))]


def method_calling_jitted_function(
    parsed: clues.ParsedSource,
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
    owner: Any,
    jn: rewrites.JaxNames,
) -> tuple[str, list[str]] | None:
    """A jitted function of the attributes the method reads, and its class with the method calling
    it; with the attributes made static that decide Python's own control flow (``if self.mul``) and
    that ``owner`` holds as a Python bool, int or string (an array attribute stays traced).
    ``None`` when the method is not inside a class of the parsed source (a ``def``) or reads no attribute."""
    if isinstance(node, ast.Lambda):
        return None
    cls = next((c for c in clues.nodes_in(parsed.tree, ast.ClassDef) if node in c.body), None)
    attributes = self_reads(node)
    if cls is None or not attributes or node.args.vararg or node.args.kwarg or node.args.kwonlyargs:
        return None
    others = [a.arg for a in node.args.args[1:]]
    helper = f"_{cls.name.lower()}_{node.name}"
    settings = _settings(node, attributes, owner)
    body_edits = [rewrites.Edit(Span.of(n), n.attr) for n in clues.attributes_of(node, "self")]
    body = rewrites.with_edits(parsed.lines, node.body[0].lineno, node.end_lineno, body_edits, elide=False)
    decorator = f"@{jn.jit}(static_argnames={rewrites.names_tuple(settings)})" if settings else f"@{jn.jit}"
    function = "\n".join(
        [decorator, f"def {helper}({', '.join(attributes + others)}):", *("    " + line for line in body.splitlines())]
    )
    call = f"return {helper}({', '.join([f'self.{a}' for a in attributes] + others)})"
    end = Span.of(node)
    method = rewrites.Edit(
        Span(rewrites.function_first_line(node), end.end_line, node.col_offset, end.end_col),
        f"def {node.name}(self{''.join(', ' + o for o in others)}):\n    {call}",
    )
    cls_text = rewrites.definition_with_edits(parsed.lines, cls, [method], elide=False)
    return f"{function}\n\n\n{cls_text}", settings
