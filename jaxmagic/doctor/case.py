"""Reading an exception the doctor's way, shared by every recogniser: the ``Case`` (the exception,
its user frames and their source) and the fixes several pitfalls share (a static argument added
where the user jits the function).

The recognisers live in ``pitfall_*`` modules; each takes a ``Case`` and answers a ``Diagnosis``
or ``None`` (see ``jaxmagic.doctor.registry``).
"""

from __future__ import annotations

import ast
import functools
import os
import re
from typing import Any, Callable, overload

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic import _jax_private
from jaxmagic.doctor.clues import MISSING, NodeT, ParsedSource, Span, UserFrame
from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.method_rewrites import self_reads
from jaxmagic.doctor.registry import PITFALLS
from jaxmagic.tracing import callables
from jaxmagic.tracing.sources import CellNamer, SourceLine
from jaxmagic.words import Words
from jaxmagic.words import doctor as words


def _file_key(file: str) -> str:
    """A file's path as compared (a cell's name, ``<cell-3>``, as it is)."""
    return file if file.startswith("<") else os.path.normcase(os.path.abspath(file))


class Case:
    """One exception as the doctor reads it: the user's frames, the function JAX was tracing and
    its frame, the caller's frame, and the parsed source of each (cached).

    >>> import jax, jax.numpy as jnp
    >>> def first(x, n):
    ...     return x[:n]
    >>> try:
    ...     jax.jit(first)(jnp.ones(3), 2)
    ... except IndexError as exc:
    ...     case = Case(exc, None, lambda filename: None)
    >>> case.traced_frame.function, case.parameters(), case.under_jit
    ('first', ['x', 'n'], True)
    """

    def __init__(self, exc: BaseException, fn: Callable | None, cell_namer: CellNamer):
        self.exc = exc
        self.fn = fn
        self.cell_namer = cell_namer
        try:
            self.message = str(exc)
        except Exception:
            self.message = ""
        self.frames = clues.user_frames(exc.__traceback__)
        self.traced = clues.traced_function(self.message)
        self._parsed: dict[tuple[str, int], ParsedSource | None] = {}
        self._nodes: dict[tuple, ast.AST | None] = {}  # expressions found at a frame, by kind
        self._passed: dict[str, Any] = {}

    # -- frames ------------------------------------------------------------------------------
    @property
    def innermost(self) -> UserFrame | None:
        return self.frames[-1] if self.frames else None

    @functools.cached_property
    def traced_frame(self) -> UserFrame | None:
        """The frame of the function JAX was tracing (where its arguments are tracers)."""
        if self.traced is not None:
            wanted = _file_key(self.traced.file)
            for frame in reversed(self.frames):
                if frame.function == self.traced.name and _file_key(frame.file) == wanted:
                    return frame
            for frame in reversed(self.frames):
                if frame.function == self.traced.name.rsplit(".", 1)[-1]:
                    return frame
        inner = callables.python_function(self.fn)
        code = getattr(inner, "__code__", None)
        for frame in reversed(self.frames):
            if code is not None and frame.code is code:
                return frame
        # No name to go by: the outermost of the innermost frames whose parameters are tracers.
        found = None
        for frame in reversed(self.frames):
            if not any(clues.is_tracer(value) for value in frame.arguments()):
                break
            found = frame
        return found

    @functools.cached_property
    def call_site(self) -> UserFrame | None:
        """The user's frame that called the traced function (``None`` when a tool called it)."""
        traced = self.traced_frame
        if traced is None:
            return None
        index = self.frames.index(traced)
        return self.frames[index - 1] if index > 0 else None

    # -- source ------------------------------------------------------------------------------
    def parsed(self, frame: UserFrame) -> ParsedSource | None:
        key = (frame.file, frame.line)
        if key not in self._parsed:
            self._parsed[key] = clues.parse_around(frame.file, frame.line)
        return self._parsed[key]

    @overload
    def expression(self, frame: UserFrame) -> ast.expr | None: ...
    @overload
    def expression(self, frame: UserFrame, kind: type[NodeT] | tuple[type[NodeT], ...]) -> NodeT | None: ...
    def expression(self, frame: UserFrame, kind: Any = ast.expr) -> Any:
        """The innermost expression of ``kind`` (a class of node, or a tuple of them) at the frame's
        position (cached: every recogniser asks)."""
        key = (frame.file, frame.line, id(frame.frame), kind)
        if key not in self._nodes:
            parsed = self.parsed(frame)
            self._nodes[key] = clues.node_at(parsed.tree, frame.span(), kind) if parsed else None
        return self._nodes[key]

    def statement(self, frame: UserFrame) -> ast.stmt | None:
        parsed = self.parsed(frame)
        return clues.statement_at(parsed.tree, frame.line) if parsed else None

    def names(self, frame: UserFrame) -> rewrites.JaxNames:
        return rewrites.jax_names(frame.frame.f_globals)

    def where(self, frame: UserFrame | None) -> SourceLine | None:
        return frame.source_line(self.cell_namer) if frame is not None else None

    @property
    def function_name(self) -> str | None:
        """The traced function's name, as the user knows it (not a JAX-internal wrapper's)."""
        if self.traced is not None and clues.is_user_file(self.traced.file) and self.traced.name != "<lambda>":
            return self.traced.name
        frame = self.traced_frame or self.innermost
        return frame.function if frame is not None and frame.function != "<lambda>" else None

    @functools.cached_property
    def under_jit(self) -> bool:
        """True when the trace is ``jax.jit``'s own (static arguments only exist there)."""
        if self.traced is not None:
            return self.traced.traced_for == "jit" and clues.is_user_file(self.traced.file)
        frame = self.traced_frame
        if frame is None:
            return False
        kinds = {type(value).__name__ for value in frame.arguments()}
        return bool(kinds & {"JitTracer", "DynamicJaxprTracer"})

    @functools.cached_property
    def batched(self) -> bool:
        """True under ``jax.vmap``: a condition then holds one value per example."""
        frame = self.innermost
        return frame is not None and any("Batch" in type(v).__name__ for v in frame.frame.f_locals.values())

    def says(self, pitfall: str) -> bool:
        """True when JAX's message holds one of the fragments the pitfall declares (``messages``)."""
        return any(fragment.text in self.message for fragment in PITFALLS[pitfall].messages)

    def diagnosis(self, pitfall: str, **fields: Any) -> Diagnosis:
        reference = re.search(r"See (https://\S+errors\.html\S*)", self.message)
        fields.setdefault("function", self.function_name)
        return Diagnosis(
            pitfall,
            error_type=type(self.exc).__name__,
            reference=reference.group(1) if reference else None,
            **fields,
        )

    # -- the function being traced -----------------------------------------------------------
    def parameters(self) -> list[str]:
        return self.traced_frame.parameters if self.traced_frame is not None else []

    def traced_value(self, name: str, frame: UserFrame | None = None) -> Any:
        """The tracer (or value) ``name`` has in ``frame`` (the traced function's by default)."""
        frame = frame or self.traced_frame
        return frame.lookup(name) if frame is not None else MISSING

    def passed(self, name: str) -> Any:
        """The value the caller wrote for parameter ``name``, when it is a literal or a name
        (``activation(x, True)`` -> ``True``); ``MISSING`` when it cannot be told without running code."""
        if name not in self._passed:
            site = self.call_site  # without it, no call is written
            written = self.written_arguments().get(name)
            self._passed[name] = clues.written_value(written, site.lookup) if site is not None else MISSING
        return self._passed[name]

    def written_arguments(self) -> dict[str, ast.expr]:
        """The caller's call of the traced function: the expression it passes for each parameter
        (``{}`` where the call is not known)."""
        site = self.call_site
        node = self.expression(site, ast.Call) if site is not None else None
        if site is None or node is None:
            return {}
        callee = clues.resolve(node.func, site.lookup)
        return rewrites.call_parameters(node, callee if callee is not MISSING else self.fn)

    def scalar_arguments(self, names: list[str]) -> list[str]:
        """Of ``names``, the jitted function's parameters that hold a traced scalar that could be
        static: a Python number, bool or string at the call (an array is not hashable)."""
        if not self.under_jit:
            return []
        params = self.parameters()
        found = []
        for name in names:
            value = self.traced_value(name)
            if not (name in params and clues.is_tracer(value) and getattr(value, "ndim", None) == 0):
                continue
            passed = self.passed(name)
            if passed is MISSING:
                aval = getattr(value, "aval", None)
                hashable = getattr(aval, "weak_type", False) or str(getattr(value, "dtype", "")) == "bool"
            else:
                hashable = isinstance(passed, (bool, int, float, str)) and not hasattr(passed, "shape")
            if hashable:
                found.append(name)
        return found

    def static_candidates(self, depends: list[str]) -> list[str]:
        """The parameters to mark static so that a value depending on ``depends`` is a plain Python
        value: ``[]`` unless every one of them (and every argument JAX names) can be static."""
        found = self.scalar_arguments(depends)
        named = (
            set(self.traced.arguments) if self.traced is not None and clues.is_user_file(self.traced.file) else set()
        )
        return found if found and not (set(depends) | named) - set(found) else []

    def is_flag(self, name: str) -> bool:
        """True when parameter ``name`` looks like a setting (a Python bool, int or string at the call,
        or a traced bool / Python int), not data: static then fits better than ``jnp.where``."""
        passed = self.passed(name)
        if passed is not MISSING:
            return isinstance(passed, (bool, int, str)) and not hasattr(passed, "shape")
        value = self.traced_value(name)
        aval = getattr(value, "aval", None)
        kind = getattr(getattr(value, "dtype", None), "kind", "")
        return kind == "b" or (kind in ("i", "u") and getattr(aval, "weak_type", False))


# ------------------------------------------------------------------------------------------------
# Shared fixes


def function_source(case: Case, frame: UserFrame, edits: list[rewrites.Edit]) -> str | None:
    """The function ``frame`` runs, with ``edits`` applied (its statement alone at top level).

    Used by every recogniser to write its fix as the user's own function changed (see
    ``rewrites.with_edits`` for an example of edits).
    """
    parsed = case.parsed(frame)
    if parsed is None:
        return None
    found = clues.function_of_code(frame.code)
    if found is not None and isinstance(found[1], (ast.FunctionDef, ast.AsyncFunctionDef)):
        return rewrites.definition_with_edits(found[0].lines, found[1], edits, show=[frame.line])
    lines = [e.span.line for e in edits] + [e.span.end_line for e in edits]
    first, last = (min(lines), max(lines)) if lines else (frame.line, frame.line)
    return rewrites.with_edits(parsed.lines, first, last, edits, show=[frame.line])


def static_fix(case: Case, names: list[str]) -> str | None:
    """The traced function's ``jax.jit`` with ``names`` made static, written where the user jits it:
    its decorator, a ``g = jax.jit(f)`` line, a ``jax.jit(f)(...)`` call, or a new decorator.

    >>> import jax, jax.numpy as jnp
    >>> @jax.jit
    ... def first(x, n):
    ...     return x[:n]
    >>> try:
    ...     first(jnp.ones(3), 2)
    ... except IndexError as exc:
    ...     print(static_fix(Case(exc, None, lambda filename: None), ["n"]))
    @jax.jit(static_argnames=("n",))
    def first(x, n):
        return x[:n]
    """
    frame = case.traced_frame
    if frame is None or not names:
        return None
    params = case.parameters()
    names = [n for n in names if n in params]
    if not names:
        return None
    jn = case.names(frame)
    found = clues.function_of_code(frame.code)
    fnode = found[1] if found is not None else None
    if found is not None and isinstance(fnode, ast.Lambda):
        return _static_lambda(found[0], fnode, names, frame.lookup, jn.jit)
    if found is None or not isinstance(fnode, (ast.FunctionDef, ast.AsyncFunctionDef)):
        # No source to edit (code run from a string): the jit call itself says it all.
        name = frame.function
        if not name.isidentifier():
            return None
        inner = f"{name}.__wrapped__" if _jax_private.is_jitted(frame.frame.f_globals.get(name)) else name
        return f"{name} = {jn.jit}({inner}, static_argnames={rewrites.names_tuple(names)})"
    parsed = found[0]
    use = rewrites.decorator_jit(fnode, frame.lookup)
    if use is not None and use.library == "eqx":
        return _python_values_at_call(case, names)
    if use is not None:
        edit = rewrites.add_static_edit(use, names, parsed.lines, jn.jit)
        return rewrites.definition_with_edits(parsed.lines, fnode, [edit], show=[frame.line])
    elsewhere = _jit_written_elsewhere(case, fnode.name)
    if elsewhere is not None:
        where, stmt, use = elsewhere
        return rewrites.definition_with_edits(
            where.lines, stmt, [rewrites.add_static_edit(use, names, where.lines, jn.jit)]
        )
    decorator = rewrites.insert_decorator_edit(fnode, rewrites.static_jit(jn.jit, names))
    return rewrites.definition_with_edits(parsed.lines, fnode, [decorator], show=[frame.line])


def _static_lambda(
    parsed: ParsedSource, fnode: ast.Lambda, names: list[str], lookup: Callable[[str], Any], jit_name: str
) -> str | None:
    """``g = jax.jit(lambda n: ...)`` with ``names`` made static in that jit; ``None`` where the
    lambda is not jitted where it is written."""
    call = clues.enclosing(parsed.tree, fnode, ast.Call)
    use = rewrites.jit_use(call, lookup) if call is not None and call.args and call.args[0] is fnode else None
    statement = clues.statement_at(parsed.tree, fnode.lineno) if use is not None else None
    if use is None or statement is None:
        return None
    return rewrites.definition_with_edits(
        parsed.lines, statement, [rewrites.add_static_edit(use, names, parsed.lines, jit_name)]
    )


def static_field_choice(case: Case, frame: UserFrame | None, node: ast.AST | None) -> tuple[Words, str] | None:
    """``self.n`` traced inside an Equinox module (a field JAX traces as a leaf): the field declared
    static in the class, ``n: int = eqx.field(static=True)``, with its label. ``None`` otherwise."""
    import sys

    eqx = sys.modules.get("equinox")
    owner = frame.lookup("self") if frame is not None else MISSING
    if frame is None or node is None or eqx is None or owner is MISSING or not isinstance(owner, eqx.Module):
        return None
    fields = _traced_fields(frame, owner, node)
    parsed = case.parsed(frame)
    cls = _class_around(parsed, type(owner).__name__, frame.line) if fields and parsed is not None else None
    declared = _declared(cls, fields) if cls is not None else None
    if parsed is None or cls is None or declared is None:
        return None
    name = rewrites.alias(frame.frame.f_globals, eqx, "eqx")
    edits = [_static_field_edit(parsed, declared[field_name], name) for field_name in fields]
    fixed = rewrites.definition_with_edits(parsed.lines, cls, edits)
    return words.static_field(fields, cls.name), fixed


def _traced_fields(frame: UserFrame, owner: Any, node: ast.AST) -> list[str]:
    """The traced fields of ``self`` the test reads; none where a traced argument decides it too
    (no field made static would fix it)."""
    if any(n != "self" and clues.is_tracer(frame.lookup(n)) for n in clues.names_in(node)):
        return []
    return [name for name in self_reads(node) if clues.is_tracer(getattr(owner, name, None))]


def _declared(cls: ast.ClassDef, fields: list[str]) -> dict[str, ast.AnnAssign] | None:
    """The class's declarations of ``fields``; ``None`` where one is missing or is an array (data:
    made static, Equinox hashes it by identity, and warns)."""
    declared = {s.target.id: s for s in cls.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
    if any(f not in declared or "Array" in ast.unparse(declared[f].annotation) for f in fields):
        return None
    return declared


def _class_around(parsed: ParsedSource, name: str, line: int) -> ast.ClassDef | None:
    """The class ``name`` whose body holds ``line``."""
    return next(
        (
            c
            for c in clues.nodes_in(parsed.tree, ast.ClassDef)
            if c.name == name and c.lineno <= line <= Span.of(c).end_line
        ),
        None,
    )


def _static_field_edit(parsed: ParsedSource, statement: ast.AnnAssign, eqx_name: str) -> rewrites.Edit:
    """``n: int`` -> ``n: int = eqx.field(static=True)``; a default kept as ``eqx.field(default=...)``."""
    if statement.value is None:
        return rewrites.Edit(clues.end_of(statement), f" = {eqx_name}.field(static=True)")
    default = clues.source_of(parsed, statement.value)
    return rewrites.Edit(clues.Span.of(statement.value), f"{eqx_name}.field(default={default}, static=True)")


def jit_library(case: Case) -> str:
    """How the traced function is jitted where the user wrote it: ``"jax"``, ``"nnx"`` or ``"eqx"``."""
    frame = case.traced_frame
    found = clues.function_of_code(frame.code) if frame is not None else None
    use = rewrites.decorator_jit(found[1], frame.lookup) if frame is not None and found is not None else None
    return use.library if use is not None else "jax"


def static_choice(case: Case, names: list[str], why: Words) -> tuple[Words, str] | None:
    """The static fix with its label: "Mark `n` static: <why>" for ``jax.jit`` and ``nnx.jit``; for
    ``eqx.filter_jit``, which keeps every non-array argument static, "Pass `n` as a plain Python
    value" with the call changed. ``None`` when there is no fix to write."""
    fixed = static_fix(case, names)
    if not fixed:
        return None
    if jit_library(case) == "eqx":
        return words.pass_python_value(names, why), fixed
    return words.mark_static(names, why), fixed


def _python_values_at_call(case: Case, names: list[str]) -> str | None:
    """The call of an ``eqx.filter_jit`` function with ``names`` passed as Python values:
    ``jnp.array(2)`` -> ``2``, any other array expression ``e`` -> ``int(e)`` (``bool`` / ``float``)."""
    site = case.call_site
    parsed = case.parsed(site) if site is not None else None
    statement = case.statement(site) if site is not None else None
    written = case.written_arguments()
    if parsed is None or statement is None or not written:
        return None
    edits = []
    for name in names:
        node = written.get(name)
        if node is None:
            return None
        kind = getattr(getattr(case.traced_value(name), "dtype", None), "kind", "i")
        python = {"b": "bool", "f": "float"}.get(kind, "int")
        if isinstance(node, ast.Call) and len(node.args) == 1 and isinstance(node.args[0], ast.Constant):
            text = repr(node.args[0].value)
        else:
            text = f"{python}({clues.source_of(parsed, node)})"
        edits.append(rewrites.Edit(clues.Span.of(node), text))
    return rewrites.definition_with_edits(parsed.lines, statement, edits)


def _jit_written_elsewhere(case: Case, function_name: str) -> tuple[ParsedSource, ast.stmt, rewrites.JitUse] | None:
    """``jax.jit(f)(x)`` at the call site, or ``g = jax.jit(f, ...)`` in the caller's or the function's file."""
    site = case.call_site
    if site is None:
        return None
    parsed, node = case.parsed(site), case.expression(site, ast.Call)
    if parsed is not None and node is not None and isinstance(node.func, ast.Call):
        use = rewrites.jit_use(node.func, site.lookup)
        statement = case.statement(site)
        if use is not None and statement is not None:
            return parsed, statement, use
    callee = clues.resolve(node.func, site.lookup) if node is not None else MISSING
    return jit_assignment(case, callee, function_name)


def jit_assignment(
    case: Case, callee: Any, function_name: str | None = None
) -> tuple[ParsedSource, ast.Assign, rewrites.JitUse] | None:
    """The last ``g = jax.jit(...)`` (of ``function_name`` where given) whose ``g`` is ``callee``
    (where known), in the caller's source or else the traced code's (the cell that defined it)."""
    site = case.call_site
    if site is None:
        return None
    sources = [case.parsed(site), clues.parse_file(case.traced_frame.file) if case.traced_frame else None]
    for source in sources:
        best = _last_jit_assignment(source, function_name, callee, site.lookup) if source is not None else None
        if best is not None:
            return best
    return None


def _last_jit_assignment(
    source: ParsedSource, function_name: str | None, callee: Any, lookup: Callable[[str], Any]
) -> tuple[ParsedSource, ast.Assign, rewrites.JitUse] | None:
    """``(source, assign, use)`` for the last ``g = jax.jit(function_name, ...)`` in ``source``
    (of any function when ``function_name`` is ``None``; whose ``g`` is ``callee``, when that is
    known); ``None`` when there is none."""
    best: tuple[ParsedSource, ast.Assign, rewrites.JitUse] | None = None
    for assign in clues.nodes_in(source.tree, ast.Assign):
        value = assign.value
        if not (isinstance(value, ast.Call) and value.args):
            continue
        named = value.args[0].id if isinstance(value.args[0], ast.Name) else None
        if function_name is not None and named != function_name:
            continue
        use = rewrites.jit_use(value, lookup)
        if use is None or use.kind != "call":
            continue
        targets = [t.id for t in assign.targets if isinstance(t, ast.Name)]
        if callee is not MISSING and targets and lookup(targets[0]) is not callee:
            continue
        if best is None or assign.lineno > best[1].lineno:
            best = (source, assign, use)
    return best


def magic_hint(case: Case, names: list[str]) -> list[tuple[Words, str]]:
    """When a tool (a jaxmagic magic) jitted the function, its ``-s`` option does the same for one call.

    ``[]`` when the user jitted it (the hint needs ``case.fn``, the plain function a magic traced).
    """
    if not names or case.fn is None or case.call_site is not None or callables.python_function(case.fn) is None:
        return []
    if _jax_private.is_jitted(case.fn):
        return []
    return [(words.magic_static_option(names, case.function_name), "")]


def kind_of(value: Any) -> str:
    """A traced value described in words: ``boolean``, ``float array of shape (3,)``.

    >>> import numpy as np
    >>> kind_of(np.ones(3, np.float32)), kind_of(np.bool_(True)), kind_of("x")
    ('float array of shape (3,)', 'boolean', 'value')
    """
    dtype = getattr(value, "dtype", None)
    shape = getattr(value, "shape", ())
    if dtype is None:
        return "value"
    kind = {"b": "boolean", "i": "integer", "u": "integer", "f": "float", "c": "complex"}.get(
        getattr(dtype, "kind", ""), str(dtype)
    )
    if shape == ():
        return kind
    return f"{kind} array of shape {tuple(shape)}"


def depends_on(case: Case, frame: UserFrame, node: ast.AST | None) -> list[str]:
    """The traced names a failing expression reads: JAX's arguments first, then traced locals.

    For ``points[:n]`` inside ``f(points, n)``, JAX's message names no argument; ``n`` is found as
    the name in the slice whose value is a tracer.
    """
    in_node = clues.names_in(node) if node is not None else []
    arguments = list(case.traced.arguments) if case.traced and clues.is_user_file(case.traced.file) else []
    named = [a for a in arguments if a in in_node] or [n for n in in_node if clues.is_tracer(frame.lookup(n))]
    return named or arguments
