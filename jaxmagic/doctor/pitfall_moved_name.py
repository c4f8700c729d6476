"""``moved-name``: a JAX name that moved or was removed (``jnp.softmax`` is ``jax.nn.softmax``,
``jax.tree_map`` is ``jax.tree.map``: the table ``moved_names.MOVED``), read from the error it
raised and the user's line; the fix is that line with the new spelling.

>>> import jax, jax.numpy as jnp
>>> from jaxmagic.doctor.case import Case
>>> def probabilities(logits):
...     return jnp.softmax(logits)
>>> try:
...     probabilities(jnp.ones(3))
... except AttributeError as exc:
...     found = MOVED_NAME.diagnose(Case(exc, None, lambda filename: None))
>>> found.fix.splitlines()[1].strip()
'return jax.nn.softmax(logits)'
"""

from __future__ import annotations

import ast
import re
import sys
from typing import Any

import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.clues import MISSING, Span
from jaxmagic.doctor.declared import Declared, Given, Line
from jaxmagic.doctor.moved_names import MOVED, Moved, aliased, module_of
from jaxmagic.doctor.registry import Written

_MISSING = (  # what an error says is missing: its pattern, and the dotted name from the pattern's groups
    (AttributeError, r"module '([\w.]+)' has no attribute '(\w+)'", "{0}.{1}"),
    (AttributeError, r"^(jax(?:\.\w+)+) (?:was|is) (?:deprecated|removed)", "{0}"),  # JAX's own deprecation errors
    (ImportError, r"cannot import name '(\w+)' from '([\w.]+)'", "{1}.{0}"),
    (ImportError, r"No module named '([\w.]+)'", "{0}"),
)
Use = tuple[Moved, ast.AST, "str | None", str]  # the entry, the node to rewrite, its new text (None: none), an import


def _moved_attribute(line: Line, statement: ast.stmt, missing: str) -> tuple[Moved, ast.expr, dict] | None:
    """The longest attribute chain from the missing name (``host_callback.id_print``) that the table
    knows, with its entry, and each node's parent in the statement."""
    module, attribute = missing.rsplit(".", 1)
    found = [n for n in ast.walk(statement) if isinstance(n, ast.Attribute) and n.attr == attribute]
    found = [n for n in found if line.frame.resolve(n.value) is sys.modules.get(module, MISSING)]
    if not found:
        return None
    chain = [next((n for n in found if Span.of(n) == line.frame.span()), found[0])]
    parents = {child: parent for parent in ast.walk(statement) for child in ast.iter_child_nodes(parent)}
    while isinstance(parent := parents.get(chain[-1]), ast.Attribute) and parent.value is chain[-1]:
        chain.append(parent)  # each attribute read from it (``.id_print``)
    known = [(n, MOVED.get(".".join([missing, *(c.attr for c in chain[1 : i + 1])]))) for i, n in enumerate(chain)]
    return next(((e, n, parents) for n, e in reversed(known) if e), None)


def _attribute_use(line: Line, statement: ast.stmt, missing: str) -> Use | None:
    """``jnp.softmax(x)``, ``jax.experimental.host_callback.id_print(x)``: the attribute's new
    spelling (a call written anew where the arguments changed)."""
    moved = _moved_attribute(line, statement, missing)
    if moved is None:
        return None
    entry, used, parents = moved
    call = parents.get(used)
    if entry.call is None:
        return (entry, used, *_spelled(entry.new, line)) if entry.drop_in else (entry, used, None, "")
    if not (isinstance(call, ast.Call) and call.func is used):
        return entry, used, None, ""
    plain = not call.keywords and not any(isinstance(a, ast.Starred) for a in call.args)
    try:
        text = entry.call.format(*[line.text(a) for a in call.args], jax=line.jax_names.jax) if plain else None
    except IndexError:  # fewer arguments than the new spelling needs
        text = None
    return entry, call, text, "" if line.frame.lookup(line.jax_names.jax) is sys.modules["jax"] else "import jax"


def _spelled(path: str, line: Line) -> tuple[str, str]:
    """``path`` as the user's names spell it (``jnp.prod`` where ``jnp`` is ``jax.numpy``), and the
    import it needs first, if any (``import jax.nn`` where only ``jax.numpy`` has a name)."""
    parts, namespace = path.split("."), {**line.frame.frame.f_globals, **line.frame.frame.f_locals}
    modules = [(n, sys.modules.get(".".join(parts[:n]), MISSING)) for n in range(len(parts) - 1, 0, -1)]
    names = [".".join([name, *parts[n:]]) for n, m in modules if (name := rewrites.alias(namespace, m, ""))]
    spelled = (names or [path])[0]
    reachable = line.frame.resolve(ast.parse(spelled, mode="eval").body) is not MISSING
    return spelled, "" if reachable else f"import {module_of(path)}"


def _import_use(statement: ast.Import | ast.ImportFrom, missing: str) -> Use | None:
    """``from jax import tree_map``, ``import jax.experimental.optimizers as optimizers``: the
    import written anew, each moved name from its new place (the other names kept)."""
    if isinstance(statement, ast.Import):
        return _plain_import(statement, missing)
    module = statement.module or ""
    entries = [MOVED.get(f"{module}.{a.name}") or (MOVED.get(module) if module == missing else None) for a in statement.names]  # fmt: skip
    moved = [(a, e) for a, e in zip(statement.names, entries, strict=True) if e is not None]
    if not moved or statement.level:
        return None
    kept = [aliased(a.name, a.asname) for a, e in zip(statement.names, entries, strict=True) if e is None]
    imported = [e.imported(module, a.name, a.asname) for a, e in moved]
    lines = [f"from {module} import {', '.join(kept)}"] * bool(kept) + imported
    return moved[0][1], statement, None if None in lines else "\n".join(filter(None, lines)), ""


def _plain_import(statement: ast.Import, missing: str) -> Use | None:
    """``import jax.experimental.optimizers as optimizers`` -> ``import jax.example_libraries.optimizers as ...``."""
    alias, entry = next((a for a in statement.names if a.name == missing), None), MOVED.get(missing)
    if alias is None or entry is None:
        return None
    writable = entry.drop_in and entry.call is None and module_of(entry.new) == entry.new
    return entry, statement, f"import {aliased(entry.new, alias.asname)}" if writable else None, ""


def moved_name(line: Line) -> dict[str, Any] | None:
    """The old name in the user's line, found in the table; its new spelling and the fixed code."""
    exc = line.case.exc
    groups = ((form, re.search(pattern, line.message)) for kind, pattern, form in _MISSING if isinstance(exc, kind))
    missing = next((form.format(*found.groups()) for form, found in groups if found), None)
    statement = line.statement()
    if missing is None or not missing.startswith("jax") or statement is None:
        return None
    importing = isinstance(statement, (ast.Import, ast.ImportFrom))
    use = _import_use(statement, missing) if importing else _attribute_use(line, statement, missing)
    if use is None:
        return None
    entry, node, text, needs = use
    fixed = line.fix([rewrites.Edit(Span.of(node), text)], "enclosing") or text if text is not None else ""
    return {"written": line.text(node), "shown": entry.shown, "new": entry.new, "note": entry.note,
            "module": entry.old.rpartition(".")[0], "deprecated": entry.deprecated, "removed": entry.removed,
            "kind": entry.history, "replacement": "; ".join(text.splitlines()) if text is not None else None,
            "fixed": f"{needs}\n\n{fixed}" if needs and needs not in fixed.splitlines() else fixed}  # fmt: skip


_GONE = "{written} ({where}) is gone from this JAX: "
MOVED_NAME = Declared(
    "moved-name", "A JAX name that moved or was removed", moved_name, raised=(AttributeError, ImportError), says=False,
    order=2, variable="written",
    messages=("has no attribute", Written("was removed in JAX v0.6.0", until="0.9.0"),
              Written("jax.numpy.fix was deprecated in JAX v0.9.0", since="0.9.0"),
              Written("jax.device_put_replicated is deprecated; use jax.device_put", since="0.10.0"),
              Written("jax.scipy.special.sph_harm was deprecated in v0.7.0 and removed in v0.10.0", since="0.10.0")),
    explanation=_GONE + "JAX {removed!s} removed it. Its new spelling is {shown}. {note!s}",
    kinds={"never": {"explanation": "{written} ({where}) was never part of {module}: the name is {shown}. {note!s}"},
           "deprecated": {"explanation": _GONE + "JAX {deprecated!s} deprecated it and JAX {removed!s} removed it. "
                          "Its new spelling is {shown}. {note!s}"}},
    rewrite=(Given("fixed"),), fix_note="{renamed}",
    pieces={"renamed": ("{replacement} in place of {written}.", "No rename does it here: see {new} in JAX's documentation.")},
)  # fmt: skip
