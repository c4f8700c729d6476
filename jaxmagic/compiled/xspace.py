"""The profiler's trace file (an ``XSpace``, ``*.xplane.pb``) read by its schema: planes and lines
by name, each event with its stats, its metadata's stats included.

``jax.profiler.trace`` writes one ``XSpace`` per host: planes (``/device:TPU:0``, ``/device:GPU:0``,
``/host:CPU``, ``/host:metadata``), each holding lines (``XLA Ops``, ``Stream #12``, a host thread)
of timed events. An event's stats are its own (offset and duration on a TPU) and those of its
metadata, which it shares with every event of the same name (on a TPU the HLO instruction's
``program_id``, ``flops``, ``source``). ``jax.profiler.ProfileData`` shows only the former, and not
the metadata plane's HLO programs, so the schema is read here (``xla/tsl/profiler/protobuf/
xplane.proto``). A plane is decoded when first asked for: a long trace's host threads cost nothing
unless read.

>>> import os
>>> space = read(os.path.join("tests", "fixtures", "tpu", "mlp.xplane.pb"))
>>> device = space.plane("/device:TPU:0")
>>> [line.name for line in device.lines][1:4]
['XLA Modules', 'XLA Ops', 'Async XLA Ops']
>>> first = device.line("XLA Ops").events[0]
>>> first.stats["hlo_category"], first.stats["program_id"] > 0
('copy-start', True)
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from typing import Any

from jaxmagic.compiled import protowire
from jaxmagic.compiled.protowire import WireError


class NotATrace(ValueError):
    """A file that is not a profiler trace (an ``XSpace``)."""


@dataclass(frozen=True)
class Event:
    """One timed event: its name (its metadata's), when it started and how long it ran (in
    picoseconds from the epoch), and its stats, the metadata's first and the event's own over them."""

    name: str
    display_name: str
    start_ps: int
    duration_ps: int
    stats: dict[str, Any]

    @property
    def end_ps(self) -> int:
        return self.start_ps + self.duration_ps


@dataclass
class _Metadata:
    name: str
    display_name: str
    stats: dict[str, Any]


@dataclass
class Line:
    """A timeline of events: a device's ``XLA Ops``, a GPU stream, a host thread."""

    name: str
    display_name: str
    _raw: list[bytes]
    _timestamp_ns: int
    _plane: Plane

    @functools.cached_property
    def events(self) -> list[Event]:
        """The line's events in the order they were recorded."""
        return [self._plane._event(raw, self._timestamp_ns) for raw in self._raw]

    def events_with(self, stat: str) -> list[Event]:
        """The events that carry ``stat`` (their own or their metadata's), in order: a host thread's
        few XLA events among many others, without decoding the others."""
        marker = self._plane._stat_marker(stat)
        if marker is None:
            return []
        carrying = self._plane._metadata_with(marker)
        found = []
        for raw in self._raw:
            if marker in raw or (carrying and _metadata_id(raw) in carrying):
                event = self._plane._event(raw, self._timestamp_ns)
                if stat in event.stats:
                    found.append(event)
        return found


@dataclass
class Plane:
    """One source of events (a device, the host, the metadata of the programs run): its lines and its own stats."""

    name: str
    _raw: bytes
    _stat_names: dict[int, str] = field(default_factory=dict)
    _metadata: dict[int, _Metadata] = field(default_factory=dict)
    _metadata_raw: dict[int, bytes] = field(default_factory=dict)
    _decoded: bool = False
    _lines: list[Line] = field(default_factory=list)
    _stats: dict[str, Any] = field(default_factory=dict)

    def _decode(self) -> None:
        if self._decoded:
            return
        lines, stats = [], []
        for number, value in protowire.fields(self._raw):
            if number == 3 and isinstance(value, bytes):
                lines.append(value)
            elif number == 4 and isinstance(value, bytes):
                key, entry = _map_entry(value)
                self._metadata_raw[key] = entry
            elif number == 5 and isinstance(value, bytes):
                key, entry = _map_entry(value)
                self._stat_names[key] = _stat_metadata_name(entry)
            elif number == 6 and isinstance(value, bytes):
                stats.append(value)
        self._stats = self._read_stats(stats)
        self._lines = [self._line(raw) for raw in lines]
        self._decoded = True

    @property
    def lines(self) -> list[Line]:
        self._decode()
        return self._lines

    @property
    def stats(self) -> dict[str, Any]:
        """The plane's own stats: on a device plane its kind and peaks (``peak_teraflops_per_second``)."""
        self._decode()
        return self._stats

    def line(self, name: str) -> Line | None:
        """The first line of that name, or None."""
        return next((line for line in self.lines if line.name == name), None)

    def metadata(self) -> list[tuple[str, dict[str, Any]]]:
        """Every event metadata of the plane: ``(name, stats)`` (on ``/host:metadata``, each program
        run: ``jit_f(12)``, with its ``Hlo Proto``)."""
        self._decode()
        return [(m.name, m.stats) for m in map(self._metadata_of, sorted(self._metadata_raw))]

    def _stat_marker(self, stat: str) -> bytes | None:
        """The bytes a stat of that name begins with (its metadata id's field), or None where the plane has no such stat."""
        self._decode()
        key = next((k for k, name in self._stat_names.items() if name == stat), None)
        return None if key is None else b"\x08" + protowire.encode_varint(key)

    def _metadata_with(self, marker: bytes) -> set[int]:
        """The event metadata whose bytes hold ``marker`` (a stat they may carry)."""
        return {key for key, raw in self._metadata_raw.items() if marker in raw}

    def _line(self, raw: bytes) -> Line:
        name = display = ""
        timestamp = 0
        events = []
        for number, value in protowire.fields(raw):
            if number == 2:
                name = protowire.text(value)
            elif number == 11:
                display = protowire.text(value)
            elif number == 3 and isinstance(value, int):
                timestamp = protowire.signed(value)
            elif number == 4 and isinstance(value, bytes):
                events.append(value)
        return Line(name, display, events, timestamp, self)

    def _metadata_of(self, key: int) -> _Metadata:
        known = self._metadata.get(key)
        if known is not None:
            return known
        name = display = ""
        stats = []
        for number, value in protowire.fields(self._metadata_raw.get(key, b"")):
            if number == 2:
                name = protowire.text(value)
            elif number == 4:
                display = protowire.text(value)
            elif number == 5 and isinstance(value, bytes):
                stats.append(value)
        made = self._metadata[key] = _Metadata(name, display, self._read_stats(stats))
        return made

    def _event(self, raw: bytes, timestamp_ns: int) -> Event:
        key = offset = duration = 0
        stats = []
        for number, value in protowire.fields(raw):
            if number == 4:
                stats.append(value)
            elif number == 1:
                key = value
            elif number == 2:
                offset = protowire.signed(value) if isinstance(value, int) else 0
            elif number == 3:
                duration = protowire.signed(value) if isinstance(value, int) else 0
        meta = self._metadata_of(key if isinstance(key, int) else 0)
        merged = dict(meta.stats)
        if stats:
            merged.update(self._read_stats(stats))
        return Event(meta.name, meta.display_name, timestamp_ns * 1000 + offset, duration, merged)

    def _read_stats(self, raws: list) -> dict[str, Any]:
        names = self._stat_names
        stats = {}
        for raw in raws:
            key, value = 0, None
            for number, item in protowire.fields(raw):
                if number == 1:
                    key = item
                elif number == 3 or number == 5:
                    value = item if number == 3 else protowire.text(item)
                elif number == 7:
                    value = (
                        names.get(item, "") if isinstance(item, int) else ""
                    )  # a string kept once, in the stat metadata
                elif number == 2:
                    value = protowire.double(item)
                elif number == 4:
                    value = protowire.signed(item) if isinstance(item, int) else None
                elif number == 6:
                    value = item
            stats[names.get(key, str(key)) if isinstance(key, int) else str(key)] = value
        return stats


def _metadata_id(raw: bytes) -> int:
    """An event's metadata id: its first field, as XLA's profilers write it (else found by reading on)."""
    for number, value in protowire.fields(raw):
        if number == 1 and isinstance(value, int):
            return value
    return 0


def _map_entry(raw: bytes) -> tuple[int, bytes]:
    """A ``map<int64, Message>`` entry: its key and its value's bytes."""
    key, value = 0, b""
    for number, item in protowire.fields(raw):
        if number == 1 and isinstance(item, int):
            key = protowire.signed(item)
        elif number == 2 and isinstance(item, bytes):
            value = item
    return key, value


def _stat_metadata_name(raw: bytes) -> str:
    return next((protowire.text(v) for n, v in protowire.fields(raw) if n == 2), "")


@dataclass
class Space:
    """The planes of one host's trace, in the order recorded."""

    planes: list[Plane]
    hostnames: list[str]

    def plane(self, name: str) -> Plane | None:
        """The plane of that name, or None."""
        return next((plane for plane in self.planes if plane.name == name), None)

    def planes_named(self, prefix: str) -> list[Plane]:
        """The planes whose name starts with ``prefix`` (``/device:``: every device)."""
        return [plane for plane in self.planes if plane.name.startswith(prefix)]


def parse(data: bytes) -> Space:
    """An ``XSpace`` from its bytes; ``NotATrace`` for bytes that are not one."""
    planes, hostnames = [], []
    try:
        for number, value in protowire.fields(data):
            if number == 1 and isinstance(value, bytes):
                name = next((protowire.text(v) for n, v in protowire.fields(value) if n == 2), "")
                planes.append(Plane(name, value))
            elif number == 4:
                hostnames.append(protowire.text(value))
            elif number not in (2, 3):
                raise NotATrace(f"field {number} is not part of a profiler trace")
    except WireError as exc:
        raise NotATrace(str(exc)) from None
    if not planes:
        raise NotATrace("it holds no plane of events")
    return Space(planes, hostnames)


def read(path: str) -> Space:
    """The ``XSpace`` in a file (``NotATrace`` when it is not one, ``OSError`` when it cannot be read)."""
    with open(path, "rb") as file:
        return parse(file.read())


def trace_files(path: str) -> list[str]:
    """The trace files ``path`` names: itself when it is a file, else every ``*.xplane.pb`` under
    it of the latest run (``jax.profiler.trace(folder)`` writes ``folder/plugins/profile/<run>/
    <host>.xplane.pb``, one file per host), by name.

    >>> trace_files(os.path.join("tests", "fixtures", "tpu", "mlp.xplane.pb"))[0].endswith("mlp.xplane.pb")
    True
    """
    if os.path.isfile(path):
        return [path]
    found = []
    for folder, _, names in os.walk(path):
        found += [os.path.join(folder, n) for n in names if n.endswith(".xplane.pb")]
    runs: dict[str, list[str]] = {}
    for file in found:
        runs.setdefault(os.path.dirname(file), []).append(file)
    latest = max(runs, key=lambda folder: (os.path.basename(folder), folder)) if runs else ""
    return sorted(runs.get(latest, []))
