"""Why the persistent compilation cache missed: JAX keys a cached executable on the hash of
several parts (the computation, jaxlib's and the backend's versions, XLA flags, compile options,
the devices, ...). The watch reads each part's hash as JAX computes it, and keeps, beside the cache
(``jaxmagic-cache-keys.json`` in the cache's directory, a file JAX's cache never reads), the parts
of the last key of each function. A later miss — in this process or after a restart — then says
which parts differ from the last time that function was compiled into this cache.

>>> import tempfile
>>> index = KeyIndex(tempfile.mkdtemp())
>>> index.compare("step", {"computation": "aa", "XLA flags": "ff"}) is None  # never seen
True
>>> index.record("step", {"computation": "aa", "XLA flags": "ff"})
>>> KeyIndex(index.directory).compare("step", {"computation": "bb", "XLA flags": "ff"}).parts
('computation',)
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from dataclasses import dataclass

from jaxmagic.files import OutputRefused, write_atomically

FILE_NAME = "jaxmagic-cache-keys.json"
MAX_FUNCTIONS = 2000  # the index keeps the most recently compiled


@dataclass(frozen=True)
class KeyDifference:
    """The parts of a function's persistent cache key that differ from its last recorded key
    (``parts``, JAX's names: ``computation``, ``XLA flags``...), and when that was recorded."""

    parts: tuple[str, ...]
    recorded_at: float


class KeyIndex:
    """The last key parts of each function compiled into one persistent cache directory."""

    def __init__(self, directory: str | None):
        self.directory = directory
        self._lock = threading.Lock()
        self._keys: dict[str, dict] = self._load()

    @property
    def path(self) -> str | None:
        return os.path.join(self.directory, FILE_NAME) if self.directory else None

    def _load(self) -> dict:
        path = self.path
        if path is None:
            return {}
        try:
            with open(path, encoding="utf-8") as file:
                loaded = json.load(file)
            return loaded if isinstance(loaded, dict) else {}
        except (OSError, TypeError, ValueError):
            return {}

    def compare(self, function: str, parts: dict[str, str]) -> KeyDifference | None:
        """How ``parts`` differ from ``function``'s last recorded key; ``None`` when it has none."""
        with self._lock:
            known = self._keys.get(function)
        if not known or not isinstance(known.get("parts"), dict):
            return None
        before = known["parts"]
        differing = tuple(name for name in parts if before.get(name) != parts[name])
        return KeyDifference(differing, float(known.get("time", 0.0)))

    def record(self, function: str, parts: dict[str, str]) -> None:
        """Keep ``parts`` as ``function``'s last key, in memory and, where it can be written, on disk."""
        with self._lock:
            self._keys.pop(function, None)
            self._keys[function] = {"parts": dict(parts), "time": time.time()}
            while len(self._keys) > MAX_FUNCTIONS:
                self._keys.pop(next(iter(self._keys)))
            snapshot = dict(self._keys)
        if self.path is None:
            return
        with contextlib.suppress(OSError, OutputRefused):  # a read-only cache: the comparison stays in this process
            write_atomically(self.path, json.dumps(snapshot))
