"""What the compiled program looked like, in short, and how two of them differ.

At each compilation the watch reads the traced program JAX is about to compile (no extra
tracing) and keeps its ``ProgramShape``: the number of equations each line of the user's code
emitted, and a fingerprint of each captured constant. Comparing the shapes of two compilations of
one function says what changed in the program: equations added or removed by source line (a
Python loop unrolled more times, a branch taken the other way) and captured constants that
changed.

>>> before = ProgramShape({("f.py", 4): 2, ("f.py", 5): 1}, (("f32[3]", 11),))
>>> after = ProgramShape({("f.py", 4): 5, ("f.py", 5): 1}, (("f32[3]", 12),))
>>> diff = program_difference(before, after)
>>> [(change.line, change.before, change.after) for change in diff.lines], diff.constants_changed
([(4, 2, 5)], 1)

Two programs with as many equations per line can still differ: a line that made ``mul`` makes
``add`` now, or multiplies by another literal. Each line's equations are also kept as a digest of
what they do (primitive, literal operands, plain parameters), and such a line counts as changed.

>>> import jax
>>> def program(scale):
...     return program_shape(jax.make_jaxpr(lambda x: x * scale)(1.0), lambda eqn: ("f.py", 1))
>>> [(c.line, c.before, c.after) for c in program_difference(program(2.0), program(3.0)).lines]
[(1, 1, 1)]
>>> program_difference(program(2.0), program(2.0)).empty
True
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from jax.extend import core as jcore

from jaxmagic import _jax_private
from jaxmagic.tracing.sources import traced_user_frame

MAX_CONSTANT_BYTES = 1 << 20  # captured constants larger than this are compared by type only
LIBRARY_CODE = ("", 0)  # where equations no line of the user's made are counted (a library's function jitted as it is)
_LOOP_WORDS = ("for ", "while ")


@dataclass(frozen=True)
class ProgramShape:
    """Equations per user source line ``{(file, line): count}`` and captured constants as
    ``(type, fingerprint)`` pairs."""

    equations: dict = field(default_factory=dict)
    constants: tuple = ()
    operations: dict = field(default_factory=dict)  # (file, line) -> digest of what its equations do

    @property
    def total(self) -> int:
        """All equations counted."""
        return sum(self.equations.values())


@dataclass(frozen=True)
class LineChange:
    """One source line whose equations changed: ``file``, ``line``, counts ``before`` / ``after``,
    and ``in_loop`` when that line sits in a Python ``for`` / ``while`` loop."""

    file: str
    line: int
    before: int
    after: int
    in_loop: bool = False

    @property
    def added(self) -> int:
        """Equations added (negative: removed)."""
        return self.after - self.before


@dataclass(frozen=True)
class ProgramDifference:
    """How one compiled program differs from an earlier one of the same function."""

    lines: tuple = ()
    constants_changed: int = 0
    total_before: int = 0
    total_after: int = 0

    @property
    def empty(self) -> bool:
        """True when the two programs look the same."""
        return not self.lines and not self.constants_changed


def users_line(eqn) -> tuple[str, int] | None:
    """``(file, line)`` of the user's own code behind an equation: where an equation comes from a
    library's code (an optimizer's update, a layer), the user's last line on the way into it;
    ``None`` where no line of the user's made it.

    >>> import jax
    >>> def f(x):
    ...     return jax.nn.relu(x) * 2
    >>> lines = {users_line(eqn)[1] for eqn in jax.make_jaxpr(f)(1.0).jaxpr.eqns}
    >>> lines == {f.__code__.co_firstlineno + 1}
    True
    """
    frame = traced_user_frame(_jax_private.traceback_frames(eqn.source_info))
    return (frame[0], frame[1]) if frame is not None else None


def program_shape(closed_jaxpr, user_line=users_line) -> ProgramShape:
    """The ``ProgramShape`` of a ``ClosedJaxpr``; ``user_line(eqn)`` gives an equation's
    ``(file, line)`` (``users_line``: the user's own). Sub-programs (``scan``, ``cond``
    bodies) count toward the lines that wrote them; equations no line of the user's made, toward
    ``LIBRARY_CODE``."""
    counts: dict = {}
    digests: dict = {}
    stack = [closed_jaxpr.jaxpr]
    seen = 0
    while stack and seen < 100_000:
        jaxpr = stack.pop()
        for eqn in jaxpr.eqns:
            seen += 1
            where = user_line(eqn) or LIBRARY_CODE
            counts[where] = counts.get(where, 0) + 1
            if where not in digests:
                digests[where] = hashlib.blake2b(digest_size=8)
            digests[where].update(_operation(eqn).encode())
            for value in eqn.params.values():
                for inner in value if isinstance(value, (tuple, list)) else (value,):
                    if hasattr(inner, "eqns"):  # a Jaxpr
                        stack.append(inner)
                    elif hasattr(getattr(inner, "jaxpr", None), "eqns"):  # a ClosedJaxpr
                        stack.append(inner.jaxpr)
    constants = tuple(_fingerprint(c) for c in getattr(closed_jaxpr, "consts", ()))
    return ProgramShape(counts, constants, {where: digest.hexdigest() for where, digest in digests.items()})


_PLAIN = (bool, int, float, str, type(None))


def _operation(eqn) -> str:
    """What one equation does, in short: its primitive, its literal operands and its plain
    parameters (numbers, strings, shapes, dtypes; nested programs are counted by their own lines)."""
    literals = [repr(v.val) for v in eqn.invars if isinstance(v, jcore.Literal)]
    params = []
    for name, value in sorted(eqn.params.items()):
        if isinstance(value, _PLAIN) or (isinstance(value, tuple) and all(isinstance(v, _PLAIN) for v in value)):
            params.append(f"{name}={value!r}")
        elif type(value).__name__ in ("dtype", "DType"):
            params.append(f"{name}={value}")
    return f"{eqn.primitive.name}({','.join(literals)})[{','.join(params)}];"


def program_difference(
    before: ProgramShape, after: ProgramShape, *, in_loop=lambda file, line: False
) -> ProgramDifference:
    """What changed from ``before`` to ``after``, line by line (in source order)."""
    changes = []
    for where in sorted(set(before.equations) | set(after.equations)):
        old, new = before.equations.get(where, 0), after.equations.get(where, 0)
        if old != new or before.operations.get(where) != after.operations.get(where):
            changes.append(LineChange(where[0], where[1], old, new, in_loop(*where)))
    constants = sum(1 for a, b in zip(before.constants, after.constants, strict=False) if a != b)
    constants += abs(len(before.constants) - len(after.constants))
    return ProgramDifference(tuple(changes), constants, before.total, after.total)


def line_in_loop(file: str, line: int) -> bool:
    """Whether ``line`` of ``file`` is inside a Python loop: a ``for`` / ``while`` statement above it,
    less indented (read with ``linecache``, which also knows notebook cells)."""
    import linecache

    text = linecache.getline(file, line)
    if not text.strip():
        return False
    indent = len(text) - len(text.lstrip())
    for number in range(line - 1, max(0, line - 200), -1):
        above = linecache.getline(file, number)
        if not above.strip():
            continue
        above_indent = len(above) - len(above.lstrip())
        if above_indent < indent:
            stripped = above.lstrip()
            if stripped.startswith(_LOOP_WORDS):
                return True
            if stripped.startswith("def ") or above_indent == 0:
                return False
            indent = above_indent
    return False


def describe_difference(difference: ProgramDifference, cell_namer=None) -> str:
    """The contract sentence of ``RecompileEvent.program_diff``, built from the facts.

    >>> change = LineChange("f.py", 4, 2, 5, in_loop=True)
    >>> describe_difference(ProgramDifference((change,), 0, 6, 9))
    'program 6 → 9 equations: f.py:4, in a Python loop unrolled into the program, 2 → 5 equations (+3)'
    >>> describe_difference(ProgramDifference((LineChange("f.py", 4, 1, 1),), 0, 4, 4))
    'program of 4 equations: f.py:4 made as many (1), but other operations, constants or sizes'
    >>> describe_difference(ProgramDifference((), 0, 4, 4))
    'the same program (4 equations)'
    >>> describe_difference(ProgramDifference((LineChange(*LIBRARY_CODE, 7, 9),), 0, 7, 9))
    'program 7 → 9 equations: library code, 7 → 9 equations (+2)'
    >>> describe_difference(ProgramDifference((), 1, 0, 0))
    'program of no equations: 1 captured constant changed value'
    """
    from jaxmagic.tracing.sources import no_cells, source_line

    if difference.empty:
        return f"the same program ({difference.total_after} equation{'s' * (difference.total_after != 1)})"
    parts = []
    for change in difference.lines[:8]:
        if (change.file, change.line) == LIBRARY_CODE:
            label = "library code"
        else:
            label = source_line(change.file, change.line, "", cell_namer=cell_namer or no_cells).label
        loop = ", in a Python loop unrolled into the program" if change.in_loop and change.added > 0 else ""
        if change.added == 0:
            parts.append(f"{label} made as many ({change.after}), but other operations, constants or sizes")
        else:
            parts.append(f"{label}{loop}, {change.before} → {change.after} equations ({change.added:+d})")
    if len(difference.lines) > 8:
        parts.append(f"{len(difference.lines) - 8} more lines changed")
    if difference.constants_changed:
        n = difference.constants_changed
        parts.append(f"{n} captured constant{'s' * (n != 1)} changed value")
    if difference.total_before == difference.total_after:
        n = difference.total_after
        head = f"program of {n or 'no'} equation{'s' * (n != 1)}"
    else:
        head = f"program {difference.total_before} → {difference.total_after} equations"
    return f"{head}: " + "; ".join(parts)


def _fingerprint(constant) -> tuple:
    try:
        import numpy as np

        array = np.asarray(constant)
        kind = f"{array.dtype}{list(array.shape)}"
        if array.nbytes > MAX_CONSTANT_BYTES:
            return kind, None
        return kind, hashlib.blake2b(array.tobytes(), digest_size=8).hexdigest()
    except Exception:
        return type(constant).__name__, None
