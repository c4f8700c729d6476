"""One compilation (``RecompileEvent``) and the error a compile budget raises (``RecompileLimitExceeded``).

>>> from jaxmagic.tracing.sources import SourceLine
>>> RecompileEvent("f", None, SourceLine("c.py", 1, "<module>", "f(x)"), 0.002, [Cause("first_call")]).is_recompile
False
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from jaxmagic.recompiles.causes import Cause
from jaxmagic.tracing.sources import SourceLine
from jaxmagic.words.units import times
from jaxmagic.words.untrusted import one_line, safe_text

__all__ = ["RecompileEvent", "RecompileLimitExceeded"]


@dataclass(eq=False)
class RecompileEvent:
    """One compilation: what compiled, where it was called from, how long it took, and why.

    ``function`` is the callee's name, ``defined_at`` / ``call_site`` are ``SourceLine`` objects
    (``In [7] line 2`` in a notebook), ``compile_s`` is trace + lower + XLA compile in seconds
    (``trace_s``, ``lower_s``, ``backend_s`` separately), ``causes`` the list of ``Cause``,
    ``raw`` JAX's own explanation text when it gave one, ``persistent_cache`` ``True`` when the
    persistent compilation cache served the executable, ``False`` when that cache is enabled but
    missed, ``None`` when it is not in use. ``internal`` marks JAX's own compilations (an eager
    primitive, a ``jnp`` helper); ``signature`` is the call's arguments in short (``(x: f32[3])``).
    ``program_diff`` says how the traced program differs from the one it is compared with
    (equations added or removed by source line, captured constants changed), ``None`` where no
    comparison is possible; ``program_difference`` holds the same as facts (a
    ``recompiles.programs.ProgramDifference``). ``unwatched_since_before`` is True when the
    "before" side was seen before a stretch when nothing watched: JAX may have compiled other
    signatures in between, unseen. For a persistent-cache miss, ``persistent_key_parts`` names the
    parts of JAX's cache key (``computation``, ``XLA flags``, ``compile_options``...) that differ
    from the last key recorded for this function in that cache (``()``: none differ; ``None``: no
    key recorded before), recorded at ``persistent_recorded_at`` (seconds since the epoch).
    ``program_facts`` is what XLA compiled (a ``recompiles.fingerprint.ProgramFacts``), kept only
    by a log made with ``keep_programs=True``.

    >>> event = RecompileEvent("step", None, SourceLine("c.py", 2, "<module>", "step(x)"), 0.031,
    ...                        [Cause("shape", argument="x", before="f32[3]", after="f32[4]")])
    >>> event.summary()
    'step · c.py:2 · 31.0 ms · shape of `x` changed: f32[3] → f32[4]'
    >>> event.kinds, event.is_recompile
    (['shape'], True)
    """

    function: str
    defined_at: SourceLine | None
    call_site: SourceLine | None
    compile_s: float
    causes: list[Cause]
    raw: str | None = None
    trace_s: float = 0.0
    lower_s: float = 0.0
    backend_s: float = 0.0
    persistent_cache: bool | None = None
    internal: bool = False
    signature: str = ""
    jax_name: str = ""
    thread: str = ""
    time: float = field(default_factory=time.time)
    program_diff: str | None = None
    program_difference: object = field(default=None, repr=False)
    unwatched_since_before: bool = False
    persistent_key_parts: tuple[str, ...] | None = None
    persistent_recorded_at: float | None = None
    program_facts: object = field(default=None, repr=False)

    @property
    def advice(self) -> list[str]:
        """One sentence per distinct fix, in the order of the causes."""
        return list(dict.fromkeys(c.advice for c in self.causes))

    @property
    def kinds(self) -> list[str]:
        """The kinds of the causes, e.g. ``['shape', 'static_value']``."""
        return [c.kind for c in self.causes]

    @property
    def is_recompile(self) -> bool:
        """False for a first call, True when the function had compiled before."""
        return any(c.kind != "first_call" for c in self.causes)

    def summary(self) -> str:
        """One line: ``f · In [7] line 2 · 31 ms · shape of `x` changed: f32[3] → f32[4]``."""
        site = self.call_site.label if self.call_site else "?"
        causes = "; ".join(c.message for c in self.causes)
        return f"{self.function} · {site} · {self.compile_s * 1e3:.1f} ms · {causes}"

    def __repr__(self) -> str:
        return f"<RecompileEvent {self.summary()}>"


class RecompileLimitExceeded(Exception):
    """A watched function compiled more often than ``--max`` (``max_compiles``) allows.

    ``function`` compiled ``count`` times against a limit of ``limit``; ``events`` are its
    compilations (with their causes) that the log still holds.

    >>> print(RecompileLimitExceeded("step", 2, 1, []))
    `step` compiled 2 times; the limit is 1 time (--max 1).
    """

    def __init__(self, function: str, count: int, limit: int, events: list[RecompileEvent]):
        self.function, self.count, self.limit, self.events = function, count, limit, events
        super().__init__(self._message())

    def _headline(self) -> str:
        function = one_line(self.function)
        return f"`{function}` compiled {times(self.count)}; the limit is {times(self.limit)} (--max {self.limit})."

    def _message(self) -> str:
        """The headline, each compilation and each fix on a line of its own: names from the
        user's code cannot start another line, nor a CI log's command (``words.untrusted``)."""
        lines = [self._headline()]
        for number, event in enumerate(self.events, start=self.count - len(self.events) + 1):
            site = f" at {event.call_site.label}" if event.call_site else ""
            causes = "; ".join(c.message for c in event.causes)
            lines.append(f"  {number}. {one_line(causes + site)}")
        fixes = list(
            dict.fromkeys(a for e in self.events for c in e.causes if c.kind != "first_call" for a in [c.advice])
        )
        lines.extend(f"  → {one_line(fix)}" for fix in fixes)
        return safe_text("\n".join(lines))

    def _render_traceback_(self) -> list[str]:
        """How IPython shows it: the message alone, without jaxmagic's or JAX's frames."""
        return [f"{type(self).__name__}: {self}"]
