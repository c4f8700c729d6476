"""Writes profiler traces (``XSpace``, ``xla/tsl/profiler/protobuf/xplane.proto``) for tests: the
layout a device that is not lent here writes (a GPU's streams), built field by field to the schema.

>>> space = Space([Plane("/device:GPU:0", lines=[Line("Stream #7(Kernel)", [Event("k", 10, 5, {"hlo_op": "fusion"})])])])
>>> from jaxmagic.compiled import xspace
>>> xspace.parse(space.encode()).plane("/device:GPU:0").lines[0].events[0].stats
{'hlo_op': 'fusion'}
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def key(number: int, kind: int) -> bytes:
    return varint(number << 3 | kind)


def number_field(number: int, value: int) -> bytes:
    return key(number, 0) + varint(value)


def bytes_field(number: int, value: bytes | str) -> bytes:
    data = value.encode() if isinstance(value, str) else value
    return key(number, 2) + varint(len(data)) + data


def double_field(number: int, value: float) -> bytes:
    return key(number, 1) + struct.pack("<d", value)


class Stats:
    """Stat metadata of one plane: names to ids, shared by its stats, and ``ref`` values."""

    def __init__(self):
        self.ids: dict[str, int] = {}

    def id(self, name: str) -> int:
        return self.ids.setdefault(name, len(self.ids) + 1)

    def stat(self, name: str, value: Any) -> bytes:
        out = number_field(1, self.id(name))
        if isinstance(value, Ref):
            return out + number_field(7, self.id(value.text))
        if isinstance(value, (bool, int)):
            return out + (number_field(4, int(value)) if value < 0 else number_field(3, int(value)))
        if isinstance(value, float):
            return out + double_field(2, value)
        if isinstance(value, bytes):
            return out + bytes_field(6, value)
        return out + bytes_field(5, str(value))


@dataclass(frozen=True)
class Ref:
    """A string stat kept once, in the stat metadata (as CUPTI keeps ``kernel_details``)."""

    text: str


@dataclass
class Event:
    name: str
    offset_ps: int
    duration_ps: int
    stats: dict[str, Any] = field(default_factory=dict)


@dataclass
class Line:
    name: str
    events: list[Event]
    id: int = 0
    timestamp_ns: int = 1_000_000


@dataclass
class Plane:
    name: str
    lines: list[Line] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, dict[str, Any]] = field(default_factory=dict)  # event name -> its metadata's stats

    def encode(self, plane_id: int) -> bytes:
        stats = Stats()
        names: dict[str, int] = {}
        for name in self.metadata:
            names.setdefault(name, len(names) + 1)
        lines = b""
        for index, line in enumerate(self.lines):
            events = b""
            for event in line.events:
                meta = names.setdefault(event.name, len(names) + 1)
                body = number_field(1, meta) + number_field(2, event.offset_ps) + number_field(3, event.duration_ps)
                body += b"".join(bytes_field(4, stats.stat(k, v)) for k, v in event.stats.items())
                events += bytes_field(4, body)
            header = (
                number_field(1, line.id or index + 1) + bytes_field(2, line.name) + number_field(3, line.timestamp_ns)
            )
            lines += bytes_field(3, header + events)
        plane_stats = b"".join(bytes_field(6, stats.stat(k, v)) for k, v in self.stats.items())
        metadata = b""
        for name, ident in names.items():
            inner = number_field(1, ident) + bytes_field(2, name)
            inner += b"".join(bytes_field(5, stats.stat(k, v)) for k, v in self.metadata.get(name, {}).items())
            metadata += bytes_field(4, number_field(1, ident) + bytes_field(2, inner))
        stat_metadata = b"".join(
            bytes_field(5, number_field(1, ident) + bytes_field(2, number_field(1, ident) + bytes_field(2, name)))
            for name, ident in stats.ids.items()
        )
        return number_field(1, plane_id) + bytes_field(2, self.name) + lines + metadata + stat_metadata + plane_stats


@dataclass
class Space:
    planes: list[Plane]

    def encode(self) -> bytes:
        return b"".join(bytes_field(1, plane.encode(index)) for index, plane in enumerate(self.planes))
