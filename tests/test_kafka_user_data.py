"""Java ``StickyAssignor`` userData (``mqbalance.kafka.user_data``, the core's codec) against an
independent pure-Python reading of the layout: the implementation this package shipped before the
codec moved to the core, kept here as the oracle.

Inputs excluded, and why: topics are short (the 32767-byte limit has its own test) and partition
lists small, so hypothesis explores structure rather than size; the facade's argument checks are
covered by ``tests/test_bad_input.py``.
"""

from __future__ import annotations

import struct
from collections import defaultdict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqbalance.exceptions import InvalidInputError
from mqbalance.kafka import user_data


def ref_encode(partitions: list[tuple[str, int]], generation: int | None) -> bytes:
    by_topic: dict[str, list[int]] = defaultdict(list)
    for topic, partition in partitions:
        by_topic[topic].append(partition)
    out = [struct.pack(">i", len(by_topic))]
    for topic in sorted(by_topic):
        name = topic.encode("utf-8")
        parts = sorted(by_topic[topic])
        out.append(struct.pack(">h", len(name)) + name + struct.pack(f">i{len(parts)}i", len(parts), *parts))
    out.append(struct.pack(">i", -1 if generation is None else generation))
    return b"".join(out)


def _ref_layout(data: bytes, with_generation: bool) -> tuple[list[tuple[str, int]], int | None]:
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


def ref_decode(data: bytes) -> tuple[list[tuple[str, int]], int | None] | None:
    if not data:
        return None
    for with_generation in (True, False):
        try:
            return _ref_layout(data, with_generation)
        except (ValueError, UnicodeDecodeError, struct.error):
            continue
    return None


JAVA_INT = st.integers(-(2**31), 2**31 - 1)
TOPIC = st.text(st.characters(codec="utf-8"), max_size=6) | st.sampled_from(["t", "orders", "é", "\U0001f600", ""])
PAIRS = st.lists(st.tuples(TOPIC, JAVA_INT | st.integers(-2, 9)), max_size=12)
GENERATION = st.none() | JAVA_INT | st.just(-1)


@settings(max_examples=300, deadline=None)
@given(pairs=PAIRS, generation=GENERATION)
def test_encode_is_the_reference_layout(pairs: list[tuple[str, int]], generation: int | None) -> None:
    data = user_data.encode(pairs, generation)
    assert data == ref_encode(pairs, generation)
    assert user_data.decode(data) == ref_decode(data)


@settings(max_examples=300, deadline=None)
@given(
    pairs=PAIRS,
    generation=GENERATION,
    cut=st.integers(0, 200),
    flips=st.lists(st.tuples(st.integers(0, 200), st.integers(0, 255)), max_size=3),
    tail=st.binary(max_size=6),
    v0=st.booleans(),
)
def test_decode_reads_damaged_bytes_like_the_reference(
    pairs: list[tuple[str, int]],
    generation: int | None,
    cut: int,
    flips: list[tuple[int, int]],
    tail: bytes,
    v0: bool,
) -> None:
    """Valid encodings, their v0 form, then truncated, bit-flipped or extended: what decodes (and
    what does not) is what the reference reads."""
    data = bytearray(ref_encode(pairs, generation))
    if v0:
        del data[-4:]
    for i, x in flips:
        if data:
            data[i % len(data)] ^= x
    damaged = bytes(data[: max(cut, len(data) - cut)]) + tail
    for d in (bytes(data), damaged, bytes(data[:cut])):
        assert user_data.decode(d) == ref_decode(d), d


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=40))
def test_decode_reads_any_bytes_like_the_reference(data: bytes) -> None:
    assert user_data.decode(data) == ref_decode(data)
    assert user_data.decode(bytearray(data)) == ref_decode(data)
    assert user_data.decode(memoryview(data)) == ref_decode(data)


def test_worked_example_and_kafka_string_limit() -> None:
    """The bytes of a worked example written field by field; a topic of 32767 UTF-8 bytes is the
    longest the int16 length can carry."""
    data = user_data.encode([("b", 2), ("a", 7), ("b", 0)], 5)
    assert data == (
        b"\x00\x00\x00\x02"  # 2 topics
        b"\x00\x01a\x00\x00\x00\x01\x00\x00\x00\x07"  # "a": [7]
        b"\x00\x01b\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x02"  # "b": [0, 2]
        b"\x00\x00\x00\x05"  # generation 5
    )
    longest = "é" * (32767 // 2) + "x"
    assert user_data.decode(user_data.encode([(longest, 0)], None)) == ([(longest, 0)], None)
    too_long = longest + "x"
    with pytest.raises(InvalidInputError, match=r"partitions\[1\]\.topic is 32768 UTF-8 bytes") as e:
        user_data.encode([("t", 0), (too_long, 1)], None)
    assert e.value.value == too_long
