"""What a comparison says besides its figures, as facts: a ``Note`` has a ``kind``, whether it is a
``warning`` (the figures may mislead) or a plain note (how the modes were set up), the ``mode`` it
concerns and its numbers (``facts``). Its sentence (``text``) is written from those facts by the
words layer (``jaxmagic.words.timing``), in one place: ``Comparison.warnings`` and ``Comparison.notes`` hold these sentences, and a front end
can style a note by its kind and numbers instead of reading the sentence back.

>>> note = Note("stopped_early", warning=True, facts={"done": 3, "planned": 7, "budget_s": 6.0})
>>> note.text
'Stopped after 3 of 7 planned repeats: the 6.00 s budget ran out (calls took longer than the warm-up foretold).'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

TIMER_FLOOR_FACTOR = 1000  # a timed stretch shorter than this many timer readings is imprecise


@dataclass(frozen=True)
class Note:
    """One thing a comparison says: ``kind`` (one of ``KINDS``), ``warning`` or not, the ``mode``
    it is about (``None``: the whole comparison) and the numbers and names it rests on."""

    kind: str
    warning: bool = False
    mode: str | None = None
    facts: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown note kind {self.kind!r}; expected one of {', '.join(KINDS)}")

    @property
    def text(self) -> str:
        """The note as a sentence."""
        from jaxmagic.words.timing import note_text

        return note_text(self.kind, self.mode, self.facts)

    def __str__(self) -> str:
        return self.text


# Every kind of note; ``jaxmagic.words.timing`` writes each one's sentence.
KINDS = (
    "jit_disabled",
    "simulated_devices",
    "nnx_copies",
    "numpy_converted",
    "pmap_no_donation",
    "interrupted",
    "sharded_communication",
    "sharded_no_communication",
    "persistent_cache_first_call",
    "pmap_per_device_results",
    "pmap_slices_differ",
    "pmap_results_differ",
    "results_differ",
    "pmap_memory_skipped",
    "budget_cut",
    "budget_overrun",
    "single_sample",
    "stopped",
    "stopped_compiling",
    "first_call_overran",
    "not_run",
    "eager_donates",
    "stopped_early",
    "repeat_overran",
    "printed_lines",
    "only_eager_printed",
    "python_warning",
    "uneven_repeats",
    "timer_floor",
    "slower_than_eager",
)
