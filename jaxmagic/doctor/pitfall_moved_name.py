"""``moved-name``: a JAX name that moved or was removed (``jnp.softmax`` is ``jax.nn.softmax``,
``jax.tree_map`` is ``jax.tree.map``...), read from the ``AttributeError`` or ``ImportError`` it
raised and the user's line; the fix is that line with the new spelling. The names are data
(``moved_names.MOVED``).

>>> import jax, jax.numpy as jnp
>>> def probabilities(logits):
...     return jnp.softmax(logits)
>>> try:
...     probabilities(jnp.ones(3))
... except AttributeError as exc:
...     case = Case(exc, None, lambda filename: None)
>>> found = describe(case, moved_name(case))
>>> found.fix.splitlines()[1].strip()
'return jax.nn.softmax(logits)'
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from dataclasses import dataclass

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.case import Case, function_source
from jaxmagic.doctor.clues import MISSING, Span
from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.moved_names import MOVED, Moved
from jaxmagic.doctor.registry import Written, describes, pitfall
from jaxmagic.words import code, place, say

_NO_ATTRIBUTE = re.compile(r"module '([\w.]+)' has no attribute '(\w+)'")
_JAX_SAYS = re.compile(r"^(jax(?:\.\w+)+) (?:was|is) (?:deprecated|removed)")  # JAX's own deprecation errors
_CANNOT_IMPORT = re.compile(r"cannot import name '(\w+)' from '([\w.]+)'")
_NO_MODULE = re.compile(r"No module named '([\w.]+)'")


@dataclass(frozen=True)
class MovedUse:
    """What ``moved_name`` found: the table's entry, the old name as the user wrote it, the node
    to rewrite (an expression or an import statement) and its new text (``None``: no mechanical
    rewrite is right), and an import the new text needs first."""

    entry: Moved
    written: str
    node: ast.AST
    replacement: str | None
    needs_import: str = ""


def _missing_name(exc: BaseException, message: str) -> str | None:
    """The dotted name the error says is missing (``jax.numpy.softmax``), from its message."""
    if isinstance(exc, AttributeError):
        if found := _NO_ATTRIBUTE.search(message):
            return f"{found[1]}.{found[2]}"
        if found := _JAX_SAYS.search(message):
            return found[1]
    elif isinstance(exc, ImportError):
        if found := _CANNOT_IMPORT.search(message):
            return f"{found[2]}.{found[1]}"
        if found := _NO_MODULE.search(message):
            return found[1]
    return None


@pitfall(
    "moved-name",
    "A JAX name that moved or was removed",
    "error",
    order=2,
    messages=(
        "has no attribute",
        Written("was removed in JAX v0.6.0", until="0.9.0"),
        Written("jax.numpy.fix was deprecated in JAX v0.9.0", since="0.9.0"),
        Written("jax.device_put_replicated is deprecated; use jax.device_put", since="0.10.0"),
        Written("jax.scipy.special.sph_harm was deprecated in v0.7.0 and removed in v0.10.0", since="0.10.0"),
    ),
)
def moved_name(case: Case) -> MovedUse | None:
    """``moved-name``: the old name in the user's line, found in the table (the match;
    ``describe`` says it)."""
    if not isinstance(case.exc, (AttributeError, ImportError)):
        return None
    missing = _missing_name(case.exc, case.message)
    frame = case.innermost
    if missing is None or not missing.startswith("jax") or frame is None:
        return None
    statement = case.statement(frame)
    if statement is None:
        return None
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return _import_use(case, frame, statement, missing)
    return _attribute_use(case, frame, statement, missing)


# ------------------------------------------------------------------------------------------------
# An attribute: ``jnp.softmax(x)``, ``jax.experimental.host_callback.id_print(x)``


def _attribute_use(case: Case, frame, statement: ast.stmt, missing: str) -> MovedUse | None:
    module_name, attribute = missing.rsplit(".", 1)
    module = sys.modules.get(module_name)
    if module is None:
        return None
    candidates = [
        node
        for node in clues.nodes_in(statement, ast.Attribute)
        if node.attr == attribute and frame.resolve(node.value) is module
    ]
    if not candidates:
        return None
    at = frame.span()
    node = next((n for n in candidates if Span.of(n) == at), candidates[0])
    parents = {child: parent for parent in ast.walk(statement) for child in ast.iter_child_nodes(parent)}
    found = _moved_in_chain(node, parents, missing)
    if found is None:
        return None
    used, entry = found
    parsed = case.parsed(frame)
    namespace = {**frame.frame.f_globals, **frame.frame.f_locals}
    written = clues.source_of(parsed, used)
    call = parents.get(used)
    if entry.call is not None:
        if not (isinstance(call, ast.Call) and call.func is used):
            return MovedUse(entry, written, used, None)
        return _moved_call(entry, parsed, call, case.names(frame).jax, namespace)
    if not entry.drop_in:
        return MovedUse(entry, written, used, None)
    text, needs = _spelled(entry.new, namespace)
    return MovedUse(entry, written, used, text, needs)


def _moved_in_chain(node: ast.Attribute, parents: dict, missing: str) -> tuple[ast.AST, Moved] | None:
    """The longest attribute chain from ``node`` (``host_callback.id_print``) that the table of
    moved names knows, with its entry."""
    chain = [node]  # the attribute, then each attribute read from it (``.id_print``)
    while isinstance(parents.get(chain[-1]), ast.Attribute) and parents[chain[-1]].value is chain[-1]:
        chain.append(parents[chain[-1]])
    for depth in range(len(chain) - 1, -1, -1):
        entry = MOVED.get(".".join([missing, *(n.attr for n in chain[1 : depth + 1])]))
        if entry is not None:
            return chain[depth], entry
    return None


def _moved_call(entry: Moved, parsed, call: ast.Call, jax_name: str, namespace: dict) -> MovedUse:
    """A call of a removed function, written with its replacement's call (``None``: not writable)."""
    arguments = _call_arguments(parsed, call)
    try:
        text = entry.call.format(*arguments, jax=jax_name) if arguments is not None else None
    except IndexError:  # fewer arguments than the new spelling needs
        text = None
    needs = "" if namespace.get(jax_name) is sys.modules["jax"] else "import jax"
    return MovedUse(entry, clues.source_of(parsed, call), call, text, needs)


def _call_arguments(parsed, call: ast.Call) -> list[str] | None:
    """The call's positional arguments as written; ``None`` where it has keywords or ``*args``."""
    if call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    return [clues.source_of(parsed, a) for a in call.args]


def _spelled(path: str, namespace: dict) -> tuple[str, str]:
    """``path`` as the user's names spell it (``jnp.prod`` where ``jnp`` is ``jax.numpy``), and the
    import it needs first, if any (``import jax.example_libraries.optimizers``).

    >>> import jax, jax.numpy
    >>> _spelled("jax.numpy.prod", {"jnp": jax.numpy})
    ('jnp.prod', '')
    >>> _spelled("jax.nn.softmax", {"jnp": jax.numpy})
    ('jax.nn.softmax', 'import jax.nn')
    >>> _spelled("jax.nn.softmax", {"jax": jax})
    ('jax.nn.softmax', '')
    """
    parts = path.split(".")
    module_path = _module_of(path)
    for length in range(len(parts) - 1, 0, -1):
        prefix = ".".join(parts[:length])
        module = sys.modules.get(prefix)
        names = [n for n, v in namespace.items() if module is not None and v is module and not n.startswith("_")]
        if names and module_path.startswith(prefix):
            name = min(sorted(names), key=len)
            module_text = name + module_path[len(prefix) :]
            return ".".join([name, *parts[length:]]), _import_unless_reachable(module_text, module_path, namespace)
    return path, _import_unless_reachable(module_path, module_path, namespace)


def _import_unless_reachable(spelled: str, module_path: str, namespace: dict) -> str:
    """``import <module_path>`` unless ``spelled`` already reaches that module from the user's names."""
    if clues.resolve(ast.parse(spelled, mode="eval").body, lambda n: namespace.get(n, MISSING)) is not MISSING:
        return ""
    return f"import {module_path}"


def _module_of(path: str) -> str:
    """The longest importable module that ``path`` starts with (``jax.nn`` for ``jax.nn.softmax``)."""
    parts = path.split(".")
    for length in range(len(parts), 0, -1):
        name = ".".join(parts[:length])
        if name in sys.modules or _importable(name):
            return name
    return parts[0]


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


# ------------------------------------------------------------------------------------------------
# An import: ``from jax import tree_map``, ``import jax.experimental.optimizers as optimizers``


def _import_use(case: Case, frame, statement: ast.stmt, missing: str) -> MovedUse | None:
    parsed = case.parsed(frame)
    written = clues.source_of(parsed, statement)
    if isinstance(statement, ast.Import):
        return _plain_import(statement, missing, written)
    module = statement.module or ""
    if module == missing:  # ``from jax.experimental.maps import Mesh``: the module is gone
        entries = [MOVED.get(f"{module}.{a.name}") or MOVED.get(module) for a in statement.names]
    else:  # ``from jax import tree_map``: a name is gone
        entries = [MOVED.get(f"{module}.{a.name}") for a in statement.names]
    moved = [(a, e) for a, e in zip(statement.names, entries, strict=True) if e is not None]
    if not moved or statement.level:
        return None
    lines, kept = [], [a for a, e in zip(statement.names, entries, strict=True) if e is None]
    if kept:
        lines.append(f"from {module} import " + ", ".join(_alias_text(a.name, a.asname) for a in kept))
    lines += [_from_import(entry, module, alias) for alias, entry in moved]
    return MovedUse(moved[0][1], written, statement, None if None in lines else "\n".join(lines))


def _plain_import(statement: ast.Import, missing: str, written: str) -> MovedUse | None:
    """``import jax.experimental.optimizers as optimizers`` -> ``import jax.example_libraries.optimizers as ...``."""
    alias = next((a for a in statement.names if a.name == missing), None)
    entry = MOVED.get(missing)
    if alias is None or entry is None:
        return None
    text = None
    if entry.drop_in and entry.call is None and _importable(entry.new):
        text = f"import {entry.new}" + (f" as {alias.asname}" if alias.asname else "")
    return MovedUse(entry, written, statement, text)


def _from_import(entry: Moved, module: str, alias: ast.alias) -> str | None:
    """``from <new place> import <new name> as <the user's name>`` for one imported name."""
    if not entry.drop_in or entry.call is not None:
        return None
    if entry.old == f"{module}.{alias.name}":  # the name itself moved: ``jax.tree_map`` -> ``jax.tree.map``
        place_, _, name = entry.new.rpartition(".")
        return f"from {place_} import {_alias_text(name, alias.asname or alias.name)}" if place_ else None
    return f"from {entry.new} import {_alias_text(alias.name, alias.asname)}"  # the module moved


def _alias_text(name: str, asname: str | None) -> str:
    return name if not asname or asname == name else f"{name} as {asname}"


# ------------------------------------------------------------------------------------------------
# The words


def _history(entry: Moved) -> str:
    if entry.removed is None:
        return ""
    if entry.deprecated is None:
        return f"JAX {entry.removed} removed it"
    return f"JAX {entry.deprecated} deprecated it and JAX {entry.removed} removed it"


def _fixed_source(case: Case, frame, edit: rewrites.Edit) -> str:
    """The user's function with the new spelling; at a cell's top level, the whole statement (a
    ``def`` whose annotation used the old name, with its decorators)."""
    statement = case.statement(frame)
    parsed = case.parsed(frame)
    if frame.code.co_name == "<module>" and statement is not None and parsed is not None:
        first = min([statement.lineno] + [d.lineno for d in getattr(statement, "decorator_list", [])])
        return rewrites.with_edits(parsed.lines, first, statement.end_lineno, [edit], show=[frame.line])
    return function_source(case, frame, [edit]) or edit.text


@describes("moved-name")
def describe(case: Case, found: MovedUse) -> Diagnosis:
    """The old name, when it went, its new spelling, and the user's code with it."""
    frame = case.innermost
    entry = found.entry
    where = case.where(frame)
    history = _history(entry)
    if history:
        explanation = say(
            "{} ({}) is gone from this JAX: {}. Its new spelling is {}.",
            code(found.written),
            place(where),
            history,
            code(entry.shown),
        )
    else:
        explanation = say(
            "{} ({}) was never part of {}: the name is {}.",
            code(found.written),
            place(where),
            code(entry.old.rpartition(".")[0]),
            code(entry.shown),
        )
    explanation += " " + entry.note
    fix = ""
    if found.replacement is not None:
        fix = _fixed_source(case, frame, rewrites.Edit(Span.of(found.node), found.replacement))
        if found.needs_import and found.needs_import not in fix.splitlines():
            fix = f"{found.needs_import}\n\n{fix}"
    fix_note = (
        say("{} in place of {}.", code("; ".join(found.replacement.splitlines())), code(found.written))
        if found.replacement is not None
        else say("No rename does it here: see {} in JAX's documentation.", code(entry.new))
    )
    return case.diagnosis(
        "moved-name",
        explanation=explanation,
        fix=fix,
        fix_note=fix_note,
        where=where,
        variable=found.written,
    )
