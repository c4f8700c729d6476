"""``%recompiles`` / ``%%recompiles``: every compilation, why it happened, and how to stop it.

``%%recompiles [FN ...]`` runs the cell and reports each compilation in it; ``%recompiles on``
watches the whole session in a live panel (``off``, ``clear``, ``show [FN]``). The engine is
``jaxmagic.recompiles.watch`` / ``jaxmagic.recompiles``; this module only wires it to the shell.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import contextlib
import re
import shutil
import sys
import weakref
from dataclasses import dataclass, field

from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics, line_cell_magic, magics_class, needs_local_scope, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments

from jaxmagic.magics import echo, failures, line_options, notebook, output
from jaxmagic.recompiles import RecompileLimitExceeded, RecompileLog, matches
from jaxmagic.render import recompiles as render
from jaxmagic.tracing import cell as cells

SUBCOMMANDS = ("on", "off", "clear", "show", "save")
ACCEPTED = (
    "%recompiles on [FN ...] [--all] [--max N] [--explain]   watch the whole session in a live panel\n"
    "%recompiles off                                         stop watching\n"
    "%recompiles clear                                       forget what the session log holds\n"
    "%recompiles show [FN ...]                               show the session log (of those functions)\n"
    "%recompiles save FILE.html                              write the session log as a standalone HTML page\n"
    "%%recompiles [FN ...] [--all] [--max N] [--explain]     run the cell and report its compilations"
)
MAX_LIVE_PANELS = 16
_NAME = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")


def _limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(
            f"--max takes a non-negative whole number of compilations, not {text!r}: "
            "e.g. --max 1 (the first compilation only) or --max 0 (none at all)"
        )
    return value


@dataclass
class _Session:
    """One shell's session watch: its log, the live panels showing it, and the hook we added."""

    log: RecompileLog | None = None
    panels: list = field(default_factory=list)
    hook: object = None
    warned: set = field(default_factory=set)
    reported: int = 0  # compilations already printed after earlier cells (terminal)


_SESSIONS: "weakref.WeakKeyDictionary[object, _Session]" = weakref.WeakKeyDictionary()
# The session log of a shell that unloaded jaxmagic: ``%load_ext jaxmagic`` gives it back (``%recompiles show``).
_KEPT: "weakref.WeakKeyDictionary[object, RecompileLog]" = weakref.WeakKeyDictionary()


def _session(shell) -> _Session:
    session = _SESSIONS.get(shell)
    if session is None:
        session = _SESSIONS[shell] = _Session(log=_KEPT.pop(shell, None))
    return session


def install(shell) -> None:
    """After each cell: finish the live panels' updates and report ``--max`` overruns that
    happened in background threads (those cannot interrupt the cell that caused them)."""
    session = _session(shell)
    if session.hook is None:
        shell_ref = weakref.ref(shell)  # the hook must not keep the shell alive

        def after_cell(result=None):
            target = shell_ref()
            if target is not None:
                _after_cell(target)

        session.hook = after_cell
        shell.events.register("post_run_cell", after_cell)


def uninstall(shell) -> None:
    """Stop the session watch, the panels' updates and the hook: nothing of ours stays in JAX.
    ``%reload_ext jaxmagic`` is not an end: the session watch, its panels and hook go on."""
    if _reloading() and shell in _SESSIONS:
        return
    session = _SESSIONS.pop(shell, None)
    if session is None:
        return
    log = session.log
    if log is not None and (log.watching or log.total):
        kept = "the session watch stopped" if log.watching else "the session log was kept"
        print(
            f"jaxmagic unloaded: {kept} ({log.summary}). Its log is kept: after %load_ext jaxmagic, "
            "%recompiles show shows it (and %recompiles -o show returns it).",
            file=sys.stderr,
        )
        _KEPT[shell] = log
    if log is not None:
        log.stop()
    for panel in session.panels:
        panel.close()
    if session.hook is not None:
        with contextlib.suppress(ValueError):
            shell.events.unregister("post_run_cell", session.hook)


def _reloading() -> bool:
    """Whether IPython's ``%reload_ext`` is what unloads the extension (it loads it again at once)."""
    frame = sys._getframe(1)
    try:
        while frame is not None:
            if frame.f_code.co_name == "reload_extension" and frame.f_code.co_filename.endswith("extensions.py"):
                return True
            frame = frame.f_back
        return False
    finally:
        del frame


def _after_cell(shell) -> None:
    session = _SESSIONS.get(shell)
    if session is None:
        return
    for panel in session.panels:
        panel.flush()
        panel.publish()  # the saved notebook's copy of the panel follows the log
    log = session.log
    if log is not None and log.watching and output.is_terminal(shell):
        _print_new_events(session, log)
    if log is not None and log.watching:
        for function in log.over_limit():
            if function not in log.limit_raised and function not in session.warned:
                session.warned.add(function)
                print(f"%recompiles --max {log.max_compiles}: {log.limit_error(function)}", file=sys.stderr)


def _print_new_events(session: _Session, log: RecompileLog) -> None:
    """In a terminal, where no panel can update, one line per compilation after each cell."""
    total = log.total
    new = min(total - session.reported, len(log.events))
    session.reported = total
    if new <= 0:
        return
    for event in log.events[-new:]:
        site = f" at {event.call_site.label}" if event.call_site else ""
        print(f"[recompiles] {event.function}{site}: " + "; ".join(c.message for c in event.causes))


@magics_class
class RecompilesMagics(Magics):
    """The ``%recompiles`` magic."""

    shell: InteractiveShell  # registered on a shell by load_ipython_extension, never without one

    @magic_arguments()
    @argument(
        "words",
        nargs="*",
        metavar="ARG",
        help="line form: on [FN ...] | off | clear | show [FN ...]; cell form: the functions to report (default: all of yours)",
    )
    @argument(
        "--all",
        action="store_true",
        dest="internal",
        help="also show JAX's internal compilations (each primitive compiled once in eager mode, jnp helpers)",
    )
    @argument(
        "--explain",
        action="store_true",
        help="also keep JAX's own explanation of each cache miss (turns on jax_explain_cache_misses while watching)",
    )
    @argument(
        "--max",
        type=_limit,
        metavar="N",
        default=None,
        help="fail when a watched function compiles more than N times (--max 0: no compilation at all)",
    )
    @line_options.shared_options("RecompileLog")
    @no_var_expand
    @needs_local_scope
    @line_cell_magic
    def recompiles(self, line: str, cell: str | None = None, local_ns: dict | None = None):
        """Count every compilation, explain each cause per argument, and say how to avoid it.

        Cell form:  %%recompiles [FN ...] [--all] [--max N] [-o]
            runs the cell, then lists each compilation in it: function, call site, causes, time.
        Line form:  %recompiles on [FN ...] [--all] [--max N]   watch the session (live panel)
                    %recompiles off | clear | show [FN ...]

        Causes name the argument that changed (shape, dtype, weak type, static value, pytree
        structure, device, sharding), a re-defined function, new jit options or a JAX setting.
        --max N fails the cell at the call that compiles a function for the (N+1)th time.
        """
        __tracebackhide__ = True
        magic = "%%recompiles" if cell is not None else "%recompiles"
        line_options.check_option_spelling(line_options.parser_of(self.recompiles), line, magic)
        try:
            options = line_options.parser_of(self.recompiles).parse_argstring(line)
        except (UsageError, ValueError) as exc:  # ValueError: an unclosed quote
            raise UsageError(f"{magic}: {exc}\nAccepted:\n{ACCEPTED}") from None
        line_options.check_values(line_options.parser_of(self.recompiles), options, magic)
        if cell is not None:
            return self._cell(options, line, cell)
        return self._line(options)

    # -- the line form -------------------------------------------------------------------------
    def _line(self, options):
        session = _session(self.shell)
        words = options.words
        if not words:
            if session.log is None:
                raise UsageError(f"%recompiles needs a sub-command.\nAccepted:\n{ACCEPTED}")
            words = ["show"]
        command, names = words[0], words[1:]
        if command not in SUBCOMMANDS:
            raise UsageError(f"%recompiles: unknown sub-command `{command}`.\nAccepted:\n{ACCEPTED}")
        if command in ("off", "clear") and (names or options.internal or options.max is not None):
            raise UsageError(f"%recompiles {command} takes no further arguments.\nAccepted:\n{ACCEPTED}")
        if command != "on" and (options.internal or options.explain or options.max is not None):
            raise UsageError(
                f"%recompiles {command}: --all and --max belong to `%recompiles on` and to the cell form.\n"
                f"Accepted:\n{ACCEPTED}"
            )
        if command == "save":
            return self._save(session, names, options)
        _check_names(names, "%recompiles " + command)
        if command == "on":
            return self._on(session, names, options)
        if command == "off":
            return self._off(session, options)
        if command == "clear":
            if session.log is None:
                print("Nothing to clear: the session is not being watched (%recompiles on starts it).")
            else:
                session.log.clear()
                session.reported = 0
                print("Cleared the session's recompile log." + (" Still watching." if session.log.watching else ""))
            return session.log if options.output else None
        return self._show(session, names, options)

    def _on(self, session: _Session, names: list[str], options):
        previous = session.log
        if previous is not None and previous.watching:
            previous.stop()
        log = RecompileLog(
            names,
            include_internal=options.internal,
            max_compiles=options.max,
            cell_namer=notebook.cell_namer(self.shell),
            explain=options.explain,
            scope=f"the session since In [{notebook.current_cell(self.shell)[0] or self.shell.execution_count}]",
        )
        log.start()
        session.log, session.warned, session.reported = log, set(), 0
        if previous is not None and previous.watching:
            print("Restarted the session watch with the new options (the previous log was replaced).")
        self._show_live(session, log, None, plain=options.plain)
        return echo.returned(self.shell, log, shown=True) if options.output else None

    def _off(self, session: _Session, options):
        log = session.log
        if log is None or not log.watching:
            print("The session is not being watched (%recompiles on starts it).")
            return log if options.output else None
        log.stop()
        for panel in session.panels:
            panel.flush()
            panel.refresh()
            panel.publish()
        print(f"Stopped watching: {log.summary}. `%recompiles show` shows them again.")
        return log if options.output else None

    def _show(self, session: _Session, names: list[str], options):
        log = session.log
        if log is None:
            raise UsageError(
                "%recompiles show: nothing recorded yet. `%recompiles on` watches the session; "
                "`%%recompiles` watches one cell."
            )
        unknown = [n for n in names if not any(matches(f, [n]) for f in log.counts)]
        if unknown:
            seen = ", ".join(sorted(log.counts)) or "none yet"
            raise UsageError(
                f"%recompiles show: `{unknown[0]}` has not compiled while watching. Functions seen: {seen}."
            )
        shown = log.for_functions(names) if names else log
        if log.watching and len(names) <= 1:
            self._show_live(session, log, names[0] if names else None, plain=options.plain)
        else:
            output.show(self.shell, shown, plain=options.plain, text=render.text)
        return echo.returned(self.shell, shown, shown=True) if options.output else None

    def _save(self, session: _Session, words: list[str], options):
        example = "e.g. %recompiles save compiles.html"
        words = [w[1:-1] if len(w) > 1 and w[0] == w[-1] and w[0] in "'\"" else w for w in words]
        if len(words) != 1 or not words[0].lower().endswith((".html", ".htm")):
            raise UsageError(f"%recompiles save takes one file name ending in .html; {example}.\nAccepted:\n{ACCEPTED}")
        log = session.log
        if log is None:
            raise UsageError(
                f"%recompiles save: nothing recorded yet. `%recompiles on` watches the session; then {example}."
            )
        from jaxmagic.files import OutputRefused

        try:
            path = log.save_html(words[0])
        except OutputRefused as exc:
            reason = str(exc).removeprefix(f"{words[0]!r}").lstrip(": ")
            raise UsageError(f"%recompiles save: could not write {words[0]!r}: {reason}.") from None
        except OSError as exc:
            raise UsageError(f"%recompiles save: could not write {words[0]!r}: {exc.strerror or exc}.") from None
        print(f"Wrote {log.summary} to {path}.")
        return log if options.output else None

    def _show_live(self, session: _Session, log: RecompileLog, function: str | None, *, plain: bool) -> None:
        if plain or output.is_terminal(self.shell):
            output.show(self.shell, log.for_functions([function]) if function else log, plain=plain, text=render.text)
            return
        from IPython.display import display

        from jaxmagic.render.panel import RecompilePanel

        panel = RecompilePanel(log, function=function)
        session.panels.append(panel)
        while len(session.panels) > MAX_LIVE_PANELS:
            session.panels.pop(0).close()
        display(panel)
        panel.shown_as(display(panel.copy, display_id=True))

    # -- the cell form -------------------------------------------------------------------------
    def _cell(self, options, line: str, cell: str):
        __tracebackhide__ = True
        names = options.words
        if names and names[0] in SUBCOMMANDS and names[0] not in self.shell.user_ns:
            raise UsageError(
                f"%%recompiles takes function names; `{names[0]}` is a sub-command of the line "
                f"form (%recompiles {names[0]}).\nAccepted:\n{ACCEPTED}"
            )
        _check_names(names, "%%recompiles")
        _check_known(names, cell, self.shell.user_ns)
        log = RecompileLog(
            names,
            include_internal=options.internal,
            max_compiles=options.max,
            explain=options.explain,
            cell_namer=notebook.cell_namer(self.shell),
            scope="this cell",
        )
        value = limit = None
        badge = None if options.plain else _live_badge(self.shell, log)
        log.start()
        try:
            with failures.guarded(self.shell, full_traceback=options.tb, keep_config=False):
                try:
                    value = self._run(line, cell)
                except RecompileLimitExceeded as exceeded:  # raised at the call that went over
                    limit = exceeded
        finally:
            log.stop()
            _show_log(self.shell, log, badge, plain=options.plain)
        over = log.over_limit()
        if limit is None and over:
            limit = log.limit_error(over[0])
        if limit is not None:
            raise limit
        if options.output:
            return echo.returned(self.shell, log, shown=True)
        return value

    def _run(self, line: str, cell: str):
        """Run the cell like a normal cell (its last expression is its value), with line numbers as
        the user sees them: the magic's line is line 1."""
        __tracebackhide__ = True
        shell = self.shell
        filename = notebook.cache_cell(shell, f"%%recompiles {line}".rstrip() + "\n" + cell)
        return cells.run_cell_value(
            shell.transform_cell(cell),
            shell.user_ns,
            filename,
            magic="%%recompiles",
            passthrough=(RecompileLimitExceeded,),
            runner=notebook.loop_runner(shell),
        )


def _live_badge(shell, log):
    """The line under a running ``%%recompiles`` cell, following ``log``: a ``RecompileBadge``
    updated in place in a notebook kernel, a carriage-return line on a terminal; ``None`` elsewhere
    (a plain shell would print every update)."""
    from jaxmagic.magics.status_line import StatusLine
    from jaxmagic.render.panel import RecompileBadge

    if output.is_terminal(shell):
        line = StatusLine(shell)  # shows nothing where stdout is not a terminal
        return RecompileBadge(log, display=lambda bundle: _TerminalLine(line, bundle))
    if type(shell).__name__ == "ZMQInteractiveShell":
        return RecompileBadge(log)
    return None


def _show_log(shell, log, badge, *, plain: bool) -> None:
    """The cell's log: in a notebook, where the live line was (the answer stays under the cell); on
    a terminal, printed once the line is gone."""
    if badge is not None and not output.is_terminal(shell):
        badge.replace(log)
        return
    if badge is not None:
        badge.close()
        badge.handle.close()
    output.show(shell, log, plain=plain, text=render.text)


class _TerminalLine:
    """A terminal's status line as the handle a ``RecompileBadge`` updates; it is removed when the
    badge closes, before the log is printed."""

    def __init__(self, line, bundle: dict):
        self.line = line
        self.update(bundle)

    def update(self, bundle: dict, raw: bool = False) -> None:
        width = shutil.get_terminal_size().columns - 1  # one line: a wrapped one cannot be rewritten
        text = bundle["text/plain"]
        self.line.show(text if len(text) <= width else text[: width - 1] + "…")

    def close(self) -> None:
        self.line.done()


def _check_names(names: list[str], magic: str) -> None:
    for name in names:
        if not _NAME.match(name):
            raise UsageError(
                f"{magic}: `{name}` is not a function name; give names such as `step` or `Model.apply`.\n"
                f"Accepted:\n{ACCEPTED}"
            )


def _check_known(names: list[str], cell: str, namespace: dict) -> None:
    """Each name must be in the user's namespace or defined by the cell itself."""
    if not names:
        return
    defined = _defined_in(cell)
    for name in names:
        root = name.split(".")[0]
        if root in namespace or root in defined or hasattr(builtins, root):
            continue
        known = sorted(
            k
            for k, v in namespace.items()
            if callable(v)
            and not k.startswith("_")
            and not isinstance(v, type)
            and getattr(v, "__module__", "") in ("__main__", None)
        )
        hint = f" Functions in your namespace: {', '.join(known[:12])}." if known else ""
        raise UsageError(f"%%recompiles: there is no function `{name}` in your namespace or in this cell.{hint}")


def _defined_in(cell: str) -> set[str]:
    try:
        tree = ast.parse(cell)
    except SyntaxError:
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
    return names
