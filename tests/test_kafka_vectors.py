"""Kafka golden vectors: range / roundrobin / ZooKeeper-era exact (Kafka's own Java and Scala
classes); sticky / cooperative-sticky by every `required` property (the outputs are not unique)."""

from __future__ import annotations

from typing import Any

import pytest

from mqbalance.kafka import TopicPartition, assignor, check_assignment, zk_assign
from vector_cases import assignment_sets, expected_sets, kafka_subscriptions, load_vectors

RANGE = load_vectors("kafka/range.jsonl.gz")
ROUNDROBIN = load_vectors("kafka/roundrobin.jsonl.gz")
STICKY = load_vectors("kafka/sticky.jsonl.gz")
ZK = load_vectors("kafka/zk_range.jsonl.gz") + load_vectors("kafka/zk_roundrobin.jsonl.gz")


@pytest.mark.parametrize("case", RANGE + ROUNDROBIN, ids=[c["id"] for c in RANGE + ROUNDROBIN])
def test_range_and_roundrobin_exact(case: dict[str, Any]) -> None:
    got = assignor(case["assignor"]).assign(case["topics"], kafka_subscriptions(case))
    assert assignment_sets(got) == expected_sets(case["expected"])
    for tps in got.values():
        assert tps == sorted(tps)


@pytest.mark.parametrize("case", ZK, ids=[c["id"] for c in ZK])
def test_zookeeper_era_exact(case: dict[str, Any]) -> None:
    consumers = {c["consumer_id"]: c["subscription"] for c in case["consumers"]}
    got = zk_assign(case["assignor"].removeprefix("zk-"), case["topics"], consumers)
    owners = {t: {} for t in case["expected_owners"]}
    for thread, tps in got.items():
        for tp in tps:
            owners.setdefault(tp.topic, {})[str(tp.partition)] = thread
    assert {t: o for t, o in owners.items() if o} == {t: o for t, o in case["expected_owners"].items() if o}


@pytest.mark.parametrize("case", STICKY, ids=[c["id"] for c in STICKY])
def test_sticky_required_properties(case: dict[str, Any]) -> None:
    cooperative = case["assignor"] == "cooperative-sticky"
    subs = kafka_subscriptions(case)
    got = assignor(case["assignor"]).assign(case["topics"], subs)
    assert set(got) == set(subs)
    report = check_assignment(case["topics"], subs, got, cooperative=cooperative)
    assert not report.problems, report.problems[:3]
    required = case["required"]
    if required.get("balanced") and not cooperative:
        assert report.balanced
    if "retained_at_least" in required:
        assert report.retained >= required["retained_at_least"], (report.retained, required["retained_at_least"])
        assert report.max_retainable == required["retained_at_least"]


def test_vector_counts() -> None:
    assert (len(RANGE), len(ROUNDROBIN), len(STICKY), len(ZK)) == (923, 924, 602, 901)


def _reference_assignment(case: dict[str, Any], key: str) -> dict[str, list[TopicPartition]]:
    return {m: [TopicPartition(t, p) for t, ps in per.items() for p in ps] for m, per in case[key].items()}


@pytest.mark.parametrize("case", STICKY, ids=[c["id"] for c in STICKY])
def test_checker_agrees_with_the_vectors_on_kafkas_own_outputs(case: dict[str, Any]) -> None:
    """`check_assignment` is the oracle above, so it is checked too: on Kafka's (and kafka-python's)
    recorded outputs it finds what the vectors recorded — retention, balance, and a problem
    exactly when a required property is violated."""
    cooperative = case["assignor"] == "cooperative-sticky"
    subs = kafka_subscriptions(case)
    for key, props_key in (
        ("reference_output", "reference_properties"),
        ("kafka_python_output", "kafka_python_properties"),
    ):
        if not case.get(key):
            continue
        props = case[props_key]
        report = check_assignment(case["topics"], subs, _reference_assignment(case, key), cooperative=cooperative)
        assert report.retained == props["retained"]
        if not cooperative:
            assert report.balanced == props["balanced"]
        if "max_retainable" in props:
            assert report.max_retainable == props["max_retainable"]
        required = [
            p
            for p in ("at_most_once", "only_subscribers", "no_unknown_partitions")
            + (("safe",) if cooperative else ("complete",))
            if p in props
        ]
        assert bool(report.problems) == (not all(props[p] for p in required)), (key, report.problems, props)
