"""The Rust decoder of ``OffsetFetch`` answers (:mod:`mqbalance.fleet.kafka.wire`) against
kafka-python's own decoding of the same bytes, and the watcher's reading of them against the
reading it replaced (kafka-python's objects, the first error raised). Answers are encoded by
kafka-python from random contents (hypothesis); the real broker's answers are compared in
``benches/test_bench_kafka_watch_fleet.py``, which starts one. Truncated, extended and garbled bytes
raise :class:`~mqbalance.exceptions.KafkaWireError`, never anything else. The CRC-32C against
kafka-python's pure-Python one.

Excluded from the differential: bytes after the last field (kafka-python ignores them, ours
refuses them) and garbage kafka-python happens to accept (checked only to be equal when both
accept).
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.errors import KafkaError
from kafka.errors import for_code as error_for_code
from kafka.protocol.consumer.group import OffsetFetchResponse
from kafka.record._crc32c import crc as crc32c_py

from mqbalance import _core
from mqbalance.exceptions import KafkaWireError
from mqbalance.fleet.kafka.wire import OffsetFetchColumns, committed_offsets, decode_offset_fetch

Group = OffsetFetchResponse.OffsetFetchResponseGroup
Topic = Group.OffsetFetchResponseTopics
Partition = Topic.OffsetFetchResponsePartitions

names = st.text(st.characters(codec="utf-8"), max_size=12)
int16, int32 = st.integers(-(2**15), 2**15 - 1), st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
errors = st.sampled_from([0, 0, 0, 0, 3, 15, 16, 25, 30, 69, -1])
partitions = st.builds(
    Partition,
    partition_index=int32,
    committed_offset=st.one_of(st.integers(-1, 10**6), int64),
    committed_leader_epoch=int32,
    metadata=st.one_of(st.none(), names),
    error_code=errors,
)
topics = st.builds(Topic, name=st.sampled_from(["t", "orders", "ü-topic", ""]) | names,
                   partitions=st.lists(partitions, max_size=6))  # fmt: skip
groups = st.builds(Group, group_id=names, topics=st.lists(topics, max_size=4), error_code=errors)
answers = st.builds(lambda t, g: OffsetFetchResponse(throttle_time_ms=t, groups=g), int32, st.lists(groups, max_size=5))
versions = st.sampled_from([8, 9])


def encoded(answer: Any, version: int) -> bytes:
    return bytes(answer.encode(version=version))


def rows_of_kafka_python(data: bytes, version: int) -> tuple[int, list[Any], list[Any]]:
    r = OffsetFetchResponse.decode(data, version=version)
    gs = [(d.group_id, d.error_code) for d in r.groups]
    rows = [
        (d.group_id, t.name, p.partition_index, p.committed_offset, p.committed_leader_epoch, p.error_code)
        for d in r.groups
        for t in d.topics
        for p in t.partitions
    ]
    return r.throttle_time_ms, gs, rows


def rows_of_ours(a: OffsetFetchColumns) -> tuple[int, list[Any], list[Any]]:
    gs = list(zip(a.groups, a.group_errors.tolist(), strict=True))
    rows = list(
        zip(
            [a.groups[i] for i in a.group.tolist()],
            [a.topics[i] for i in a.topic.tolist()],
            a.partition.tolist(),
            a.committed_offset.tolist(),
            a.leader_epoch.tolist(),
            a.error_code.tolist(),
            strict=True,
        )
    )
    return a.throttle_time_ms, gs, rows


def reading_it_replaced(data: bytes, version: int) -> dict[tuple[str, str, str, int], int]:
    """The watcher's reading before the Rust decoder (``main``'s ``_committed_offsets``)."""
    committed = {}
    response = OffsetFetchResponse.decode(data, version=version)
    for d in response.groups:
        if d.error_code:
            raise error_for_code(d.error_code)(f"OffsetFetchResponse failed for group '{d.group_id}'.")
        for topic in d.topics:
            for p in topic.partitions:
                if p.error_code:
                    raise error_for_code(p.error_code)(f"OffsetFetchResponse failed for partition {p.partition_index}")
                if p.committed_offset is not None and p.committed_offset >= 0:
                    committed[(d.group_id, topic.name, "", p.partition_index)] = p.committed_offset
    return committed


def outcome(f: Any, *args: Any) -> Any:
    try:
        return f(*args)
    except KafkaError as e:
        return (type(e), str(e))


@settings(max_examples=150, deadline=None)
@given(answers, versions)
def test_columns_equal_kafka_pythons_decoding(answer: Any, version: int) -> None:
    data = encoded(answer, version)
    ours = decode_offset_fetch(data, version=version)
    assert rows_of_ours(ours) == rows_of_kafka_python(data, version)
    assert outcome(committed_offsets, ours) == outcome(reading_it_replaced, data, version)


@settings(max_examples=100, deadline=None)
@given(answers, versions, st.data())
def test_truncated_or_extended_bytes_are_a_wire_error(answer: Any, version: int, data: st.DataObject) -> None:
    whole = encoded(answer, version)
    cut = data.draw(st.integers(0, len(whole) - 1))
    with pytest.raises(KafkaWireError, match=r"OffsetFetch answer (truncated|malformed) at byte \d+") as e:
        decode_offset_fetch(whole[:cut], version=version)
    assert isinstance(e.value.value, int) and 0 <= e.value.value <= cut
    extra = data.draw(st.binary(min_size=1, max_size=8))
    with pytest.raises(KafkaWireError, match=f"{len(extra)} bytes after its last field"):
        decode_offset_fetch(whole + extra, version=version)


@settings(max_examples=150, deadline=None)
@given(answers, versions, st.data())
def test_garbled_bytes_are_a_wire_error_or_what_kafka_python_reads(answer: Any, version: int, data: Any) -> None:
    whole = bytearray(encoded(answer, version))
    for _ in range(data.draw(st.integers(1, 4))):
        whole[data.draw(st.integers(0, len(whole) - 1))] = data.draw(st.integers(0, 255))
    garbled = bytes(whole)
    try:
        ours = decode_offset_fetch(garbled, version=version)
    except KafkaWireError:
        return
    assert rows_of_ours(ours) == rows_of_kafka_python(garbled, version)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200), versions)
def test_random_bytes_never_panic(data: bytes, version: int) -> None:
    with contextlib.suppress(KafkaWireError):
        decode_offset_fetch(data, version=version)


def test_what_the_errors_say() -> None:
    body = encoded(OffsetFetchResponse(throttle_time_ms=0, groups=[Group(group_id="g", topics=[
        Topic(name="t", partitions=[Partition(partition_index=3, committed_offset=5, committed_leader_epoch=-1,
                                              metadata="abcdefghij", error_code=0)])], error_code=0)]), 8)  # fmt: skip
    with pytest.raises(KafkaWireError, match="v10 answers are not decoded here") as e:
        decode_offset_fetch(body, version=10)
    assert e.value.value == 10
    with pytest.raises(KafkaWireError, match=r"truncated at byte 28 reading groups\[0\]\.topics\[0\]\.partitions\[0\]"
                                             r"\.metadata: needs 10 bytes, 3 left") as e:  # fmt: skip
        decode_offset_fetch(body[:31], version=8)
    assert e.value.value == 28
    bad = bytearray(body)
    bad[6] = 0xFF  # the group id "g"
    with pytest.raises(KafkaWireError, match=r"malformed at byte 5 in groups\[0\]\.group_id: not UTF-8"):
        decode_offset_fetch(bytes(bad), version=8)
    huge = body[:4] + bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x0F])
    with pytest.raises(KafkaWireError, match="4294967294 elements of at least 5 bytes, 0 bytes left"):
        decode_offset_fetch(huge, version=8)
    with pytest.raises(KafkaWireError, match="varint longer than 5 bytes"):
        decode_offset_fetch(body[:4] + bytes([0x80] * 6), version=8)
    with pytest.raises(KafkaWireError, match="null array where none is allowed"):
        decode_offset_fetch(body[:4] + b"\x00\x00", version=8)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=3000), st.integers(0, 16))
def test_crc32c_equals_kafka_pythons(data: bytes, skip: int) -> None:
    assert _core.crc32c(data) == crc32c_py(data)
    view = memoryview(bytearray(data))[min(skip, len(data)) :]
    assert _core.crc32c(view) == crc32c_py(view)


def test_crc32c_check_value_and_bad_input() -> None:
    assert _core.crc32c(b"123456789") == 0xE3069283
    assert _core.crc32c(os.urandom(0)) == 0
    with pytest.raises(TypeError):
        _core.crc32c("text")  # type: ignore[arg-type]


def test_tagged_fields_at_every_level_are_skipped_as_kafka_python_skips_them() -> None:
    """Unknown tagged fields (KIP-482) after a partition, a topic, a group and the answer."""
    tags = bytes([2, 0, 2, 0xAB, 0xCD, 7, 1, 0x01])  # two fields: tag 0 (2 bytes), tag 7 (1 byte)
    partition = bytes.fromhex("00000003000000000000000900000004036d640000") + tags
    body = bytes.fromhex("0000000002026702027402") + partition + tags + bytes(2) + tags + tags
    ours = decode_offset_fetch(body, version=8)
    assert rows_of_ours(ours) == rows_of_kafka_python(body, 8) == (0, [("g", 0)], [("g", "t", 3, 9, 4, 0)])
    cut = 11 + len(partition) - len(tags) + 4  # inside the partition's first tagged field's 2 bytes
    with pytest.raises(
        KafkaWireError, match=r"byte 35 reading .*partitions\[0\]\._tagged_fields: needs 2 bytes, 1 left"
    ):
        decode_offset_fetch(body[:cut], version=8)
