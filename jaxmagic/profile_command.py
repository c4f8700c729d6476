"""``python -m jaxmagic profile TRACE [--json] [--html FILE] [--peaks FLOPS,BYTES]``: the device time
of each source line from a trace ``jax.profiler.trace`` wrote (a folder, or one ``.xplane.pb``), from a
notebook, a training script or a pod, without running anything again and without importing JAX.

Text (the default) and ``--html`` show the same view as ``%jaxpr --profile``; ``--json`` prints
``{"total_device_s": float, "lines": [{"file": str, "line": int, "device_s": float}, ...]}``,
``file`` the source file's name, hottest first, totals over the trace. Bad input is one line on
standard error and exit status 2.

>>> import os, contextlib, io
>>> out = io.StringIO()
>>> with contextlib.redirect_stdout(out):
...     status = main([os.path.join("tests", "fixtures", "tpu", "mlp.xplane.pb"), "--json"])
>>> import json
>>> found = json.loads(out.getvalue())
>>> status, found["lines"][0]["file"], found["lines"][0]["line"]
(0, 'models.py', 16)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

USAGE = "python -m jaxmagic profile TRACE [--json] [--html FILE] [--peaks FLOPS,BYTES]"
EXAMPLE = "e.g. python -m jaxmagic profile /tmp/trace --html profile.html"


def parse(argv: list[str]) -> argparse.Namespace:
    """The command line; a clear message and exit status 2 for anything else."""
    parser = argparse.ArgumentParser(
        prog="python -m jaxmagic profile",
        usage=USAGE,
        description="Device time per source line from a trace jax.profiler.trace wrote, without running anything again.",
        epilog=EXAMPLE,
    )
    parser.add_argument("trace", metavar="TRACE", help="a folder jax.profiler.trace wrote, or one .xplane.pb file")
    parser.add_argument("--json", action="store_true", help="print the lines as JSON instead of the table")
    parser.add_argument("--html", metavar="FILE", help="also write the view as a standalone HTML page")
    parser.add_argument(
        "--peaks",
        metavar="FLOPS,BYTES",
        help="the chip's peak FLOP/s and bytes/s of main memory (e.g. 197e12,819e9), over the trace's and the table's",
    )
    return parser.parse_args(argv)


def _fail(message: str) -> int:
    """One line on standard error, control characters (from a path) shown escaped; exit status 2."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in " ".join(message.split(" ")))
    print(f"python -m jaxmagic profile: {text}", file=sys.stderr)
    return 2


def as_json(profile) -> str:
    """The lines as ``--json`` prints them, hottest first (time on no source line left out of
    ``lines``, in ``total_device_s``)."""
    lines = [
        {"file": os.path.basename(profile.places[label][0]), "line": profile.places[label][1], "device_s": seconds}
        for label, seconds in profile.line_times.items()
        if label in profile.places
    ]
    return json.dumps({"total_device_s": profile.device_seconds, "lines": lines}, indent=1)


def write_page(page: str, path: str, inputs: list[str]) -> None:
    """Write ``page`` to ``path`` whole (a temporary file beside it, then renamed); never over one
    of the trace files read."""
    target = os.path.realpath(path)
    if any(os.path.realpath(i) == target for i in inputs):
        raise OSError(f"{path} is the trace being read")
    folder = os.path.dirname(os.path.abspath(path)) or "."
    handle, partial = tempfile.mkstemp(prefix=".jaxmagic-", suffix=".partial", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(page)
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def main(argv: list[str]) -> int:
    """Run the command; its exit status."""
    options = parse(argv)
    from jaxmagic.compiled import roofline, trace_profile, xspace
    from jaxmagic.words import profile as words

    try:
        peaks = roofline.parse_peaks(options.peaks) if options.peaks else None
        found = trace_profile.read_trace(options.trace, peaks)
    except trace_profile.NoTrace:
        return _fail(
            f"no trace at {options.trace!r}: give a folder jax.profiler.trace wrote or an .xplane.pb file; {EXAMPLE}"
        )
    except xspace.NotATrace as exc:
        return _fail(f"{options.trace!r} is not a profiler trace ({exc}); {EXAMPLE}")
    except (ValueError, OSError) as exc:
        return _fail(f"{exc}; {EXAMPLE}")
    profile = found.profile
    if not profile.kernels:
        return _fail(words.no_kernels(options.trace))
    if options.json:
        print(as_json(profile))
        if found.programs_without_hlo:
            print(words.no_hlo(found.programs_without_hlo), file=sys.stderr)
    else:
        print(found.to_text(color=sys.stdout.isatty()))
    if options.html:
        try:
            write_page(found.to_page(), options.html, list(found.files))
        except OSError as exc:
            return _fail(f"could not write {options.html}: {exc.strerror or exc}")
    return 0
