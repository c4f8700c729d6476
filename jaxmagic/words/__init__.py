"""The words layer: every sentence jaxmagic shows is written here, from the facts the engines give.

``sentences`` holds the structured sentence (``Words`` of ``Part``: text, code and places) and the
ways to write one (``say``, ``tell``); beside it, one module per subject: ``recompiles``,
``timing``, ``collectives``, ``runs``, ``doctor`` (the sentences every pitfall shares; each
pitfall's own are templates of its declaration) and ``units``. The names most modules need are
here too:

>>> from jaxmagic.words import code, say
>>> say("mark {} static", code("n"))
'mark `n` static'
"""

from __future__ import annotations

from jaxmagic.words.sentences import Part, Words, as_words, code, names, place, say, tell

__all__ = ["Part", "Words", "as_words", "code", "names", "place", "say", "tell"]
