"""``python -m jaxmagic diff [--html FILE] [--budget BUDGETS] OLD NEW``: what a change did to what
XLA compiles, function by function; exit status 0 within the budgets, 1 when a change breaks
one, 2 when a file is not a fingerprint or a budget cannot be read. Reads JSON only.

>>> import argparse
>>> commands = argparse.ArgumentParser().add_subparsers(dest="command")
>>> add_parser(commands).parse_args(["--budget", "memory=5%", "a.json", "b.json"]).budget
'memory=5%'
"""

from __future__ import annotations

import os

from jaxmagic.commands import plain_output, refuse, say_error
from jaxmagic.commands.comparisons import check_html, load_all, show

NAME = "diff"
USAGE = "python -m jaxmagic diff [--html FILE] [--budget BUDGETS] OLD NEW"
EXAMPLE = "e.g. python -m jaxmagic diff --budget memory=10%,collectives=forbid main.json branch.json"


def add_parser(commands):
    parser = commands.add_parser(
        NAME,
        prog="python -m jaxmagic diff",
        usage=USAGE,
        epilog=EXAMPLE,
        help="compare two fingerprints; exit with 1 when a change breaks the budgets",
    )
    parser.add_argument("old", metavar="OLD", help="the fingerprint to compare with (e.g. the main branch's)")
    parser.add_argument("new", metavar="NEW", help="the fingerprint of the change")
    parser.add_argument("--html", metavar="FILE", help="also write the comparison as a standalone HTML page")
    parser.add_argument(
        "--budget",
        default="",
        metavar="BUDGETS",
        help="what a change may do: memory=PCT (default 10%%), flops=PCT (default any), "
        "collectives=allow|forbid (default forbid), compilations=allow|forbid (default forbid)",
    )
    return parser


def check(options, parser) -> None:
    for path in (options.old, options.new):
        if not os.path.isfile(path):
            refuse(NAME, f"no fingerprint at {path!r}: write one with `python -m jaxmagic watch --fingerprint FILE`")
    check_html(NAME, options.html, [options.old, options.new])


def run(options) -> int:
    """The comparison on standard output; its exit status."""
    from jaxmagic.recompiles.fingerprint_diff import Budgets, compare

    plain_output()
    try:
        budgets = Budgets.parse(options.budget)
    except ValueError as exc:
        return say_error(NAME, f"--budget: {exc}")
    loaded = load_all(NAME, [options.old, options.new])
    if loaded is None:
        return 2
    old, new = loaded
    return show(NAME, compare(old, new, budgets), options.html, [options.old, options.new])
