"""``python -m jaxmagic profile TRACE [--json] [--html FILE] [--peaks FLOPS,BYTES]``: the device time
of each source line from a trace ``jax.profiler.trace`` wrote (a folder, or one ``.xplane.pb``), from a
notebook, a training script or a pod, without running anything again and without importing JAX.

Text (the default) and ``--html`` show the same view as ``%jaxpr --profile``; ``--json`` prints
``{"total_device_s": float, "lines": [{"file": str, "line": int, "device_s": float}, ...]}``,
``file`` the source file's name, hottest first, totals over the trace. Bad input is one line on
standard error and exit status 2.

>>> import argparse
>>> commands = argparse.ArgumentParser().add_subparsers(dest="command")
>>> add_parser(commands).parse_args(["trace", "--json", "--peaks", "197e12,819e9"]).peaks
'197e12,819e9'
"""

from __future__ import annotations

import json
import os

from jaxmagic.commands import plain_output, refuse, say_error

NAME = "profile"
USAGE = "python -m jaxmagic profile TRACE [--json] [--html FILE] [--peaks FLOPS,BYTES]"
EXAMPLE = "e.g. python -m jaxmagic profile /tmp/trace --html profile.html"


def add_parser(commands):
    parser = commands.add_parser(
        NAME,
        prog="python -m jaxmagic profile",
        usage=USAGE,
        epilog=EXAMPLE,
        help="device time per source line from a trace jax.profiler.trace wrote, without running anything again",
    )
    parser.add_argument("trace", metavar="TRACE", help="a folder jax.profiler.trace wrote, or one .xplane.pb file")
    parser.add_argument("--json", action="store_true", help="print the lines as JSON instead of the table")
    parser.add_argument("--html", metavar="FILE", help="also write the view as a standalone HTML page")
    parser.add_argument(
        "--peaks",
        metavar="FLOPS,BYTES",
        help="the chip's peak FLOP/s and bytes/s of main memory (e.g. 197e12,819e9), over the trace's and the table's",
    )
    return parser


def check(options, parser) -> None:
    if not os.path.exists(options.trace):
        refuse(NAME, f"no trace at {options.trace!r}: give a folder jax.profiler.trace wrote or an .xplane.pb file")
    if options.html is not None:
        from jaxmagic.files import OutputRefused, check_output

        try:
            check_output(options.html, inputs=[options.trace] if os.path.isfile(options.trace) else [])
        except OutputRefused as exc:
            refuse(NAME, f"--html: {exc}")


def as_json(profile) -> str:
    """The lines as ``--json`` prints them, hottest first (time on no source line left out of
    ``lines``, counted in ``total_device_s``)."""
    lines = [
        {"file": os.path.basename(profile.places[label][0]), "line": profile.places[label][1], "device_s": seconds}
        for label, seconds in profile.line_times.items()
        if label in profile.places
    ]
    return json.dumps({"total_device_s": profile.device_seconds, "lines": lines}, indent=1)


def run(options) -> int:
    """The per-line view (or its JSON) on standard output; its exit status."""
    import sys

    from jaxmagic.compiled import roofline, trace_profile, xspace
    from jaxmagic.words import profile as words

    plain_output()
    try:
        peaks = roofline.parse_peaks(options.peaks) if options.peaks else None
        found = trace_profile.read_trace(options.trace, peaks)
    except trace_profile.NoTrace:
        return say_error(
            NAME,
            f"no trace at {options.trace!r} (no .xplane.pb file in it): give a folder jax.profiler.trace wrote; {EXAMPLE}",
        )
    except xspace.NotATrace as exc:
        return say_error(NAME, f"{options.trace!r} is not a profiler trace ({exc}); {EXAMPLE}")
    except (ValueError, OSError) as exc:
        return say_error(NAME, f"{exc}; {EXAMPLE}")
    if not found.profile.kernels:
        return say_error(NAME, words.no_kernels(options.trace))
    if options.json:
        print(as_json(found.profile))
        if found.programs_without_hlo:
            print(words.no_hlo(found.programs_without_hlo), file=sys.stderr)
    else:
        print(found.to_text(color=sys.stdout.isatty()))
    if options.html:
        from jaxmagic.files import write_atomically

        try:
            write_atomically(options.html, found.to_page(), inputs=found.files)
        except (OSError, ValueError) as exc:
            return say_error(NAME, f"could not write {options.html}: {exc}")
    return 0
