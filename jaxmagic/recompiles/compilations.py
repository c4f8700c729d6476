"""One compilation as the watch sees it: what JAX's events told about it, and how its call
compares with the nearest earlier one.

JAX's events for one compilation arrive trace, lower, backend compile; each thread notes what it
learned (``ThreadNotes``) until the compile event takes it out as one ``Compilation``. ``Memory``
keeps the earlier signatures of each function family (bounded), and a ``Comparison`` is one call
set against the nearest of them.

>>> notes = ThreadNotes()
>>> notes.traces["f"] = 0.002
>>> compilation = notes.take("jit(f)", 0.010)
>>> compilation.base, round(compilation.compile_s, 3), notes.traces
('f', 0.012, {})
"""

from __future__ import annotations

import collections
import dataclasses
import threading

from jaxmagic.recompiles.attribution import base_name, persistent_cache_in_use, stack_frames
from jaxmagic.recompiles.explanations import explains
from jaxmagic.recompiles.programs import line_in_loop, program_difference
from jaxmagic.recompiles.signatures import CallSignature
from jaxmagic.tracing.sources import source_line

SIGNATURES_PER_FUNCTION = 16  # earlier signatures kept to compare with, per function
FUNCTIONS_REMEMBERED = 512


class ThreadNotes(threading.local):
    """What one thread learned since its last compilation (events arrive trace → lower → compile)."""

    def __init__(self):
        self.traces: dict[str, float] = {}
        self.lowers: dict[str, float] = {}
        self.explanations: dict[int | str, str] = {}  # by traced function (its id), else by name
        self.traced_calls: dict[str, tuple] = {}
        self.persistent: bool | None = None
        self.cache_key_parts: dict[str, str] = {}
        self.busy = False

    def take(self, jax_name: str, backend_s: float) -> Compilation:
        """What this thread noted for the compilation of ``jax_name``, taken out of the notes
        (the explanations all go: those left are about traces nested in this one)."""
        base = base_name(jax_name)
        compilation = Compilation(
            jax_name=jax_name,
            base=base,
            trace_s=self.traces.pop(base, 0.0),
            lower_s=self.lowers.pop(jax_name, 0.0),
            backend_s=backend_s,
            persistent=self.persistent,
            explanations=self.explanations,
            traced=self.traced_calls.pop(base, None),
            key_parts=self.cache_key_parts,
        )
        self.persistent, self.cache_key_parts, self.explanations = None, {}, {}
        return compilation


@dataclasses.dataclass
class Compilation:
    """The facts JAX's events gave about one compilation, before the call itself is read.

    ``jax_name`` is JAX's name for what compiled (``base`` without its transformation prefix),
    ``trace_s`` / ``lower_s`` / ``backend_s`` the seconds of each stage, ``persistent`` whether
    the persistent cache served it (``None``: no cache event), ``explanations`` JAX's cache-miss
    explanations noted since the last compilation (by function id or name), ``traced`` the
    ``(signature, stack)`` read at a ``.trace`` / ``.lower`` call, ``key_parts`` the persistent
    cache key's parts by name.

    >>> Compilation("jit(f)", "f", 0.001, 0.002, 0.003, True, {}, None, {}).persistent_cache()
    True
    """

    jax_name: str
    base: str
    trace_s: float
    lower_s: float
    backend_s: float
    persistent: bool | None
    explanations: dict
    traced: tuple | None
    key_parts: dict[str, str]

    @property
    def compile_s(self) -> float:
        return self.trace_s + self.lower_s + self.backend_s

    def explanation(self, fun, name: str) -> str | None:
        """JAX's explanation of this compilation's cache miss, ``None`` when it gave none about
        this very function (one about a function traced inside it: a scan body, a checkpointed lambda)."""
        raw = self.explanations.get(id(fun)) if fun is not None else None
        raw = raw or self.explanations.get(self.base)
        if raw is not None and not explains(raw, name, self.base):
            return None
        return raw

    def stack(self, call, frame) -> list[tuple[str, int, str]]:
        """Where to look for the user's call site: the stack of the ``.trace`` / ``.lower`` call
        that traced it, else the stack of this compilation."""
        if self.traced is not None and not (call is not None and call.called):
            return self.traced[1]
        return stack_frames(frame)

    def persistent_cache(self) -> bool | None:
        """Whether the persistent cache served it: ``False`` for a miss, or when the cache is in
        use and said nothing; ``None`` when it is not in use."""
        if self.persistent is not None:
            return self.persistent
        return False if persistent_cache_in_use() else None


@dataclasses.dataclass
class Comparison:
    """A signature (stamped with its stretch of watching) against the nearest earlier one of its
    family: ``own`` the differences found, ``seen`` whether the name compiled before,
    ``unwatched_since_before`` whether the earlier one was seen before a stretch unwatched."""

    signature: CallSignature | None
    closest: CallSignature | None
    own: list
    seen: bool
    unwatched_since_before: bool

    def program_difference(self, program):
        """How ``program`` (the traced program's shape) differs from the earlier one's."""
        if program is None or self.closest is None or self.closest.program is None:
            return None
        return program_difference(self.closest.program, program, in_loop=line_in_loop)

    def defined_at(self, name: str, namer):
        defined = self.signature.defined_at if self.signature is not None else None
        return source_line(defined[0], defined[1], name, cell_namer=namer) if defined else None

    def summary(self) -> str:
        return self.signature.summary() if self.signature is not None else ""


class Memory:
    """Earlier signatures of each function family, to compare new compilations with. Bounded."""

    def __init__(self):
        self._families: collections.OrderedDict[tuple, collections.deque] = collections.OrderedDict()
        self._names: collections.OrderedDict[str, None] = collections.OrderedDict()

    def earlier(self, family: tuple) -> list[CallSignature]:
        return list(self._families.get(family, ()))

    def seen_name(self, name: str) -> bool:
        return name in self._names

    def add(self, signature: CallSignature | None, name: str) -> None:
        self._names[name] = None
        self._names.move_to_end(name)
        while len(self._names) > FUNCTIONS_REMEMBERED * 4:
            self._names.popitem(last=False)
        if signature is None:
            return
        history = self._families.setdefault(signature.family, collections.deque(maxlen=SIGNATURES_PER_FUNCTION))
        history.append(signature)
        self._families.move_to_end(signature.family)
        while len(self._families) > FUNCTIONS_REMEMBERED:
            self._families.popitem(last=False)

    def clear(self) -> None:
        self._families.clear()
        self._names.clear()
