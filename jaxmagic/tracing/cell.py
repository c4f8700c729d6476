"""A cell that ends in a call: the statements that run as in any cell, and the call a magic works on.

Every cell magic runs its cell through here (after IPython's own input transformations, so that
``%time`` lines and other magics inside the cell work as in any cell).

>>> plan = split_cell("y = 2\\nf(y)")
>>> plan.call_text, len(plan.body.body)
('f(y)', 1)
>>> namespace = {}
>>> run_cell_value("a = 2\\na * 21", namespace, "<cell>"), namespace["a"]
(42, 2)
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass
from typing import Any, Callable

from jaxmagic.errors import UsageProblem, UserCodeError
from jaxmagic.tracing.call import parse_call_expression, takes_any_expression


@dataclass(frozen=True)
class CellPlan:
    """A cell split into the statements that run normally and the call that the magic works on."""

    body: ast.Module | None  # statements to run first, line numbers as in the cell (None: nothing)
    call_text: str
    call_line: int = 1  # the cell line the call stands on (1: the magic's own line)


def split_cell(cell: str, *, line_call: str = "", magic: str = "%%jaxpr", first_line: int = 2) -> CellPlan:
    """Split a cell: all statements but the last run normally; the last must be a call (any
    expression, for a magic that takes one).

    A call given on the magic's own line (``line_call``) takes the place of the last statement,
    and then every statement of the cell runs. ``first_line`` is the cell line number of the
    cell's first statement (2: right under the magic's line), so tracebacks and source lines
    point into the cell as the user sees it.

    >>> split_cell("y = 2\\nf(y)").call_line
    3
    """
    try:
        module = ast.parse(cell)
    except SyntaxError as exc:
        line = (exc.lineno or 1) + first_line - 1
        raise UsageProblem(
            f"{magic}: the cell is not valid Python (line {line}: {exc.msg}).",
            example=f"{magic}\ndef f(x):\n    return x * 2\nf(x)",
        ) from None
    ast.increment_lineno(module, first_line - 1)
    statements = module.body
    if line_call.strip():
        parse_call_expression(line_call, magic=magic, any_expression=takes_any_expression(magic))
        return CellPlan(body=module if statements else None, call_text=line_call.strip(), call_line=1)
    if not statements:
        raise UsageProblem(
            f"{magic} needs a cell whose last statement is a call expression (the cell is empty).",
            example=f"{magic}\ndef f(x):\n    return x * 2\nf(x)",
        )
    last = statements[-1]
    wanted = ast.expr if takes_any_expression(magic) else ast.Call
    if not (isinstance(last, ast.Expr) and isinstance(last.value, wanted)):
        shown = ast.unparse(last).splitlines()[0]
        what = "an expression, the one to time" if wanted is ast.expr else "a call expression, the call to work on"
        raise UsageProblem(
            f"{magic}: the cell's last statement must be {what}; it is `{shown}`.",
            example=f"{magic}\ndef f(x):\n    return x * 2\nf(x)",
        )
    module.body = statements[:-1]
    return CellPlan(body=module if module.body else None, call_text=ast.unparse(last.value), call_line=last.lineno)


Runner = Callable[[Any], Any]  # runs a coroutine to its end and returns its value (IPython's ``loop_runner``)


def run_body(body: ast.Module | None, namespace: dict, filename: str, *, runner: Runner | None = None) -> None:
    """Run the cell's leading statements in the user's namespace, as a normal cell would (a
    top-level ``await`` too, on ``runner``: IPython's autoawait loop)."""
    if body is None:
        return
    code = compile(body, filename, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    try:
        execute(code, namespace, runner)
    except Exception as exc:
        raise UserCodeError(exc, during="running the cell") from None


def execute(code, namespace: dict, runner: Runner | None = None) -> object:
    """Run compiled cell code and return its value; code with a top-level ``await`` runs as a
    coroutine on ``runner`` (or on an event loop of its own).

    >>> cell = "import asyncio\\nawait asyncio.sleep(0)"
    >>> code = compile(cell, "<cell>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    >>> namespace = {}
    >>> execute(code, namespace), "asyncio" in namespace
    (None, True)
    """
    result = eval(code, namespace)
    if code.co_flags & inspect.CO_COROUTINE:
        return run_coroutine(result, runner)
    return result


def run_coroutine(coroutine, runner: Runner | None = None) -> object:
    """Run ``coroutine`` to its end: on ``runner`` when no event loop runs in this thread (a
    terminal IPython's autoawait), else (a Jupyter kernel's loop is busy running this very cell)
    on a loop of its own in a helper thread, as the cell cannot give the kernel's loop back."""
    import asyncio
    import threading

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return runner(coroutine) if runner is not None else asyncio.run(coroutine)
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = asyncio.run(coroutine)
        except BaseException as exc:  # handed to the cell's own thread below
            outcome["error"] = exc

    helper = threading.Thread(target=run, name="jaxmagic-await")
    helper.start()
    helper.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def run_cell_value(
    source: str,
    namespace: dict,
    filename: str,
    *,
    magic: str = "%%recompiles",
    first_line: int = 2,
    passthrough: tuple[type[BaseException], ...] = (),
    runner: Runner | None = None,
) -> object:
    """Run a whole cell as IPython would and return its value: the last statement's, when it is an
    expression and the cell does not end in a semicolon (``f(x);  # comment`` is quiet too).
    Exceptions of the ``passthrough`` types are raised as they are; others are the user's. A
    top-level ``await`` runs on ``runner`` (IPython's autoawait loop)."""
    try:
        tree = ast.parse(source, filename)
    except SyntaxError as exc:
        raise UsageProblem(
            f"{magic}: the cell is not valid Python (line {(exc.lineno or 1) + first_line - 1}: {exc.msg}).",
            example=f"{magic}\nfor n in (3, 4):\n    f(jnp.ones(n))",
        ) from None
    ast.increment_lineno(tree, first_line - 1)
    last = None
    final = tree.body[-1] if tree.body else None
    if isinstance(final, ast.Expr) and not ends_quietly(source):
        tree.body.pop()
        last = ast.Expression(final.value)
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    try:
        execute(compile(tree, filename, "exec", flags=flags), namespace, runner)
        if last is not None:
            return execute(compile(last, filename, "eval", flags=flags), namespace, runner)
        return None
    except passthrough:
        raise
    except Exception as exc:
        raise UserCodeError(exc, during="running the cell") from None


def ends_quietly(source: str) -> bool:
    """True when a cell's value is not shown: its last code line ends in ``;`` (a comment after it
    does not count), as IPython decides.

    >>> ends_quietly("f(x);  # done"), ends_quietly("f(x)"), ends_quietly("s = 'a;'")
    (True, False, False)
    """
    import io
    import tokenize

    last = None
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type not in (
                tokenize.COMMENT,
                tokenize.NL,
                tokenize.NEWLINE,
                tokenize.ENDMARKER,
                tokenize.INDENT,
                tokenize.DEDENT,
            ):
                last = token
    except (tokenize.TokenError, SyntaxError):
        return source.rstrip().endswith(";")
    return last is not None and last.type == tokenize.OP and last.string == ";"


def trailing_calls(cell: str, *, first_line: int = 2) -> tuple[ast.Module | None, list[str]]:
    """The statements to run first, and the call expressions that end the cell: every call
    statement after the last other statement (``%%jitcompare`` times them side by side). A last
    statement that is a tuple of calls (``a(x), b(x)``) counts as its calls. A call of a Python
    builtin (``print``) or of ``display`` is a statement of the cell, not a call to time.

    >>> body, found = trailing_calls("y = 2\\nnaive(y)\\nvectorized(y)")
    >>> len(body.body), found
    (1, ['naive(y)', 'vectorized(y)'])
    >>> trailing_calls("print('ready')\\nf(y)")[1]
    ['f(y)']
    """
    try:
        module = ast.parse(cell)
    except SyntaxError:
        return None, []
    ast.increment_lineno(module, first_line - 1)
    statements = list(module.body)
    found: list[str] = []
    while statements and isinstance(statements[-1], ast.Expr):
        value = statements[-1].value
        if isinstance(value, ast.Call) and not _is_output_call(value):
            found.insert(0, ast.unparse(value))
        elif (
            isinstance(value, ast.Tuple)
            and value.elts
            and all(isinstance(e, ast.Call) for e in value.elts)
            and not found
        ):
            found = [ast.unparse(e) for e in value.elts]
        else:
            break
        statements.pop()
    module.body = statements
    return (module if statements else None), found


def _is_output_call(call: ast.Call) -> bool:
    """A builtin (``print``), ``display``, or a magic IPython turned into ``get_ipython().run_...``."""
    import builtins

    func = call.func
    if (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Call)
        and isinstance(func.value.func, ast.Name)
        and func.value.func.id == "get_ipython"
    ):
        return True
    return isinstance(func, ast.Name) and (hasattr(builtins, func.id) or func.id == "display")
