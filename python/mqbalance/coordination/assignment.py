"""The group's assignment from the members' registrations, by any strategy of the registry that
a ZooKeeper group can run (:meth:`StrategySpec.parse` with ``use=Use.ZOOKEEPER_EVERY_MEMBER`` or
``Use.ZOOKEEPER_LEADER``).

* RocketMQ's strategies, per topic over its subscribers, exactly as every Java client computes
  it (both lists Java-sorted; partition ``p`` led by broker ``b`` is the queue
  ``MessageQueue(topic, "broker-<b>", p)``). A member is one RocketMQ client id; its stream count
  is ignored. ``STICKY`` (leader mode) starts from the previous generation's owners.
* Kafka's ZooKeeper-era ``range`` / ``roundrobin`` over consumer threads ``<id>-<k>``
  (:func:`mqbalance.kafka.zk_assign`).
* ``sticky`` (leader mode): Kafka's sticky assignor over the whole group and the previous
  generation — the fewest moves that keep the group balanced across topics.

>>> from mqbalance.coordination.layout import MemberInfo
>>> m = {c: MemberInfo(c, {"t": 1}) for c in ("c1", "c2")}
>>> owners = group_assignment(StrategySpec.parse("AVG"), m, {"t": {0: 0, 1: 0, 2: 0}})
>>> sorted((tp.partition, who) for tp, (who, _) in owners.items())
[(0, 'c1'), (1, 'c1'), (2, 'c2')]
"""

from __future__ import annotations

from collections.abc import Mapping

from mqbalance.allocation.models import MessageQueue
from mqbalance.allocation.registry import Family, StrategyName, StrategySpec
from mqbalance.allocation.strategies import Sticky
from mqbalance.coordination.layout import MemberInfo
from mqbalance.kafka import Subscription, TopicPartition, assignor, zk_assign

__all__ = ["group_assignment"]

#: ``{TopicPartition: (member, consumer thread)}``
Owners = dict[TopicPartition, tuple[str, str]]


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
    subscribes, and partitions a strategy leaves to nobody, are absent. ``previous`` (the last
    generation's owners) is read by the strategies that need it (``STICKY``, Kafka's ``sticky``)."""
    subscribed = sorted({t for m in members.values() for t in m.subscription if partitions.get(t)})
    if not members or not subscribed:
        return {}
    if spec.info.family is Family.ROCKETMQ:
        return _rocketmq(spec, members, partitions, subscribed, previous or {})
    if spec.name is StrategyName.KAFKA_STICKY:
        return _kafka_sticky(members, partitions, subscribed, previous or {}, generation)
    return _kafka_threads(spec, members, partitions, subscribed)


def _rocketmq(
    spec: StrategySpec,
    members: Mapping[str, MemberInfo],
    partitions: Mapping[str, Mapping[int, int]],
    subscribed: list[str],
    previous: Mapping[TopicPartition, tuple[str, str]],
) -> Owners:
    owners: Owners = {}
    strategy = spec.build()
    for t in subscribed:
        queues = {p: MessageQueue(t, f"broker-{leader}", p) for p, leader in partitions[t].items()}
        ids = [c for c, m in members.items() if t in m.subscription]
        if isinstance(strategy, Sticky):
            held: dict[str, list[MessageQueue]] = {c: [] for c in ids}
            for tp, (owner, _) in previous.items():
                if tp.topic == t and owner in held and tp.partition in queues:
                    held[owner].append(queues[tp.partition])
            shares = strategy.assign(list(queues.values()), ids, java_sort=True, previous=held)
        else:
            shares = strategy.assign(list(queues.values()), ids, java_sort=True)
        for cid, qs in shares.items():
            for q in qs or ():
                owners[TopicPartition(t, q.queue_id)] = (cid, cid)
    return owners


def _kafka_threads(
    spec: StrategySpec,
    members: Mapping[str, MemberInfo],
    partitions: Mapping[str, Mapping[int, int]],
    subscribed: list[str],
) -> Owners:
    owners: Owners = {}
    counts = {t: max(partitions[t]) + 1 for t in subscribed}
    threads = zk_assign(
        spec.name.value,
        counts,
        {c: {t: n for t, n in m.subscription.items() if t in counts} for c, m in members.items()},
    )
    thread_owner = {f"{c}-{k}": c for c, m in members.items() for n in m.subscription.values() for k in range(n)}
    for thread, tps in threads.items():
        for tp in tps:
            if tp.partition in partitions[tp.topic]:
                owners[tp] = (thread_owner[thread], thread)
    return owners


def _kafka_sticky(
    members: Mapping[str, MemberInfo],
    partitions: Mapping[str, Mapping[int, int]],
    subscribed: list[str],
    previous: Mapping[TopicPartition, tuple[str, str]],
    generation: int | None,
) -> Owners:
    owners: Owners = {}
    counts = {t: max(partitions[t]) + 1 for t in subscribed}
    owned: dict[str, list[TopicPartition]] = {c: [] for c in members}
    for tp, (m, _) in previous.items():
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
