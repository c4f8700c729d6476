"""``python -m jaxmagic watch [--html FILE] [--fingerprint FILE] [--max N] [--all] SCRIPT [ARGS...]``:
a script's compilations and their causes.

The script runs as ``python SCRIPT ARGS...`` would run it (``__name__ == "__main__"``, its own
``sys.argv``, its folder first on ``sys.path``). At its end, whether it finished, failed or
called ``sys.exit`` or ``os._exit``, the per-function summary of what compiled, why, and how long
it took is printed to standard error (standard output stays the script's), the script's compile
fingerprint is written with ``--fingerprint`` (what XLA compiled for each jitted function, every
compilation kept: see ``jaxmagic.recompiles.fingerprint``), and the process exits with the
script's own exit code. With ``--html`` the standalone HTML report is rewritten after each
compilation (atomically: a reader never sees half a page), so it is there however the process
ends, even when killed. Both paths are checked before the script starts (a missing folder, a link,
the script itself are refused with exit status 2). Only the process that started the watch
reports: a child the script forks never writes (nor overwrites) its parent's report. An error,
Ctrl-C or a syntax error in the script shows the script's own frames, as ``python SCRIPT`` would.

>>> import argparse
>>> commands = argparse.ArgumentParser().add_subparsers(dest="command")
>>> add_parser(commands).parse_args(["--html", "log.html", "train.py", "--steps", "3"]).script_args
['--steps', '3']
"""

from __future__ import annotations

import argparse
import contextlib
import os
import runpy
import sys
import traceback

from jaxmagic.commands import refuse
from jaxmagic.files import OutputRefused, check_output
from jaxmagic.recompiles.fingerprint import KEEP_EVERY_COMPILATION
from jaxmagic.words.untrusted import safe_text

NAME = "watch"
USAGE = "python -m jaxmagic watch [--html FILE] [--fingerprint FILE] [--max N] [--all] SCRIPT [ARGS...]"
EXAMPLE = "e.g. python -m jaxmagic watch --html compiles.html train.py --steps 100"


def add_parser(commands):
    watch = commands.add_parser(
        NAME,
        prog="python -m jaxmagic watch",
        usage=USAGE,
        epilog=EXAMPLE,
        help="run SCRIPT and report its compilations at exit",
    )
    watch.add_argument("--html", metavar="FILE", help="also write the report as a standalone HTML page")
    watch.add_argument(
        "--fingerprint",
        metavar="FILE",
        help="also write what XLA compiled for each jitted function as JSON, for `python -m jaxmagic diff`",
    )
    watch.add_argument(
        "--max",
        type=int,
        metavar="N",
        default=None,
        help="exit with status 1 when a function compiled more than N times (if the script itself succeeded)",
    )
    watch.add_argument(
        "--all",
        action="store_true",
        dest="internal",
        help="also report JAX's internal compilations (eager primitives, jnp helpers)",
    )
    watch.add_argument("script", metavar="SCRIPT", help="the Python file to run")
    watch.add_argument("script_args", nargs=argparse.REMAINDER, metavar="ARGS", help="the script's own arguments")
    return watch


def check(options, parser) -> None:
    """Usage errors before the script runs: a bad ``--max``, no script, an output path that cannot
    be written (the run would be lost at its end)."""
    if options.max is not None and options.max < 0:
        parser.error(f"--max takes a non-negative whole number of compilations, not {options.max}; {EXAMPLE}")
    if not os.path.isfile(options.script):
        refuse(NAME, f"no script at {options.script!r}: give the path of a Python file; {EXAMPLE}")
    for flag in ("html", "fingerprint"):
        path = getattr(options, flag)
        if path is None:
            continue
        try:
            check_output(path, inputs=[options.script])
        except OutputRefused as exc:
            refuse(NAME, f"--{flag}: {exc}")
    if options.html is not None and options.html == options.fingerprint:
        refuse(NAME, "--html and --fingerprint name the same file: give each its own")


def run(options) -> int:
    """Run the script under the watch; its exit status (or 1 when it went over ``--max``)."""
    from jaxmagic.recompiles.log import DEFAULT_CAPACITY, RecompileLog

    log = RecompileLog(
        include_internal=options.internal,
        scope=os.path.basename(options.script),
        keep_programs=bool(options.fingerprint),
        capacity=KEEP_EVERY_COMPILATION if options.fingerprint else DEFAULT_CAPACITY,
    )
    owner = os.getpid()  # a forked child runs this code too, and must not report
    if options.html:
        log.add_observer(lambda _event: _save_quietly(log, options.html, owner, options.script))
    exit_now = os._exit

    def report_then_exit(code: int) -> None:  # os._exit skips every ``finally``: report first
        if os.getpid() == owner:
            log.stop()
            with contextlib.suppress(BaseException):
                _report(log, options, code if isinstance(code, int) else 1)
            with contextlib.suppress(BaseException):
                sys.stdout.flush()
                sys.stderr.flush()
        exit_now(code)

    os._exit = report_then_exit
    log.start()
    try:
        status = run_script(options.script, options.script_args)
    finally:
        log.stop()
        os._exit = exit_now
    if os.getpid() != owner:
        return status
    return _report(log, options, status)


def run_script(path: str, args: list[str]) -> int:
    """Run ``path`` as the main program; its exit status (1 after an uncaught exception)."""
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [path, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        runpy.run_path(path, run_name="__main__")
        return 0
    except SystemExit as exit_:
        return _exit_status(exit_.code)
    except KeyboardInterrupt:
        _print_script_error(path)
        return 130
    except BaseException:
        _print_script_error(path)
        return 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path


def _print_script_error(path: str) -> None:
    """The exception being handled, as ``python SCRIPT`` shows it: from the script's first frame
    (not runpy's), without jaxmagic's frames; a syntax error in the script with no frame at all."""
    from jaxmagic.tracing.sources import without_jaxmagic_frames

    kind, value, tb = sys.exc_info()
    shown = tb
    while shown is not None and os.path.abspath(shown.tb_frame.f_code.co_filename) != os.path.abspath(path):
        shown = shown.tb_next
    traceback.print_exception(kind, value, without_jaxmagic_frames(shown))


def _exit_status(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # sys.exit("message"): Python prints it and exits with 1
    return 1


def _save_quietly(log, path: str, owner: int, script: str) -> None:
    """Rewrite the HTML report as it stands (in the process that started the watch only; under
    ``jax.distributed``, in this process's own file: JAX's backend is up once anything compiled)."""
    if os.getpid() == owner:
        from jaxmagic.recompiles.processes import per_process_path, this_process

        with contextlib.suppress(OSError, OutputRefused):
            log.save_html(per_process_path(path, *this_process()), inputs=[script])


def _report(log, options: argparse.Namespace, status: int) -> int:
    """Print the summary, write the HTML, say what went over ``--max``; the exit status."""
    from jaxmagic.recompiles.events import RecompileLimitExceeded

    sys.stdout.flush()
    print(log.to_text(color=sys.stderr.isatty()), file=sys.stderr)
    if options.html:  # under jax.distributed each process writes its own file: report.process1.html
        from jaxmagic.recompiles.processes import per_process_path, this_process

        options.html = per_process_path(options.html, *this_process())
    if options.html:
        try:
            log.save_html(options.html, inputs=[options.script])
            print(safe_text(f"jaxmagic: wrote {options.html}"), file=sys.stderr)
        except (OSError, OutputRefused) as exc:
            print(safe_text(f"jaxmagic: could not write {options.html}: {_why(exc)}"), file=sys.stderr)
            status = status or 1
    if options.fingerprint:
        from jaxmagic.recompiles.fingerprint import fingerprint_of
        from jaxmagic.recompiles.processes import for_this_process

        fingerprint = fingerprint_of(log)
        options.fingerprint = for_this_process(fingerprint, options.fingerprint)
        try:
            fingerprint.save(options.fingerprint, inputs=[options.script])
            print(safe_text(f"jaxmagic: wrote {options.fingerprint}"), file=sys.stderr)
        except (OSError, OutputRefused) as exc:
            print(safe_text(f"jaxmagic: could not write {options.fingerprint}: {_why(exc)}"), file=sys.stderr)
            status = status or 1
    limit = options.max
    if limit is not None:
        over = [f for f, n in log.counts.items() if n > limit]
        for function in over:
            events = [e for e in log.events if e.function == function]
            exceeded = RecompileLimitExceeded(function, log.counts[function], limit, events)
            print(safe_text(f"jaxmagic: {exceeded}"), file=sys.stderr)
        if over and status == 0:
            status = 1
    return status


def _why(exc: Exception) -> str:
    return str(exc) if isinstance(exc, OutputRefused) else (getattr(exc, "strerror", None) or str(exc))
