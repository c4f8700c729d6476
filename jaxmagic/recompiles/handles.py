"""The user's own name for what compiled, read from the line of their code that made the call
(``update`` for ``update(grads, state)``, ``nuts.step`` for ``jax.jit(nuts.step)(key, state)``,
``mcmc.run`` where a library's method compiled something inside), and the line of their code that
built the object it names (``nuts = blackjax.nuts(logdensity, step_size, imm)``) with the plain
values that line reads now (``step_size``: 0.2). Names are looked up, never evaluated: no code of
the user's runs.

>>> import ast
>>> _jitted_name(ast.parse("jax.jit(optimizer.update, donate_argnums=1)", mode="eval").body)
'optimizer'
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import linecache
import sys
from dataclasses import dataclass
from typing import Any

from jaxmagic import _jax_private
from jaxmagic.recompiles.leaves import StaticValue, is_simple
from jaxmagic.recompiles.library_fixes import DocumentedFix, documented_fix
from jaxmagic.tracing.sources import is_library_file, pick_user_frame, source_line

_JIT_WRAPPERS = frozenset({"jit", "filter_jit", "pmap", "checkpoint", "vmap"})
_MAX_HOPS = 3  # assignments followed from a name to the line that built what it names
_MISSING = object()


@dataclass(frozen=True)
class Handle:
    """How the user's code reaches what compiled: ``name`` as written at the call; ``entry`` when
    it names a library's function that compiled something of its own inside (``mcmc.run``);
    ``built_at`` (``(file, line)``) and ``built`` (that statement's text) where the object it
    names was built; ``reads``: each plain name that statement reads, with its value now
    (``StaticValue``); ``fix``: the way the library that built it documents for not building it
    again (``library_fixes``), where it has one."""

    name: str
    entry: bool = False
    built_at: tuple[str, int] | None = None
    built: str = ""
    reads: tuple[tuple[str, StaticValue], ...] = ()
    root_kind: str = ""  # the type of the object the name starts from: MCMC, GradientTransformation
    fix: DocumentedFix | None = None  # the library's own way not to build it again
    built_name: str = ""  # the name the line that built it assigns: nuts

    def built_line(self, cell_namer=None):
        """The ``SourceLine`` of ``built_at`` (``None`` where no line is known)."""
        if self.built_at is None:
            return None
        kwargs = {"cell_namer": cell_namer} if cell_namer is not None else {}
        return source_line(self.built_at[0], self.built_at[1], "", **kwargs)


def user_frame(frame) -> Any:
    """The innermost live frame of the user's own code, from ``frame`` outward (``None``: none)."""
    frames = []
    while frame is not None and len(frames) < 200:
        frames.append(frame)
        frame = frame.f_back
    found = pick_user_frame([(f.f_code.co_filename, f.f_lineno, f.f_code.co_name) for f in frames], or_library=False)
    if found is None:
        return None
    return next(f for f in frames if f.f_code.co_filename == found[0] and f.f_lineno == found[1])


def handle_of(fun: Any, frame, *, entry: bool) -> Handle | None:
    """The ``Handle`` of ``fun`` as the user's code at ``frame`` (a live frame of the user's
    code) called it: the expression of that line that names ``fun`` or its jit wrapper; with
    ``entry``, the library function the line called (``fun`` compiled inside it). ``None`` where
    the line names neither."""
    try:
        expressions = _called_expressions(frame)
        for node in expressions:
            value = _look_up(node, frame)
            if value is _MISSING:
                continue
            if (entry and _is_library_callable(value)) or (not entry and _is_or_wraps(value, fun)):
                return _built(ast.unparse(node), node, frame, entry)
    except Exception:  # source out of reach, an exotic name: no handle
        return None
    return None


def captured_handles(fun: Any, frame) -> tuple[tuple[str, Handle], ...]:
    """For a closure made in the function running at ``frame`` (a ``make_step`` or a ``train``
    that defines ``step``), the ``Handle`` of each object it captures that is not a plain value
    (an optimizer, a model): the line of that function that built it, and what that line read."""
    code = getattr(getattr(fun, "__code__", None), "co_freevars", ())
    closure = getattr(fun, "__closure__", None) or ()
    found = []
    try:
        for name, cell in zip(code, closure, strict=False):
            value = cell.cell_contents
            if is_simple(value) or hasattr(value, "dtype") or frame_locals(frame).get(name, _MISSING) is not value:
                continue
            handle = _built(name, ast.Name(name, ast.Load()), frame, entry=False)
            if handle.built_at is not None:
                found.append((name, handle))
    except Exception:  # an empty cell, source out of reach
        return tuple(found)
    return tuple(found)


def _is_or_wraps(value: Any, fun: Any) -> bool:
    """Whether ``value`` is ``fun``, a jit wrapper of it or a bound method of it (or, for a module
    object, one of its class)."""
    for candidate in (value, getattr(value, "__wrapped__", None), getattr(value, "__func__", None)):
        if candidate is not None and candidate is fun:
            return True
    inner = getattr(fun, "__func__", None)
    if inner is not None and getattr(value, "__func__", None) is inner:
        return True
    # a module object called whole: Equinox hands on a copy of it, rebuilt from its parts
    return dataclasses.is_dataclass(fun) and not isinstance(fun, type) and type(value) is type(fun)


def _is_library_callable(value: Any) -> bool:
    """A library's function, not JAX's (``lax.scan`` called on the user's line is the user's loop)."""
    target = getattr(value, "__func__", value)
    code = getattr(target, "__code__", None)
    return (
        code is not None
        and is_library_file(code.co_filename)
        and not _jax_private.is_jax_internal_file(code.co_filename)
    )


def passed_positionally(fun: Any, frame) -> list[str] | None:
    """The arguments the user's line at ``frame`` passes by position to ``fun`` (or its jit
    wrapper, or a bound method of it), as written (``["state", "x"]`` for ``update(state, x)``);
    ``None`` where the line has no such call, or one that unpacks (``f(*xs)``)."""
    tree = _statement(frame)
    try:
        for node in ast.walk(tree) if tree is not None else ():
            if not (isinstance(node, ast.Call) and _is_path(node.func)):
                continue
            value = _look_up(node.func, frame)
            if value is not _MISSING and _is_or_wraps(value, fun):
                if any(isinstance(arg, ast.Starred) for arg in node.args):
                    return None
                return [ast.unparse(arg) for arg in node.args]
    except Exception:  # a name out of reach: the callee's own names stay
        return None
    return None


def _called_expressions(frame) -> list[ast.expr]:
    """What the statement at ``frame`` calls: each call's callee as written (innermost call of a
    ``jax.jit(f)(x)`` too: ``f``), outermost first."""
    tree = _statement(frame)
    if tree is None:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            found.append(node.func)
            if isinstance(node.func, ast.Call) and node.func.args:
                found.append(node.func.args[0])
    return [node for node in found if _is_path(node)]


def _statement(frame) -> ast.AST | None:
    """The statement running at ``frame``, parsed: from the module or cell's source, the smallest
    statement holding the frame's line."""
    tree = _parsed(frame.f_code.co_filename)
    if tree is None:
        return None
    line = frame.f_lineno
    best: ast.stmt | None = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt) or isinstance(node, _COMPOUND):
            continue
        if node.lineno <= line <= (node.end_lineno or node.lineno) and (best is None or node.lineno >= best.lineno):
            best = node
    return best


_COMPOUND = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.For, ast.While, ast.If, ast.With, ast.Try)


@functools.lru_cache(maxsize=64)
def _parsed_text(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def _parsed(filename: str) -> ast.Module | None:
    """The module or cell's source, parsed; a notebook cell's magic lines (``%%recompiles`` above
    the code it runs, which keeps its line numbers) are left blank."""
    lines = linecache.getlines(filename)
    return _parsed_text("".join("\n" if line.lstrip().startswith(("%", "!")) else line for line in lines))


def _is_path(node: ast.AST) -> bool:
    """A name or a chain of attributes on a name: ``step``, ``nuts.step``, ``self.model.apply``."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def frame_locals(frame) -> dict:
    """A copy of a live frame's local variables. Before Python 3.13, reading ``f_locals`` of a
    function's frame fills a dictionary kept on the frame, which would keep every value it held
    alive after the user's code deleted it: that dictionary is emptied again at once (it is filled
    anew whenever something reads it).

    >>> def f():
    ...     x = 1
    ...     return frame_locals(sys._getframe())
    >>> f()
    {'x': 1}
    """
    snapshot = frame.f_locals
    found = dict(snapshot)
    if _SNAPSHOTS and frame.f_code.co_flags & inspect.CO_OPTIMIZED and type(snapshot) is dict:
        snapshot.clear()  # a function's frame only: a module's or a class body's namespace is the real one
    return found


_SNAPSHOTS = sys.version_info < (3, 13)  # from 3.13 on, f_locals is a view of the frame, not a copy


def _look_up(node: ast.AST, frame) -> Any:
    """The value a path names at ``frame``, read without running code: names from the frame's
    locals, globals and builtins; attributes from an instance's own ``__dict__``, a named tuple's
    fields, a module, or a class (a method bound to its instance). ``_MISSING`` where unknown."""
    if isinstance(node, ast.Name):
        for scope in (frame_locals(frame), frame.f_globals, frame.f_builtins):
            if node.id in scope:
                return scope[node.id]
        return _MISSING
    if not isinstance(node, ast.Attribute):
        return _MISSING
    owner = _look_up(node.value, frame)
    return _MISSING if owner is _MISSING else _attribute(owner, node.attr)


def _attribute(owner: Any, name: str) -> Any:
    fields = getattr(type(owner), "_fields", None)
    if isinstance(owner, tuple) and isinstance(fields, tuple) and name in fields:
        return owner[fields.index(name)]
    if inspect.ismodule(owner):
        return owner.__dict__.get(name, _MISSING)
    own = getattr(owner, "__dict__", None)
    if isinstance(own, dict) and name in own:
        return own[name]
    try:
        found = inspect.getattr_static(owner, name)
    except AttributeError:
        return _MISSING
    if inspect.isfunction(found) and not isinstance(owner, type):
        return found.__get__(owner)  # a method, bound as attribute access would
    return _MISSING


def _built(name: str, node: ast.AST, frame, entry: bool) -> Handle:
    """The handle ``name``, with the line that built what it names: the last assignment of its
    root name before this line in the same function (or module, or cell), followed through a
    ``jax.jit(...)`` of another name."""
    root = node
    while isinstance(root, ast.Attribute):
        root = root.value
    assert isinstance(root, ast.Name)
    root_value = _look_up(root, frame)
    kind = type(root_value).__name__ if root_value is not _MISSING and not inspect.isfunction(root_value) else ""
    target, assignment = root.id, None
    for _ in range(_MAX_HOPS):
        assignment = _assignment_of(target, frame)
        inner = _jitted_name(assignment.value) if assignment is not None else None
        if inner is None:
            break
        target = inner
    if assignment is None:
        return Handle(name, entry, root_kind=kind)
    segment = ast.get_source_segment(_source(frame), assignment) or ""
    text = " ".join(segment.split())
    return Handle(
        name,
        entry,
        built_at=(frame.f_code.co_filename, assignment.lineno),
        built=text or ast.unparse(assignment),
        reads=_reads(assignment.value, frame),
        root_kind=kind,
        fix=_documented_fix(assignment.value, frame),
        built_name=target,
    )


def _documented_fix(value: ast.expr, frame) -> DocumentedFix | None:
    """The library's documented fix for what the call ``value`` builds (``optax.adam(lr)``)."""
    if not isinstance(value, ast.Call) or not _is_path(value.func):
        return None
    maker = _look_up(value.func, frame)
    if maker is _MISSING:
        return None
    if inspect.isfunction(maker) and not is_library_file(maker.__code__.co_filename):
        return _fix_inside(maker)  # the user's own factory (``make_step(lr)``): what it builds
    return _fix_of_call(value, maker)


def _fix_of_call(value: ast.Call, maker: Any) -> DocumentedFix | None:
    arguments = [(None, ast.unparse(a)) for a in value.args] + [(k.arg, ast.unparse(k.value)) for k in value.keywords]
    return documented_fix(maker, ast.unparse(value.func), arguments)


def _fix_inside(factory: Any) -> DocumentedFix | None:
    """The documented fix for the first thing the user's ``factory`` builds with a library that has
    one (``optimizer = optax.sgd(lr)`` inside ``make_step``), its names read in the factory's module."""
    try:
        tree = ast.parse(inspect.cleandoc("\n" + inspect.getsource(factory)))
    except (OSError, TypeError, SyntaxError):  # no source at hand
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and _is_path(node.value.func):
            maker = _in_module(node.value.func, factory.__globals__)
            fix = _fix_of_call(node.value, maker) if maker is not _MISSING else None
            if fix is not None:
                return fix
    return None


def _in_module(node: ast.AST, namespace: dict) -> Any:
    """What a path (``optax.sgd``) names in a module's namespace, attributes read from modules only."""
    if isinstance(node, ast.Name):
        return namespace.get(node.id, _MISSING)
    if not isinstance(node, ast.Attribute):
        return _MISSING
    owner = _in_module(node.value, namespace)
    return owner.__dict__.get(node.attr, _MISSING) if inspect.ismodule(owner) else _MISSING


def _source(frame) -> str:
    return "".join(linecache.getlines(frame.f_code.co_filename))


def _assignment_of(name: str, frame) -> ast.Assign | None:
    """The last ``name = ...`` before the frame's line, in the function (or module) it runs."""
    tree = _parsed(frame.f_code.co_filename)
    if tree is None:
        return None
    scope = _scope_of(tree, frame.f_lineno, frame.f_code.co_name)
    best = None
    for node in _walk_scope(scope):
        if isinstance(node, ast.Assign) and node.lineno <= frame.f_lineno:
            names = {t.id for t in node.targets if isinstance(t, ast.Name)}
            names |= {e.id for t in node.targets if isinstance(t, ast.Tuple) for e in t.elts if isinstance(e, ast.Name)}
            if name in names and (best is None or node.lineno > best.lineno):
                best = node
    return best


def _scope_of(tree: ast.Module, line: int, function: str) -> ast.AST:
    """The innermost function definition named ``function`` holding ``line`` (the module itself
    for module-level code)."""
    found: ast.AST = tree
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name != function:
            continue
        if node.lineno <= line <= (node.end_lineno or node.lineno):
            found = node
    return found


def _walk_scope(scope: ast.AST):
    """The nodes of one scope, not those of the functions and classes defined in it."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def _jitted_name(value: ast.expr) -> str | None:
    """``optimizer`` for ``jax.jit(optimizer.update)``: the root name a jit wrapper is made from."""
    if not isinstance(value, ast.Call) or not value.args:
        return None
    func = value.func
    last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    inner = value.args[0]
    while isinstance(inner, ast.Attribute):
        inner = inner.value
    return inner.id if last in _JIT_WRAPPERS and isinstance(inner, ast.Name) else None


def _reads(value: ast.expr, frame) -> tuple[tuple[str, StaticValue], ...]:
    """The plain names an expression reads (numbers, strings, tuples of them), with their values now."""
    found = {}
    for node in ast.walk(value):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in found:
            current = _look_up(node, frame)
            if current is not _MISSING and is_simple(current):
                found[node.id] = StaticValue.of(current)
    return tuple(found.items())


def calling_frame() -> Any:
    """The innermost live frame of the user's own code, from the caller outward."""
    return user_frame(sys._getframe(1))
