"""Classic groups' generations from the group coordinator's own log: the ``GroupMetadataValue``
records it writes to ``__consumer_offsets``.

DescribeGroups carries no generation id (its answer holds the state, protocol type and data, the
members and the authorized operations), and a classic group's generation is in no other answer an
observer may ask for. The coordinator persists it with the group: record key version 2 (the group
id) and a value holding the protocol type, the generation, the protocol, the leader and the time of
the current state (then the members, which are not decoded here). It writes one when a generation's
assignment is stored (SyncGroup from the leader) and when the group becomes Empty; a generation
whose rebalance never completed is not written, so one may be skipped — the numbers are still the
broker's, and the rebalances between two readings are their difference. A tombstone (no value)
deletes the group.

:class:`GroupLog` follows the topic with a consumer that has no group (assigned, not subscribed,
nothing committed): it reads from the log start once (the topic is compacted: one record per key
survives), then only what was appended. Offset commits (key versions 0 and 1) and the consumer
protocol's records (versions 3 and up) are skipped by their key's first two bytes; their values
are never decoded. kafka-python checks every record batch's CRC-32C, in pure Python unless the
(LGPL) ``crc32c`` package is installed: :func:`use_native_crc32c` gives it ours
(``mqbalance._core``, the same checksum).

>>> key = b"\\x00\\x02\\x00\\x02gc"
>>> value = bytes.fromhex("0003" "0008") + b"consumer" + bytes.fromhex("00000003" "0005") + b"range" + bytes.fromhex(
...     "0002") + b"j1" + bytes.fromhex("0000019a00000000" "00000000")
>>> decode_group_key(key), decode_group_value(value)
('gc', GroupRecord(protocol_type='consumer', generation=3, protocol='range', leader='j1', state_ms=1760936591360))
>>> decode_group_key(b"\\x00\\x01\\x00\\x02gc\\x00\\x01t\\x00\\x00\\x00\\x00") is None  # an offset commit
True
"""

from __future__ import annotations

import struct
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import kafka.record.default_records as kafka_records
from kafka import KafkaConsumer
from kafka.structs import TopicPartition

from mqbalance import _core
from mqbalance.exceptions import InvalidInputError

__all__ = [
    "GROUP_METADATA_KEY",
    "OFFSETS_TOPIC",
    "GroupLog",
    "GroupRecord",
    "decode_group_key",
    "decode_group_value",
    "use_native_crc32c",
]

#: the group coordinator's topic
OFFSETS_TOPIC = "__consumer_offsets"
#: the key version (record type) of a classic group's metadata
GROUP_METADATA_KEY = 2


@dataclass(frozen=True)
class GroupRecord:
    """What the coordinator stored for a classic group: its protocol type, generation, protocol
    (the assignor chosen), leader member id and the time its current state began (ms; ``None``
    before value version 2)."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    state_ms: int | None


def decode_group_key(key: bytes | None) -> str | None:
    """The group id of a group-metadata record's key; ``None`` for every other record type."""
    if key is None or len(key) < 4 or struct.unpack_from(">h", key)[0] != GROUP_METADATA_KEY:
        return None
    (n,) = struct.unpack_from(">h", key, 2)
    return key[4 : 4 + n].decode("utf-8", "replace")


class _Cursor:
    def __init__(self, data: bytes, flexible: bool) -> None:
        self.data, self.at, self.flexible = data, 0, flexible

    def fixed(self, fmt: str) -> Any:
        (v,) = struct.unpack_from(fmt, self.data, self.at)
        self.at += struct.calcsize(fmt)
        return v

    def varint(self) -> int:
        shift = out = 0
        while True:
            b = self.data[self.at]
            self.at += 1
            out |= (b & 0x7F) << shift
            if not b & 0x80:
                return out
            shift += 7

    def string(self) -> str | None:
        n = self.varint() - 1 if self.flexible else self.fixed(">h")
        if n < 0:
            return None
        text = self.data[self.at : self.at + n].decode("utf-8", "replace")
        self.at += n
        return text


def decode_group_value(value: bytes) -> GroupRecord:
    """The head of a ``GroupMetadataValue`` (versions 0-4; 4 is flexible: compact strings)."""
    try:
        version = struct.unpack_from(">h", value)[0]
        c = _Cursor(value, flexible=version >= 4)
        c.at = 2
        protocol_type = c.string() or ""
        generation = c.fixed(">i")
        protocol = c.string()
        leader = c.string()
        state_ms = c.fixed(">q") if version >= 2 else None
    except (struct.error, IndexError) as e:
        raise InvalidInputError(f"not a group metadata value ({e}): {value[:40]!r}", value[:40]) from None
    return GroupRecord(protocol_type, generation, protocol, leader, None if state_ms == -1 else state_ms)


def use_native_crc32c() -> None:
    """Make kafka-python check record batches' CRC-32C with ``mqbalance._core.crc32c`` (the same
    value as its pure-Python ``kafka.record._crc32c``, checked in the tests) — what it does itself
    when the ``crc32c`` package is installed. Process-wide and idempotent; kafka-python without
    that function (another version) is left as it is.

    >>> use_native_crc32c()
    >>> import kafka.record.default_records as d
    >>> d.calc_crc32c(memoryview(b"123456789")) == 0xE3069283
    True
    """
    if callable(getattr(kafka_records, "calc_crc32c", None)):
        kafka_records.calc_crc32c = _core.crc32c


class GroupLog:
    """Follows ``__consumer_offsets`` for classic groups' generations (see the module docs).

    ``config``: kafka-python client settings (security, …) for its consumer. :meth:`update` reads
    what was appended since the last call and returns the groups whose record changed (``None``:
    deleted); :attr:`groups` holds every group's latest record. Its costs are counted: records and
    bytes fetched, group records decoded, seconds spent."""

    def __init__(self, bootstrap: str, *, timeout: float = 5.0, config: Mapping[str, Any] | None = None) -> None:
        self.bootstrap, self.timeout, self.config = bootstrap, timeout, dict(config or {})
        self.groups: dict[str, GroupRecord] = {}
        self.records = self.group_records = self.bytes = 0
        #: the end offsets were reached at least once: :attr:`groups` holds each group's latest
        #: record (before, an older record of the log may still be followed by a newer one)
        self.caught_up = False
        self.seconds = 0.0
        self._consumer: Any = None
        self._partitions: list[Any] = []

    def _open(self) -> Any:
        use_native_crc32c()
        settings = {
            "client_id": "mqbalance-watch-group-log",
            "request_timeout_ms": max(1000, int(self.timeout * 1000)),
            **self.config,
        }
        consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap.split(","),
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            **settings,
        )
        try:
            parts = consumer.partitions_for_topic(OFFSETS_TOPIC)
            if not parts:
                raise InvalidInputError(f"{OFFSETS_TOPIC} has no partitions yet (no group has used this cluster)", None)
            self._partitions = [TopicPartition(OFFSETS_TOPIC, p) for p in sorted(parts)]
            consumer.assign(self._partitions)
            consumer.seek_to_beginning(*self._partitions)
        except BaseException:
            consumer.close()
            raise
        return consumer

    @property
    def client(self) -> Any:
        """The consumer (opened on first use), for request counting."""
        return self._consumer

    def update(self) -> dict[str, GroupRecord | None]:
        """Read to the end offsets of now (within ``timeout``); the groups whose record changed.
        A failed read raises kafka-python's error, leaving the consumer's positions where they
        were: the next call continues."""
        t0 = time.monotonic()
        if self._consumer is None:
            self._consumer = self._open()
        consumer = self._consumer
        changed: dict[str, GroupRecord | None] = {}
        try:
            ends = consumer.end_offsets(self._partitions, timeout_ms=int(self.timeout * 1000))
            left = {tp for tp in self._partitions if consumer.position(tp) < ends[tp]}
            deadline = time.monotonic() + self.timeout
            while left and time.monotonic() < deadline:
                for tp, records in consumer.poll(timeout_ms=100, max_records=100_000).items():
                    for r in records:
                        self.records += 1
                        self.bytes += max(0, r.serialized_key_size) + max(0, r.serialized_value_size)
                        group = decode_group_key(r.key)
                        if group is None:
                            continue  # an offset commit or a consumer-protocol record: not decoded
                        self.group_records += 1
                        if r.value is None:
                            if self.groups.pop(group, None) is not None:
                                changed[group] = None
                            continue
                        found = decode_group_value(r.value)
                        if self.groups.get(group) != found:
                            self.groups[group] = changed[group] = found
                    if consumer.position(tp) >= ends[tp]:
                        left.discard(tp)
                left = {tp for tp in left if consumer.position(tp) < ends[tp]}
            self.caught_up = self.caught_up or not left
        finally:
            self.seconds += time.monotonic() - t0
        return changed

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
