"""Which line of the user's code made a piece of JAX's work, named the way the user knows it.

In a notebook a cell's file is named by its prompt (``In [4] line 3``); elsewhere by the file's
name (``model.py:12``). The IPython layer tells the engines how to name cells through a
``CellNamer``: a function from a code object's filename to ``"In [4]"`` (or ``None``).

>>> loc = SourceLine(file="/src/model.py", line=12, function="step", text="y = x * 2")
>>> loc.label
'model.py:12'
>>> SourceLine(file="cell-4", line=3, function="f", text="y = x * 2", cell="In [4]").label
'In [4] line 3'
"""

from __future__ import annotations

import functools
import linecache
import os
import sys
import types
from dataclasses import dataclass
from typing import Callable, Iterable, Optional, Sequence

from jaxmagic import _jax_private

CellNamer = Callable[[str], Optional[str]]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
_LIBRARY_DIRS = tuple(
    {os.path.normpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix) if p}
    | {os.path.normpath(p) for p in sys.path if p.endswith(("site-packages", "dist-packages"))}
)


@dataclass(frozen=True)
class SourceLine:
    """One line of the user's code: where it is, and what it says."""

    file: str
    line: int
    function: str
    text: str
    cell: str | None = None  # "In [4]" when the file is a notebook cell

    @property
    def label(self) -> str:
        """``In [4] line 3`` for a notebook cell, ``file.py:12`` for a file."""
        if self.cell:
            return f"{self.cell} line {self.line}"
        return f"{os.path.basename(self.file)}:{self.line}"

    def __str__(self) -> str:
        return f"{self.label}: {self.text}" if self.text else self.label


def no_cells(filename: str) -> None:
    """The ``CellNamer`` for plain Python: no file is a notebook cell."""
    return None


@functools.lru_cache(maxsize=1024)
def is_jaxmagic_file(filename: str) -> bool:
    """True for jaxmagic's own source files (never shown as the user's line): files inside the
    package's directory, symbolic links resolved, wherever that directory is and whatever it is
    called."""
    return os.path.realpath(filename).startswith(_PACKAGE_DIR + os.sep)


def without_jaxmagic_frames(tb: types.TracebackType | None, *, jax_too: bool = False) -> types.TracebackType | None:
    """The traceback without jaxmagic's own frames: what remains is the user's code (and JAX's,
    unless ``jax_too``: where JAX's own filtering did not run, as for Ctrl-C).

    >>> without_jaxmagic_frames(None) is None
    True
    """
    frames = []
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if not is_jaxmagic_file(filename) and not (jax_too and _jax_private.is_jax_internal_file(filename)):
            frames.append((tb.tb_frame, tb.tb_lasti, tb.tb_lineno))
        tb = tb.tb_next
    trimmed = None
    for frame, lasti, lineno in reversed(frames):
        trimmed = types.TracebackType(trimmed, frame, lasti, lineno)
    return trimmed


def is_library_file(filename: str) -> bool:
    """True for installed packages and the standard library (code the user did not write),
    frozen standard modules (``<frozen runpy>``) included."""
    if filename.startswith("<frozen "):
        return True
    path = os.path.normpath(os.path.abspath(filename))
    return any(path.startswith(d + os.sep) for d in _LIBRARY_DIRS)


_JAX_OR_JAXMAGIC, _LIBRARY, _USER = 0, 1, 2


@functools.lru_cache(maxsize=4096)
def _file_kind(filename: str) -> int:
    # Cached: a large jaxpr asks about the same few files tens of thousands of times.
    if is_jaxmagic_file(filename) or _jax_private.is_jax_internal_file(filename):
        return _JAX_OR_JAXMAGIC
    return _LIBRARY if is_library_file(filename) else _USER


def is_users_code(code: types.CodeType, module_name: str | None) -> bool:
    """Whether ``code`` (run with the globals of the module ``module_name``) is the user's own: not
    JAX's, jaxmagic's, an installed package's nor the standard library's. Code made at run time (a
    file name in angle brackets: a dataclass's ``__init__``) is its module's, and no module's is
    not the user's (a namedtuple's ``__new__``); a notebook cell's, whose module has no file, and
    a docstring's example (``<doctest ...>``) are the user's.

    >>> import dataclasses
    >>> is_users_code(is_users_code.__code__, __name__)
    False
    >>> import types
    >>> sys.modules["a_notebook"] = types.ModuleType("a_notebook")  # as IPython's ``__main__``: no file
    >>> cell = compile("x = 1", "<ipython-input-3-1f2e>", "exec")
    >>> is_users_code(cell, "a_notebook"), is_users_code(cell, "no_such_module")
    (True, False)
    >>> del sys.modules["a_notebook"]
    >>> made = dataclasses.make_dataclass("Point", ["x"], namespace={"__module__": "jax"}).__init__
    >>> made.__code__.co_filename, is_users_code(made.__code__, "jax")
    ('<string>', False)
    """
    filename = code.co_filename
    if filename.startswith("<") and not filename.startswith(("<frozen ", "<doctest ")):
        module = sys.modules.get(module_name or "")
        if module is None:  # made with globals of no module's: a namedtuple's ``__new__``
            return False
        filename = getattr(module, "__file__", None) or filename
    return _file_kind(filename) == _USER


def pick_user_frame(frames: Iterable[tuple[str, int, str]], *, or_library: bool = True) -> tuple[str, int, str] | None:
    """The innermost frame in the user's own code, from frames listed innermost first.

    Frames of JAX and of jaxmagic are never the user's. A frame in the user's own files or
    notebook cells wins over one in another installed library (e.g. a flax layer), which is
    the fallback unless ``or_library=False``: a label shown as the user's line is never a
    library's (where no frame is the user's, there is no line to show).

    >>> import jax, numpy
    >>> pick_user_frame([(jax.__file__, 1, "jit"), ("/home/me/model.py", 12, "step")])
    ('/home/me/model.py', 12, 'step')
    >>> pick_user_frame([(numpy.__file__, 54, "_wrapfunc")], or_library=False) is None
    True
    """
    fallback = None
    for file, line, function in frames:
        kind = _file_kind(file)
        if kind == _USER:
            return file, line, function
        if kind == _LIBRARY and fallback is None and or_library:
            fallback = (file, line, function)
    return fallback


def source_line(file: str, line: int, function: str, cell_namer: CellNamer = no_cells) -> SourceLine:
    """A ``SourceLine`` for ``file:line``, with the line's text where Python's linecache has it, as
    the file is now (a module edited and reloaded shows its new lines, not those linecache kept)."""
    linecache.checkcache(file)  # one stat; a notebook cell's lines, which have no file, are kept
    return SourceLine(
        file=file,
        line=line,
        function=function,
        text=linecache.getline(file, line).strip(),
        cell=cell_namer(file),
    )


def inside_traced_call(frames: Iterable[tuple[str, int, str]]) -> list[tuple[str, int, str]]:
    """The frames (innermost first) of the code a traced call ran, up to the first of jaxmagic's:
    from there on is what called the traced code, a magic and whoever ran it (the cell holding
    ``%jaxpr``), never the line an equation came from.

    >>> inside_traced_call([("/home/me/model.py", 3, "f"), (__file__, 9, "trace"), ("/home/me/nb.py", 1, "<module>")])
    [('/home/me/model.py', 3, 'f')]
    """
    inside = []
    for frame in frames:
        if is_jaxmagic_file(frame[0]):
            break
        inside.append(frame)
    return inside


def traced_user_frame(frames: Iterable[tuple[str, int, str]]) -> tuple[str, int, str] | None:
    """The frame of the user's own code behind a piece of traced work (an equation, an HLO
    instruction), from its frames innermost first: never JAX's, a library's or jaxmagic's, nor the
    code that called the magic; ``None`` where there is none.

    >>> import numpy
    >>> traced_user_frame([(numpy.__file__, 54, "_wrapfunc"), ("/home/me/model.py", 3, "f")])
    ('/home/me/model.py', 3, 'f')
    >>> traced_user_frame([(numpy.__file__, 54, "_wrapfunc"), (__file__, 9, "trace"), ("/home/me/nb.py", 1, "<module>")])
    """
    return pick_user_frame(inside_traced_call(frames), or_library=False)


_INSTALLED = ("/site-packages/", "/dist-packages/", "/lib/python3")  # packages, and the standard library


def recorded_user_frame(frames: Iterable[tuple[str, int, str]]) -> tuple[str, int, str] | None:
    """The user's frame among the frames a trace recorded for an instruction, innermost first,
    wherever the trace was made: JAX records none of its own, so the first that is neither an
    installed package's nor the standard library's (by its path: ``site-packages``,
    ``dist-packages``, ``lib/python3.x``) nor jaxmagic's; ``None`` where there is none. Reads paths only: no JAX.

    >>> recorded_user_frame([("/venv/lib/python3.11/site-packages/flax/linen/linear.py", 9, "__call__"),
    ...                      ("/home/me/train.py", 12, "loss")])
    ('/home/me/train.py', 12, 'loss')
    """
    for file, line, function in frames:
        path = file.replace("\\", "/")
        if file.startswith("<frozen ") or any(part in path for part in _INSTALLED) or is_jaxmagic_file(file):
            continue
        return file, line, function
    return None


def outermost_frame() -> tuple[str, str]:
    """``(file, function)`` of the outermost frame of the running thread: where every complete
    traceback recorded in it ends (a script's ``<module>``, ``runpy``'s entry, a thread's start).

    >>> outermost_frame()[1] != ""
    True
    """
    frame = sys._getframe()
    while frame.f_back is not None:
        frame = frame.f_back
    return frame.f_code.co_filename, frame.f_code.co_name


def reaches_outermost_frame(frames: Sequence[tuple[str, int, str]]) -> bool:
    """Whether frames (innermost first) go all the way out to the thread's outermost frame. JAX
    0.8 records every frame of the code that traced an equation; JAX 0.10 stops where its C++ code
    called back into Python (at the traced function), so the line that called a nested trace is
    not among a nested equation's frames.

    >>> reaches_outermost_frame([("/home/me/model.py", 3, "f"), (*outermost_frame()[:1], 1, outermost_frame()[1])])
    True
    >>> reaches_outermost_frame([("/home/me/model.py", 3, "f")])
    False
    """
    return bool(frames) and (frames[-1][0], frames[-1][2]) == outermost_frame()


def user_traceback(source_info, cell_namer: CellNamer = no_cells) -> tuple[SourceLine, ...]:
    """The call chain that made a JAX equation, outermost first: from the outermost frame of the
    user's own code inwards, leaving out JAX's and jaxmagic's frames (the libraries the user's code
    called stay; whatever called the user's code — jaxmagic's magic, IPython, a test runner —
    does not)."""
    outermost_first = inside_traced_call(_jax_private.traceback_frames(source_info))[::-1]
    start = next((i for i, f in enumerate(outermost_first) if _file_kind(f[0]) == _USER), None)
    if start is None:
        return ()
    chain = [f for f in outermost_first[start:] if _file_kind(f[0]) != _JAX_OR_JAXMAGIC]
    return tuple(source_line(*frame, cell_namer=cell_namer) for frame in chain)


def user_source_line(source_info, cell_namer: CellNamer = no_cells) -> SourceLine | None:
    """The user's line behind a JAX equation's ``source_info``, or ``None`` where no frame of the
    user's own code made it (a library's or JAX's line is never shown as the user's, nor the line
    that called the magic)."""
    frame = traced_user_frame(_jax_private.traceback_frames(source_info))
    if frame is None:
        return None
    return source_line(*frame, cell_namer=cell_namer)
