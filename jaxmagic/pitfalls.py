"""Recognising the traps JAX raises while it traces: Python control flow on a traced value
(``python-control-flow``), a size or slice from a traced value (``traced-shape``), NumPy on a
traced value (``numpy-in-jit``), ``int()`` / ``float()`` / ``.item()`` on one
(``python-scalar-conversion``). ``recognise`` tries these and those of ``call_pitfalls``.

Each recogniser reads a ``Case`` (the exception, its user frames, their source) and answers a
``Diagnosis`` or ``None``.
"""

from __future__ import annotations

import ast
import functools
import os
import re
from typing import Any, Callable

import jax

from jaxmagic import _jax_private, branch_rewrites, clues, rewrites
from jaxmagic.clues import MISSING, ParsedSource, Span, UserFrame
from jaxmagic.doctor import Diagnosis
from jaxmagic.errors import UserCodeError
from jaxmagic.sources import CellNamer, SourceLine


class Case:
    """One exception as the doctor reads it."""

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

    # -- frames ------------------------------------------------------------------------------
    @property
    def innermost(self) -> UserFrame | None:
        return self.frames[-1] if self.frames else None

    @functools.cached_property
    def traced_frame(self) -> UserFrame | None:
        """The frame of the function JAX was tracing (where its arguments are tracers)."""
        if self.traced is not None:
            wanted = os.path.normcase(os.path.abspath(self.traced.file)) if not self.traced.file.startswith("<") else self.traced.file
            for frame in reversed(self.frames):
                file = frame.file if frame.file.startswith("<") else os.path.normcase(os.path.abspath(frame.file))
                if frame.function == self.traced.name and file == wanted:
                    return frame
            for frame in reversed(self.frames):
                if frame.function == self.traced.name.rsplit(".", 1)[-1]:
                    return frame
        inner = rewrites.python_function(self.fn)
        code = getattr(inner, "__code__", None)
        for frame in reversed(self.frames):
            if code is not None and frame.code is code:
                return frame
        # No name to go by: the outermost of the innermost frames whose parameters are tracers.
        found = None
        for frame in reversed(self.frames):
            params = frame.code.co_varnames[: frame.code.co_argcount + frame.code.co_kwonlyargcount]
            if not any(clues.is_tracer(frame.frame.f_locals.get(p)) for p in params):
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

    def expression(self, frame: UserFrame, kind=ast.expr) -> ast.AST | None:
        parsed = self.parsed(frame)
        return clues.node_at(parsed.tree, frame.span(), kind) if parsed else None

    def statement(self, frame: UserFrame) -> ast.stmt | None:
        parsed = self.parsed(frame)
        return clues.statement_at(parsed.tree, frame.line) if parsed else None

    def text(self, frame: UserFrame, node: ast.AST) -> str:
        return clues.source_of(self.parsed(frame), node)

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
        params = frame.code.co_varnames[: frame.code.co_argcount + frame.code.co_kwonlyargcount]
        kinds = {type(frame.frame.f_locals.get(p)).__name__ for p in params}
        return bool(kinds & {"JitTracer", "DynamicJaxprTracer"})

    @functools.cached_property
    def batched(self) -> bool:
        """True under ``jax.vmap``: a condition then holds one value per example."""
        frame = self.innermost
        return frame is not None and any("Batch" in type(v).__name__ for v in frame.frame.f_locals.values())

    def diagnosis(self, pitfall: str, **fields) -> Diagnosis:
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
        frame = self.traced_frame
        if frame is None:
            return []
        code = frame.code
        count = code.co_argcount + code.co_kwonlyargcount
        return list(code.co_varnames[:count])

    def traced_value(self, name: str, frame: UserFrame | None = None) -> Any:
        """The tracer (or value) ``name`` has in ``frame`` (the traced function's by default)."""
        frame = frame or self.traced_frame
        return frame.lookup(name) if frame is not None else MISSING

    def scalar_arguments(self, names) -> list[str]:
        """Of ``names``, the jitted function's parameters that hold a traced scalar (static candidates)."""
        if not self.under_jit:
            return []
        params = self.parameters()
        found = []
        for name in names:
            value = self.traced_value(name)
            if name in params and clues.is_tracer(value) and getattr(value, "ndim", None) == 0:
                found.append(name)
        return found


# ------------------------------------------------------------------------------------------------
# Shared fixes


def function_source(case: Case, frame: UserFrame, edits: list[rewrites.Edit]) -> str | None:
    """The function ``frame`` runs, with ``edits`` applied (its statement alone at top level)."""
    parsed = case.parsed(frame)
    if parsed is None:
        return None
    found = clues.function_of_code(frame.code)
    if found is not None and isinstance(found[1], (ast.FunctionDef, ast.AsyncFunctionDef)):
        parsed, node = found
        first, last = rewrites.function_first_line(node), node.end_lineno
    else:
        lines = [e.span.line for e in edits] + [e.span.end_line for e in edits]
        first, last = (min(lines), max(lines)) if lines else (frame.line, frame.line)
    return rewrites.with_edits(parsed.lines, first, last, edits)


def static_fix(case: Case, names: list[str]) -> str | None:
    """The traced function's ``jax.jit`` with ``names`` made static, written where the user jits it:
    its decorator, a ``g = jax.jit(f)`` line, a ``jax.jit(f)(...)`` call, or a new decorator."""
    frame = case.traced_frame
    if frame is None or not names:
        return None
    params = case.parameters()
    names = [n for n in names if n in params]
    if not names:
        return None
    jn = case.names(frame)
    found = clues.function_of_code(frame.code)
    if found is None or not isinstance(found[1], (ast.FunctionDef, ast.AsyncFunctionDef)):
        # No source to edit (code run from a string): the jit call itself says it all.
        name = frame.function
        if not name.isidentifier():
            return None
        inner = f"{name}.__wrapped__" if _jax_private.is_jitted(frame.frame.f_globals.get(name)) else name
        return f"{name} = {jn.jit}({inner}, static_argnames={rewrites.names_tuple(names)})"
    parsed, fnode = found
    first, last = rewrites.function_first_line(fnode), fnode.end_lineno
    use = rewrites.decorator_jit(fnode, frame.lookup)
    if use is not None:
        return rewrites.with_edits(parsed.lines, first, last, [rewrites.add_static_edit(use, names, parsed.lines, jn.jit)])
    elsewhere = _jit_written_elsewhere(case, fnode.name)
    if elsewhere is not None:
        where, stmt, use = elsewhere
        return rewrites.with_edits(where.lines, stmt.lineno, stmt.end_lineno, [rewrites.add_static_edit(use, names, where.lines, jn.jit)])
    value = rewrites.names_tuple(names)
    decorator = (
        f"{jn.jit}(static_argnames={value})" if rewrites.jit_takes_options_alone()
        else f"functools.partial({jn.jit}, static_argnames={value})"
    )
    return rewrites.with_edits(parsed.lines, first, last, [rewrites.insert_decorator_edit(fnode, decorator)])


def _jit_written_elsewhere(case: Case, function_name: str):
    """``jax.jit(f)(x)`` at the call site, or ``g = jax.jit(f, ...)`` in the caller's or the function's file."""
    site = case.call_site
    if site is None:
        return None
    parsed = case.parsed(site)
    node = clues.node_at(parsed.tree, site.span(), ast.Call) if parsed is not None else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Call):
        use = rewrites.jit_use(node.func, site.lookup)
        statement = clues.statement_at(parsed.tree, site.line)
        if use is not None and statement is not None:
            return parsed, statement, use
    callee = clues.resolve(node.func, site.lookup) if isinstance(node, ast.Call) else MISSING
    sources = [parsed, clues.parse_file(case.traced_frame.file)] if case.traced_frame else [parsed]
    for source in sources:
        if source is None:
            continue
        best = None
        for assign in clues.nodes_in(source.tree, ast.Assign):
            value = assign.value
            if not (isinstance(value, ast.Call) and value.args and isinstance(value.args[0], ast.Name)):
                continue
            if value.args[0].id != function_name:
                continue
            use = rewrites.jit_use(value, site.lookup)
            if use is None or use.kind != "call":
                continue
            targets = [t.id for t in assign.targets if isinstance(t, ast.Name)]
            if callee is not MISSING and targets and site.lookup(targets[0]) is not callee:
                continue
            if best is None or assign.lineno > best[1].lineno:
                best = (source, assign, use)
        if best is not None:
            return best
    return None


def magic_hint(case: Case, names: list[str]) -> list[tuple[str, str]]:
    """When a tool (a jaxmagic magic) jitted the function, its ``-s`` option does the same for one call."""
    if not names or case.fn is None or case.call_site is not None or rewrites.python_function(case.fn) is None:
        return []
    if _jax_private.is_jitted(case.fn):
        return []
    spec = ",".join(names)
    return [(f"In jaxmagic's magics, `-s {spec}` marks {_plural(names)} static for that one call, "
             f"e.g. `%jaxpr -s {spec} {case.function_name or 'f'}(...)`.", "")]


def _cell_of(where: SourceLine | None) -> str:
    return where.label if where is not None else "your code"


def _plural(names: list[str]) -> str:
    quoted = [f"`{n}`" for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _kind_of(value: Any) -> str:
    dtype = getattr(value, "dtype", None)
    shape = getattr(value, "shape", None)
    if dtype is None:
        return "value"
    kind = {"b": "boolean", "i": "integer", "u": "integer", "f": "float", "c": "complex"}.get(getattr(dtype, "kind", ""), str(dtype))
    if shape == ():
        return kind
    return f"{kind} array of shape {tuple(shape)}"


def _depends_on(case: Case, frame: UserFrame, node: ast.AST | None) -> list[str]:
    """The traced names a failing expression reads: JAX's arguments first, then traced locals."""
    in_node = clues.names_in(node) if node is not None else []
    arguments = list(case.traced.arguments) if case.traced and clues.is_user_file(case.traced.file) else []
    named = [a for a in arguments if a in in_node] or [n for n in in_node if clues.is_tracer(frame.lookup(n))]
    return named or arguments


# ------------------------------------------------------------------------------------------------
# python-control-flow


_CONSTRUCTS = {
    "if": "`if {cond}:`",
    "while": "`while {cond}:`",
    "assert": "`assert {cond}`",
    "ternary": "`... if {cond} else ...`",
    "bool": "`bool({cond})`",
    "and-or": "`and` / `or` on `{cond}`",
    "not": "`not {cond}`",
    "other": "`{cond}` as a True / False",
}


def _condition(case: Case, frame: UserFrame):
    """What asked for a truth value (``if``, ``while``, ``bool()``...) and the condition's node."""
    parsed = case.parsed(frame)
    if parsed is None:
        return "other", None, None
    span = frame.span()
    statement = clues.statement_at(parsed.tree, frame.line)
    node = clues.node_at(parsed.tree, span)
    if isinstance(statement, (ast.If, ast.While, ast.Assert)) and span is not None:
        test = Span.of(statement.test)
        # A bare name as the test: the jump's position is the whole statement, not the name.
        if test.contains(span) or (span.contains(test) and span.line == statement.lineno):
            kind = {ast.If: "if", ast.While: "while", ast.Assert: "assert"}[type(statement)]
            return kind, statement.test, statement
    if node is not None:
        ternary = node if isinstance(node, ast.IfExp) else clues.enclosing(parsed.tree, node, ast.IfExp)
        if ternary is not None and (ternary is node or Span.of(ternary.test).contains(Span.of(node))):
            return "ternary", ternary.test, ternary
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "bool" and node.args:
            return "bool", node.args[0], node
        if isinstance(node, ast.BoolOp):
            return "and-or", node, node
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return "not", node.operand, node
    return "other", node, statement


def _parent_of(tree: ast.AST, child: ast.AST) -> ast.AST | None:
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and child in block:
                return node
    return None


def python_control_flow(case: Case) -> Diagnosis | None:
    exc = case.exc
    ambiguous = isinstance(exc, ValueError) and "truth value of an array" in case.message
    if not (isinstance(exc, jax.errors.TracerBoolConversionError) or ambiguous):
        return None
    frame = case.innermost
    if frame is None:
        return None
    kind, cond, holder = _condition(case, frame)
    traced_names = [n for n in (clues.names_in(cond) if cond is not None else []) if clues.is_tracer(frame.lookup(n))]
    if ambiguous and not traced_names:
        return None  # NumPy's own ambiguity outside any trace: a plain bug, not a JIT trap
    cond_text = case.text(frame, cond) if cond is not None else (frame.source_line(case.cell_namer).text or "the condition")
    depends = _depends_on(case, frame, cond)
    variable = depends[0] if depends else None
    where = case.where(frame)
    fname = case.function_name or frame.function
    jn = case.names(frame)
    scalar = not ambiguous and not case.batched  # under vmap a condition holds one value per example
    static_names = case.scalar_arguments(depends) if not ambiguous else []

    construct = _CONSTRUCTS[kind].format(cond=cond_text)
    if variable is not None and variable in case.parameters() and isinstance(cond, ast.Name) and cond.id == variable:
        value = case.traced_value(variable)
        what = f"`{variable}` is an argument of `{fname}`, so {'`jax.jit`' if case.under_jit else 'JAX'} traces it: while `{fname}` is traced, `{variable}` stands for any {_kind_of(value)}, with no value yet."
    elif variable is not None:
        what = (f"`{cond_text}` depends on `{variable}`, which is traced: while JAX traces `{fname}` it "
                f"has no value yet, only a shape and a dtype.")
    else:
        what = f"`{cond_text}` is a traced value: while JAX traces `{fname}` it has no value yet."
    why = f" Python's {construct} at {_cell_of(where)} needs a real True or False to decide, so tracing stops there."
    if ambiguous:
        why += " (It is an array of several values, too, and an array has no single truth value.)"

    fixes: list[tuple[str, str]] = []
    if static_names:
        code = static_fix(case, static_names)
        if code:
            fixes.append((
                f"Mark {_plural(static_names)} static: JAX then compiles `{fname}` once per value it is called with, "
                f"and your {f'`{kind}`' if kind in ('if', 'while') else 'condition'} sees a plain Python value.",
                code,
            ))
    rewrite = _control_flow_rewrite(case, frame, kind, holder, jn, scalar)
    if rewrite is not None:
        fixes.append(rewrite)
    if kind == "assert" and isinstance(holder, ast.Assert):
        fixes.append(_assert_rewrite(case, frame, holder, jn))
    if not fixes:
        fixes.append(("Let the compiled code decide, with JAX's own control flow:", _control_flow_template(kind, cond_text, jn)))
    fixes += magic_hint(case, static_names)
    (note, fix), *others = fixes
    return case.diagnosis(
        "python-control-flow",
        explanation=what + why,
        fix=fix,
        fix_note=note,
        alternatives=tuple((label, code) for label, code in others),
        where=where,
        variable=variable,
        static_argnames=tuple(static_names) if fixes[0][1] and static_names and note.startswith("Mark") else (),
    )


def _control_flow_rewrite(case: Case, frame: UserFrame, kind: str, holder, jn, scalar: bool):
    parsed = case.parsed(frame)
    found = clues.function_of_code(frame.code)
    if parsed is None or holder is None:
        return None
    function = found[1] if found else parsed.tree
    edit = None
    if kind == "if" and isinstance(holder, ast.If):
        edit = branch_rewrites.if_rewrite(holder, _parent_of(function, holder) or function, parsed.lines, jnp=jn.jnp, lax=jn.lax, scalar=scalar)
        if edit is not None:
            uses_cond = ".cond(" in edit.text
            label = (
                f"Keep it traced and let the compiled code choose: `{jn.lax}.cond` runs only the branch it needs "
                f"(both branches must give the same shape and dtype)." if uses_cond else
                f"Keep it traced and let the compiled code choose: `{jn.jnp}.where` computes both values and picks one per element."
            )
    elif kind == "while" and isinstance(holder, ast.While):
        edit = branch_rewrites.while_rewrite(holder, function, parsed.lines, lax=jn.lax)
        label = f"Keep it traced and loop inside the compiled code with `{jn.lax}.while_loop` (the loop state keeps one shape and dtype)."
    elif kind == "ternary" and isinstance(holder, ast.IfExp):
        edit = branch_rewrites.ternary_rewrite(holder, parsed.lines, jnp=jn.jnp)
        label = f"Keep it traced and choose with `{jn.jnp}.where`, which computes both values and picks one per element."
    if edit is None:
        return None
    code = function_source(case, frame, [edit])
    return (label, code) if code else None


def _assert_rewrite(case: Case, frame: UserFrame, node: ast.Assert, jn) -> tuple[str, str]:
    """``assert cond, msg`` -> ``checkify.check(cond, msg)``, run through ``checkify.checkify``."""
    cond = case.text(frame, node.test)
    message = case.text(frame, node.msg) if node.msg is not None else f'"{cond} failed"'
    edit = rewrites.Edit(Span.of(node), f"checkify.check({cond}, {message})")
    body = function_source(case, frame, [edit]) or edit.text
    name = case.function_name or frame.function
    code = (f"from jax.experimental import checkify\n\n{body}\n\n"
            f"error, result = checkify.checkify({name})(...)   # the check runs in the compiled code\n"
            f"error.throw()   # raises here if it failed")
    return (f"Check it inside the compiled code with `checkify`, which reports the failure after the call "
            f"(or check the result outside the jitted function):", code)


def _control_flow_template(kind: str, cond: str, jn) -> str:
    if kind == "while":
        return (f"state = {jn.lax}.while_loop(lambda state: <condition on state>, body_function, initial_state)"
                f"\n# your condition: {cond}")
    return (f"result = {jn.jnp}.where({cond}, value_if_true, value_if_false)\n"
            f"# or, to run only one of two functions:\n"
            f"result = {jn.lax}.cond({cond}, true_function, false_function, operand)")


# ------------------------------------------------------------------------------------------------
# numpy-in-jit


def _numpy_callable(value: Any) -> str | None:
    """``"numpy.linalg.norm"`` for a NumPy function (or ufunc); ``None`` for anything else."""
    module = getattr(value, "__module__", None) or ""
    if type(value).__name__ == "ufunc":
        module = "numpy"
    if module == "numpy" or module.startswith("numpy."):
        return module
    return None


def _jnp_path(func_node: ast.AST, frame: UserFrame) -> tuple[str, str] | None:
    """For ``np.linalg.norm``: ``("np.linalg.norm", "linalg.norm")`` when ``jax.numpy`` has it."""
    import jax.numpy as jnp

    parts = []
    node = func_node
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    base = frame.lookup(node.id)
    import numpy

    if base is MISSING or not (base is numpy or getattr(base, "__name__", "").startswith("numpy.")):
        return None
    path = ".".join(reversed(parts))
    target = jnp
    for part in reversed(parts):
        target = getattr(target, part, None)
        if target is None:
            return None
    return ast.unparse(func_node), path


def numpy_in_jit(case: Case) -> Diagnosis | None:
    exc = case.exc
    frame = case.innermost
    if frame is None:
        return None
    conversion = isinstance(exc, jax.errors.TracerArrayConversionError)
    tracer_in_numpy = isinstance(exc, (TypeError, jax.errors.TracerIntegerConversionError)) and "Tracer" in case.message
    if not (conversion or tracer_in_numpy):
        return None
    parsed = case.parsed(frame)
    call = case.expression(frame, ast.Call)
    if parsed is None or not isinstance(call, ast.Call):
        return None
    np_func = _jnp_path(call.func, frame)
    if np_func is None:
        return _library_conversion(case, frame, call) if conversion else None
    written, path = np_func
    jn = case.names(frame)
    statement = clues.statement_at(parsed.tree, frame.line)
    edits, replaced = [], []
    for node in clues.nodes_in(statement or call, ast.Call):
        other = _jnp_path(node.func, frame)
        if other is not None:
            edits.append(rewrites.Edit(Span.of(node.func), f"{jn.jnp}.{other[1]}"))
            replaced.append(other[0])
    depends = _depends_on(case, frame, call)
    variable = depends[0] if depends else None
    fname = case.function_name or frame.function
    where = case.where(frame)
    code = function_source(case, frame, edits)
    traced = f"`{variable}`" if variable else "its argument"
    explanation = (
        f"`{written}` is NumPy: it needs real numbers, but inside `{fname}` {traced} is traced, a stand-in "
        f"with a shape and a dtype and no values yet, so NumPy cannot read it ({_cell_of(where)}). "
        f"`{jn.jnp}.{path}` does the same computation as part of the compiled code."
    )
    return case.diagnosis(
        "numpy-in-jit",
        explanation=explanation,
        fix=code or f"{jn.jnp}.{path}({', '.join(ast.unparse(a) for a in call.args)})",
        fix_note=f"Use `{jn.jnp}` instead of NumPy inside a jitted function" + (f" ({', '.join(f'`{r}`' for r in dict.fromkeys(replaced))})." if replaced else "."),
        where=where,
        variable=variable,
        alternatives=(("If you need NumPy itself, call it outside the jitted function, on its result:", f"result = {fname}(...)\n{written}(result)"),),
    )


def _scipy_equivalent(func: ast.AST, frame: UserFrame) -> str | None:
    """``jax.scipy.signal.convolve`` for ``scipy.signal.convolve`` (or ``signal.convolve``), when JAX has it."""
    parts = []
    node = func
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    base = frame.lookup(node.id) if isinstance(node, ast.Name) else MISSING
    module = getattr(base, "__name__", "") if base is not MISSING else ""
    if not (module == "scipy" or module.startswith("scipy.")):
        return None
    path = module.split(".")[1:] + list(reversed(parts))
    try:
        import jax.scipy as target
    except ImportError:  # pragma: no cover
        return None
    for part in path:
        target = getattr(target, part, None)
        if target is None:
            return None
    return ".".join(["scipy", *path])


def _library_conversion(case: Case, frame: UserFrame, call: ast.Call) -> Diagnosis | None:
    """A library function (SciPy, ...) that turns its argument into a NumPy array."""
    callee = frame.resolve(call.func)
    module = getattr(callee, "__module__", "") or ""
    if callee is MISSING or not module or module.startswith(("jax", "jaxlib")):
        return None
    written = ast.unparse(call.func)
    fname = case.function_name or frame.function
    jn = case.names(frame)
    equivalent = _scipy_equivalent(call.func, frame)
    alternative = f"{jn.jax}.{equivalent}" if equivalent else None
    depends = _depends_on(case, frame, call)
    explanation = (
        f"`{written}` (from `{module.split('.')[0]}`) turns its input into a NumPy array, which needs real "
        f"numbers; inside `{fname}` its input is traced and has no values yet ({_cell_of(case.where(frame))})."
    )
    if alternative:
        fix = function_source(case, frame, [rewrites.Edit(Span.of(call.func), alternative)]) or alternative
        note = f"Use JAX's own `{alternative}`, which traces."
    else:
        fix = f"result = {fname}(...)   # the jitted part\n{written}(result)   # the NumPy-based part, after it"
        note = f"Call `{written}` outside the jitted function, on arrays with values."
    return case.diagnosis(
        "numpy-in-jit",
        explanation=explanation,
        fix=fix,
        fix_note=note,
        where=case.where(frame),
        variable=depends[0] if depends else None,
    )


# ------------------------------------------------------------------------------------------------
# python-scalar-conversion


_CONVERSION_RE = re.compile(r"The problem arose with the `(?P<fn>\w+)` function|occurred in the (?P<method>\w+)\(\) method")


def _math_function(node: ast.AST, frame: UserFrame) -> str | None:
    """``"sqrt"`` for a call of ``math.sqrt`` (when ``jax.numpy`` has a ``sqrt``)."""
    import math

    import jax.numpy as jnp

    if not isinstance(node, ast.Call):
        return None
    callee = frame.resolve(node.func)
    name = getattr(callee, "__name__", "")
    if callee is MISSING or getattr(math, name, None) is not callee or not hasattr(jnp, name):
        return None
    return name


def python_scalar_conversion(case: Case) -> Diagnosis | None:
    exc = case.exc
    frame = case.innermost
    if frame is None or isinstance(exc, jax.errors.TracerBoolConversionError):
        return None
    if not isinstance(exc, (jax.errors.ConcretizationTypeError, jax.errors.TracerIntegerConversionError)):
        return None
    node = case.expression(frame)
    if node is None:
        return None
    jn = case.names(frame)
    math_function = _math_function(node, frame)
    if math_function is not None:
        # math.sqrt(x) -> jnp.sqrt(x): math works on Python floats only.
        value_node = node.args[0] if node.args else node
        edit, shown = rewrites.Edit(Span.of(node.func), f"{jn.jnp}.{math_function}"), case.text(frame, node)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("int", "float", "complex") and node.args:
        # float(loss) -> loss.astype(float): the same number, still an array the compiled code computes.
        value_node = node.args[0]
        inner = case.text(frame, value_node)
        atomic = isinstance(value_node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript))
        target = node.func.id
        new = f"{inner}.astype({target})" if atomic else f"{jn.jnp}.asarray({inner}, dtype={target})"
        edit, shown = rewrites.Edit(Span.of(node), new), f"{target}({inner})"
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("item", "tolist") and not node.args:
        value_node = node.func.value
        inner = case.text(frame, value_node)
        edit, shown = rewrites.Edit(Span.of(node), inner), f"{inner}.{node.func.attr}()"
    elif isinstance(node, ast.Subscript) and isinstance(exc, jax.errors.TracerIntegerConversionError):
        # weights[i] on a Python list: one stacked array can be indexed by a traced i.
        container = frame.resolve(node.value) if isinstance(node.value, (ast.Name, ast.Attribute)) else MISSING
        if not isinstance(container, (list, tuple)):
            return None
        value_node = node.slice
        seq, index = case.text(frame, node.value), case.text(frame, node.slice)
        edit, shown = rewrites.Edit(Span.of(node.value), f"{jn.jnp}.asarray({seq})"), f"{seq}[{index}]"
    else:
        return None
    depends = _depends_on(case, frame, value_node)
    variable = depends[0] if depends else None
    fname = case.function_name or frame.function
    where = case.where(frame)
    if isinstance(node, ast.Subscript):
        what = (f"`{shown}` ({_cell_of(where)}) indexes a Python {type(frame.resolve(node.value)).__name__} with a traced index: Python needs "
                f"a real int to pick an element, and while JAX traces `{fname}` the index has no value yet.")
        note = f"Turn the {type(frame.resolve(node.value)).__name__} into one array, which a traced index can index."
    elif math_function is not None:
        what = (f"`{shown}` ({_cell_of(where)}) uses Python's `math`, which works on plain Python numbers only; "
                f"while JAX traces `{fname}`, `{case.text(frame, value_node)}` is traced and has no value yet.")
        note = f"Use `{jn.jnp}.{math_function}`, which computes the same inside the compiled code."
    else:
        what = (f"`{shown}` ({_cell_of(where)}) asks for a plain Python number, but while JAX traces `{fname}` "
                f"`{case.text(frame, value_node)}` is traced and has no value yet, only a shape and a dtype.")
        note = "Keep it a JAX array: arithmetic works on it as is, inside the compiled code."
    alternatives = []
    static_names = case.scalar_arguments(depends)
    if static_names:
        code = static_fix(case, static_names)
        if code:
            alternatives.append((f"If you need a real Python number (a loop count, a shape), mark {_plural(static_names)} static:", code))
    elif not isinstance(node, ast.Subscript) and math_function is None:
        alternatives.append(("If you need it as a Python number (a loop count, a shape), it cannot come from traced "
                             "data: XLA compiles for fixed shapes. Use a fixed maximum size and mask what is past it.", ""))
    alternatives.append(("To see the value while it runs, print it from the compiled code:", f'{jn.jax}.debug.print("{{}}", {case.text(frame, value_node)})'))
    return case.diagnosis(
        "python-scalar-conversion",
        explanation=what,
        fix=function_source(case, frame, [edit]) or edit.text,
        fix_note=note,
        alternatives=tuple(alternatives),
        where=where,
        variable=variable,
    )


# ------------------------------------------------------------------------------------------------
# traced-shape


_SHAPE_MESSAGES = (
    "Slice entries must be static integers",
    "Array slice indices must have static start/stop/step",
    "Shapes must be 1D sequences of concrete values of integer type",
    "must be statically specified",
    "argument of jnp.",
    "argument of jax.numpy.",
    "arose in the jnp.",
    "for the first argument of jnp.",
)


def traced_shape(case: Case) -> Diagnosis | None:
    exc = case.exc
    frame = case.innermost
    if frame is None:
        return None
    boolean_mask = isinstance(exc, jax.errors.NonConcreteBooleanIndexError)
    index_call = isinstance(exc, jax.errors.TracerIntegerConversionError)
    by_message = isinstance(exc, (TypeError, IndexError)) and any(m in case.message for m in _SHAPE_MESSAGES)
    if not (boolean_mask or index_call or by_message):
        return None
    parsed = case.parsed(frame)
    if parsed is None:
        return None
    node = case.expression(frame)
    statement = clues.statement_at(parsed.tree, frame.line)
    if node is None:
        return None
    jn = case.names(frame)
    fname = case.function_name or frame.function
    where = case.where(frame)

    kind, size_node = "size", node
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
        kind = "range"
    elif isinstance(node, ast.Subscript):
        kind = "mask" if boolean_mask else "slice"
        size_node = node.slice
    elif index_call:
        return None  # int() of a traced value somewhere else: not a size
    depends = _depends_on(case, frame, size_node)
    if kind == "slice":
        depends = [d for d in depends if d not in clues.names_in(node.value)] or depends
    variable = depends[0] if depends else None
    shown = case.text(frame, node)
    subject = f"`{variable}`" if variable else f"`{case.text(frame, size_node)}`"
    if kind == "range":
        what = f"`{shown}` needs a real int to know how many times to loop"
    elif kind == "slice":
        what = f"`{shown}` would make an array whose length depends on {subject}"
    elif kind == "mask":
        what = f"`{shown}` keeps only the elements where the mask is True, so the result's length depends on values"
    else:
        what = f"`{shown}` makes an array whose shape depends on {subject}"
    explanation = (
        f"{what}, but {subject} is traced: while JAX traces `{fname}` it has no value yet. "
        f"XLA compiles for fixed shapes, so every size must be a plain Python int when JAX traces ({_cell_of(where)})."
    )
    if kind == "mask":
        explanation = (f"{what}; XLA compiles for fixed shapes, so a size that depends on the data cannot be "
                       f"compiled ({_cell_of(where)}).")

    fixes: list[tuple[str, str]] = []
    static_names = case.scalar_arguments(depends) if kind != "mask" else []
    if static_names:
        code = static_fix(case, static_names)
        if code:
            fixes.append((f"Mark {_plural(static_names)} static: it is then a plain int while JAX traces "
                          f"(each new value compiles `{fname}` once more).", code))
    rewrite = _shape_rewrite(case, frame, kind, node, statement, jn)
    if rewrite is not None:
        fixes.append(rewrite)
    if not fixes:
        fixes.append(("Take the size from an input's shape (a plain int while tracing), or pass it as a static argument:",
                      f"n = x.shape[0]   # a Python int, even under {jn.jit}\n{shown}"))
    fixes += magic_hint(case, static_names)
    (note, fix), *others = fixes
    return case.diagnosis(
        "traced-shape",
        explanation=explanation,
        fix=fix,
        fix_note=note,
        alternatives=tuple(others),
        where=where,
        variable=variable,
        static_argnames=tuple(static_names) if static_names and note.startswith("Mark") else (),
    )


def _shape_rewrite(case: Case, frame: UserFrame, kind: str, node: ast.AST, statement: ast.stmt | None, jn):
    parsed = case.parsed(frame)
    found = clues.function_of_code(frame.code)
    function = found[1] if found else parsed.tree
    if kind == "range":
        loop = clues.enclosing(parsed.tree, node, ast.For)
        if loop is not None and loop.iter is node:
            edit = branch_rewrites.fori_rewrite(loop, function, parsed.lines, lax=jn.lax)
            if edit is not None:
                code = function_source(case, frame, [edit])
                return (f"Keep it traced and loop inside the compiled code with `{jn.lax}.fori_loop`:", code) if code else None
        return None
    if kind == "slice" and isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice) and statement is not None:
        return _slice_rewrite(case, frame, node, statement, jn)
    if kind == "mask" and isinstance(node, ast.Subscript):
        array, mask = case.text(frame, node.value), case.text(frame, node.slice)
        edit = rewrites.Edit(Span.of(node), f"{jn.jnp}.where({mask}, {array}, 0)", comment="same shape; masked-out elements are 0")
        code = function_source(case, frame, [edit])
        return (f"Keep the shape fixed: `{jn.jnp}.where` zeroes the elements you would drop "
                f"(sums and means over them stay right).", code) if code else None
    if kind == "size" and isinstance(node, ast.Call):
        callee = frame.resolve(node.func)
        name = getattr(callee, "__name__", "")
        if name in ("nonzero", "argwhere", "flatnonzero", "unique", "where") and node.args and not any(k.arg == "size" for k in node.keywords):
            first = case.text(frame, node.args[0])
            if not isinstance(node.args[0], (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
                first = f"({first})"
            at = Span(node.end_lineno, node.end_lineno, node.end_col_offset - 1, node.end_col_offset - 1)
            edit = rewrites.Edit(at, f", size={first}.size")
            code = function_source(case, frame, [edit])
            return (f"Give `{ast.unparse(node.func)}` a fixed output size (padded with the fill value):", code) if code else None
    return None


def _slice_rewrite(case: Case, frame: UserFrame, node: ast.Subscript, statement: ast.stmt, jn):
    parsed = case.parsed(frame)
    sl = node.slice
    if sl.step is not None:
        return None
    array = case.text(frame, node.value)
    lower = case.text(frame, sl.lower) if sl.lower is not None else None
    upper = case.text(frame, sl.upper) if sl.upper is not None else None
    # x[i:i + 3]: a fixed length at a traced position is what lax.dynamic_slice_in_dim is for.
    if sl.lower is not None and isinstance(sl.upper, ast.BinOp) and isinstance(sl.upper.op, ast.Add):
        if ast.dump(sl.upper.left) == ast.dump(sl.lower) and isinstance(sl.upper.right, ast.Constant):
            edit = rewrites.Edit(Span.of(node), f"{jn.lax}.dynamic_slice_in_dim({array}, {lower}, {sl.upper.right.value})")
            code = function_source(case, frame, [edit])
            return (f"The length is fixed, only the start is traced: `{jn.lax}.dynamic_slice_in_dim` takes a traced start.", code) if code else None
    value = case.traced_value(array, frame) if isinstance(node.value, ast.Name) else MISSING
    ndim = getattr(value, "ndim", 1) or 1
    conditions = []
    if lower is not None:
        conditions.append(f"(index >= {lower})")
    if upper is not None:
        conditions.append(f"(index < {upper})")
    if not conditions:
        return None
    keep = " & ".join(conditions) if len(conditions) > 1 else conditions[0][1:-1]
    expand = "" if ndim <= 1 else "[:, " + ", ".join(["None"] * (ndim - 1)) + "]"
    insert = rewrites.Edit(
        Span(statement.lineno, statement.lineno, statement.col_offset, statement.col_offset),
        f"index = {jn.jnp}.arange({array}.shape[0])\nkeep = {keep}\n",
    )
    replace = rewrites.Edit(Span.of(node), f"{jn.jnp}.where(keep{expand}, {array}, 0)", comment="fixed shape: the rows outside the slice are 0")
    code = function_source(case, frame, [insert, replace])
    return ("Keep the shape fixed and mask instead (pad + mask): rows outside the slice become 0.", code) if code else None


# ------------------------------------------------------------------------------------------------
# print-side-effect, as an error: a format spec on a traced value


def formatted_print(case: Case) -> Diagnosis | None:
    """``print(f"{loss:.3f}")`` (or a logging call) inside a jitted function: a traced value
    cannot be formatted as a number, and the call would run only while tracing anyway."""
    if not (isinstance(case.exc, TypeError) and "unsupported format string passed to" in case.message and "Tracer" in case.message):
        return None
    frame = case.innermost
    parsed = case.parsed(frame) if frame is not None else None
    node = case.expression(frame) if parsed is not None else None
    if node is None:
        return None
    joined = node if isinstance(node, ast.JoinedStr) else clues.enclosing(parsed.tree, node, ast.JoinedStr)
    call = node if isinstance(node, ast.Call) else clues.enclosing(parsed.tree, node, ast.Call)
    if joined is None or call is None:
        return None
    from jaxmagic.trace_checks import debug_print_call

    jn = case.names(frame)
    is_print = isinstance(call.func, ast.Name) and call.func.id == "print"
    shaped = call if is_print else ast.Call(func=ast.Name("print"), args=[joined], keywords=[])
    replacement = debug_print_call(shaped, parsed, jn.jax)
    if replacement is None:
        return None
    fname = case.function_name or frame.function
    where = case.where(frame)
    variable = next((n for n in clues.names_in(joined) if clues.is_tracer(frame.lookup(n))), None)
    written = "print" if is_print else ast.unparse(call.func)
    alternatives = () if is_print else (
        (f"To keep `{written}`, call it outside the jitted function, on the values it returns.", ""),)
    return case.diagnosis(
        "print-side-effect",
        severity="error",
        explanation=(
            f"`{written}` in `{fname}` ({_cell_of(where)}) runs while JAX traces `{fname}`, when "
            f"`{variable or 'the value'}` is a tracer, a stand-in with no value yet, so it cannot be "
            f"formatted as a number. (Plain Python like this would run only at trace time anyway, "
            f"not on each call.)"
        ),
        fix=function_source(case, frame, [rewrites.Edit(Span.of(call), replacement)]) or replacement,
        fix_note=f"`{jn.jax}.debug.print` formats the real value, inside the compiled code, on every call.",
        alternatives=alternatives,
        where=where,
        variable=variable,
    )


# ------------------------------------------------------------------------------------------------


def recognise(exception: BaseException, fn: Callable | None, cell_namer: CellNamer) -> Diagnosis | None:
    """Try every recogniser on the exception (and on the one it was raised from)."""
    from jaxmagic import call_pitfalls

    if isinstance(exception, UserCodeError):
        exception = exception.original
    seen = set()
    for candidate in (exception, exception.__cause__):
        if candidate is None or id(candidate) in seen:
            continue
        seen.add(id(candidate))
        case = Case(candidate, fn, cell_namer)
        for recogniser in (
            call_pitfalls.unhashable_static,
            call_pitfalls.donated_buffer,
            call_pitfalls.tracer_leak,
            numpy_in_jit,
            python_control_flow,
            python_scalar_conversion,
            traced_shape,
            formatted_print,
        ):
            found = recogniser(case)
            if found is not None:
                return found
    return None
