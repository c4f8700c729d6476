"""``python -m jaxmagic COMMAND``: one module per command, each with the same four names.

``NAME`` (the word on the command line), ``add_parser(commands)`` (its arguments, on the
``argparse`` sub-parsers given), ``check(options, parser)`` (what argparse cannot check, as a
usage error: exit status 2, before any work starts) and ``run(options) -> int`` (its exit
status). ``jaxmagic.__main__`` lists the commands; a new one is a module here and a name there.
A command module imports nothing heavy at its top: ``diff`` and ``merge`` read JSON only and never
import JAX.

>>> import argparse
>>> parser = Parser(prog="demo")
>>> parser.error("no file at '\\x1b[2J'")
Traceback (most recent call last):
...
SystemExit: 2
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from jaxmagic.words.untrusted import safe_text


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage, help and errors reach the terminal safely: what the
    user typed (a file name) is shown with its control characters escaped."""

    def _print_message(self, message, file=None):
        if message:
            (file or sys.stderr).write(safe_text(message))


def say_error(command: str, message: str) -> int:
    """Print one line, ``python -m jaxmagic COMMAND: message``, to standard error; exit status 2."""
    print(safe_text(f"python -m jaxmagic {command}: {message}".replace("\n", " ")), file=sys.stderr)
    return 2


def refuse(command: str, message: str) -> NoReturn:
    """A usage error found before any work starts (a file missing, an output that cannot be
    written): one line on standard error, exit status 2."""
    raise SystemExit(say_error(command, message))


def plain_output() -> None:
    """Standard output and error that never fail on a character they cannot encode (a name with
    a character outside the terminal's encoding is shown escaped, not a traceback)."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
