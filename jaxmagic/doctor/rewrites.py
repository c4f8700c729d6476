"""The doctor's fixes, written as the user's own code changed: edits at exact source positions,
a ``jit`` decorator with static arguments added, the names under which the user imported JAX.

>>> lines = ("@jax.jit", "def f(x, n):", "    return x[:n]")
>>> print(with_edits(lines, 1, 3, [Edit(Span(1, 1, 1, 8), "jax.jit(static_argnames=('n',))")]))
@jax.jit(static_argnames=('n',))
def f(x, n):
    return x[:n]
"""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import jaxmagic.doctor.clues as clues
from jaxmagic.doctor.clues import MISSING, ParsedSource, Span, end_of, function_of_code, source_of, start_of
from jaxmagic.tracing import callables

MAX_FIX_LINES = 24  # a longer function is shown around its changed lines only


@dataclass(frozen=True)
class Edit:
    """Replace the source at ``span`` with ``text`` (several lines keep the first line's indent).

    An empty span inserts; an empty ``text`` deletes (see ``with_edits``).
    """

    span: Span
    text: str
    comment: str = ""  # added as ``# comment`` at the end of the replacement's last line


def _char_col(line: str, byte_col: int) -> int:
    return len(line.encode()[:byte_col].decode(errors="ignore"))


def with_edits(
    lines: Sequence[str],
    first: int,
    last: int | None,
    edits: Iterable[Edit],
    *,
    elide: bool = True,
    show: Iterable[int] = (),
) -> str:
    """Lines ``first..last`` (1-based, inclusive) with ``edits`` applied, dedented. ``last`` is
    often a node's ``end_lineno``: ``None`` (a node built by hand has no end) stands for ``first``.

    Lines left empty by a deletion go; a result longer than ``MAX_FIX_LINES`` keeps the first
    lines (decorators, ``def``), the changed ones and the lines ``show`` names (the user's failing
    line, say), ``...`` standing for the rest.

    >>> lines = ("def f(x):", "    print(x)", "    return x")
    >>> print(with_edits(lines, 1, 3, [Edit(Span(2, 2, 4, 12), "")]))
    def f(x):
        return x
    """
    last = first if last is None else last
    region = [str(line) for line in lines[first - 1 : last]]
    changed: set[int] = set()  # region line indexes holding new text
    shown = {line - first for line in show if first <= line <= last}  # region indexes to keep in view
    for edit in sorted(edits, key=lambda e: (e.span.line, e.span.col), reverse=True):
        start, end = edit.span.line - first, edit.span.end_line - first
        new_lines = _replaced(region[start], region[end], edit)
        region[start : end + 1] = new_lines
        shift = len(new_lines) - (end - start + 1)
        changed = _moved(changed, start, end, shift) | set(range(start, start + len(new_lines)))
        shown = _moved(shown, start, end, shift)
    keep = [(i, line) for i, line in enumerate(region) if line.strip() or i not in changed]
    text_lines = [line for _, line in keep]
    changed_positions = [n for n, (i, _) in enumerate(keep) if i in changed or i in shown]
    if elide and len(text_lines) > MAX_FIX_LINES:
        text_lines = _elide(text_lines, changed_positions)
    return textwrap.dedent("\n".join(text_lines)).strip("\n")


def _replaced(head_line: str, tail_line: str, edit: Edit) -> list[str]:
    """The lines that replace ``head_line..tail_line`` (the edit's first and last lines): the text
    before the edit, its new text (later lines at the first line's indent), the text after it."""
    head = head_line[: _char_col(head_line, edit.span.col)]
    tail = tail_line[_char_col(tail_line, edit.span.end_col) :]
    indent = head_line[: len(head_line) - len(head_line.lstrip())]
    new_lines = edit.text.split("\n") if edit.text else [""]
    last_index = len(new_lines) - 1
    new_lines = [new_lines[0]] + [
        indent + line if (line or i == last_index) else line for i, line in enumerate(new_lines[1:], 1)
    ]
    new_lines[0] = head + new_lines[0]
    new_lines[-1] = new_lines[-1] + tail
    if edit.comment and "#" not in tail:
        new_lines[-1] = f"{new_lines[-1].rstrip()}  # {edit.comment}"
    return new_lines


def _moved(indexes: set[int], start: int, end: int, shift: int) -> set[int]:
    """Line indexes after lines ``start..end`` were replaced: those inside go, those after move by ``shift``."""
    return {i if i < start else i + shift for i in indexes if i < start or i > end}


def _elide(lines: list[str], changed: list[int]) -> list[str]:
    header = 0
    while header < len(lines) and not lines[header].rstrip().endswith(":"):
        header += 1
    wanted = set(range(header + 1))
    for i in changed:
        wanted.update(range(max(0, i - 1), min(len(lines), i + 2)))
    out, gap = [], False
    for i, line in enumerate(lines):
        if i in wanted:
            out.append(line)
            gap = False
        elif not gap:
            nxt = next((lines[j] for j in range(i, len(lines)) if lines[j].strip()), line)
            out.append(nxt[: len(nxt) - len(nxt.lstrip())] + "...")
            gap = True
    return out


# ------------------------------------------------------------------------------------------------
# Names the user knows JAX by


def alias(namespace: dict, target: Any, default: str) -> str:
    """The name bound to ``target`` in ``namespace`` (``jnp`` for ``jax.numpy``), else ``default``.

    >>> import numpy
    >>> alias({"onp": numpy}, numpy, "np"), alias({}, numpy, "np")
    ('onp', 'np')
    """
    preferred = default.split(".")[0]
    names = [name for name, value in namespace.items() if value is target and not name.startswith("_")]
    if preferred in names:
        return preferred
    return sorted(names, key=len)[0] if names else default


def jax_names(namespace: dict) -> "JaxNames":
    """How to spell ``jax``, ``jax.numpy``, ``jax.lax`` and ``jax.jit`` in the user's code.

    >>> import jax, jax.numpy
    >>> jax_names({"jax": jax, "jn": jax.numpy})
    JaxNames(jax='jax', jnp='jn', lax='jax.lax', jit='jax.jit')
    >>> jax_names({"jit": jax.jit}).jit
    'jit'
    """
    import jax
    import jax.numpy as jnp

    jax_name = alias(namespace, jax, "jax")
    have_jax = any(value is jax for value in namespace.values())
    jnp_name = alias(namespace, jnp, "jnp" if not have_jax else f"{jax_name}.numpy")
    lax_name = alias(namespace, jax.lax, f"{jax_name}.lax")
    jit_name = f"{jax_name}.jit" if have_jax else alias(namespace, jax.jit, "jax.jit")
    return JaxNames(jax=jax_name, jnp=jnp_name, lax=lax_name, jit=jit_name)


@dataclass(frozen=True)
class JaxNames:
    """The user's names for ``jax``, ``jax.numpy``, ``jax.lax`` and ``jax.jit`` (see ``jax_names``)."""

    jax: str
    jnp: str
    lax: str
    jit: str


# ------------------------------------------------------------------------------------------------
# jit with static arguments


def names_tuple(names: Sequence[str]) -> str:
    """``("n",)`` / ``("n", "mode")``: the form a user types.

    >>> names_tuple(["use_relu"])
    '("use_relu",)'
    """
    return tuple_of([f'"{n}"' for n in names])


@functools.lru_cache(maxsize=1)
def jit_takes_options_alone() -> bool:
    """True where ``jax.jit(static_argnames=...)`` returns a decorator (newer JAX).

    >>> isinstance(jit_takes_options_alone(), bool)
    True
    """
    import jax

    try:
        parameter = inspect.signature(jax.jit).parameters.get("fun")
    except (TypeError, ValueError):
        return False
    return parameter is not None and parameter.default is not inspect.Parameter.empty


@dataclass(frozen=True)
class JitUse:
    """Where a function is wrapped in a jit, as written (``jit_use``): ``jax.jit``, Flax's
    ``nnx.jit`` (the same ``static_argnames``) or Equinox's ``eqx.filter_jit`` (no static
    arguments: every non-array argument is static already)."""

    node: ast.expr  # the decorator expression, or the ``jax.jit(...)`` call
    kind: str  # "bare" (@jax.jit), "call" (@jax.jit(...), jax.jit(f, ...)) or "partial"
    options: ast.Call | None  # the call holding the keyword options, if any
    library: str = "jax"  # "jax", "nnx" or "eqx"


def _library_jits() -> dict[int, str]:
    """``id`` -> library of the jit functions of Flax NNX and Equinox, when the user imported them."""
    import sys

    found = {}
    for module, name, library in (("flax.nnx", "jit", "nnx"), ("equinox", "filter_jit", "eqx")):
        loaded = sys.modules.get(module)
        function = getattr(loaded, name, None) if loaded is not None else None
        if function is not None:
            found[id(function)] = library
    return found


def jit_use(node: ast.expr, lookup: Callable[[str], Any]) -> JitUse | None:
    """``node`` as a use of a jit: ``jax.jit``, ``jit(...)``, ``partial(jax.jit, ...)``, ``nnx.jit``...

    >>> import functools, jax
    >>> names = {"jax": jax, "partial": functools.partial}.get
    >>> jit_use(ast.parse("partial(jax.jit, static_argnums=1)", mode="eval").body, names).kind
    'partial'
    >>> jit_use(ast.parse("print", mode="eval").body, names) is None
    True
    """
    import jax

    libraries = {id(jax.jit): "jax", **_library_jits()}

    def library_of(expr: ast.AST) -> str | None:
        value = clues.resolve(expr, lookup)
        return libraries.get(id(value)) if value is not MISSING else None

    library = library_of(node)
    if library is not None:
        return JitUse(node, "bare", None, library)
    if isinstance(node, ast.Call):
        library = library_of(node.func)
        if library is not None:
            return JitUse(node, "call", node, library)
        if clues.resolve(node.func, lookup) is functools.partial and node.args:
            library = library_of(node.args[0])
            if library is not None:
                return JitUse(node, "partial", node, library)
    return None


def decorator_jit(fnode: ast.AST, lookup: Callable[[str], Any]) -> JitUse | None:
    r"""The ``jax.jit`` among a ``def``'s decorators, or ``None``.

    >>> import jax
    >>> fnode = ast.parse("@jax.jit\ndef f(x):\n    return x").body[0]
    >>> decorator_jit(fnode, {"jax": jax}.get).kind
    'bare'
    """
    return next(filter(None, (jit_use(decorator, lookup) for decorator in getattr(fnode, "decorator_list", []))), None)


def static_names_of(call: ast.Call | None) -> list[str]:
    """The names an existing ``static_argnames=`` keyword lists (constants only).

    >>> static_names_of(ast.parse("jit(f, static_argnames='n')", mode="eval").body)
    ['n']
    """
    if call is None:
        return []
    for keyword in call.keywords:
        if keyword.arg == "static_argnames":
            try:
                value = ast.literal_eval(keyword.value)
            except ValueError:
                return []
            return [value] if isinstance(value, str) else [str(v) for v in value]
    return []


def add_static_edit(use: JitUse, names: Sequence[str], lines: Sequence[str], jit_name: str) -> Edit:
    """The edit that makes ``names`` static in this use of ``jax.jit`` (other options kept).

    >>> import jax
    >>> lines = ("g = jax.jit(f, donate_argnums=0)",)
    >>> use = jit_use(ast.parse(lines[0]).body[0].value, {"jax": jax}.get)
    >>> with_edits(lines, 1, 1, [add_static_edit(use, ["n"], lines, "jax.jit")])
    'g = jax.jit(f, donate_argnums=0, static_argnames=("n",))'
    """
    merged = list(dict.fromkeys([*static_names_of(use.options), *names]))
    value = names_tuple(merged)
    if use.kind == "bare":
        span = Span.of(use.node)
        return Edit(span, static_jit(clues.segment(tuple(lines), span), merged, use.library))
    call = use.options
    if call is None:  # not written by ``jit_use``: a call or a partial has its options
        raise ValueError(f"a {use.kind!r} use of jit without its call")
    for keyword in call.keywords:
        if keyword.arg == "static_argnames":
            return Edit(Span.of(keyword.value), value)
    return keyword_edit(call, f"static_argnames={value}")


def static_jit(jit: str, names: Sequence[str], library: str = "jax") -> str:
    """``jit`` (as the user writes it) with ``names`` static: given the option alone where it takes
    it (newer JAX, Flax's ``nnx.jit``), else through ``functools.partial``.

    >>> static_jit("nnx.jit", ["n"], "nnx")
    'nnx.jit(static_argnames=("n",))'
    """
    value = f"static_argnames={names_tuple(names)}"
    return f"{jit}({value})" if library == "nnx" or jit_takes_options_alone() else f"functools.partial({jit}, {value})"


def keyword_edit(call: ast.Call, text: str) -> Edit:
    """The edit adding ``text`` (a keyword argument) after the call's arguments, just before its
    closing parenthesis.

    >>> lines = ("jax.grad(f)",)
    >>> with_edits(lines, 1, 1, [keyword_edit(ast.parse(lines[0]).body[0].value, "has_aux=True")])
    'jax.grad(f, has_aux=True)'
    """
    separator = ", " if (call.args or call.keywords) else ""
    return Edit(end_of(call, back=1), f"{separator}{text}")


def add_static_argnums_edit(use: JitUse, positions: Sequence[int]) -> Edit | None:
    """The edit that makes the call's ``positions`` static in this ``jax.jit(f)`` call (``None``
    where it sets ``static_argnums`` already: merging is the user's to write).

    >>> import jax
    >>> lines = ("g = jax.jit(model.apply)",)
    >>> use = jit_use(ast.parse(lines[0]).body[0].value, {"jax": jax}.get)
    >>> with_edits(lines, 1, 1, [add_static_argnums_edit(use, [2])])
    'g = jax.jit(model.apply, static_argnums=2)'
    """
    call = use.options
    if use.kind != "call" or call is None or any(k.arg == "static_argnums" for k in call.keywords):
        return None
    return keyword_edit(call, f"static_argnums={positions[0] if len(positions) == 1 else tuple(positions)!r}")


def function_first_line(fnode: ast.AST) -> int:
    r"""The first line of a ``def``: its first decorator's.

    >>> function_first_line(ast.parse("@a\n@b\ndef f():\n    pass").body[0])
    1
    """
    return min([Span.of(fnode).line] + [d.lineno for d in getattr(fnode, "decorator_list", [])])


def definition_with_edits(lines: Sequence[str], node: ast.AST, edits: Iterable[Edit], **options: Any) -> str:
    r"""The definition ``node`` (a ``def`` or ``class`` with its decorators, or any statement) with
    ``edits`` applied (``options``: see ``with_edits``).

    >>> lines = ("@jax.jit", "def f(x):", "    return x")
    >>> print(definition_with_edits(lines, ast.parse("\n".join(lines)).body[0], []))
    @jax.jit
    def f(x):
        return x
    """
    return with_edits(lines, function_first_line(node), getattr(node, "end_lineno", None), edits, **options)


def insert_decorator_edit(fnode: ast.AST, text: str) -> Edit:
    r"""An edit that puts ``@text`` on its own line above the ``def`` (and its other decorators).

    >>> lines = ("def f(x, n):", "    return x[:n]")
    >>> edit = insert_decorator_edit(ast.parse("\n".join(lines)).body[0], "jax.jit")
    >>> print(with_edits(lines, 1, 2, [edit]))
    @jax.jit
    def f(x, n):
        return x[:n]
    """
    first = function_first_line(fnode)
    col = Span.of(fnode).col
    anchor = Span(first, first, col, col)
    return Edit(anchor, f"@{text}\n")


def debug_print_call(call: ast.Call, parsed: ParsedSource, jax_name: str, *, callee: str | None = None) -> str | None:
    """``print(f"loss {loss:.3f}")`` -> ``jax.debug.print("loss {:.3f}", loss)``.

    >>> import ast
    >>> tree = ast.parse('print(f"Loss: {loss}", step)')
    >>> source = ParsedSource("<demo>", ('print(f"Loss: {loss}", step)',), tree)
    >>> debug_print_call(tree.body[0].value, source, "jax")
    'jax.debug.print("Loss: {} {}", loss, step)'
    """
    separator = " "
    for keyword in call.keywords:
        if keyword.arg == "sep" and isinstance(keyword.value, ast.Constant) and isinstance(keyword.value.value, str):
            separator = keyword.value.value
        elif keyword.arg not in ("end", "flush", "file", "sep"):
            return None
    pieces, arguments = [], []
    for arg in call.args:
        if isinstance(arg, ast.Starred):
            return None
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            pieces.append(_escape_braces(arg.value))
        elif isinstance(arg, ast.JoinedStr):
            piece = _fstring_template(arg, parsed, arguments)
            if piece is None:
                return None
            pieces.append(piece)
        else:
            pieces.append("{}")
            arguments.append(source_of(parsed, unconverted(arg)))
    template = separator.join(pieces).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'{callee or jax_name + ".debug.print"}("{template}"{"".join(", " + a for a in arguments)})'


def _fstring_template(fstring: ast.JoinedStr, parsed: ParsedSource, arguments: list[str]) -> str | None:
    """An f-string's text as a ``jax.debug.print`` template, appending the source of each
    formatted value to ``arguments``; ``None`` when a format spec is itself computed."""
    text = []
    for part in fstring.values:
        if isinstance(part, ast.Constant):
            text.append(_escape_braces(str(part.value)))
        elif isinstance(part, ast.FormattedValue):
            conversion = {115: "!s", 114: "!r", 97: "!a"}.get(part.conversion, "")
            spec = ""
            written_spec = part.format_spec  # an f-string of its own (``{loss:.3f}``)
            if written_spec is not None:
                if not isinstance(written_spec, ast.JoinedStr):
                    return None
                constants = [v for v in written_spec.values if isinstance(v, ast.Constant)]
                if len(constants) != len(written_spec.values):
                    return None
                spec = ":" + "".join(str(v.value) for v in constants)
            text.append("{" + conversion + spec + "}")
            arguments.append(source_of(parsed, unconverted(part.value)))
    return "".join(text)


def unconverted(node: ast.expr) -> ast.expr:
    """``float(loss)``, ``int(n)``, ``loss.item()`` -> ``loss``: ``jax.debug.print`` formats the
    array itself, with the same format spec, on every call.

    >>> ast.unparse(unconverted(ast.parse("float(loss)", mode="eval").body))
    'loss'
    """
    if not isinstance(node, ast.Call) or node.keywords:
        return node
    if len(node.args) == 1 and isinstance(node.func, ast.Name) and node.func.id in ("float", "int", "bool", "complex"):
        return node.args[0]
    if not node.args and isinstance(node.func, ast.Attribute) and node.func.attr == "item":
        return node.func.value
    return node


def _escape_braces(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def call_parameters(call: ast.Call, fn: Any) -> dict[str, ast.expr]:
    """Parameter name -> the argument expression written for it in ``call``.

    >>> def f(x, n, mode="a"):
    ...     return x
    >>> {k: ast.unparse(v) for k, v in call_parameters(ast.parse("f(a, 3, mode='b')").body[0].value, f).items()}
    {'x': 'a', 'n': '3', 'mode': "'b'"}
    """
    sig = signature_of(fn)
    if sig is None:
        return {}
    positional = [p.name for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    found = {}
    for index, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            break
        if index < len(positional):
            found[positional[index]] = arg
    for keyword in call.keywords:
        if keyword.arg is not None:
            found[keyword.arg] = keyword.value
    return found


def signature_of(fn: Any) -> inspect.Signature | None:
    """The signature of the Python function inside ``fn`` (a jitted function's own), or ``None``."""
    return callables.signature_of(callables.python_function(fn) or fn)


def returns_of(fnode: ast.AST) -> list[ast.Return]:
    """The ``return`` statements of a function itself (not of the functions nested in it)."""
    found = []

    def visit(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            if isinstance(child, ast.Return):
                found.append(child)
            visit(child)

    visit(fnode)
    return found


def ungloballed(fnode: ast.AST, name: str) -> list[Edit]:
    """Edits taking ``name`` out of the function's ``global`` statements (a statement left empty goes)."""
    edits = []
    for decl in (n for n in ast.walk(fnode) if isinstance(n, ast.Global)):
        if name in decl.names:
            rest = [n for n in decl.names if n != name]
            edits.append(Edit(Span.of(decl), f"global {', '.join(rest)}" if rest else ""))
    return edits


def returned_at(fnode: ast.AST, name: str) -> int | None:
    """Where every ``return`` of the function already hands ``name`` back: ``-1`` for ``return name``,
    its place in ``return a, name``; ``None`` where one does not (or there is no ``return``).

    >>> returned_at(ast.parse("def f(x):\\n    y = x + 1\\n    return x, y").body[0], "y")
    1
    >>> returned_at(ast.parse("def f(x):\\n    y = x + 1\\n    return x").body[0], "y") is None
    True
    """
    places = set()
    for ret in returns_of(fnode):
        value = ret.value
        if isinstance(value, ast.Name):
            places.add(-1 if value.id == name else None)
        elif isinstance(value, ast.Tuple):
            at = [i for i, e in enumerate(value.elts) if isinstance(e, ast.Name) and e.id == name]
            places.add(at[0] if at else None)
        else:
            places.add(None)
    return places.pop() if len(places) == 1 else None


def returned_before(fnode: ast.AST) -> str:
    """The names a caller gives what the function returned before a value was added after them:
    ``result, `` for one, ``result_1, result_2, `` for a tuple of two, nothing for none.

    >>> returned_before(ast.parse("def f(x):\\n    return x, 2 * x").body[0])
    'result_1, result_2, '
    """
    return "".join(f"{name}, " for name in _result_names(fnode))


def _result_names(fnode: ast.AST, least: int = 0) -> list[str]:
    """The names a caller gives the values the function returns (at least ``least`` of them):
    ``result`` for one, ``result_1``, ``result_2``... for a tuple."""
    values = [r.value for r in returns_of(fnode)]
    widths = {len(v.elts) if isinstance(v, ast.Tuple) else 1 for v in values if v is not None}
    count = max(widths.pop() if len(widths) == 1 else 1 if widths else 0, least)
    return ["result"] if count == 1 else [f"result_{i}" for i in range(1, count + 1)]


def kept_by_caller(fnode: ast.AST, name: str, at: int) -> str:
    """What the caller writes to keep ``name``, which the function returns already at ``at`` (see
    ``returned_at``): ``y`` alone, or its place among the other values (``result_1, y``).

    >>> kept_by_caller(ast.parse("def f(x):\\n    return x, y").body[0], "y", 1)
    'result_1, y'
    """
    if at < 0:
        return name
    return ", ".join(name if i == at else other for i, other in enumerate(_result_names(fnode, least=at + 1)))


def handed_back(parsed: ParsedSource, fnode: ast.AST, returned: str) -> list[Edit]:
    """Edits making every ``return`` of the function (a ``def``) hand ``returned`` back too
    (``return x, g``), or adding ``return g`` where it returns nothing."""
    if not isinstance(fnode, (ast.FunctionDef, ast.AsyncFunctionDef)):
        raise TypeError(f"a {type(fnode).__name__} has no statements to hand a value back from")
    edits = []
    for ret in returns_of(fnode):
        text = f"return {source_of(parsed, ret.value)}, {returned}" if ret.value is not None else f"return {returned}"
        edits.append(Edit(Span.of(ret), text, comment=f"hand `{returned}` back instead of storing it"))
    if not returns_of(fnode):
        edits.append(Edit(end_of(fnode.body[-1]), f"\nreturn {returned}"))
    return edits


_MUTATING = {"append", "extend", "insert", "pop", "remove", "sort", "reverse", "clear", "update", "add", "discard"}


def changes_in_place(function: Any, name: str) -> bool:
    """True where the user's ``function`` changes ``name`` in place (``.append``, ``[k] = ...``, ``+=``).

    >>> def grow(layers):
    ...     layers.append(1)
    >>> changes_in_place(grow, "layers"), changes_in_place(grow, "other")
    (True, False)
    """
    located = function_of_code(function.__code__) if function is not None else None
    changed = [
        n.func.value if isinstance(n, ast.Call) else n.value if isinstance(n, ast.Subscript) else n.target  # pyright: ignore[reportAttributeAccessIssue]
        for n in (ast.walk(located[1]) if located is not None else ())
        if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _MUTATING)
        or (isinstance(n, ast.Subscript) and not isinstance(n.ctx, ast.Load))
        or isinstance(n, ast.AugAssign)
    ]
    return any(isinstance(n, ast.Name) and n.id == name for n in changed)


def frozen_dataclass(sources: Iterable[ParsedSource], name: str) -> str | None:
    """The dataclass ``name`` (the last one written in the first of ``sources`` that has one) with
    ``@dataclass(frozen=True)``: hashed by its fields.

    >>> lines = ("@dataclass", "class Config:", "    n: int")
    >>> print(frozen_dataclass([ParsedSource("<demo>", lines, ast.parse("\\n".join(lines)))], "Config"))
    @dataclass(frozen=True)
    class Config:
        n: int
    """
    for parsed in sources:
        classes = [c for c in ast.walk(parsed.tree) if isinstance(c, ast.ClassDef) and c.name == name]
        found = [(c, d) for c in classes[::-1] for d in c.decorator_list if "dataclass" in ast.unparse(d)]
        if found:
            node, decorator = found[0]
            written = source_of(parsed, decorator.func if isinstance(decorator, ast.Call) else decorator)
            keywords = [source_of(parsed, k) for k in getattr(decorator, "keywords", []) if k.arg != "frozen"]
            edit = Edit(Span.of(decorator), f"{written}({', '.join([*keywords, 'frozen=True'])})")
            return definition_with_edits(parsed.lines, node, [edit])
    return None


def with_first_statement(function: Any, statement: str, parameter: str = "") -> str | None:
    """The user's ``function`` (a ``def`` whose source is known) with ``statement`` first in its body
    (after its docstring), and ``parameter`` after its own (``None`` after defaults, ``*args`` or keywords).

    >>> def scaled(x, config):
    ...     return x * config["scale"]
    >>> print(with_first_statement(scaled, "config = dict(config)"))
    def scaled(x, config):
        config = dict(config)
        return x * config["scale"]
    """
    located = function_of_code(function.__code__) if function is not None else None
    if located is None or not isinstance(located[1], (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    body = [b for b in located[1].body if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))]
    first, args = body[0] if body else located[1].body[-1], located[1].args
    edits = [Edit(start_of(first), statement + "\n")]
    if parameter:
        if args.defaults or args.vararg or args.kwonlyargs or args.kwarg or not args.args:
            return None
        edits.append(Edit(end_of(args.args[-1]), f", {parameter}"))
    return definition_with_edits(located[0].lines, located[1], edits)


def hashable_form(
    text_of: Callable[[ast.AST], str], node: ast.expr, value: Any, made: Any
) -> tuple[str, str, type | None] | None:
    """The argument ``node`` (``value``, where known; ``made``: what its call calls) written in a
    hashable form, how the function makes it what it was (``slice(*{})``; "": it reads a tuple the
    same), and the Python type it was (whose in-place changes need it back); ``None`` for others.

    >>> hashable_form(ast.unparse, ast.parse("[2, 2]", mode="eval").body, MISSING, MISSING)
    ('(2, 2)', 'list({})', <class 'list'>)
    """
    text, literal = text_of(node), node.args if isinstance(node, ast.Call) else getattr(node, "elts", None)
    if isinstance(value, slice) or made is slice:
        parts = [text_of(a) for a in literal] if made is slice else [f"{text}.{p}" for p in ("start", "stop", "step")]  # pyright: ignore[reportOptionalIterable]
        return tuple_of(parts + ["None"] * (3 - len(parts))), "slice(*{})", None
    if (
        getattr(made, "__name__", "") in ("array", "asarray")
        and node.args  # pyright: ignore[reportAttributeAccessIssue]
        and isinstance(node.args[0], (ast.List, ast.Tuple))  # pyright: ignore[reportAttributeAccessIssue]
    ):  # type: ignore[union-attr]
        return tuple_of([text_of(e) for e in node.args[0].elts]), "", None  # type: ignore[union-attr]
    if isinstance(node, (ast.List, ast.Set, ast.Dict)) or isinstance(value, (list, set, dict)):
        kind, form, back = next(k for k in _SEQUENCES if isinstance(value, k[0]) or type(node).__name__.lower() == k[2])
        hashable = tuple_of([text_of(e) for e in literal]) if isinstance(node, ast.List) else form.format(text)  # pyright: ignore[reportOptionalIterable]
        return hashable, back + "({})", kind
    return (f"tuple({text}.tolist())", "", None) if hasattr(value, "tolist") else None


_SEQUENCES = ((set, "frozenset({})", "set"), (list, "tuple({})", "list"), (dict, "tuple({}.items())", "dict"))


def tuple_of(elements: list[str]) -> str:
    """A tuple written from its elements' text: ``tuple_of(["2"])`` is ``(2,)``."""
    return "(" + ", ".join(elements) + ("," if len(elements) == 1 else "") + ")"


def without_static(function: Any, name: str, index: int | None, jit_name: str) -> str | None:
    """The user's ``function`` with ``name`` (parameter ``index``) no longer static in its jit
    decorator: traced like the other arguments; ``None`` where that is not written as a decorator.

    >>> import functools, jax
    >>> @functools.partial(jax.jit, static_argnums=1)
    ... def shifted(x, offsets):
    ...     return x + offsets
    >>> print(without_static(shifted.__wrapped__, "offsets", 1, "jax.jit"))
    @jax.jit
    def shifted(x, offsets):
        return x + offsets
    """
    located = function_of_code(function.__code__) if function is not None else None
    use = decorator_jit(located[1], clues.lookup_in(function.__globals__)) if located is not None else None  # pyright: ignore[reportOptionalMemberAccess]
    if located is None or use is None or use.options is None:
        return None
    static = [k for k in use.options.keywords if k.arg in ("static_argnums", "static_argnames")]
    kept = {id(k): _without(k, (name, index)) for k in static}
    if None in kept.values():
        return None
    if len(use.options.keywords) == sum(1 for v in kept.values() if v == "") and (
        use.kind == "partial" or not use.options.args
    ):
        edits = [Edit(Span.of(use.node), jit_name)]  # no option left: the bare jit
    elif all(kept.values()):
        edits = [Edit(Span.of(k), kept[id(k)]) for k in static]  # pyright: ignore[reportArgumentType]
    else:
        return None  # a keyword to take out from between others: not written here
    return definition_with_edits(located[0].lines, located[1], edits)


def _without(keyword: ast.keyword, dropped: tuple) -> str | None:
    """A ``static_argnums`` / ``static_argnames`` keyword without the values in ``dropped`` ("" when
    none is left; ``None`` where its value is not a literal)."""
    try:
        value = ast.literal_eval(keyword.value)
    except ValueError:
        return None
    left = [v for v in (value if isinstance(value, (tuple, list)) else (value,)) if v not in dropped]
    return f"{keyword.arg}={tuple(left)!r}" if left else ""
