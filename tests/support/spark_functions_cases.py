"""Generated inputs for :mod:`mqbalance.spark` and the answers of the in-process path
(``bulk.owners`` per (group, topic), ``mqbalance.kafka.assignor``) to compare with: shared by the
local-mode, standalone-cluster and Spark Connect tests. Run as a script (``python
tests/support/spark_functions_cases.py --master URL`` or ``--remote sc://…``) it runs the comparison in a
driver of its own and prints ``ok <rows>``.
"""

from __future__ import annotations

import argparse
import random
import sys
import warnings
from typing import Any

from mqbalance.allocation.bulk import owners
from mqbalance.allocation.models import MessageQueue
from mqbalance.allocation.ordering import sort_client_ids, sort_queues
from mqbalance.allocation.registry import StrategySpec
from mqbalance.exceptions import PreviousAssignmentWarning
from mqbalance.kafka import Subscription, TopicPartition, assignor

QUEUE_DDL = "group string, topic string, broker_name string, queue_id int, previous string"
CONSUMER_DDL = "group string, client_id string"
PARTITION_DDL = "group string, topic string, partition int, previous string"
MEMBER_DDL = "group string, member_id string, topic string"

#: One group per strategy configuration (and a few more with the default).
STRATEGIES: list[Any] = [
    "AVG",
    "AVG_BY_CIRCLE",
    {"name": "CONSISTENT_HASH", "virtualNodeCnt": 3},
    {"name": "CONSISTENT_HASH_BOUNDED", "epsilon": 0.5},
    {"name": "MACHINE_ROOM", "consumeridcs": ["hz", "sh"]},
    "MACHINE_ROOM_NEARBY-CONSISTENT_HASH",
    "STICKY",
]

_TOPICS = ["T", "orders", "订单", "\U0001f600t", "\uff01t"]  # the last two: Java's UTF-16 order differs
_ROOMS = ["hz", "sh", "bj"]


def queue_case(seed: int, *, groups: int = 14) -> tuple[list[tuple[Any, ...]], list[tuple[str, str]], dict[str, Any]]:
    """Queue rows ``(group, topic, broker_name, queue_id, previous)``, consumer rows, and a
    strategy per group (every configuration of :data:`STRATEGIES`, the rest left to the default)."""
    rnd = random.Random(seed)
    queues: list[tuple[Any, ...]] = []
    consumers: list[tuple[str, str]] = []
    by_group: dict[str, Any] = {}
    for k in range(groups):
        g = f"cg-{k}" if k % 5 else f"\U0001f600cg-{k}"
        if k < len(STRATEGIES):
            by_group[g] = STRATEGIES[k]
        ids = [f"{rnd.choice(_ROOMS)}@10.0.{k}.{i}@{rnd.randint(1, 3)}" for i in range(rnd.randint(0 if k else 1, 6))]
        if ids and rnd.random() < 0.3:
            ids.append(ids[0])  # the same client id twice: the clients see it twice
        consumers.extend((g, c) for c in ids)
        for t in rnd.sample(_TOPICS, rnd.randint(1, 3)):
            for b in rnd.sample([f"{r}@broker-{x}" for r in _ROOMS for x in "ab"], rnd.randint(1, 3)):
                for q in rnd.sample(range(12), rnd.randint(1, 8)):
                    prev = rnd.choice([*ids, None, "gone@1"]) if ids else None
                    queues.append((g, t, b, q, prev))
    rnd.shuffle(queues)
    return queues, consumers, by_group


def expected_queue_owners(
    queues: list[tuple[Any, ...]], consumers: list[tuple[str, str]], by_group: dict[str, Any], default: Any = "AVG"
) -> dict[tuple[str, str, str, int], str | None]:
    """The owner of every queue as ``bulk.owners`` computes it, pair by pair."""
    ids: dict[str, list[str]] = {}
    for g, c in consumers:
        ids.setdefault(g, []).append(c)
    pairs: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
    for row in queues:
        pairs.setdefault((row[0], row[1]), []).append(row)
    out: dict[tuple[str, str, str, int], str | None] = {}
    for (g, t), rows in pairs.items():
        members = ids.get(g, [])
        if not members:
            out.update({(g, t, r[2], r[3]): None for r in rows})
            continue
        spec = StrategySpec.parse(by_group.get(g, default))
        previous = [r[4] for r in rows] if spec.info.needs_previous else None
        with warnings.catch_warnings():  # previous owners that left the group: ignored, as in the executors
            warnings.simplefilter("ignore", PreviousAssignmentWarning)
            got = owners(
                spec.build(), [t] * len(rows), [r[2] for r in rows], [r[3] for r in rows], members, previous=previous
            )
        out.update({(g, t, r[2], r[3]): (members[i] if i >= 0 else None) for r, i in zip(rows, got.tolist())})
    return out


def check_queue_rows(rows: list[dict[str, Any]], expected: dict[tuple[str, str, str, int], str | None]) -> None:
    """Same owners as ``expected``, every queue once, and each group's rows together in Java order."""
    got = {(r["group"], r["topic"], r["broker_name"], r["queue_id"]): r["client_id"] for r in rows}
    assert len(got) == len(rows) == len(expected)
    assert got == expected
    seen: list[str] = []
    for r in rows:
        if not seen or seen[-1] != r["group"]:
            assert r["group"] not in seen, f"rows of group {r['group']!r} are not together"
            seen.append(r["group"])
    for g in seen:
        mine = [MessageQueue(r["topic"], r["broker_name"], r["queue_id"]) for r in rows if r["group"] == g]
        assert mine == sort_queues(mine), f"group {g!r} is not in Java MessageQueue order"
    # Groups in Java String order inside each Python call: checked where one call holds them all.


def java_group_order(groups: list[str]) -> list[str]:
    return sort_client_ids(groups)


def partition_case(seed: int, *, groups: int = 8) -> tuple[list[tuple[Any, ...]], list[tuple[str, str, str]]]:
    """Partition rows ``(group, topic, partition, previous)`` and member rows ``(group, member_id, topic)``."""
    rnd = random.Random(seed)
    partitions: list[tuple[Any, ...]] = []
    members: list[tuple[str, str, str]] = []
    for k in range(groups):
        g = f"kg-{k}"
        topics = rnd.sample(["t0", "t1", "t2", "\U0001f600t"], rnd.randint(1, 4))
        mids = [f"m-{i}" for i in range(rnd.randint(0, 5))]
        for m in mids:
            for t in rnd.sample(topics, rnd.randint(1, len(topics))):
                members.append((g, m, t))
        for t in topics:
            for p in range(rnd.randint(1, 7)):
                partitions.append((g, t, p, rnd.choice([*mids, None]) if mids else None))
    rnd.shuffle(partitions)
    return partitions, members


def expected_partition_owners(
    partitions: list[tuple[Any, ...]], members: list[tuple[str, str, str]], name: str, *, with_previous: bool
) -> dict[tuple[str, str, int], str | None]:
    """The owner of every partition as ``mqbalance.kafka.assignor(name).assign`` computes it."""
    out: dict[tuple[str, str, int], str | None] = {}
    for g in sorted({r[0] for r in partitions}):
        rows = [r for r in partitions if r[0] == g]
        counts: dict[str, int] = {}
        for r in rows:
            counts[r[1]] = counts.get(r[1], 0) + 1
        topics_of: dict[str, list[str]] = {}
        for gg, m, t in members:
            if gg == g:
                topics_of.setdefault(m, []).append(t)
        owned = {m: [TopicPartition(r[1], r[2]) for r in rows if r[3] == m] for m in topics_of}
        subs = {m: Subscription(ts, owned_partitions=owned[m] if with_previous else ()) for m, ts in topics_of.items()}
        given = assignor(name).assign(counts, subs) if subs else {}
        out.update({(g, r[1], r[2]): None for r in rows})
        for m, tps in given.items():
            for tp in tps:
                out[(g, tp.topic, tp.partition)] = m
    return out


def run_all(spark: Any) -> int:
    """Every comparison on ``spark``; returns the number of rows compared."""
    from mqbalance.spark import assign_partitions, assign_queues

    queues, consumers, by_group = queue_case(11)
    q = spark.createDataFrame(queues, QUEUE_DDL)
    c = spark.createDataFrame(consumers, CONSUMER_DDL)
    rows = [r.asDict() for r in assign_queues(q, c, "AVG", strategy_by_group=by_group, previous="previous").collect()]
    check_queue_rows(rows, expected_queue_owners(queues, consumers, by_group))
    total = len(rows)
    partitions, members = partition_case(5)
    p = spark.createDataFrame(partitions, PARTITION_DDL)
    m = spark.createDataFrame(members, MEMBER_DDL)
    for name in ("range", "roundrobin", "sticky", "cooperative-sticky"):
        sticky = "sticky" in name
        got = assign_partitions(p, m, name, previous="previous" if sticky else None).collect()
        expected = expected_partition_owners(partitions, members, name, with_previous=sticky)
        assert {(r["group"], r["topic"], r["partition"]): r["member_id"] for r in got} == expected, name
        total += len(got)
    return total


def main() -> int:
    parser = argparse.ArgumentParser()
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--master")
    where.add_argument("--remote")
    args = parser.parse_args()
    from mqbalance.fleet.spark import session

    with session(args.master, remote=args.remote, fast_start=True, driver_memory="1g") as spark:
        print("ok", run_all(spark))
    return 0


if __name__ == "__main__":
    sys.exit(main())
