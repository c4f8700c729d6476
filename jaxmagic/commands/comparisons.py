"""What ``diff`` and ``merge`` share: reading fingerprints (one line and exit status 2 for a file
that is not one) and showing a comparison, its page written only where the run was checked to
be able to write it.

>>> load_all("diff", ["/no/such/fp.json"]) is None
True
"""

from __future__ import annotations

import sys

from jaxmagic.commands import refuse, say_error
from jaxmagic.files import OutputRefused


def load_all(command: str, paths: list[str]):
    """The fingerprints at ``paths``, in order; ``None`` after printing why one cannot be read."""
    from jaxmagic.recompiles.fingerprint import Fingerprint
    from jaxmagic.recompiles.fingerprint_schema import FingerprintError

    try:
        return [Fingerprint.load(path) for path in paths]
    except FingerprintError as exc:
        say_error(command, f"{exc}; write a fingerprint with `python -m jaxmagic watch --fingerprint FILE`")
        return None


def show(command: str, found, html: str | None, inputs: list[str]) -> int:
    """Print a comparison (``diff`` or ``merge``) to standard output and write its page to ``html``
    if asked; its exit status, or 2 when the page cannot be written."""
    print(found.to_text(color=sys.stdout.isatty()))
    if html is not None:
        try:
            found.save_html(html, inputs=inputs)
        except OutputRefused as exc:
            return say_error(command, f"--html: {exc}")
        except OSError as exc:
            return say_error(command, f"could not write {html!r}: {exc.strerror or exc}")
    return found.exit_status


def check_html(command: str, html: str | None, inputs: list[str]) -> None:
    """A usage error, before reading anything, for an ``--html`` path that cannot be written."""
    if html is None:
        return
    from jaxmagic.files import check_output

    try:
        check_output(html, inputs=inputs)
    except OutputRefused as exc:
        refuse(command, f"--html: {exc}")
