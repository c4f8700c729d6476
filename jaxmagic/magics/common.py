"""What every jaxmagic magic shares: splitting options from the call, finding the call in a line or a
cell, showing a report in the notebook or the terminal, and failing cleanly.

This package is the only place that knows IPython's magic machinery; engines never import it.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import types
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument

from jaxmagic import call as calls
from jaxmagic import cell as cells
from jaxmagic import sources
from jaxmagic.errors import UsageProblem, UserCodeError

# ------------------------------------------------------------------------------------------------
# Options and the call

STATIC_OPTION = argument(
    "-s", "--static", metavar="NAMES", action="append",
    help="parameters to treat as static, by name or position: -s n, -s 1,mode (or -s 1 -s mode)")


def shared_options(report_name: str):
    """The options every magic takes: ``--plain``, ``--tb`` and ``-o`` (which returns ``report_name``).

    Put it right under the magic's own ``@argument`` lines.
    """
    options = (
        argument("--plain", action="store_true", help="print plain text only"),
        argument("--tb", action="store_true", help="when your code raises, show its full traceback"),
        argument("-o", "--output", action="store_true", help=f"return the {report_name}"),
    )

    def add(magic_func):
        for option in reversed(options):
            magic_func = option(magic_func)
        return magic_func

    return add



def split_options(parser, line: str, magic: str):
    """Split a magic's line into parsed options and the call expression that follows them.

    The call may itself contain spaces, minus signs and quotes (``f(x, -3, "a b")``), so the split
    is found by trying each word boundary from the right: the longest prefix that parses as
    options wins, and the rest is the call.
    """
    __tracebackhide__ = True
    line = line.strip()
    check_option_spelling(parser, line, magic)
    boundaries = sorted({len(line), 0, *(m.start() for m in re.finditer(r"(?<=\s)\S", line))}, reverse=True)
    informative_error = None
    error_before_a_call = False  # the options' own error is clearest where the call follows them
    for boundary in boundaries:
        prefix, rest = line[:boundary].strip(), line[boundary:].strip()
        try:
            options = parser.parse_argstring(prefix)
        except (UsageError, ValueError) as exc:
            before_a_call = bool(rest) and _is_call(rest)
            if (informative_error is None and not rest) or (before_a_call and not error_before_a_call):
                informative_error, error_before_a_call = exc, before_a_call
            continue
        if rest.startswith("-") and not _is_call(rest) and informative_error is not None:
            break
        return options, rest
    message = str(informative_error) if informative_error else f"cannot read the options of {magic}"
    raise UsageError(f"{magic}: {message}\n{parser.format_usage().strip()}")


def check_option_spelling(parser, line: str, magic: str) -> None:
    """A long option written with one dash (``-stage hlo``) is a usage error that names the option,
    rather than a short option with a value glued on (``-s tage``) or the start of a call.

    Only the words before the call (the first word with a parenthesis) are looked at.
    """
    long_options = [o for o in parser._option_string_actions if o.startswith("--")]
    for word in line.split():
        if "(" in word:
            return
        if not (word.startswith("-") and not word.startswith("--") and len(word) > 3 and word[1].isalpha()):
            continue
        spelled = "--" + word[1:].split("=")[0]
        meant = [o for o in long_options if o == spelled] or [o for o in long_options if o.startswith(spelled)]
        if len(meant) == 1:
            raise UsageError(f"{magic}: `{word}` is not an option; long options take two dashes: {meant[0]}\n"
                             f"{parser.format_usage().strip()}")


def _is_call(text: str) -> bool:
    try:
        return isinstance(calls.ast.parse(text, mode="eval").body, calls.ast.Call)
    except SyntaxError:
        return False


@dataclass
class FoundCall:
    """The call a magic works on, and how to name the notebook's cells in what it shows."""

    call: calls.Call
    cell_namer: sources.CellNamer


def find_call(shell, *, line_call: str, cell: str | None, magic: str, magic_line: str,
              static: str | list[str] | None, local_ns: dict | None = None,
              after_body: Callable[[], None] | None = None) -> FoundCall:
    """The line form evaluates ``line_call``; the cell form runs the cell but its last statement first.
    ``static`` is ``-s`` as given, once or several times (``-s 1 -s mode`` is ``-s 1,mode``).

    Raises ``UsageProblem`` for what the user typed, ``UserCodeError`` when the user's code raised.
    ``after_body`` is called once the cell's body has run (before the call is resolved).
    """
    __tracebackhide__ = True
    if isinstance(static, (list, tuple)):
        static = ",".join(static)
    namer = cell_namer(shell)
    shown_as = f"%{magic}" if cell is None else f"%%{magic}"
    if cell is None:
        text = line_call
        if not text.strip() or text.lstrip().startswith("#"):
            raise UsageProblem(
                f"%{magic} needs a call expression after its options (or use the cell form, "
                f"%%{magic}, with the call as the cell's last statement).",
                example=f"%{magic} {calls.CALL_EXAMPLE}",
            )
        filename, line = _locate_line_magic(shell, magic)
    else:
        plan = cells.split_cell(shell.transform_cell(cell), line_call=line_call, magic=shown_as)
        filename = cache_cell(shell, f"%%{magic} {magic_line}".rstrip() + "\n" + cell)
        cells.run_body(plan.body, shell.user_ns, filename)
        if after_body is not None:
            after_body()
        text = plan.call_text
        line = plan.call_line
    call = calls.resolve_call(
        text,
        shell.user_ns,
        local_namespace=local_ns,
        static=static,
        magic=shown_as,
        filename=filename,
        line=line,
    )
    return FoundCall(call=call, cell_namer=namer)


def _locate_line_magic(shell, magic: str) -> tuple[str, int]:
    """The current cell's filename and the line of ``%magic`` in it, so that a lambda written in
    the call itself is shown as ``In [5] line 2``. Falls back to a name of its own."""
    number, line = current_cell(shell)
    history = getattr(getattr(shell, "history_manager", None), "input_hist_raw", None) or []
    if number is not None and 0 <= number < len(history) and history[number]:
        return shell.compile.cache(history[number], number), line
    return "<jaxmagic-call>", 1


def current_cell(shell) -> tuple[int | None, int]:
    """The number of the cell now running (``In [n]``) and the line it is on.

    Found from the stack: the innermost frame whose code IPython compiled from a cell. (IPython 9
    counts ``execution_count`` up before a cell runs, earlier versions after, so the counter alone
    cannot tell.)
    """
    frame = sys._getframe(1)
    while frame is not None:
        label = shell.compile.format_code_name(frame.f_code.co_filename)
        if label is not None:
            number = re.search(r"\d+", label[1])
            if number:
                return int(number.group(0)), frame.f_lineno
        frame = frame.f_back
    return None, 1


def cache_cell(shell, text: str) -> str:
    """Register a cell's text with Python's linecache under this cell's number; return its filename."""
    number, _ = current_cell(shell)
    return shell.compile.cache(text, number if number is not None else shell.execution_count)


def cell_namer(shell) -> sources.CellNamer:
    """Name a code file the way the notebook shows it: ``In [4]``, or ``None`` for a real file."""
    compiler = shell.compile

    def name(filename: str) -> str | None:
        label = compiler.format_code_name(filename)
        if label is None:
            match = re.match(r"<ipython-input-(\d+)-", filename)
            return f"In [{match.group(1)}]" if match else None
        kind, cell = label
        number = re.search(r"\d+", cell)
        return f"In [{number.group(0)}]" if number else cell

    return name


# ------------------------------------------------------------------------------------------------
# Showing a report


def is_terminal(shell) -> bool:
    """True in terminal IPython (not a kernel, not a plain embedded shell)."""
    return type(shell).__name__ == "TerminalInteractiveShell"


def use_color(shell) -> bool:
    """Colour only on a terminal that wants it (``TERM=dumb`` and ``NO_COLOR`` say no)."""
    if not is_terminal(shell) or os.environ.get("TERM") == "dumb" or "NO_COLOR" in os.environ:
        return False
    return str(getattr(shell, "colors", "")).lower() not in ("nocolor", "no_color", "none")


def show(shell, report, *, plain: bool = False, text: Callable[..., str] | None = None) -> None:
    """Show a report: rich in a notebook, coloured text in a terminal, plain text with ``plain``."""
    if plain or is_terminal(shell):
        render_text = text or (lambda r, color=False: repr(r))
        print(render_text(report, color=use_color(shell) and not plain))
        return
    from IPython.display import display

    display(report)


# ------------------------------------------------------------------------------------------------
# Failing cleanly


class MagicFailure(Exception):
    """The user's code failed inside a magic. IPython shows it through ``_render_traceback_``:
    the user's own frames only (or one line, when the doctor's explanation is shown above it)."""

    def __init__(self, original: BaseException, lines: list[str]):
        super().__init__(f"{type(original).__name__}: {original}")
        self.original = original
        self._lines = lines

    def _render_traceback_(self) -> list[str]:
        return self._lines


class MagicInterrupted(KeyboardInterrupt):
    """Ctrl-C (or a ``KeyboardInterrupt`` the user's code raised) inside a magic. Still a
    ``KeyboardInterrupt`` to whoever catches it; IPython shows it with the user's frames only."""

    def __init__(self, original: BaseException, lines: list[str]):
        super().__init__(*original.args)
        self.original = original
        self._lines = lines

    def _render_traceback_(self) -> list[str]:
        return self._lines


def interrupted(shell, exc: KeyboardInterrupt) -> MagicInterrupted:
    """The interruption to raise in place of ``exc``: the same, with the user's frames only (JAX
    filters its own frames from its errors, not from an interruption)."""
    tb = sources.without_jaxmagic_frames(exc.__traceback__, jax_too=True)
    exc.__traceback__ = tb
    try:
        lines = list(shell.InteractiveTB.structured_traceback(type(exc), exc, tb, tb_offset=0))
    except Exception:  # showing where it stopped must never hide that it stopped
        lines = [f"{type(exc).__name__}: {exc}".rstrip(": ")]
    return MagicInterrupted(exc, lines)


def user_traceback(tb: types.TracebackType | None) -> types.TracebackType | None:
    """The traceback without jaxmagic's frames: what remains is the user's code (and JAX's)."""
    return sources.without_jaxmagic_frames(tb)


def diagnose(exc: BaseException, fn: Callable | None = None):
    """The doctor's ``Diagnosis`` for ``exc``, or ``None``."""
    try:
        from jaxmagic.doctor import diagnose as doctor_diagnose
    except ImportError:
        return None
    try:
        return doctor_diagnose(exc, fn=fn)
    except Exception:  # the doctor must never hide the user's own error
        return None


def failure(shell, err: UserCodeError, *, fn: Callable | None = None, full_traceback: bool = False) -> MagicFailure:
    """Show the doctor's explanation (if any) and build the exception that fails the cell."""
    exc = err.original
    tb = user_traceback(exc.__traceback__)
    exc.__traceback__ = tb
    diagnosis = diagnose(exc, fn)
    if diagnosis is not None:
        show(shell, diagnosis, text=_diagnosis_text)
    if diagnosis is not None and not full_traceback:
        note = f"{type(exc).__name__} while {err.during}: {_first_line(exc)}  (add --tb for the full traceback)"
        return MagicFailure(exc, [note])
    lines = shell.InteractiveTB.structured_traceback(type(exc), exc, tb, tb_offset=0)
    if err.during and not err.during.startswith("running the cell"):
        lines = [f"(raised while {err.during})"] + list(lines)
    return MagicFailure(exc, list(lines))


def _diagnosis_text(diagnosis, color: bool = False) -> str:
    render = getattr(diagnosis, "to_text", None)
    return render(color=color) if render else str(diagnosis)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


class ConfigKept:
    """JAX's configuration as it was, to be given back when a magic ends. What the cell's own body
    sets on purpose (``jax.config.update`` in a ``%%jaxpr`` cell) is taken as the new state."""

    def __init__(self):
        import jax

        self.before = dict(jax.config.values)

    def accept_current(self) -> None:
        """The settings as they are now are the user's: keep them (call after the cell's body ran)."""
        import jax

        self.before = dict(jax.config.values)

    def restore(self) -> None:
        import jax

        after = jax.config.values
        for name, value in self.before.items():
            if after.get(name) is not value and after.get(name) != value:
                with contextlib.suppress(Exception):
                    jax.config.update(name, value)


@contextlib.contextmanager
def jax_config_kept() -> Iterator[ConfigKept]:
    """Whatever happens inside, JAX's configuration is as it was afterwards (or as the cell's own
    body left it, once ``accept_current`` was called)."""
    kept = ConfigKept()
    try:
        yield kept
    finally:
        kept.restore()


@contextlib.contextmanager
def guarded(shell, *, fn_hint: Callable[[], Any] = lambda: None, full_traceback: bool = False, keep_config: bool = True):
    """Turn jaxmagic's failures into what a user should see: a ``UsageError`` for bad input, the
    user's own traceback (and the doctor's note) for an error in their code, a ``KeyboardInterrupt``
    showing the user's frames for Ctrl-C; never jaxmagic's internals. JAX's configuration is
    restored whatever happens.
    """
    __tracebackhide__ = True
    config = jax_config_kept() if keep_config else contextlib.nullcontext()
    with config as kept:
        try:
            yield kept
        except UsageProblem as problem:
            raise UsageError(str(problem)) from None
        except UserCodeError as err:
            raise failure(shell, err, fn=fn_hint(), full_traceback=full_traceback) from None
        except (UsageError, MagicFailure, MagicInterrupted):
            raise
        except KeyboardInterrupt as interruption:
            raise interrupted(shell, interruption) from None
        except Exception as exc:
            if full_traceback:
                raise
            raise UsageError(
                f"jaxmagic failed unexpectedly ({type(exc).__name__}: {exc}). "
                f"This is a bug in jaxmagic; add --tb to see where it happened."
            ) from None
