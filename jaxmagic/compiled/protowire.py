"""Protocol buffers' wire format, read field by field: the few lines the profiler's files need,
so that reading a trace needs no generated code and no package beyond Python.

A message is a run of fields, each a key (field number and wire type) and a value: a varint, 8 or 4
fixed bytes, or a length-delimited run of bytes (a string, a nested message, packed numbers). The
format is frozen (https://protobuf.dev/programming-guides/encoding/); what each field means is
the schema's business (``xspace``, ``hlo_proto``).

>>> list(fields(b"\\x08\\x96\\x01\\x12\\x02hi"))
[(1, 150), (2, b'hi')]
>>> packed(b"\\x03\\x8e\\x02")
[3, 270]
"""

from __future__ import annotations

import struct
from typing import Iterator, Union

Value = Union[int, bytes]


class WireError(ValueError):
    """The bytes are not a protocol buffer message (cut short, or an unknown wire type)."""


def varint(data: bytes, at: int) -> tuple[int, int]:
    """The varint at ``at`` and where the next field starts."""
    if at < len(data) and data[at] < 0x80:  # most are one byte: keys, small numbers
        return data[at], at + 1
    result = shift = 0
    while True:
        if at >= len(data):
            raise WireError("the message ends inside a number")
        byte = data[at]
        at += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, at
        shift += 7
        if shift > 70:
            raise WireError("a number longer than ten bytes")


def encode_varint(value: int) -> bytes:
    """A non-negative number as a varint (what ``varint`` reads).

    >>> encode_varint(150)
    b'\\x96\\x01'
    """
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def fields(data: bytes) -> Iterator[tuple[int, Value]]:
    """``(field number, value)`` for each field in order: an ``int`` for a varint, ``bytes`` for the
    others (8 or 4 fixed bytes, or a length-delimited run)."""
    at, end = 0, len(data)
    while at < end:
        key = data[at]
        if key < 0x80:
            at += 1
        else:
            key, at = varint(data, at)
        number, kind = key >> 3, key & 7
        if kind == 0:
            if at < end and data[at] < 0x80:
                value, at = data[at], at + 1
            else:
                value, at = varint(data, at)
            yield number, value
            continue
        if kind == 2:
            size, at = varint(data, at)
        elif kind == 1:
            size = 8
        elif kind == 5:
            size = 4
        else:
            raise WireError(f"wire type {kind} (groups are not used by these files)")
        if at + size > end:
            raise WireError("a field runs past the end of its message")
        yield number, data[at : at + size]
        at += size


def signed(value: int) -> int:
    """An ``int64`` read as a varint: negative numbers come as their 64-bit two's complement."""
    return value - (1 << 64) if value >= 1 << 63 else value


def double(value: Value) -> float:
    """A ``double`` field's 8 little-endian bytes."""
    return struct.unpack("<d", value)[0] if isinstance(value, bytes) and len(value) == 8 else float("nan")


def text(value: Value) -> str:
    """A ``string`` field, with bytes that are not UTF-8 replaced rather than refused."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def packed(value: Value) -> list[int]:
    """A ``repeated int64`` field: packed (one length-delimited run) or one varint."""
    if isinstance(value, int):
        return [value]
    numbers, at = [], 0
    while at < len(value):
        number, at = varint(value, at)
        numbers.append(signed(number))
    return numbers
