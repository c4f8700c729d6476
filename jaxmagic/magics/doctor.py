"""``%jaxmagic doctor on|off``, and the doctor in ordinary cells: a cell that falls into a JIT
trap shows the diagnosis first, then the traceback trimmed to the user's own frames (the full one
folded under the card in a notebook; ``%tb`` prints it anywhere); a cell that binds a global a
compiled function read to a new value gets a warning after it.

The hook is IPython's custom exception handler (``shell.set_custom_exc``). The error stays the
cell's error (execution stops, ``sys.last_value`` and ``sys.last_traceback`` are the original, so
``%tb`` and ``%debug`` see what they always see). A handler already installed keeps working: its
exceptions go to it first (its traceback, then the card), and uninstalling puts it back exactly.
``%jaxmagic`` is the home of jaxmagic's settings; ``doctor`` is its first sub-command.
"""

from __future__ import annotations

import contextlib
import sys
import types
from dataclasses import dataclass
from typing import Any, Callable

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class, no_var_expand

from jaxmagic import doctor
from jaxmagic.doctor import clues, global_watch, trace_watch
from jaxmagic.doctor.diagnosis import said_once
from jaxmagic.magics import failures, notebook, output
from jaxmagic.render import diagnosis as render

_STATE = "_jaxmagic_doctor_hook"
_CELL_HOOK = "_jaxmagic_doctor_after_cell"  # the post-cell hook, kept on the shell to unregister it  # the hook's state lives on the shell, safe from module reloads
# The exception classes JAX's traps arrive as (JAX's own errors subclass TypeError / IndexError;
# a moved or removed API is an AttributeError or an ImportError; chex's assert_max_traces raises
# an AssertionError).
TRAP_TYPES = (TypeError, ValueError, IndexError, RuntimeError, AttributeError, ImportError, AssertionError)


# ------------------------------------------------------------------------------------------------
# The hook


@dataclass(eq=False)
class _Hook:
    previous_types: tuple
    previous_handler: Any  # ``shell.CustomTB`` as it was: restored as is
    handler: Any = None  # ``shell.CustomTB`` once ours is installed
    active: bool = True


def hook_installed(shell) -> bool:
    """True while the doctor diagnoses exceptions of ordinary cells on ``shell``.

    >>> from IPython.core.interactiveshell import InteractiveShell
    >>> hook_installed(InteractiveShell.instance()) in (True, False)
    True
    """
    state = getattr(shell, _STATE, None)
    return state is not None and state.active


def _is_parse_error(tb) -> bool:
    """IPython also sends exceptions raised while it parses a cell to custom handlers."""
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name == "ast_parse" and "IPython" in code.co_filename:
            return True
        tb = tb.tb_next
    return False


def _handle(shell, state: _Hook, etype, value, tb, tb_offset=None):
    __tracebackhide__ = True
    if state.previous_types and issubclass(etype, state.previous_types) and state.previous_handler is not None:
        returned = state.previous_handler(etype, value, tb, tb_offset=tb_offset)
        found = _diagnosis(shell, state, value)
        if found is not None:  # theirs has shown the traceback its way: the card follows it
            with contextlib.suppress(Exception):
                output.show(shell, found, text=render.text)
        return returned
    if _is_parse_error(tb):
        shell.showsyntaxerror()
        return None
    found = _diagnosis(shell, state, value)
    if found is None or not _doctor_first(shell, found, etype, value, tb, tb_offset):
        shell.showtraceback((etype, value, tb), tb_offset=tb_offset, running_compiled_code=True)
    return None


def _diagnosis(shell, state: _Hook, value):
    """The doctor's diagnosis of an ordinary cell's error, or ``None`` (never raises)."""
    if not state.active or isinstance(value, failures.MagicFailure):
        return None
    try:
        return doctor.diagnose(value, cell_namer=notebook.cell_namer(shell))
    except Exception:  # a failure here must never hide the user's own error
        return None


@dataclass(frozen=True)
class _Shown:
    """What a trap's cell shows: the full traceback (IPython's structured lines), the one
    trimmed to the user's frames, and how many frames the trimmed one leaves out."""

    full: list
    trimmed: list
    hidden: int


def _users_traceback(tb) -> tuple[types.TracebackType | None, int]:
    """``tb`` with only the user's frames (a new chain; ``tb`` is left as it was), and how many of
    its frames after the first of the user's were left out."""
    kept, hidden = [], 0
    while tb is not None:
        if clues.is_user_file(tb.tb_frame.f_code.co_filename):
            kept.append(tb)
        elif kept:
            hidden += 1
        tb = tb.tb_next
    chain = None
    for entry in reversed(kept):
        chain = types.TracebackType(chain, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return chain, hidden


def _format(shell, etype, value, tb, tb_offset) -> _Shown | None:
    """The full and the trimmed traceback, as IPython formats them in the user's exception mode.
    ``None`` where the exception formats itself or no frame of the traceback is the user's."""
    if hasattr(value, "_render_traceback_"):
        return None
    trimmed_tb, hidden = _users_traceback(tb)
    if trimmed_tb is None:
        return None
    formatter = shell.InteractiveTB
    full = formatter.structured_traceback(etype, value, tb, tb_offset=tb_offset)
    trimmed = full if not hidden else formatter.structured_traceback(etype, value, trimmed_tb, tb_offset=0)
    formatter.tb = tb  # ``%debug`` opens the original traceback, not the trimmed copy
    return _Shown(list(full), list(trimmed), hidden)


def _hidden_note(shown: _Shown, terminal: bool) -> str:
    """The line under the trimmed traceback: what it leaves out, and where the full one is.

    >>> print(_hidden_note(_Shown([], [], 7), terminal=True))
    (jaxmagic doctor: 7 frames inside JAX and other libraries are not shown; %tb prints the full traceback)
    >>> print(_hidden_note(_Shown([], [], 1), terminal=True))
    (jaxmagic doctor: 1 frame inside JAX and other libraries is not shown; %tb prints the full traceback)
    """
    frames = (
        "1 frame inside JAX and other libraries is"
        if shown.hidden == 1
        else (f"{shown.hidden} frames inside JAX and other libraries are")
    )
    where = (
        "%tb prints the full traceback"
        if terminal
        else "the full traceback is folded under the card above (%tb prints it)"
    )
    return f"(jaxmagic doctor: {frames} not shown; {where})"


def _doctor_first(shell, found, etype, value, tb, tb_offset) -> bool:
    """The card first, then the traceback trimmed to the user's frames, shown as IPython shows a
    traceback (an ``error`` output in a kernel). ``False`` where nothing was shown (the caller
    then shows the plain traceback)."""
    try:
        shown = _format(shell, etype, value, tb, tb_offset)
        if shown is None:
            return False
        terminal = output.is_terminal(shell)
        trimmed = shown.trimmed + ([_hidden_note(shown, terminal)] if shown.hidden else [])
        card = None if terminal else _card_bundle(found, shell.InteractiveTB.stb2text(shown.full))
    except Exception:
        return False
    _remember(etype, value, tb)
    try:
        if card is None:
            output.show(shell, found, text=render.text)
        else:
            from IPython.display import display

            display(card, raw=True)
    except Exception:  # the card failed: the traceback below still shows the error
        pass
    shell._showtraceback(etype, value, trimmed)
    if getattr(shell, "call_pdb", False):  # %pdb on: the debugger opens, as IPython does it
        shell.debugger(force=True)
    return True


def _card_bundle(found, full_traceback: str) -> dict:
    """The card as a notebook shows it: the text form, and the HTML card holding the full
    traceback folded at its end."""
    return {"text/plain": render.text(found), "text/html": render.html(found, traceback=full_traceback)}


def _remember(etype, value, tb) -> None:
    """As IPython does for every error it shows: ``sys.last_*`` for ``%tb``, ``%debug``, ``pdb.pm()``."""
    sys.last_type, sys.last_value, sys.last_traceback = etype, value, tb
    if sys.version_info >= (3, 12):
        sys.last_exc = value


def install_hook(shell) -> None:
    """Put the doctor's handler in front of any custom exception handler already installed.

    Installing twice installs once; see ``uninstall_hook`` for an example.
    """
    state = getattr(shell, _STATE, None)
    if state is not None:
        if shell.CustomTB is state.handler or shell.custom_exceptions:
            state.active = True  # ours, or chained under a handler installed after ours
            return
        delattr(shell, _STATE)  # IPython dropped ours (a handler failure resets them all)
    state = _Hook(previous_types=tuple(shell.custom_exceptions), previous_handler=shell.CustomTB)

    def handler(shell, etype, value, tb, tb_offset=None):
        return _handle(shell, state, etype, value, tb, tb_offset)

    shell.set_custom_exc(tuple(dict.fromkeys(state.previous_types + TRAP_TYPES)), handler)
    state.handler = shell.CustomTB
    setattr(shell, _STATE, state)


def uninstall_hook(shell) -> None:
    """Remove the doctor's handler, restoring the one it found exactly (a no-op when none is installed).

    >>> from IPython.core.interactiveshell import InteractiveShell
    >>> shell = InteractiveShell.instance()
    >>> was_on, before = hook_installed(shell), shell.CustomTB
    >>> uninstall_hook(shell); install_hook(shell); install_hook(shell)
    >>> hook_installed(shell), getattr(shell, _STATE).previous_handler is not shell.CustomTB
    (True, True)
    >>> uninstall_hook(shell)
    >>> shell.CustomTB is before or was_on
    True
    >>> if was_on:
    ...     install_hook(shell)
    """
    state = getattr(shell, _STATE, None)
    if state is None:
        return
    if shell.CustomTB is state.handler:
        shell.custom_exceptions = state.previous_types
        shell.CustomTB = state.previous_handler
        delattr(shell, _STATE)
    else:
        state.active = False  # a later handler chains to ours: ours steps aside, theirs stays


def install(shell) -> None:
    """``%load_ext jaxmagic``: diagnoses name notebook cells as the notebook does; the hook goes in,
    and the globals jitted functions read are watched, to warn after a cell that changes one."""
    doctor.use_cell_namer(notebook.cell_namer(shell))
    install_hook(shell)
    if getattr(shell, _CELL_HOOK, None) is None:
        global_watch.start()
        trace_watch.start()

        def after_cell(result=None):
            _warn_of_changed_globals(shell)
            _warn_of_traces(shell, result)

        shell.events.register("post_run_cell", after_cell)
        setattr(shell, _CELL_HOOK, after_cell)


def uninstall(shell) -> None:
    """``%unload_ext jaxmagic``: the hook goes, cells are named as plain files again, globals are
    no longer watched."""
    uninstall_hook(shell)
    doctor.use_cell_namer(None)
    after_cell = getattr(shell, _CELL_HOOK, None)
    if after_cell is not None:
        with contextlib.suppress(ValueError):
            shell.events.unregister("post_run_cell", after_cell)
        delattr(shell, _CELL_HOOK)
        global_watch.stop()
        trace_watch.stop()


def _warn_of_changed_globals(shell) -> None:
    """After a cell: a global a compiled function read, now bound to another value (``stale-global``)."""
    if not hook_installed(shell):
        return  # %jaxmagic doctor off: the doctor says nothing
    try:
        for warning in said_once(doctor.observe_cell(shell.user_ns, cell_namer=notebook.cell_namer(shell))):
            output.show(shell, warning, text=render.text)
    except Exception:  # the doctor never breaks a cell that ran
        pass


def _warn_of_traces(shell, result=None) -> None:
    """After an ordinary cell that ran, or a ``%%recompiles`` cell (it runs the cell as it is): a
    jitted function it called traced, and what ran then only once shows no sign of it (a ``print``
    of tracers, a method that changed its object, a static ``self``: ``trace_watch``). Another
    magic's cell warns its own way; a cell that failed has its error to show (a trace that failed
    may not have reached the ``print``)."""
    try:
        cell = (getattr(getattr(result, "info", None), "raw_cell", "") or "").lstrip()
        failed = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
        namer = notebook.cell_namer(shell)
        magic = cell.startswith("%") and not cell.startswith("%%recompiles")
        if not hook_installed(shell) or magic or failed is not None:
            trace_watch.WATCH.take()  # forgotten: the doctor is off, a magic traced, or the cell failed
            return
        for warning in said_once(trace_watch.WATCH.warnings(namer)):
            output.show(shell, warning, text=render.text)
    except Exception:  # the doctor never breaks a cell that ran
        pass


# ------------------------------------------------------------------------------------------------
# Showing trace-time warnings (used by the magics that trace)


def show_warnings(shell, warnings: list, *, plain: bool = False) -> None:
    """Show the doctor's trace-time warnings, each as its own card (or text); see ``%jaxpr``.

    >>> show_warnings(None, [])  # nothing to show
    """
    for warning in said_once(warnings):
        output.show(shell, warning, plain=plain, text=render.text)


# ------------------------------------------------------------------------------------------------
# %jaxmagic


@dataclass(frozen=True)
class Subcommand:
    """One ``%jaxmagic <name>`` command: what runs, its usage line, one line of help."""

    run: Callable[[Any, str], Any]  # (shell, the rest of the line) -> result
    usage: str
    help: str


SUBCOMMANDS: dict[str, Subcommand] = {}


def subcommand(name: str, usage: str, help: str):
    """Register ``%jaxmagic <name> ...``.

    >>> @subcommand("hello", "%jaxmagic hello", "say hello")
    ... def _hello(shell, rest):
    ...     print("hello", rest)
    >>> SUBCOMMANDS.pop("hello").usage
    '%jaxmagic hello'
    """

    def register(run):
        SUBCOMMANDS[name] = Subcommand(run, usage, help)
        return run

    return register


@subcommand(
    "doctor",
    "%jaxmagic doctor [on|off|status|last]",
    "explain JAX's JIT traps first when an ordinary cell falls into one (on by default); "
    "`last` explains the last error again",
)
def _doctor(shell, rest: str):
    words = rest.split()
    action = words[0].lower() if words else "status"
    if len(words) > 1 or action not in ("on", "off", "status", "last"):
        raise UsageError(
            f"%jaxmagic doctor takes one of: on, off, status, last; got `{rest.strip()}`.\n"
            f"Example: %jaxmagic doctor off"
        )
    if action == "on":
        install_hook(shell)
    elif action == "off":
        uninstall_hook(shell)
    elif action == "last":
        error = getattr(sys, "last_value", None)
        if error is None:
            print("jaxmagic doctor: no error yet in this session.")
            return None
        found = doctor.diagnose(error, cell_namer=notebook.cell_namer(shell))
        if found is None:
            print(f"jaxmagic doctor: the last error ({type(error).__name__}) is not a JIT trap the doctor knows.")
        else:
            output.show(shell, found, text=render.text)
        return None
    state = "on" if hook_installed(shell) else "off"
    print(
        f"jaxmagic doctor: {state} (JIT traps in ordinary cells are explained above their traceback"
        f"{'' if state == 'on' else ' when on'}; %jaxmagic doctor {'off' if state == 'on' else 'on'} switches it)"
    )
    return None


def _usage() -> str:
    lines = ["%jaxmagic <command>: jaxmagic's settings and tools.", ""]
    for _name, command in sorted(SUBCOMMANDS.items()):
        lines.append(f"  {command.usage}")
        lines.append(f"      {command.help}")
    return "\n".join(lines)


@magics_class
class DoctorMagics(Magics):
    """The ``%jaxmagic`` magic: ``%jaxmagic doctor on|off|status|last`` (``SUBCOMMANDS`` lists them all).

    >>> sorted(DoctorMagics.magics["line"])
    ['jaxmagic']
    """

    @no_var_expand
    @line_magic
    def jaxmagic(self, line: str = ""):
        """jaxmagic's settings and tools.

        %jaxmagic doctor on|off   explain JIT traps first in ordinary cells, above the traceback
        %jaxmagic doctor          say whether that is on
        %jaxmagic doctor last     explain the last error again
        """
        words = line.strip().split(None, 1)
        if not words or words[0] in ("-h", "--help", "help"):
            print(_usage())
            return None
        command = SUBCOMMANDS.get(words[0])
        if command is None:
            known = ", ".join(sorted(SUBCOMMANDS))
            raise UsageError(f"%jaxmagic has no command `{words[0]}`; it has: {known}.\nExample: %jaxmagic doctor off")
        return command.run(self.shell, words[1] if len(words) > 1 else "")
