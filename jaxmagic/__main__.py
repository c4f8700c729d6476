"""``python -m jaxmagic watch [--html FILE] [--fingerprint FILE] SCRIPT [ARGS...]``: a script's
compilations and their causes; ``python -m jaxmagic diff OLD NEW``: what a change did to them;
``python -m jaxmagic merge FILE...``: where the processes of a ``jax.distributed`` run compiled
differently (under ``jax.distributed`` each process's watch writes ``report.process1.html``...).

Each command is a module of ``jaxmagic.commands`` (its arguments, its checks, its run); this
file lists them and hands the command line to the one named. Usage errors, and files that are not
what a command reads, exit with status 2 and one clear line, before any work starts.

>>> parse(["watch", "--html", "log.html", "train.py", "--steps", "3"]).script_args
['--steps', '3']
"""

from __future__ import annotations

import argparse
import importlib
import sys

from jaxmagic.commands import Parser

COMMANDS = ("watch", "diff", "merge", "profile")  # each a module of jaxmagic.commands


def _command(name: str):
    return importlib.import_module(f"jaxmagic.commands.{name}")


def parse(argv: list[str]) -> argparse.Namespace:
    """The command line, or a clear message and exit status 2 for anything else."""
    modules = {name: _command(name) for name in COMMANDS}
    usages = "\nor: ".join(module.USAGE for module in modules.values())
    parser = Parser(
        prog="python -m jaxmagic",
        usage=modules["watch"].USAGE,
        description="Watch what JAX compiles in a script, compare compile fingerprints, read a trace per source line.",
        epilog=modules["watch"].EXAMPLE,
    )
    commands = parser.add_subparsers(dest="command", metavar=" | ".join(COMMANDS), parser_class=Parser)
    parsers = {name: module.add_parser(commands) for name, module in modules.items()}
    options = parser.parse_args(argv)
    if options.command not in modules:
        parser.error(f"say what to do: {usages}\n{modules['watch'].EXAMPLE}")
    modules[options.command].check(options, parsers[options.command])
    return options


def main(argv: list[str] | None = None) -> int:
    """``python -m jaxmagic COMMAND ...``; returns the exit status."""
    options = parse(sys.argv[1:] if argv is None else argv)
    return _command(options.command).run(options)


if __name__ == "__main__":
    sys.exit(main())
