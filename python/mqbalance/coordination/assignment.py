"""The group's assignment from the members' registrations, by any strategy we have.

* RocketMQ's strategies (``AVG``, ``AVG_BY_CIRCLE``, ``CONSISTENT_HASH``, ``MACHINE_ROOM``,
  ``MACHINE_ROOM_NEARBY-…``, ``CONFIG``, or an :class:`~mqbalance.AllocateStrategy` instance), per
  topic over its subscribers, exactly as every Java client computes it (both lists Java-sorted).
  A member is one RocketMQ client id; its stream count is ignored.
* Kafka's ZooKeeper-era ``range`` / ``roundrobin`` over consumer threads ``<id>-<k>``
  (:func:`mqbalance.kafka.zk_assign`).
* ``sticky`` (leader mode only): Kafka's sticky assignor over the previous assignment — the fewest
  moves that keep the group balanced.

>>> from mqbalance.coordination.layout import MemberInfo
>>> m = {c: MemberInfo(c, {"t": 1}) for c in ("c1", "c2")}
>>> owners = group_assignment(resolve_strategy("AVG"), m, {"t": {0: 0, 1: 0, 2: 0}})
>>> sorted((tp.partition, who) for tp, (who, _) in owners.items())
[(0, 'c1'), (1, 'c1'), (2, 'c2')]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mqbalance.exceptions import UnknownStrategyError
from mqbalance.kafka import Subscription, TopicPartition, assignor, zk_assign
from mqbalance.models import MessageQueue
from mqbalance.strategies import AllocateStrategy, StrategyName, strategy

from .layout import MemberInfo

__all__ = ["StrategySpec", "resolve_strategy", "group_assignment", "KAFKA_ZK_STRATEGIES", "STICKY"]

KAFKA_ZK_STRATEGIES = ("range", "roundrobin")
STICKY = "sticky"

Owners = dict[TopicPartition, tuple[str, str]]


@dataclass(frozen=True)
class StrategySpec:
    """A resolved strategy: ``kind`` is ``"rocketmq"``, ``"kafka-zk"`` or ``"sticky"``."""

    name: str
    kind: str
    rocketmq: AllocateStrategy | None = None


def resolve_strategy(spec: str | AllocateStrategy, **params: Any) -> StrategySpec:
    """``"AVG"`` … (RocketMQ names, ``params`` passed to :func:`mqbalance.strategy`), ``"range"``,
    ``"roundrobin"``, ``"sticky"``, or a strategy object."""
    if isinstance(spec, AllocateStrategy):
        return StrategySpec(spec.name, "rocketmq", spec)
    if not isinstance(spec, str):
        raise UnknownStrategyError(f"a strategy is a name or an AllocateStrategy, got {spec!r}", spec)
    if spec in KAFKA_ZK_STRATEGIES:
        return StrategySpec(spec, "kafka-zk")
    if spec == STICKY:
        return StrategySpec(spec, "sticky")
    try:
        s = strategy(spec, **params)
    except UnknownStrategyError:
        known = ", ".join([*(n.value for n in StrategyName), *KAFKA_ZK_STRATEGIES, STICKY])
        raise UnknownStrategyError(f"unknown strategy {spec!r}; known: {known}", spec) from None
    return StrategySpec(s.name, "rocketmq", s)


def group_assignment(
    spec: StrategySpec,
    members: Mapping[str, MemberInfo],
    partitions: Mapping[str, Mapping[int, int]],
    *,
    previous: Mapping[TopicPartition, tuple[str, str]] | None = None,
    generation: int | None = None,
) -> Owners:
    """``{TopicPartition: (member, thread)}`` for every partition of every subscribed topic with
    partitions (``partitions``: topic → {partition: leader broker}). Partitions of a topic nobody
    subscribes, and partitions a strategy leaves to nobody, are absent."""
    owners: Owners = {}
    subscribed = sorted({t for m in members.values() for t in m.subscription if partitions.get(t)})
    if not members or not subscribed:
        return owners
    if spec.kind == "rocketmq":
        assert spec.rocketmq is not None
        for t in subscribed:
            queues = [MessageQueue(t, f"broker-{leader}", p) for p, leader in partitions[t].items()]
            ids = [c for c, m in members.items() if t in m.subscription]
            for cid, qs in spec.rocketmq.assign(queues, ids, java_sort=True).items():
                for q in qs or ():
                    owners[TopicPartition(t, q.queue_id)] = (cid, cid)
        return owners
    if spec.kind == "kafka-zk":
        counts = {t: max(partitions[t]) + 1 for t in subscribed}
        threads = zk_assign(
            name=spec.name,
            consumers={c: {t: n for t, n in m.subscription.items() if t in counts} for c, m in members.items()},
            partitions_per_topic=counts,
        )
        thread_owner = {f"{c}-{k}": c for c, m in members.items() for n in m.subscription.values() for k in range(n)}
        for thread, tps in threads.items():
            for tp in tps:
                if tp.partition in partitions[tp.topic]:
                    owners[tp] = (thread_owner[thread], thread)
        return owners
    # sticky: Kafka's assignor over the previous owners that are still members
    counts = {t: max(partitions[t]) + 1 for t in subscribed}
    owned: dict[str, list[TopicPartition]] = {c: [] for c in members}
    for tp, (m, _) in (previous or {}).items():
        if m in owned and tp.topic in counts and tp.partition in partitions[tp.topic]:
            owned[m].append(tp)
    subs = {
        c: Subscription([t for t in m.subscription if t in counts], owned_partitions=owned[c], generation=generation)
        for c, m in members.items()
    }
    for cid, tps in assignor("sticky").assign(counts, subs).items():
        for tp in tps:
            if tp.partition in partitions[tp.topic]:
                owners[tp] = (cid, cid)
    return owners
