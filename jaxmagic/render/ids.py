"""Element ids for HTML views, made from what they label: the same report renders to the same bytes.

An id is a short hash of the content it scopes, with a counter for a repeat within one output,
so two identical listings in one output still get ids of their own.

>>> ids = ContentIds()
>>> first, again = ids.new("a:f32[] = sin b"), ids.new("a:f32[] = sin b")
>>> first == ContentIds().new("a:f32[] = sin b"), again == first + "-2"
(True, True)
>>> first.startswith("jm-"), len(first)
(True, 13)
"""

from __future__ import annotations

import collections
import hashlib


class ContentIds:
    """Ids for one output: ``new(content)`` is ``jm-`` and ten hex digits of the content's hash,
    then ``-2``, ``-3``... for the same content again in the same output."""

    def __init__(self):
        self._seen: collections.Counter[str] = collections.Counter()

    def new(self, content: str) -> str:
        digest = hashlib.blake2b(content.encode("utf-8", "surrogatepass"), digest_size=5).hexdigest()
        self._seen[digest] += 1
        times = self._seen[digest]
        return f"jm-{digest}" + (f"-{times}" if times > 1 else "")
