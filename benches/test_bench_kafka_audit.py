"""The Kafka fleet audit's what-if against the same what-if computed with kafka-python's own
assignors, in the same run.

Ours: ``audit_kafka(snapshot, what_if=("range", "roundrobin"))`` — the whole audit (rows, findings)
plus, per group and candidate, the partitions that would move, the most one member would hold and
the members left idle. The baseline computes only that what-if, in plain Python, the way a user
would with kafka-python: per group, a ``ClusterMetadata`` and ``JoinGroupResponseMember`` s whose
subscriptions went through the wire, each assignor's ``.assign``, then the same three numbers.
Both give the same rows (checked), so the ratio is like for like (ours does the findings on top).
"""

from __future__ import annotations

import random
from typing import Any

from kafka.cluster import ClusterMetadata
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.protocol.consumer.group import JoinGroupResponse
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

from mqbalance.fleet.kafka.audit import audit_kafka
from mqbalance.fleet.kafka.snapshot import KafkaSnapshot, kafka_snapshot_from_dict

PEERS = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}


def fleet(groups: int, members: int, topics: int, partitions: int) -> dict[str, Any]:
    """Stable groups whose members hold a round-robin split of their topics (so every candidate
    has something to move)."""
    rng = random.Random(27)
    data: dict[str, Any] = {"kind": "kafka", "topics": {}, "groups": {}}
    for g in range(groups):
        names = [f"g{g:04d}-t{t}" for t in range(topics)]
        for n in names:
            data["topics"][n] = {"partitions": partitions}
        tps = [(n, p) for n in names for p in range(partitions)]
        rng.shuffle(tps)
        ids = [f"consumer-{m:03d}-{rng.getrandbits(32):08x}" for m in range(members)]
        owned: dict[str, dict[str, list[int]]] = {i: {} for i in ids}
        for k, (t, p) in enumerate(tps):
            owned[ids[k % members]].setdefault(t, []).append(p)
        data["groups"][f"group-{g:04d}"] = {
            "state": "Stable",
            "protocol": "range",
            "members": [{"memberId": i, "subscription": names, "assignment": owned[i]} for i in ids],
        }
    return data


def kafka_python_what_if(snap: KafkaSnapshot, names: tuple[str, ...]) -> list[tuple[Any, ...]]:
    rows = []
    for g, group in sorted(snap.groups.items()):
        cluster = ClusterMetadata()
        counts = {t: snap.topics[t] for m in group.members for t in m.subscription or ()}
        cluster._partitions = {t: dict.fromkeys(range(n)) for t, n in counts.items()}
        members = [
            JoinGroupResponse.JoinGroupResponseMember(
                member_id=m.member_id,
                group_instance_id=None,
                metadata=ConsumerProtocolSubscription.decode(
                    ConsumerProtocolSubscription(0, sorted(m.subscription or ()), b"").encode()
                ),
            )
            for m in group.members
        ]
        now = {tp: m.member_id for m in group.members for tp in m.assignment or ()}
        for name in names:
            got = PEERS[name].assign(cluster, members)
            owner = {(t, p): mid for mid, a in got.items() for t, ps in a.assigned_partitions for p in ps}
            for t in sorted(counts):
                loads = [sum(1 for (tt, _), o in owner.items() if tt == t and o == m.member_id) for m in group.members]
                moved = sum(1 for p in range(counts[t]) if owner.get((t, p)) != now.get((t, p)))
                rows.append((g, t, name, moved, max(loads), loads.count(0)))
    return sorted(rows)


def test_kafka_audit_what_if_vs_kafka_python(compare, full_size):
    snap = kafka_snapshot_from_dict(fleet(200 if full_size else 8, 20, 5, 16))
    names = ("range", "roundrobin")

    def check(ours, baseline):
        got = sorted((w.group, w.topic, w.strategy, w.moved, w.max_load, w.idle) for w in ours.what_if)
        assert got == baseline and len(got) == len(snap.groups) * 5 * 2

    compare(
        lambda: audit_kafka(snap, what_if=names),
        lambda: kafka_python_what_if(snap, names),
        check=check,
        rounds=5,
        label="kafka-python's assignors (what-if only)",
    )
