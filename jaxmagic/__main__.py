"""``python -m jaxmagic watch [--html FILE] [--fingerprint FILE] SCRIPT [ARGS...]``: a script's
compilations and their causes; ``python -m jaxmagic diff OLD NEW``: what a change did to them;
``python -m jaxmagic merge FILE...``: where the processes of a ``jax.distributed`` run compiled
differently (under ``jax.distributed`` each process's watch writes ``report.process1.html``...).

The script runs as ``python SCRIPT ARGS...`` would run it (``__name__ == "__main__"``, its own
``sys.argv``, its folder first on ``sys.path``). At its end, whether it finished, failed or
called ``sys.exit`` or ``os._exit``, the per-function summary of what compiled, why, and how long
it took is printed to standard error (standard output stays the script's), the script's compile
fingerprint is written with ``--fingerprint`` (what XLA compiled for each jitted function: see
``jaxmagic.recompiles.fingerprint``), and the process exits with the script's own exit code. With
``--html`` the standalone HTML report is rewritten after each compilation (atomically: a reader
never sees half a page), so it is there however the process ends, even when killed. Only the
process that started the watch reports: a child the script forks never writes (nor overwrites)
its parent's report. An error, Ctrl-C or a syntax error in the script shows the script's own
frames, as ``python SCRIPT`` would. ``diff`` compares two fingerprints function by function and
exits with 1 when a change breaks the budgets (``--budget memory=10%,collectives=forbid,...``).

>>> parse(["watch", "--html", "log.html", "train.py", "--steps", "3"]).script_args
['--steps', '3']
"""

from __future__ import annotations

import argparse
import contextlib
import os
import runpy
import sys
import traceback

USAGE = "python -m jaxmagic watch [--html FILE] [--fingerprint FILE] [--max N] [--all] SCRIPT [ARGS...]"
EXAMPLE = "e.g. python -m jaxmagic watch --html compiles.html train.py --steps 100"
DIFF_USAGE = "python -m jaxmagic diff [--html FILE] [--budget BUDGETS] OLD NEW"
DIFF_EXAMPLE = "e.g. python -m jaxmagic diff --budget memory=10%,collectives=forbid main.json branch.json"
MERGE_USAGE = "python -m jaxmagic merge [--html FILE] FINGERPRINT..."
MERGE_EXAMPLE = "e.g. python -m jaxmagic merge --html processes.html fp.process0.json fp.process1.json"


def parse(argv: list[str]) -> argparse.Namespace:
    """The command line, or a clear message and exit status 2 for anything else."""
    parser = argparse.ArgumentParser(
        prog="python -m jaxmagic",
        usage=USAGE,
        description=(
            "Run a Python script under jaxmagic's recompile watch and report every compilation with its causes."
        ),
        epilog=EXAMPLE,
    )
    commands = parser.add_subparsers(dest="command", metavar="watch | diff | merge | profile")
    watch = commands.add_parser(
        "watch",
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
    diff = commands.add_parser(
        "diff",
        prog="python -m jaxmagic diff",
        usage=DIFF_USAGE,
        epilog=DIFF_EXAMPLE,
        help="compare two fingerprints; exit with 1 when a change breaks the budgets",
    )
    diff.add_argument("old", metavar="OLD", help="the fingerprint to compare with (e.g. the main branch's)")
    diff.add_argument("new", metavar="NEW", help="the fingerprint of the change")
    diff.add_argument("--html", metavar="FILE", help="also write the comparison as a standalone HTML page")
    diff.add_argument(
        "--budget",
        default="",
        metavar="BUDGETS",
        help="what a change may do: memory=PCT (default 10%%), flops=PCT (default any), "
        "collectives=allow|forbid (default forbid), compilations=allow|forbid (default forbid)",
    )
    merge = commands.add_parser(
        "merge",
        prog="python -m jaxmagic merge",
        usage=MERGE_USAGE,
        epilog=MERGE_EXAMPLE,
        help="compare the fingerprints of a multi-process run; exit with 1 when processes compiled differently",
    )
    merge.add_argument("fingerprints", nargs="+", metavar="FINGERPRINT", help="one fingerprint per process")
    merge.add_argument("--html", metavar="FILE", help="also write the comparison as a standalone HTML page")
    options = parser.parse_args(argv)
    if options.command == "merge":
        for path in options.fingerprints:
            if not os.path.isfile(path):
                merge.error(f"no fingerprint at {path!r}: write one per process with `watch --fingerprint FILE`")
        return options
    if options.command == "diff":
        for path in (options.old, options.new):
            if not os.path.isfile(path):
                diff.error(f"no fingerprint at {path!r}: write one with `python -m jaxmagic watch --fingerprint FILE`")
        return options
    if options.command != "watch":
        parser.error(f"say what to do: {USAGE}\n{EXAMPLE}\nor: {DIFF_USAGE}\nor: {MERGE_USAGE}")
    if options.max is not None and options.max < 0:
        watch.error(f"--max takes a non-negative whole number of compilations, not {options.max}; {EXAMPLE}")
    if not os.path.isfile(options.script):
        watch.error(f"no script at {options.script!r}: give the path of a Python file; {EXAMPLE}")
    return options


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


def show_comparison(found, html: str | None) -> int:
    """Print a comparison (``diff`` or ``merge``) to standard output, write its page to ``html``
    if asked; its exit status, or 2 when the page cannot be written."""
    print(found.to_text(color=sys.stdout.isatty()))
    if html:
        try:
            found.save_html(html)
        except OSError as exc:
            print(f"jaxmagic: could not write {html}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    return found.exit_status


def compare_fingerprints(options: argparse.Namespace) -> int:
    """``python -m jaxmagic diff OLD NEW``: the comparison on standard output; 1 when a budget broke,
    2 when a file is not a fingerprint or a budget cannot be read."""
    from jaxmagic.recompiles.fingerprint import Fingerprint
    from jaxmagic.recompiles.fingerprint_diff import Budgets, compare

    try:
        budgets = Budgets.parse(options.budget)
        old, new = Fingerprint.load(options.old), Fingerprint.load(options.new)
    except (ValueError, KeyError, TypeError, OSError) as exc:
        print(f"python -m jaxmagic diff: {exc}; {DIFF_EXAMPLE}", file=sys.stderr)
        return 2
    found = compare(old, new, budgets)
    return show_comparison(found, options.html)


def merge_fingerprints(options: argparse.Namespace) -> int:
    """``python -m jaxmagic merge FILE...``: where the processes compiled differently, on standard
    output; 1 when they did, 2 when a file is not a fingerprint."""
    from jaxmagic.recompiles.fingerprint import Fingerprint
    from jaxmagic.recompiles.processes import compare_processes, process_name

    try:
        loaded = [(path, Fingerprint.load(path)) for path in options.fingerprints]
    except (ValueError, KeyError, TypeError, OSError) as exc:
        print(f"python -m jaxmagic merge: {exc}; {MERGE_EXAMPLE}", file=sys.stderr)
        return 2
    found = compare_processes({process_name(print_, path): print_ for path, print_ in loaded})
    return show_comparison(found, options.html)


def main(argv: list[str] | None = None) -> int:
    """``python -m jaxmagic watch ...``, ``diff ...`` or ``merge ...``; returns the exit status."""
    arguments = sys.argv[1:] if argv is None else argv
    if arguments[:1] == ["profile"]:  # its own command line: jaxmagic/profile_command.py
        from jaxmagic.profile_command import main as profile

        return profile(arguments[1:])
    options = parse(arguments)
    if options.command == "diff":
        return compare_fingerprints(options)
    if options.command == "merge":
        return merge_fingerprints(options)
    from jaxmagic.recompiles.log import RecompileLog

    log = RecompileLog(
        include_internal=options.internal,
        scope=os.path.basename(options.script),
        keep_programs=bool(options.fingerprint),
    )
    owner = os.getpid()  # a forked child runs this code too, and must not report
    if options.html:
        log.add_observer(lambda _event: _save_quietly(log, options.html, owner))
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


def _save_quietly(log, path: str, owner: int) -> None:
    """Rewrite the HTML report as it stands (in the process that started the watch only; under
    ``jax.distributed``, in this process's own file: JAX's backend is up once anything compiled)."""
    if os.getpid() == owner:
        from jaxmagic.recompiles.processes import per_process_path, this_process

        with contextlib.suppress(OSError):
            log.save_html(per_process_path(path, *this_process()))


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
            log.save_html(options.html)
            print(f"jaxmagic: wrote {options.html}", file=sys.stderr)
        except OSError as exc:
            print(f"jaxmagic: could not write {options.html}: {exc.strerror or exc}", file=sys.stderr)
            status = status or 1
    if options.fingerprint:
        from jaxmagic.recompiles.fingerprint import fingerprint_of
        from jaxmagic.recompiles.processes import for_this_process

        fingerprint = fingerprint_of(log)
        options.fingerprint = for_this_process(fingerprint, options.fingerprint)
        try:
            fingerprint.save(options.fingerprint)
            print(f"jaxmagic: wrote {options.fingerprint}", file=sys.stderr)
        except OSError as exc:
            print(f"jaxmagic: could not write {options.fingerprint}: {exc.strerror or exc}", file=sys.stderr)
            status = status or 1
    limit = options.max
    if limit is not None:
        over = [f for f, n in log.counts.items() if n > limit]
        for function in over:
            events = [e for e in log.events if e.function == function]
            print(f"jaxmagic: {RecompileLimitExceeded(function, log.counts[function], limit, events)}", file=sys.stderr)
        if over and status == 0:
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
