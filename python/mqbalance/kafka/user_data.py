"""The userData layout of Kafka's Java ``StickyAssignor`` (``StickyAssignorUserData`` v0/v1), so
Java and Python members of one group can read each other's previous assignments.

v1 (what Java writes): ``int32 n`` then ``n × (int16 len, UTF-8 topic, int32 m, m × int32
partition)``, then ``int32 generation``. v0 has no generation. Decoding tries v1, then v0, like
Java; undecodable data means "no previous assignment" (``None``).

>>> data = encode([("t", 0), ("t", 2)], 7)
>>> decode(data)
([('t', 0), ('t', 2)], 7)
"""

from __future__ import annotations

import struct
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from mqbalance import _validate
from mqbalance.exceptions import InvalidInputError

__all__ = ["encode", "decode"]


def encode(partitions: Iterable[tuple[str, int]], generation: int | None) -> bytes:
    """v1 bytes for the given partitions (grouped by topic, partitions ascending)."""
    if _validate.not_a_collection(partitions):
        raise InvalidInputError(f"partitions must be a sequence of (topic, partition), got {partitions!r}", partitions)
    by_topic: dict[str, list[int]] = defaultdict(list)
    for i, tp in enumerate(partitions):
        if isinstance(tp, (str, bytes)) or not hasattr(tp, "__len__") or len(tp) != 2:
            raise InvalidInputError(f"partitions[{i}] must be a (topic, partition) pair, got {tp!r}", tp)
        topic, partition = tp
        if not isinstance(topic, str):
            raise InvalidInputError(f"partitions[{i}].topic must be a str, got {topic!r}", topic)
        try:
            size = len(topic.encode("utf-8"))
        except UnicodeEncodeError:
            raise InvalidInputError(
                f"partitions[{i}].topic is not valid Unicode (lone surrogate?): {topic!r}", topic
            ) from None
        if size > 32767:
            raise InvalidInputError(
                f"partitions[{i}].topic is {size} UTF-8 bytes; Kafka's string limit is 32767", topic
            )
        by_topic[topic].append(_validate.java_int(partition, f"partitions[{i}].partition"))
    if generation is not None:
        generation = _validate.java_int(generation, "generation")
    out = [struct.pack(">i", len(by_topic))]
    for topic in sorted(by_topic):
        name = topic.encode("utf-8")
        parts = sorted(by_topic[topic])
        out.append(struct.pack(">h", len(name)) + name + struct.pack(f">i{len(parts)}i", len(parts), *parts))
    out.append(struct.pack(">i", -1 if generation is None else generation))
    return b"".join(out)


def _decode(data: bytes, with_generation: bool) -> tuple[list[tuple[str, int]], int | None]:
    pos = 0

    def take(fmt: str) -> tuple[Any, ...]:
        nonlocal pos
        size = struct.calcsize(fmt)
        if pos + size > len(data):
            raise ValueError("truncated")
        values = struct.unpack_from(fmt, data, pos)
        pos += size
        return values

    (n,) = take(">i")
    if n < 0:
        raise ValueError("negative array length")
    partitions: list[tuple[str, int]] = []
    for _ in range(n):
        (length,) = take(">h")
        if length < 0 or pos + length > len(data):
            raise ValueError("bad string")
        topic = data[pos : pos + length].decode("utf-8")
        pos += length
        (m,) = take(">i")
        if m < 0:
            raise ValueError("negative array length")
        partitions.extend((topic, p) for p in take(f">{m}i"))
    generation = take(">i")[0] if with_generation else None
    if pos != len(data):
        raise ValueError("trailing bytes")
    return partitions, (None if generation == -1 else generation)


def decode(data: bytes | None) -> tuple[list[tuple[str, int]], int | None] | None:
    """``(partitions, generation)`` from v1 or v0 data, or ``None`` if it is neither."""
    if not isinstance(data, (bytes, bytearray, memoryview)) and data is not None:
        raise InvalidInputError(f"data must be bytes or None, got {type(data).__name__} {data!r}", data)
    if not data:
        return None
    for with_generation in (True, False):
        try:
            return _decode(bytes(data), with_generation)
        except (ValueError, UnicodeDecodeError, struct.error):
            continue
    return None
