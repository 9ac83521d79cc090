"""Kafka fleet snapshots: the topics and consumer groups of a Kafka cluster, validated and typed.

A Kafka snapshot is one JSON file, marked ``"kind": "kafka"`` (a RocketMQ snapshot has no
``kind``; :func:`snapshot_kind` tells them apart)::

    {
      "kind": "kafka",
      "topics": {"orders": {"partitions": 8, "topicId": "AAAAAAAAAAAAAAAAAAAAAQ"}},   # topicId optional
      "groups": {
        "billing": {
          "state": "Stable",                    # as DescribeGroups says; PreparingRebalance etc. kept
          "protocolType": "consumer",
          "protocol": "range",                  # the assignor the group runs ("" when not said)
          "members": [
            {"memberId": "c-1-5f0e…", "clientId": "c-1", "host": "/10.0.0.7", "groupInstanceId": null,
             "subscription": ["orders"],        # null: the broker did not return the member's metadata
             "assignment": {"orders": [0, 1, 2, 3]},          # null: not returned
             "userData": "0000000100…"}         # the subscription's userData in hex, or null
          ]
        }
      },
      "offsets": [{"group": "billing", "topic": "orders", "partition": 0, "offset": 1200}],
      "endOffsets": [{"topic": "orders", "partition": 0, "offset": 1250}],
      "lagTimes": [{"group": "billing", "topic": "orders", "partition": 0, "offset": 1200,
                    "timestamp": 1795700000000, "timestampType": "CreateTime"}],   # optional
      "readAt": 1795700042000,                  # ms: when the offsets were read (optional)
      "errors": [{"request": "DescribeGroups", "group": "billing", "error": "…"}]
    }

``offsets`` are the groups' committed offsets, ``endOffsets`` the log-end offsets (what
``kafka-consumer-groups --describe`` shows as CURRENT-OFFSET and LOG-END-OFFSET); ``lagTimes`` the
timestamp of the record at a lagging partition's committed offset (lag seconds,
:mod:`mqbalance.fleet.kafka.lag_time`). Every problem is
a :class:`~mqbalance.exceptions.SnapshotError` naming the file and the field.

>>> snap = kafka_snapshot_from_dict({"kind": "kafka", "topics": {"t": {"partitions": 2}},
...     "groups": {"g": {"state": "Stable", "protocol": "range", "members": [
...         {"memberId": "m1", "clientId": "c1", "subscription": ["t"], "assignment": {"t": [0, 1]}}]}}})
>>> snap.groups["g"].members[0].assignment
(('t', 0), ('t', 1))
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mqbalance._validate import is_java_int
from mqbalance.exceptions import InvalidInputError, SnapshotError

__all__ = [
    "KAFKA_KIND",
    "KafkaGroup",
    "KafkaMember",
    "KafkaSnapshot",
    "kafka_snapshot_from_dict",
    "load_kafka_snapshot",
    "read_summary",
    "snapshot_kind",
]

#: the ``kind`` of a Kafka snapshot file
KAFKA_KIND = "kafka"


@dataclass(frozen=True, slots=True)
class KafkaMember:
    """One member of a consumer group as DescribeGroups shows it. ``subscription``,
    ``assignment`` and ``user_data`` are ``None`` when the broker did not return them."""

    member_id: str
    client_id: str
    host: str
    group_instance_id: str | None
    subscription: tuple[str, ...] | None
    assignment: tuple[tuple[str, int], ...] | None
    user_data: bytes | None = None

    @property
    def name(self) -> str:
        """The name people know the member by: its client id, or its member id when it has none."""
        return self.client_id or self.member_id


@dataclass(frozen=True, slots=True)
class KafkaGroup:
    """One consumer group: its state, protocol type, assignor and members."""

    name: str
    state: str
    protocol_type: str
    protocol: str
    members: tuple[KafkaMember, ...]

    @property
    def stable(self) -> bool:
        """Not in the middle of a rebalance (an assignment read now is the group's own)."""
        return self.state == "Stable"

    @property
    def metadata_known(self) -> bool:
        """Every member's subscription and assignment were returned by the broker."""
        return all(m.subscription is not None and m.assignment is not None for m in self.members)


@dataclass
class KafkaSnapshot:
    """A Kafka cluster's topics (partition counts, optional topic ids), consumer groups, committed
    and log-end offsets, and what could not be read."""

    source: str
    topics: dict[str, int]
    groups: dict[str, KafkaGroup]
    committed: dict[tuple[str, str, int], int] = field(default_factory=dict)
    end_offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    topic_ids: dict[str, str] = field(default_factory=dict)
    errors: list[dict[str, str]] = field(default_factory=list)
    #: per (group, topic, partition): the timestamp (ms) of the oldest unconsumed record and its type
    lag_times: dict[tuple[str, str, int], tuple[int, str]] = field(default_factory=dict)
    #: when ``lag_times`` were read (ms), or ``None``
    read_at_ms: int | None = None

    def lag_seconds(self, group: str, topic: str, partition: int) -> float | None:
        """The age of the oldest record the group has not consumed on a partition, at the read."""
        found = self.lag_times.get((group, topic, partition))
        if found is None or self.read_at_ms is None or found[0] < 0:  # -1: a record without a timestamp
            return None
        return max(0.0, (self.read_at_ms - found[0]) / 1000)

    def offset_readings(self) -> dict[tuple[str, str, int], tuple[int, int, int]]:
        """Per partition with a committed and a log-end offset, ``(ms, committed, log end)`` at the
        read (``read_at_ms``), for time to drain (:mod:`mqbalance.fleet.drain`); nothing without a
        read time."""
        if self.read_at_ms is None:
            return {}
        at = self.read_at_ms
        return {
            (g, t, p): (at, c, self.end_offsets[(t, p)])
            for (g, t, p), c in self.committed.items()
            if (t, p) in self.end_offsets
        }

    def error_lines(self) -> list[str]:
        """One line per read error, for people."""
        return [
            f"{e.get('request', '?')}" + (f" {e['group']}" if e.get("group") else "") + f": {e.get('error', '')}"
            for e in self.errors
        ]

    def partition_count(self) -> int:
        return sum(self.topics.values())


def snapshot_kind(path: str | Path) -> str:
    """``"kafka"`` for a Kafka snapshot file, ``"rocketmq"`` for anything else (a RocketMQ JSON file
    or Parquet directory, which its own loader validates)."""
    p = _path(path)
    if p.is_dir() or p.suffix.lower() != ".json":
        return "rocketmq"
    try:
        with open(p, "rb") as f:
            head = f.read(4096)
    except (OSError, ValueError):
        return "rocketmq"  # the RocketMQ loader says what is wrong with the path
    text = head.decode("utf-8", "replace")
    if '"kind"' not in text:
        return "rocketmq"
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (ValueError, OSError):
        return "rocketmq"
    return KAFKA_KIND if isinstance(data, dict) and data.get("kind") == KAFKA_KIND else "rocketmq"


def load_kafka_snapshot(path: str | Path) -> KafkaSnapshot:
    """Read and validate a Kafka snapshot JSON file."""
    p = _path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise SnapshotError(f"{p}: cannot read: {e.strerror or e}", str(p)) from None
    except ValueError as e:
        raise SnapshotError(f"{p}: not JSON: {e}", str(p)) from None
    return kafka_snapshot_from_dict(data, str(p))


def _path(path: Any) -> Path:
    if not isinstance(path, (str, Path)) or not str(path) or "\0" in str(path):
        raise InvalidInputError(f"a snapshot path must be a non-empty str or Path without NUL, got {path!r}", path)
    return Path(path)


def _fail(source: str, where: str, what: str, value: Any) -> SnapshotError:
    return SnapshotError(f"{source}: {where}: {what}, got {value!r}"[:400], value)


def _group_partition(source: str, where: str, o: Mapping[str, Any]) -> tuple[str, str, int]:
    """The ``(group, topic, partition)`` an offsets-like row ``o`` at ``where`` names."""
    return (
        _str(source, f"{where}.group", o.get("group")),
        _str(source, f"{where}.topic", o.get("topic")),
        _count(source, f"{where}.partition", o.get("partition")),
    )


def _str(source: str, where: str, value: Any, *, optional: bool = False) -> Any:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise _fail(source, where, "expected a string", value)
    return value


def _topic_id(source: str, where: str, value: Any) -> str:
    """Kafka's ``Uuid.toString()`` form: 22 characters of unpadded base64url (16 bytes)."""
    text: str = _str(source, where, value)
    try:
        ok = len(text) == 22 and len(base64.urlsafe_b64decode(text + "==")) == 16
        ok = ok and base64.urlsafe_b64encode(base64.urlsafe_b64decode(text + "==")).rstrip(b"=").decode() == text
    except ValueError:
        ok = False
    if not ok:
        raise _fail(source, where, "expected a topic id (22 characters of unpadded base64url)", value)
    return text


def _count(source: str, where: str, value: Any, *, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not is_java_int(value, low=low):
        raise _fail(source, where, f"expected an integer >= {low}", value)
    return value


def _offset(source: str, where: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not -1 <= value < 2**63:
        raise _fail(source, where, "expected an offset (integer >= -1)", value)
    return value


def _member(source: str, where: str, m: Any, topics: Mapping[str, int]) -> KafkaMember:
    if not isinstance(m, dict):
        raise _fail(source, where, "expected an object", m)
    mid = _str(source, f"{where}.memberId", m.get("memberId"))
    sub = m.get("subscription")
    if sub is not None:
        if not isinstance(sub, list):
            raise _fail(source, f"{where}.subscription", "expected a list of topic names or null", sub)
        sub = tuple(_str(source, f"{where}.subscription[{i}]", t) for i, t in enumerate(sub))
    assignment = m.get("assignment")
    if assignment is not None:
        if not isinstance(assignment, dict):
            raise _fail(source, f"{where}.assignment", "expected an object topic -> [partitions] or null", assignment)
        pairs = []
        for t, parts in assignment.items():
            if not isinstance(parts, list):
                raise _fail(source, f"{where}.assignment.{t}", "expected a list of partitions", parts)
            for i, p in enumerate(parts):
                _count(source, f"{where}.assignment.{t}[{i}]", p)
                pairs.append((t, p))
        assignment = tuple(sorted(pairs))
    raw = m.get("userData")
    data = None
    if raw is not None:
        try:
            data = bytes.fromhex(_str(source, f"{where}.userData", raw))
        except ValueError:
            raise _fail(source, f"{where}.userData", "expected hex", raw) from None
    return KafkaMember(
        member_id=mid,
        client_id=_str(source, f"{where}.clientId", m.get("clientId", "")),
        host=_str(source, f"{where}.host", m.get("host", "")),
        group_instance_id=_str(source, f"{where}.groupInstanceId", m.get("groupInstanceId"), optional=True),
        subscription=sub,
        assignment=assignment,
        user_data=data,
    )


def kafka_snapshot_from_dict(data: Any, source: str = "<dict>") -> KafkaSnapshot:
    """Validate a Kafka snapshot's JSON object (see the module docs for the layout)."""
    if not isinstance(source, str):
        raise InvalidInputError(f"source must be a str naming the snapshot, got {source!r}", source)
    if not isinstance(data, dict) or data.get("kind") != KAFKA_KIND:
        got = data.get("kind") if isinstance(data, dict) else data
        raise SnapshotError(
            f'{source}: not a Kafka snapshot (expected an object with "kind": "kafka"), got {got!r}'[:400], got
        )
    raw_topics = data.get("topics", {})
    if not isinstance(raw_topics, dict):
        raise _fail(source, "topics", "expected an object", raw_topics)
    topics: dict[str, int] = {}
    topic_ids: dict[str, str] = {}
    for t, spec in raw_topics.items():
        if not isinstance(spec, dict):
            raise _fail(source, f"topics.{t}", "expected an object", spec)
        topics[t] = _count(source, f"topics.{t}.partitions", spec.get("partitions"))
        if spec.get("topicId") is not None:
            topic_ids[t] = _topic_id(source, f"topics.{t}.topicId", spec["topicId"])
    raw_groups = data.get("groups", {})
    if not isinstance(raw_groups, dict):
        raise _fail(source, "groups", "expected an object", raw_groups)
    groups: dict[str, KafkaGroup] = {}
    for g, spec in raw_groups.items():
        where = f"groups.{g}"
        if not isinstance(spec, dict):
            raise _fail(source, where, "expected an object", spec)
        members = spec.get("members", [])
        if not isinstance(members, list):
            raise _fail(source, f"{where}.members", "expected a list", members)
        parsed = tuple(_member(source, f"{where}.members[{i}]", m, topics) for i, m in enumerate(members))
        ids = [m.member_id for m in parsed]
        if len(set(ids)) != len(ids):
            dup = next(i for i in ids if ids.count(i) > 1)
            raise _fail(source, f"{where}.members", "member id listed twice", dup)
        groups[g] = KafkaGroup(
            name=g,
            state=_str(source, f"{where}.state", spec.get("state", "Unknown")),
            protocol_type=_str(source, f"{where}.protocolType", spec.get("protocolType", "consumer")),
            protocol=_str(source, f"{where}.protocol", spec.get("protocol", "")),
            members=parsed,
        )
    committed: dict[tuple[str, str, int], int] = {}
    for i, o in enumerate(_list(source, "offsets", data.get("offsets", []))):
        where = f"offsets[{i}]"
        if not isinstance(o, dict):
            raise _fail(source, where, "expected an object", o)
        committed[_group_partition(source, where, o)] = _offset(source, f"{where}.offset", o.get("offset"))
    ends: dict[tuple[str, int], int] = {}
    for i, o in enumerate(_list(source, "endOffsets", data.get("endOffsets", []))):
        where = f"endOffsets[{i}]"
        if not isinstance(o, dict):
            raise _fail(source, where, "expected an object", o)
        tp = (_str(source, f"{where}.topic", o.get("topic")), _count(source, f"{where}.partition", o.get("partition")))
        ends[tp] = _offset(source, f"{where}.offset", o.get("offset"))
    errors = []
    for i, e in enumerate(_list(source, "errors", data.get("errors", []))):
        if not isinstance(e, dict):
            raise _fail(source, f"errors[{i}]", "expected an object", e)
        errors.append({k: str(v) for k, v in e.items()})
    lag_times: dict[tuple[str, str, int], tuple[int, str]] = {}
    for i, o in enumerate(_list(source, "lagTimes", data.get("lagTimes", []))):
        where = f"lagTimes[{i}]"
        if not isinstance(o, dict):
            raise _fail(source, where, "expected an object", o)
        key = _group_partition(source, where, o)
        kind = _str(source, f"{where}.timestampType", o.get("timestampType"))
        lag_times[key] = (_offset(source, f"{where}.timestamp", o.get("timestamp")), kind)
    read_at = data.get("readAt")
    if read_at is not None:
        read_at = _offset(source, "readAt", read_at)
    return KafkaSnapshot(source, topics, groups, committed, ends, topic_ids, errors, lag_times, read_at)


def _list(source: str, where: str, value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise _fail(source, where, "expected a list", value)
    return value


def read_summary(data: Mapping[str, Any], snapshot: KafkaSnapshot) -> str:
    """What a live read holds (``snapshot`` of ``data``), for people."""
    members = sum(len(g.members) for g in snapshot.groups.values())
    return (
        f"{len(snapshot.topics):,} topics, {snapshot.partition_count():,} partitions, {len(snapshot.groups):,} groups, "
        f"{members:,} members, {len(snapshot.committed):,} committed offsets"
    )
