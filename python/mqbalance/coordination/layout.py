"""The ZooKeeper layout (Kafka 0.8's, plus two nodes of the leader mode) and its data formats.

::

    /brokers/topics/<topic>                    {"version":1,"partitions":{"0":[0],...}}   (persistent)
    /consumers/<group>/ids/<client_id>         {"version":1,"subscription":{"<topic>":<streams>},
                                                "pattern":"static","timestamp":"<ms>", ...}  (ephemeral)
    /consumers/<group>/owners/<topic>/<p>      "<client_id>-<thread>"                      (ephemeral)
    /consumers/<group>/offsets/<topic>/<p>     "<offset>"                                  (persistent)
    /consumers/<group>/leader/n_<seq>          "<client_id>"         leader mode: election (ephemeral sequential)
    /consumers/<group>/assignment              {"generation":g,...}  leader mode: the published assignment

A RocketMQ strategy sees partition ``p`` of ``topic`` as ``MessageQueue(topic, "broker-<leader>", p)``
where ``<leader>`` is the first replica in the partition node (``broker-0`` for topics made by
:func:`set_partitions` with one broker).

>>> parse_partitions(encode_partitions(3, brokers=2))
{0: 0, 1: 1, 2: 0}
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mqbalance.coordination.errors import InvalidCoordinationConfigError, NoPartitionsError
from mqbalance.kafka import TopicPartition

__all__ = [
    "TOPICS",
    "GroupPaths",
    "MemberInfo",
    "encode_member",
    "parse_member",
    "encode_partitions",
    "parse_partitions",
    "parse_source_rate",
    "PublishedAssignment",
    "encode_assignment",
    "parse_assignment",
    "set_partitions",
]

log = logging.getLogger("mqbalance.coordination")

TOPICS = "/brokers/topics"


def _check_name(kind: str, name: str) -> str:
    if not isinstance(name, str) or not name or "/" in name or name in (".", "..") or "\x00" in name:
        raise InvalidCoordinationConfigError(f"{kind} must be a non-empty string without '/', got {name!r}", name)
    return name


@dataclass(frozen=True)
class GroupPaths:
    """Every path of one group (``GroupPaths("g").owner("t", 3)`` → ``/consumers/g/owners/t/3``)."""

    group: str

    def __post_init__(self) -> None:
        _check_name("group", self.group)

    @property
    def root(self) -> str:
        return f"/consumers/{self.group}"

    @property
    def ids(self) -> str:
        return f"{self.root}/ids"

    @property
    def owners(self) -> str:
        return f"{self.root}/owners"

    @property
    def offsets(self) -> str:
        return f"{self.root}/offsets"

    @property
    def leader(self) -> str:
        return f"{self.root}/leader"

    @property
    def assignment(self) -> str:
        return f"{self.root}/assignment"

    def member(self, client_id: str) -> str:
        return f"{self.ids}/{client_id}"

    def owner(self, topic: str, partition: int) -> str:
        return f"{self.owners}/{topic}/{partition}"

    def offset(self, topic: str, partition: int) -> str:
        return f"{self.offsets}/{topic}/{partition}"

    @staticmethod
    def topic(topic: str) -> str:
        return f"{TOPICS}/{topic}"


@dataclass(frozen=True)
class MemberInfo:
    """One member as registered under ``ids``: its subscription (topic → stream count) and the
    strategy / mode it runs (ours; absent from Kafka's own registrations)."""

    client_id: str
    subscription: Mapping[str, int]
    strategy: str | None = None
    mode: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


def encode_member(info: MemberInfo) -> bytes:
    data: dict[str, Any] = {
        "version": 1,
        "subscription": dict(info.subscription),
        "pattern": "static",
        "timestamp": str(int(time.time() * 1000)),
    }
    if info.strategy is not None:
        data["strategy"] = info.strategy
    if info.mode is not None:
        data["mode"] = info.mode
    data.update(info.extra)
    return json.dumps(data, separators=(",", ":")).encode()


def parse_member(path: str, client_id: str, raw: bytes | None) -> MemberInfo | None:
    """The member registered at ``path``, or ``None`` (with a warning naming the node) when its data
    is not a Kafka consumer registration."""
    try:
        data = json.loads((raw or b"").decode())
        sub = data["subscription"]
        if not isinstance(sub, dict) or not sub:
            raise ValueError("subscription must be a non-empty object")
        subscription: dict[str, int] = {}
        for t, n in sub.items():
            if not isinstance(n, int) or isinstance(n, bool) or n < 1:
                raise ValueError(f"stream count of {t!r} must be an int >= 1")
            subscription[t] = n
        strategy = data.get("strategy")
        mode = data.get("mode")
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as e:
        log.warning("ignoring member node %s: malformed registration (%s): %.80r", path, e, raw)
        return None
    return MemberInfo(
        client_id,
        subscription,
        strategy if isinstance(strategy, str) else None,
        mode if isinstance(mode, str) else None,
    )


def encode_partitions(count: int, *, brokers: int = 1, source_rate: float | None = None) -> bytes:
    """Kafka's topic node: partition ``p`` led by broker ``p % brokers``. ``source_rate`` (messages
    per second per partition) describes the synthetic source of ``mqbalance zk-consume``."""
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise InvalidCoordinationConfigError(f"partition count must be an int >= 1, got {count!r}", count)
    if not isinstance(brokers, int) or isinstance(brokers, bool) or brokers < 1:
        raise InvalidCoordinationConfigError(f"broker count must be an int >= 1, got {brokers!r}", brokers)
    data: dict[str, Any] = {"version": 1, "partitions": {str(p): [p % brokers] for p in range(count)}}
    if source_rate is not None:
        if not source_rate > 0:
            raise InvalidCoordinationConfigError(f"source rate must be > 0, got {source_rate!r}", source_rate)
        data["mqbalance_source"] = {"rate": source_rate}
    return json.dumps(data, separators=(",", ":")).encode()


def parse_partitions(raw: bytes | None, path: str = "?") -> dict[int, int] | None:
    """``{partition: leader broker}`` from a topic node, or ``None`` (with a warning) when malformed."""
    try:
        data = json.loads((raw or b"").decode())
        parts = data["partitions"]
        out = {}
        for p, replicas in parts.items():
            leader = replicas[0] if isinstance(replicas, list) and replicas else 0
            if not isinstance(leader, int):
                raise ValueError(f"replicas of partition {p} must be broker ids")
            out[int(p)] = leader
        if any(p < 0 for p in out):
            raise ValueError("negative partition id")
        return dict(sorted(out.items()))
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as e:
        log.warning("ignoring topic node %s: malformed partition data (%s): %.80r", path, e, raw)
        return None


def parse_source_rate(raw: bytes | None) -> float | None:
    """The synthetic source rate stored in a topic node by :func:`set_partitions`, if any."""
    try:
        rate = json.loads((raw or b"").decode())["mqbalance_source"]["rate"]
        return float(rate) if isinstance(rate, int | float) and rate > 0 else None
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None


@dataclass(frozen=True)
class PublishedAssignment:
    """What the leader publishes: the generation, the leader's id and the owner (member, thread) of
    every partition."""

    generation: int
    leader: str
    strategy: str
    owners: Mapping[TopicPartition, tuple[str, str]]

    def of(self, member: str) -> dict[TopicPartition, str]:
        """The partitions of ``member`` with their consumer thread ids."""
        return {tp: thread for tp, (m, thread) in self.owners.items() if m == member}


def encode_assignment(a: PublishedAssignment) -> bytes:
    members = sorted({m for m, _ in a.owners.values()})
    index = {m: i for i, m in enumerate(members)}
    topics: dict[str, list[list[Any]]] = {}
    for tp, (m, thread) in sorted(a.owners.items()):
        suffix = thread[len(m) :] if thread.startswith(m) else None
        topics.setdefault(tp.topic, []).append([tp.partition, index[m]] + ([] if suffix == "" else [thread]))
    data = {
        "generation": a.generation,
        "leader": a.leader,
        "strategy": a.strategy,
        "members": members,
        "topics": topics,
    }
    return json.dumps(data, separators=(",", ":")).encode()


def parse_assignment(raw: bytes | None, path: str = "?") -> PublishedAssignment | None:
    """The published assignment, ``None`` when the node is empty (no leader published yet) or
    malformed (with a warning naming the node)."""
    if not raw or raw in (b"{}", b""):
        return None
    try:
        data = json.loads(raw.decode())
        members = data["members"]
        owners: dict[TopicPartition, tuple[str, str]] = {}
        for topic, rows in data["topics"].items():
            for row in rows:
                m = members[row[1]]
                owners[TopicPartition(topic, int(row[0]))] = (m, row[2] if len(row) > 2 else m)
        gen = data["generation"]
        if not isinstance(gen, int) or isinstance(gen, bool):
            raise ValueError("generation must be an int")
        return PublishedAssignment(gen, str(data.get("leader", "")), str(data.get("strategy", "")), owners)
    except (ValueError, KeyError, TypeError, IndexError, AttributeError, UnicodeDecodeError) as e:
        log.warning("ignoring assignment node %s: malformed data (%s): %.80r", path, e, raw)
        return None


def set_partitions(
    client: Any, topic: str, count: int, *, brokers: int = 1, source_rate: float | None = None, create: bool = True
) -> None:
    """Create or change the partition node of ``topic`` through a started ``KazooClient`` (what a
    Kafka controller would write). Members watching it rebalance.

    ``source_rate`` records the rate of the synthetic source used by ``mqbalance zk-consume``.
    """
    path = GroupPaths.topic(_check_name("topic", topic))
    data = encode_partitions(count, brokers=brokers, source_rate=source_rate)
    if client.exists(path) is not None:
        client.set(path, data)
    elif create:
        client.create(path, data, makepath=True)
    else:
        raise NoPartitionsError(f"topic {topic!r} has no partition node {path}", topic)
