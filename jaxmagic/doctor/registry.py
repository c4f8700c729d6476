"""The doctor's one list of pitfalls. Each pitfall is declared once (a ``declared.Declared`` in a
``pitfall_*`` module, which registers its recogniser with ``pitfall(...)``): its id, title,
severity, the fragments of JAX's messages it reads, its place in the order, and when it runs
(``stage``):

- ``"error"``: ``recognise(case) -> Diagnosis | None`` for an exception JAX raised;
- ``"trace"``: ``recognise(traced) -> list[Diagnosis]`` for a function that traced fine;
- ``"cell"``: ``recognise(cell) -> list[Diagnosis]`` after a cell ran (``engine.CellEnd``: what
  changed since jitted functions were traced).

A recogniser that raises is logged and counted (``internal_errors``), never silent.

>>> PITFALLS["baked-global"].severity
'warning'
>>> PITFALLS["python-control-flow"].docs
'docs/pitfalls.md#python-control-flow'
"""

from __future__ import annotations

import logging
import re
import traceback
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

DOCS = "docs/pitfalls.md"
SEVERITIES = ("error", "warning")
STAGES = ("error", "trace", "cell")

log = logging.getLogger("jaxmagic.doctor")


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


@dataclass(frozen=True)
class Written:
    """A fragment of a message JAX writes, and the JAX versions that write it: from ``since``
    (included) up to ``until`` (excluded; ``None``: still written).

    >>> old = Written("Array slice indices must have static start/stop/step", until="0.8.2")
    >>> old.by("0.8.1"), old.by("0.10.2")
    (True, False)
    """

    text: str
    since: str = "0.8.0"
    until: str | None = None

    def by(self, jax_version: str) -> bool:
        """True when JAX ``jax_version`` writes this fragment."""
        version = _version(jax_version)
        return _version(self.since) <= version and (self.until is None or version < _version(self.until))


@dataclass(frozen=True)
class Pitfall:
    """One trap the doctor knows: a stable id, a title in plain words, error or warning, and the
    recogniser that finds it.

    >>> PITFALLS["traced-shape"].title
    'A size or slice that depends on a traced value'
    """

    id: str
    title: str
    severity: str  # "error": JAX raised; "warning": it traced, but will not do what it seems to
    order: int = 100  # lower runs first: a more specific recogniser before a broader one
    stage: str = "error"
    messages: tuple[Written, ...] = ()  # fragments of JAX's messages the recogniser reads
    recognise: Callable | None = field(default=None, repr=False, compare=False)

    def run(self, subject):
        """The recogniser on ``subject`` (a ``Case``, a ``Traced`` or a ``CellEnd``)."""
        if self.recognise is None:  # declared without its recogniser (``pitfall`` gives it one)
            raise TypeError(f"the pitfall {self.id!r} has no recogniser")
        return self.recognise(subject)

    @property
    def docs(self) -> str:
        """Where the pitfall is explained at length: ``docs/pitfalls.md#<id>``."""
        return f"{DOCS}#{self.id}"


PITFALLS: dict[str, Pitfall] = {}


def written(messages) -> tuple[Written, ...]:
    """``messages`` as ``Written`` fragments (a plain string: written by every supported JAX).

    >>> written(["Leaked trace"])
    (Written(text='Leaked trace', since='0.8.0', until=None),)
    """
    return tuple(m if isinstance(m, Written) else Written(m) for m in messages)


def pitfall(
    id: str,
    title: str,
    severity: str,
    *,
    order: int = 100,
    stage: str = "error",
    messages: tuple[str | Written, ...] = (),
) -> Callable[[Callable], Callable]:
    """Declare a pitfall on its recogniser (the decorated function is returned unchanged).
    ``messages`` are the fragments of JAX's messages it reads: a plain string for one every
    supported JAX writes, a ``Written`` for one only some versions write.

    >>> @pitfall("example-trap", "An example", "warning", stage="trace")
    ... def example_trap(traced):
    ...     return []
    >>> PITFALLS.pop("example-trap").recognise is example_trap
    True
    """
    if severity not in SEVERITIES or stage not in STAGES:
        raise ValueError(f"severity must be one of {SEVERITIES} and stage one of {STAGES}")

    def declare(recognise: Callable) -> Callable:
        known = PITFALLS.get(id)
        if known is not None and _origin(known.recognise) != _origin(recognise):  # a reloaded module may declare again
            raise ValueError(f"pitfall {id!r} is declared twice")
        PITFALLS[id] = Pitfall(id, title, severity, order, stage, written(messages), recognise)
        return recognise

    return declare


def _origin(function: Callable | None) -> tuple:
    return (getattr(function, "__module__", None), getattr(function, "__qualname__", None))


def in_order(stage: str) -> list[Pitfall]:
    """The pitfalls of one stage, in the order their recognisers run.

    >>> [p.id for p in in_order("trace")][:1]
    ['print-side-effect']
    """
    return sorted((p for p in PITFALLS.values() if p.stage == stage), key=lambda p: (p.order, p.id))


_ERRORS: deque[str] = deque(maxlen=50)


def record_failure(pitfall_id: str, exc: BaseException) -> None:
    """A recogniser raised: log it (``jaxmagic.doctor``, at warning level) and count it.

    >>> record_failure("example", RuntimeError("boom")); internal_errors()[-1]
    'example: RuntimeError: boom'
    >>> _ERRORS.clear()
    """
    line = f"{pitfall_id}: {type(exc).__name__}: {exc}"
    _ERRORS.append(line)
    log.warning(
        "jaxmagic doctor: the %s recogniser failed\n%s",
        pitfall_id,
        "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, chain=False)).rstrip(),
    )


def internal_errors() -> list[str]:
    """Failures inside the doctor's recognisers (never raised into the user's code), newest last.

    >>> isinstance(internal_errors(), list)
    True
    """
    return list(_ERRORS)
