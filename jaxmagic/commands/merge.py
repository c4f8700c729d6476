"""``python -m jaxmagic merge [--html FILE] FINGERPRINT...``: where the processes of a
multi-process run (``jax.distributed``) compiled differently; exit status 1 when they did, 2 when
a file is not a fingerprint. Each file is one process, told apart by its file (what it says of
its process is shown beside). Reads JSON only.

>>> import argparse
>>> commands = argparse.ArgumentParser().add_subparsers(dest="command")
>>> add_parser(commands).parse_args(["a.json", "b.json"]).fingerprints
['a.json', 'b.json']
"""

from __future__ import annotations

import os

from jaxmagic.commands import plain_output, refuse
from jaxmagic.commands.comparisons import check_html, load_all, show

NAME = "merge"
USAGE = "python -m jaxmagic merge [--html FILE] FINGERPRINT..."
EXAMPLE = "e.g. python -m jaxmagic merge --html processes.html fp.process0.json fp.process1.json"


def add_parser(commands):
    parser = commands.add_parser(
        NAME,
        prog="python -m jaxmagic merge",
        usage=USAGE,
        epilog=EXAMPLE,
        help="compare the fingerprints of a multi-process run; exit with 1 when processes compiled differently",
    )
    parser.add_argument("fingerprints", nargs="+", metavar="FINGERPRINT", help="one fingerprint per process")
    parser.add_argument("--html", metavar="FILE", help="also write the comparison as a standalone HTML page")
    return parser


def check(options, parser) -> None:
    for path in options.fingerprints:
        if not os.path.isfile(path):
            refuse(NAME, f"no fingerprint at {path!r}: write one per process with `watch --fingerprint FILE`")
    check_html(NAME, options.html, options.fingerprints)


def run(options) -> int:
    """Where the processes compiled differently, on standard output; the exit status."""
    from jaxmagic.recompiles.processes import compare_files

    plain_output()
    loaded = load_all(NAME, options.fingerprints)
    if loaded is None:
        return 2
    found = compare_files(list(zip(options.fingerprints, loaded, strict=True)))
    return show(NAME, found, options.html, options.fingerprints)
