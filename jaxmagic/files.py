"""Every file jaxmagic writes, written one way: checked before the work starts, then written whole.

``check_output`` refuses, in one line, a path that cannot end well: an empty one, a folder, a
folder that does not exist or cannot be written, a symbolic link (jaxmagic never writes through
a link: where it points was not the user's choice here), or one of the command's own inputs
(``--html OLD.json``, ``watch --fingerprint SCRIPT.py``). ``write_atomically`` writes a
temporary file in the target's folder and renames it into place: a reader, a full disk or a kill
never leaves half a file, and a link planted at the path is replaced, never followed.

>>> import os, tempfile
>>> folder = tempfile.mkdtemp()
>>> path = write_atomically(os.path.join(folder, "out.json"), "{}\\n")
>>> open(path).read()
'{}\\n'
>>> check_output("")
Traceback (most recent call last):
...
jaxmagic.files.OutputRefused: an empty path: name the file to write
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import Iterable

from jaxmagic.words.untrusted import shown_name


class OutputRefused(ValueError):
    """A path jaxmagic will not write to; its message is one line that says why."""


def _same_file(path: str, other: str) -> bool:
    try:
        return os.path.samefile(path, other)
    except OSError:
        return os.path.realpath(path) == os.path.realpath(other)


def check_output(path: os.PathLike | str | None, *, inputs: Iterable[os.PathLike | str] = ()) -> str:
    """``path`` as a file jaxmagic may write (absolute), or ``OutputRefused`` saying why not.

    >>> check_output("/no/such/folder/out.html")
    Traceback (most recent call last):
    ...
    jaxmagic.files.OutputRefused: '/no/such/folder/out.html': the folder '/no/such/folder' does not exist
    """
    text = os.fspath(path) if path is not None else ""
    if not text.strip():
        raise OutputRefused("an empty path: name the file to write")
    shown = repr(shown_name(text))
    absolute = os.path.abspath(text)
    folder = os.path.dirname(absolute)
    if os.path.islink(text):
        raise OutputRefused(
            f"{shown} is a symbolic link: jaxmagic does not write through links; give the file's own path"
        )
    if os.path.isdir(text):
        raise OutputRefused(f"{shown} is a folder: name a file in it")
    if not os.path.isdir(folder):
        raise OutputRefused(f"{shown}: the folder {shown_name(folder)!r} does not exist")
    for source in inputs:  # before the folder's permissions: on a read-only input this is the reason
        if os.path.exists(text) and _same_file(text, os.fspath(source)):
            raise OutputRefused(f"{shown} is also an input of this command: write to another file")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputRefused(f"{shown}: the folder {shown_name(folder)!r} cannot be written")
    return absolute


def write_atomically(path: os.PathLike | str, content: str, *, inputs: Iterable[os.PathLike | str] = ()) -> str:
    """Write ``content`` (UTF-8; a lone surrogate written escaped) to ``path`` whole: checked with
    ``check_output``, written to a temporary file in the same folder, then renamed into place.
    The file gets the permissions a new file gets (the umask's); returns the path written."""
    target = check_output(path, inputs=inputs)
    folder, name = os.path.split(target)
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{name[:64]}.", suffix=".partial")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", errors="backslashreplace") as out:
            out.write(content)
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return os.fspath(path)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
