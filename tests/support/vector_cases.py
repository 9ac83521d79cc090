"""Golden-vector loading and strategy building from vector params (shared by tests)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from mqbalance import IllegalArgumentError, MessageQueue, MQBalanceError, StrategySpec
from mqbalance.exceptions import ConsumerIdcsNotSetError
from mqbalance.kafka import Subscription, TopicPartition

VECTORS = Path(__file__).parent.parent / "vectors"


def load_vectors(name: str) -> list[dict[str, Any]]:
    with gzip.open(VECTORS / name, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def mq(d: dict[str, Any]) -> MessageQueue:
    return MessageQueue(d["topic"], d["brokerName"], d["queueId"])


def build_strategy(name: str, params: dict[str, Any]):
    """The strategy a vector case describes (params use the Java field names)."""
    return StrategySpec.parse({"name": name, **params}).build()


def _outcome_matches(s, case: dict[str, Any], cid: str | None, want: Any, mq_all, cid_all) -> None:
    group = case["consumerGroup"]
    if isinstance(want, dict):
        with pytest.raises(MQBalanceError) as info:
            s.allocate(group, cid, mq_all, cid_all)
        err = info.value
        if want["error"] == "IllegalArgumentException":
            assert isinstance(err, IllegalArgumentError), repr(err)
            assert err.java_message == want["message"]
        else:
            assert want["error"] == "NullPointerException"
            assert isinstance(err, ConsumerIdcsNotSetError), repr(err)
        return
    got = s.allocate(group, cid, mq_all, cid_all)
    if want is None:
        assert got is None
        return
    src = mq_all if case["strategy"] != "CONFIG" else s.message_queues
    expected = [src[i] for i in want]
    assert got == expected, (case["id"], cid)


def check_allocate_case(case: dict[str, Any]) -> None:
    """Assert that our strategy gives every outcome a RocketMQ allocation case (a line of
    ``rocketmq/allocate*.jsonl``, or an oracle reply merged into its request) records."""
    if "constructorError" in case:
        with pytest.raises(IllegalArgumentError) as info:
            build_strategy(case["strategy"], case["params"])
        assert info.value.java_message == case["constructorError"]["message"]
        return
    s = build_strategy(case["strategy"], case["params"])
    assert s.name == case["strategyName"]
    mq_all = None if case["mqAll"] is None else [mq(q) for q in case["mqAll"]]
    cid_all = case["cidAll"]
    for cid, want in case["expected"].items():
        _outcome_matches(s, case, cid, want, mq_all, cid_all)
    for probe in case.get("probes", []):
        _outcome_matches(s, case, probe["currentCID"], probe["result"], mq_all, cid_all)


def kafka_subscriptions(case: dict[str, Any]) -> dict[str, Subscription]:
    """The members of a Kafka client-side case (``kafka/*.jsonl``) as our subscriptions."""
    out = {}
    for m in case["members"]:
        owned = [TopicPartition(t, p) for t, ps in (m.get("owned") or {}).items() for p in ps]
        out[m["member_id"]] = Subscription(m["topics"], owned, m.get("generation"), m.get("group_instance_id"))
    return out


def assignment_sets(assignment: dict[str, list[TopicPartition]]) -> dict[str, set[TopicPartition]]:
    return {m: set(tps) for m, tps in assignment.items()}


def expected_sets(expected: dict[str, dict[str, list[int]]]) -> dict[str, set[TopicPartition]]:
    return {m: {TopicPartition(t, p) for t, ps in per.items() for p in ps} for m, per in expected.items()}
