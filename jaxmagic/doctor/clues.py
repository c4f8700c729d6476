"""What the doctor reads from an exception: the user's own frames, the function JAX was tracing and
the arguments its message names, and the user's source as Python's AST, positioned as in the file.

Nothing here runs user code: names are looked up in a frame, never evaluated.

>>> msg = ("The error occurred while tracing the function step at /src/model.py:12 for jit. "
...        "This concrete value was not available in Python because it depends on the values "
...        "of the arguments n and mode.")
>>> traced = traced_function(msg)
>>> traced.name, traced.line, traced.arguments
('step', 12, ('n', 'mode'))
"""

from __future__ import annotations

import ast
import builtins
import copy
import functools
import inspect
import linecache
import re
import textwrap
import types
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, TypeVar, overload

from jaxmagic.tracing import sources

MISSING = object()  # what ``lookup`` answers for a name the frame does not know

NodeT = TypeVar("NodeT", bound=ast.AST)  # the kind of node a search asks for (``ast.Call``...)
PlacedT = TypeVar("PlacedT", bound=ast.expr | ast.stmt)  # a node with a place in the source

# The kinds of node with a place in the source: expressions, statements, arguments, keywords...
POSITIONED = (ast.expr, ast.stmt, ast.arg, ast.keyword, ast.excepthandler, ast.alias, ast.pattern)


# The fragments of JAX's messages read here, for every pitfall (tests/test_doctor_registry.py
# checks that the installed JAX still writes each one).
MESSAGES = (
    "The error occurred while tracing the function",
    "The function being traced when the value leaked was",
    "depends on the value of the argument",
    "became a tracer due to JAX operations",
    "The leaked intermediate value was created on line",
    "See https://docs.jax.dev/en/latest/errors.html",
)

_TRACED_RE = re.compile(
    r"(?:while tracing the function|The function being traced when the value leaked was) "
    r"(?P<name>\S+) at (?P<file>.+?):(?P<line>\d+)(?: traced)? for (?P<kind>\w+(?:\.\w+)*)"
)
_ARGUMENTS_RE = re.compile(r"depends on the values? of the arguments? (?P<names>.+?)\.(?:\s|$)")
_LISTED_RE = re.compile(r",\s*(?:and\s+)?|\s+and\s+")  # between the names of a list: "a, b, and c"
_LEAK_CREATED_RE = re.compile(
    r"The leaked intermediate value was created on line (?P<file>.+?):(?P<line>\d+)(?::\d+)? \((?P<name>[^)]*)\)"
)


# ------------------------------------------------------------------------------------------------
# JAX's message


@dataclass(frozen=True)
class TracedFunction:
    """The function JAX was tracing when it raised, as its message names it (see ``traced_function``)."""

    name: str
    file: str
    line: int
    traced_for: str  # "jit", "vmap", ...
    arguments: tuple[str, ...] = ()  # the traced arguments the failing value depends on


def traced_function(message: str) -> TracedFunction | None:
    """The traced function, and the arguments the failing value depends on, from JAX's message.

    >>> traced_function("Attempted boolean conversion of traced array.") is None
    True
    """
    match = _TRACED_RE.search(message)
    if match is None:
        return None
    arguments: tuple[str, ...] = ()
    names = _ARGUMENTS_RE.search(message)
    if names is not None:
        arguments = split_argument_names(names.group("names"))
    return TracedFunction(
        name=match.group("name"),
        file=match.group("file"),
        line=int(match.group("line")),
        traced_for=match.group("kind"),
        arguments=arguments,
    )


def argument_paths(message: str) -> tuple[str, ...]:
    """The traced arguments JAX's message names, as it writes them (``args[1]``, ``w['b']``).

    >>> argument_paths("... depends on the value of the argument args[1]. See ...")
    ('args[1]',)
    """
    names = _ARGUMENTS_RE.search(message)
    return tuple(part.strip() for part in _LISTED_RE.split(names.group("names").strip())) if names else ()


def counterpart(func: ast.AST, lookup: Callable[[str], Any], library: str, target: Any) -> str | None:
    """The path below ``library`` of the function ``func`` names (``linalg.norm`` for
    ``np.linalg.norm``, or for ``linalg.norm`` with ``linalg`` NumPy's), when ``target`` has it.

    >>> import numpy as np, jax.numpy as jnp
    >>> counterpart(ast.parse("np.linalg.norm", mode="eval").body, {"np": np}.get, "numpy", jnp)
    'linalg.norm'
    """
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    base = lookup(func.id) if isinstance(func, ast.Name) else MISSING
    module = getattr(base, "__name__", "") if base is not MISSING and base is not None else ""
    if not (module == library or module.startswith(library + ".")):
        return None
    path = module.split(".")[1:] + list(reversed(parts))
    for part in path:
        target = getattr(target, part, None)
        if target is None:
            return None
    return ".".join(path) or None


def split_argument_names(text: str) -> tuple[str, ...]:
    """``"a, b, and c"`` -> ``('a', 'b', 'c')``; pytree leaves name their parameter (``w['b']`` -> ``w``).

    >>> split_argument_names("params['w'], n, and mode")
    ('params', 'n', 'mode')
    """
    names = []
    for part in _LISTED_RE.split(text.strip()):
        base = re.match(r"[A-Za-z_]\w*", part.strip())
        if base and base.group(0) not in names:
            names.append(base.group(0))
    return tuple(names)


def leak_origin(message: str) -> tuple[str, int] | None:
    """``(file, line)`` where a leaked tracer was created, from an ``UnexpectedTracerError``.

    >>> leak_origin("The leaked intermediate value was created on line /src/m.py:9:8 (step). ")
    ('/src/m.py', 9)
    """
    match = _LEAK_CREATED_RE.search(message)
    return (match.group("file"), int(match.group("line"))) if match else None


# ------------------------------------------------------------------------------------------------
# Frames


@dataclass(frozen=True)
class Span:
    """Where an expression stands: lines, and UTF-8 byte columns (as in ``ast`` and ``co_positions``).

    >>> call = ast.parse("y = f(x)").body[0].value
    >>> Span.of(call), Span(1, 1, 0, 8).contains(Span.of(call))
    (Span(line=1, end_line=1, col=4, end_col=8), True)
    """

    line: int
    end_line: int
    col: int
    end_col: int

    @classmethod
    def of(cls, node: ast.AST) -> "Span":
        """Where ``node`` stands (one of the ``POSITIONED`` kinds; a node without an end, as built
        by hand, ends where it starts)."""
        if not isinstance(node, POSITIONED):
            raise TypeError(f"a {type(node).__name__} node has no place in the source")
        end_line = node.end_lineno if node.end_lineno is not None else node.lineno
        end_col = node.end_col_offset if node.end_col_offset is not None else node.col_offset
        return cls(node.lineno, end_line, node.col_offset, end_col)

    def contains(self, other: "Span") -> bool:
        return (self.line, self.col) <= (other.line, other.col) and (other.end_line, other.end_col) <= (
            self.end_line,
            self.end_col,
        )


def end_of(node: ast.expr | ast.stmt | ast.arg, back: int = 0) -> Span:
    """The empty span where ``node`` ends (``back`` columns before: inside a call's parenthesis),
    for an edit that adds text there.

    >>> end_of(ast.parse("f(x)").body[0], back=1)
    Span(line=1, end_line=1, col=3, end_col=3)
    """
    line, col = node.end_lineno or node.lineno, (node.end_col_offset or 0) - back
    return Span(line, line, col, col)


def start_of(node: ast.expr | ast.stmt) -> Span:
    """The empty span where ``node`` starts.

    >>> start_of(ast.parse("x = (1, 2)").body[0].value)
    Span(line=1, end_line=1, col=4, end_col=4)
    """
    return Span(node.lineno, node.lineno, node.col_offset, node.col_offset)


@dataclass(eq=False)
class UserFrame:
    """One frame of the user's code in a traceback, with the instruction it stopped at.

    >>> def divide(a):
    ...     return a / 0
    >>> try:
    ...     divide(1)
    ... except ZeroDivisionError as exc:
    ...     frame = user_frames(exc.__traceback__)[-1]
    >>> frame.function, frame.lookup("a"), frame.span().col
    ('divide', 1, 11)
    """

    frame: types.FrameType
    line: int
    lasti: int

    @property
    def code(self) -> types.CodeType:
        return self.frame.f_code

    @property
    def file(self) -> str:
        return self.code.co_filename

    @property
    def function(self) -> str:
        return self.code.co_name

    @property
    def parameters(self) -> list[str]:
        """The names of the function's parameters (keyword-only ones too; not ``*args``, ``**kwargs``)."""
        return list(self.code.co_varnames[: self.code.co_argcount + self.code.co_kwonlyargcount])

    def arguments(self) -> list[Any]:
        """The values the frame holds for its ``parameters`` (``MISSING`` for one it no longer holds)."""
        return [self.frame.f_locals.get(name, MISSING) for name in self.parameters]

    def span(self) -> Span | None:
        """The exact expression this frame was evaluating (Python 3.11's instruction positions)."""
        co_positions = getattr(self.code, "co_positions", None)  # Python 3.11 and later
        if co_positions is None:
            return None
        try:
            positions = list(co_positions())[self.lasti // 2]
        except IndexError:
            return None
        line, end_line, col, end_col = positions
        if None in (line, end_line, col, end_col):
            return None
        return Span(line, end_line, col, end_col)

    def lookup(self, name: str) -> Any:
        """The value ``name`` had in this frame (locals, globals, builtins), or ``MISSING``."""
        for scope in (self.frame.f_locals, self.frame.f_globals):
            if name in scope:
                return scope[name]
        return getattr(builtins, name, MISSING)

    def resolve(self, node: ast.AST) -> Any:
        """The value of a name or a dotted name (``np.linalg.norm``) in this frame; ``MISSING`` otherwise."""
        return resolve(node, self.lookup)

    def source_line(self, cell_namer: sources.CellNamer) -> sources.SourceLine:
        return sources.source_line(self.file, self.line, self.function, cell_namer)


def lookup_in(namespace: dict) -> Callable[[str], Any]:
    """Name -> value in ``namespace`` then the builtins (``MISSING`` for neither).

    >>> lookup_in({"x": 1})("x"), lookup_in({})("len") is len
    (1, True)
    """

    def lookup(name: str) -> Any:
        if name in namespace:
            return namespace[name]
        return getattr(builtins, name, MISSING)

    return lookup


def resolve(node: ast.AST, lookup: Callable[[str], Any]) -> Any:
    """Look up ``a`` or ``a.b.c`` (no calls, no subscripts: nothing of the user's runs).

    >>> import math
    >>> resolve(ast.parse("math.pi", mode="eval").body, {"math": math}.get)
    3.141592653589793
    >>> resolve(ast.parse("f(x)", mode="eval").body, {}.get) is MISSING
    True
    """
    if isinstance(node, ast.Name):
        return lookup(node.id)
    if isinstance(node, ast.Attribute):
        base = resolve(node.value, lookup)
        if base is MISSING or not isinstance(base, types.ModuleType) and not inspect.isclass(base):
            # Attributes of modules and classes only: a property of a user object could run code.
            return MISSING
        return getattr(base, node.attr, MISSING)
    return MISSING


def written_value(node: ast.AST | None, lookup: Callable[[str], Any]) -> Any:
    """The value an argument as written has, told without running code: a name's or a dotted name's
    (``resolve``), a literal's; ``MISSING`` for anything else.

    >>> written_value(ast.parse("(2, 'a')", mode="eval").body, {}.get), written_value(None, {}.get) is MISSING
    ((2, 'a'), True)
    """
    if isinstance(node, (ast.Name, ast.Attribute)):
        return resolve(node, lookup)
    try:
        return ast.literal_eval(node) if node is not None else MISSING
    except (ValueError, SyntaxError, TypeError):
        return MISSING


def is_user_file(filename: str) -> bool:
    """True for the user's own files and notebook cells (not JAX, jaxmagic, IPython or a library).

    >>> is_user_file("<ipython-input-3-1f2e>"), is_user_file(ast.__file__)
    (True, False)
    """
    if sources.is_jaxmagic_file(filename):
        return False
    try:
        from jaxmagic import _jax_private

        if _jax_private.is_jax_internal_file(filename):
            return False
    except Exception:  # pragma: no cover - JAX always importable where the doctor runs
        pass
    return not sources.is_library_file(filename)


def user_frames(tb: types.TracebackType | None) -> list[UserFrame]:
    """The user's frames of a traceback, outermost first (see ``UserFrame``)."""
    frames = []
    while tb is not None:
        if is_user_file(tb.tb_frame.f_code.co_filename):
            frames.append(UserFrame(tb.tb_frame, tb.tb_lineno, tb.tb_lasti))
        tb = tb.tb_next
    return frames


def is_tracer(value: Any) -> bool:
    """True for JAX's stand-in for a value while it traces.

    >>> import jax, jax.numpy as jnp
    >>> seen = []
    >>> _ = jax.make_jaxpr(lambda x: seen.append(is_tracer(x)) or x)(jnp.ones(2))
    >>> seen, is_tracer(jnp.ones(2))
    ([True], False)
    """
    try:
        from jax.core import Tracer

        return isinstance(value, Tracer)
    except Exception:  # pragma: no cover
        return False


# ------------------------------------------------------------------------------------------------
# Source


@dataclass(frozen=True)
class ParsedSource:
    """A parsed module, cell or function block, its node positions as in the file (``parse_file``)."""

    file: str
    lines: tuple[str, ...]  # the file's lines, newline-free
    tree: ast.Module


def file_lines(filename: str) -> tuple[str, ...]:
    """The lines of a file or notebook cell, as Python's ``linecache`` has them (newline-free)."""
    return tuple(line.rstrip("\r\n") for line in linecache.getlines(filename))


@functools.lru_cache(maxsize=64)
def _parse_text(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def parse_file(filename: str) -> ParsedSource | None:
    r"""The whole file (or cell) parsed, or ``None`` where it is not plain Python.

    >>> import linecache
    >>> linecache.cache["<demo-cell>"] = (13, None, ["y = f(x) + 1\n"], "<demo-cell>")
    >>> type(parse_file("<demo-cell>").tree).__name__
    'Module'
    """
    lines = file_lines(filename)
    if not lines:
        return None
    tree = _parse_text("\n".join(lines) + "\n")
    return ParsedSource(filename, lines, tree) if tree is not None else None


def parse_block(filename: str, first_line: int) -> ParsedSource | None:
    r"""The indented block (a ``def``, a statement) starting at ``first_line``, parsed alone.

    For files that do not parse as a whole, e.g. a ``%%jaxpr`` cell whose first line is the magic.

    >>> import linecache
    >>> cell = ["%%jaxpr\n", "def f(x):\n", "    return x\n", "f(1)\n"]
    >>> linecache.cache["<demo-magic-cell>"] = (40, None, cell, "<demo-magic-cell>")
    >>> parse_block("<demo-magic-cell>", 2).tree.body[0].lineno
    2
    """
    lines = file_lines(filename)
    if not (1 <= first_line <= len(lines)):
        return None
    try:
        block = inspect.getblock([line + "\n" for line in lines[first_line - 1 :]])
    except Exception:
        block = [lines[first_line - 1] + "\n"]
    text = "".join(block)
    dedented = textwrap.dedent(text)
    # Indentation is ASCII, so the columns it takes are the same in characters and in bytes.
    indent = len(block[0]) - len(block[0].lstrip()) if dedented != text else 0
    tree = _parse_text(dedented)
    if tree is None:
        return None
    tree = _copy_shifted(tree, first_line - 1, indent)
    return ParsedSource(filename, lines, tree)


def _copy_shifted(tree: ast.Module, lines: int, cols: int) -> ast.Module:
    tree = copy.deepcopy(tree)  # parsed trees are cached: shift a copy
    for node in ast.walk(tree):
        # Every kind of node with a position (expressions, statements, arguments, keywords...).
        for line_field, col_field in (("lineno", "col_offset"), ("end_lineno", "end_col_offset")):
            if getattr(node, line_field, None) is not None:
                setattr(node, line_field, getattr(node, line_field) + lines)
                setattr(node, col_field, getattr(node, col_field) + cols)
    return tree


def parse_around(filename: str, line: int) -> ParsedSource | None:
    r"""The file parsed as a whole, or failing that the top-level block holding ``line``.

    >>> import linecache
    >>> cell = ["%%jaxpr\n", "def f(x):\n", "    return x\n", "f(1)\n"]
    >>> linecache.cache["<demo-magic-cell>"] = (40, None, cell, "<demo-magic-cell>")
    >>> [type(n).__name__ for n in parse_around("<demo-magic-cell>", 3).tree.body]
    ['FunctionDef']
    """
    parsed = parse_file(filename)
    if parsed is not None:
        return parsed
    lines = file_lines(filename)
    # Walk up to the top-level statement (no indentation) that starts at or before the line.
    start = min(line, len(lines))
    while start > 1 and (not lines[start - 1].strip() or lines[start - 1][:1] in (" ", "\t", ")", "]", "}")):
        start -= 1
    while start <= line:
        block = parse_block(filename, start)
        if block is not None and any(
            n.end_lineno is not None and n.lineno <= line <= n.end_lineno for n in block.tree.body
        ):
            return block
        start += 1
    return None


def function_node(
    parsed: ParsedSource, name: str, line: int
) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | None:
    r"""The ``def name`` (or lambda) that starts at ``line`` (its first decorator, or its ``def``).

    >>> source = ParsedSource("<demo>", (), ast.parse("@jit\ndef f(x):\n    return x"))
    >>> function_node(source, "f", 1).lineno
    2
    """
    best = None
    for node in ast.walk(parsed.tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            if first <= line <= node.lineno:
                return node
            if node.lineno <= line <= Span.of(node).end_line and (best is None or node.lineno > best.lineno):
                best = node
        elif isinstance(node, ast.Lambda) and name == "<lambda>" and node.lineno == line:
            return node
    return best


def function_of_code(
    code: types.CodeType,
) -> tuple[ParsedSource, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda] | None:
    """The parsed source and the ``def`` node of a code object.

    >>> parsed, node = function_of_code(function_of_code.__code__)
    >>> node.name
    'function_of_code'
    """
    parsed = parse_file(code.co_filename) or parse_block(code.co_filename, code.co_firstlineno)
    if parsed is None:
        return None
    node = function_node(parsed, code.co_name, code.co_firstlineno)
    return (parsed, node) if node is not None else None


@overload
def nodes_in(tree: ast.AST) -> Iterator[ast.AST]: ...
@overload
def nodes_in(tree: ast.AST, kind: type[NodeT] | tuple[type[NodeT], ...]) -> Iterator[NodeT]: ...
def nodes_in(tree: ast.AST, kind: type | tuple[type, ...] = ast.AST) -> Iterator[Any]:
    """The nodes of ``kind`` (a class of node, or a tuple of them) in ``tree``.

    >>> len(list(nodes_in(ast.parse("f(g(x))"), ast.Call)))
    2
    """
    return (n for n in ast.walk(tree) if isinstance(n, kind))


def in_order(nodes: Iterable[PlacedT]) -> list[PlacedT]:
    """``nodes`` as they stand in the source: by line, then column.

    >>> [ast.unparse(n) for n in in_order(nodes_in(ast.parse("h()\\nf(g(x))"), ast.Call))]
    ['h()', 'f(g(x))', 'g(x)']
    """
    return sorted(nodes, key=lambda node: (node.lineno, node.col_offset))


def attributes_of(node: ast.AST, owner: str) -> list[ast.Attribute]:
    """The attributes of the name ``owner`` (``self.n``) that ``node`` reads or assigns.

    >>> [a.attr for a in attributes_of(ast.parse("self.n = self.m + other.k"), "self")]
    ['n', 'm']
    """
    return [n for n in nodes_in(node, ast.Attribute) if isinstance(n.value, ast.Name) and n.value.id == owner]


def _around(tree: ast.AST, line: int) -> ast.AST:
    """The top-level statement of a module holding ``line`` (the module itself otherwise): what
    the searches below walk, so that their cost is that of one function, not of a whole file."""
    for node in tree.body if isinstance(tree, ast.Module) else []:
        if node.lineno <= line <= Span.of(node).end_line:
            return node
    return tree


@overload
def node_at(tree: ast.AST, span: Span | None) -> ast.expr | None: ...
@overload
def node_at(tree: ast.AST, span: Span | None, kind: type[NodeT] | tuple[type[NodeT], ...]) -> NodeT | None: ...
def node_at(tree: ast.AST, span: Span | None, kind: type | tuple[type, ...] = ast.expr) -> Any:
    """The node of ``kind`` (a class of node, or a tuple of them) exactly at ``span``; else the
    smallest one that contains it.

    >>> tree = ast.parse("y = f(x) + 1")
    >>> ast.unparse(node_at(tree, Span(1, 1, 4, 8)))
    'f(x)'
    """
    if span is None:
        return None
    around = _containing(tree, span, kind)
    # ast.walk is breadth first: the first exact match is the outermost, the one meant
    # (Python 3.11 gives an f-string's format spec the whole f-string's position).
    return next((node for node, node_span in around if node_span == span), None) or _smallest(around)


def _containing(tree: ast.AST, span: Span, kind, skip: ast.AST | None = None) -> list[tuple[ast.AST, Span]]:
    """The nodes of ``kind`` (but ``skip``) that contain ``span``, with their spans, outermost first."""
    placed = ((node, _placed(node)) for node in ast.walk(_around(tree, span.line)) if isinstance(node, kind))
    return [(node, at) for node, at in placed if node is not skip and at is not None and at.contains(span)]


def _smallest(found: list[tuple[ast.AST, Span]]) -> Any:
    """The innermost of nodes that all contain one span: the last whose span the others' contain."""
    smallest, smallest_span = None, None
    for node, node_span in found:
        if smallest_span is None or smallest_span.contains(node_span):
            smallest, smallest_span = node, node_span
    return smallest


def _placed(node: ast.AST) -> Span | None:
    """Where ``node`` stands; ``None`` for a node without an end (a module, a context, one built by hand)."""
    return Span.of(node) if isinstance(node, POSITIONED) and node.end_lineno is not None else None


def statement_at(tree: ast.AST, line: int) -> ast.stmt | None:
    r"""The innermost statement whose own header holds ``line`` (an ``if`` for its test line).

    >>> tree = ast.parse("if x:\n    y = 1")
    >>> type(statement_at(tree, 1)).__name__, type(statement_at(tree, 2)).__name__
    ('If', 'Assign')
    """
    statements = [(node, Span.of(node)) for node in ast.walk(_around(tree, line)) if isinstance(node, ast.stmt)]
    return _smallest([(node, span) for node, span in statements if span.line <= line <= span.end_line])


def enclosing(tree: ast.AST, target: ast.AST, kind: type[NodeT] | tuple[type[NodeT], ...]) -> NodeT | None:
    """The innermost node of ``kind`` (a class of node, or a tuple of them) that contains ``target``.

    >>> tree = ast.parse("f(g(x))")
    >>> x = next(n for n in nodes_in(tree, ast.Name) if n.id == "x")
    >>> ast.unparse(enclosing(tree, x, ast.Call))
    'g(x)'
    """
    return _smallest(_containing(tree, Span.of(target), kind, skip=target))


def called(func: ast.expr) -> str:
    """What a call calls, less the options around it: the same for ``jax.vmap(f)`` and
    ``jax.vmap(f, in_axes=0)``.

    >>> called(ast.parse("jax.vmap(f, in_axes=0)").body[0].value) == called(ast.parse("f").body[0].value)
    True
    """
    while isinstance(func, ast.Call):
        func = func.func if not func.args else func.args[0]
    return ast.dump(func)


def names_in(node: ast.AST, ctx: type[ast.expr_context] = ast.Load) -> list[str]:
    """Names read in an expression (``ctx=ast.Store``: assigned in code), in order, each once.

    >>> names_in(ast.parse("x[:n] + x", mode="eval")), names_in(ast.parse("a, b = f(a)"), ast.Store)
    (['x', 'n'], ['a', 'b'])
    """
    seen = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ctx) and sub.id not in seen:
            seen.append(sub.id)
    return seen


def segment(lines: tuple[str, ...], span: Span) -> str:
    """The source text at ``span`` (columns are UTF-8 byte offsets).

    >>> segment(("s = '词' + f(x)",), Span(1, 1, 12, 16))
    'f(x)'
    """
    if span.line == span.end_line:
        raw = lines[span.line - 1].encode()
        return raw[span.col : span.end_col].decode(errors="replace")
    first = lines[span.line - 1].encode()[span.col :].decode(errors="replace")
    middle = list(lines[span.line : span.end_line - 1])
    last = lines[span.end_line - 1].encode()[: span.end_col].decode(errors="replace")
    return "\n".join([first, *middle, last])


def source_of(parsed: ParsedSource, node: ast.AST) -> str:
    """The source text of ``node`` as written (comments and spacing kept)."""
    return segment(parsed.lines, Span.of(node))
