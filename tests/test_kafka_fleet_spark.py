"""The Kafka fleet audit on Spark (``audit_kafka_on_spark``, ``mqbalance audit --master`` /
``--remote`` with a Kafka snapshot): the groups audited in the executors and merged equal the
in-process audit of the whole snapshot — rows, findings, totals, fair shares and what-if — in a
local session and over a real Spark Connect server (``spark_cluster.py``)."""

from __future__ import annotations

import base64
import json
import random
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kafka_cluster import MQBALANCE
from mqbalance.fleet.findings import AuditResult
from mqbalance.fleet.kafka.audit import audit_kafka
from mqbalance.fleet.kafka.snapshot import kafka_snapshot_from_dict
from mqbalance.fleet.kafka.spark import audit_kafka_on_spark
from mqbalance.fleet.spark import local_session, stop_session
from spark_cluster import ConnectServer


def topic_id(n: int) -> str:
    return base64.urlsafe_b64encode(n.to_bytes(16, "big")).rstrip(b"=").decode()


def fleet(seed: int, groups: int = 23) -> dict[str, Any]:
    """Groups of different sizes and states, with idle members, partitions assigned twice or to
    nobody, lag and topic ids (so every candidate of the what-if runs)."""
    rng = random.Random(seed)
    topics = {f"t{i}": rng.randint(1, 12) for i in range(9)}
    data: dict[str, Any] = {
        "kind": "kafka",
        "topics": {t: {"partitions": n, "topicId": topic_id(i + 1)} for i, (t, n) in enumerate(topics.items())},
        "groups": {},
        "offsets": [],
        "endOffsets": [{"topic": t, "partition": p, "offset": 100} for t, n in topics.items() for p in range(n)],
    }
    for g in range(groups):
        subscribed = rng.sample(sorted(topics), rng.randint(1, 3))
        ids = [f"c{k}-{seed}-{g}" for k in range(rng.randint(1, 6))]
        owned: dict[str, dict[str, list[int]]] = {i: {} for i in ids}
        for t in subscribed:
            for p in range(topics[t]):
                if rng.random() < 0.9:
                    owned[rng.choice(ids)].setdefault(t, []).append(p)
                if rng.random() < 0.05:
                    owned[rng.choice(ids)].setdefault(t, []).append(p)
                data["offsets"].append(
                    {"group": f"g{g:02d}", "topic": t, "partition": p, "offset": rng.randint(0, 100)}
                )
        members = [
            {
                "memberId": i,
                "clientId": i.split("-")[0],
                "subscription": subscribed,
                "assignment": {t: sorted(set(ps)) for t, ps in owned[i].items()},
            }
            for i in ids
        ]
        data["groups"][f"g{g:02d}"] = {
            "state": rng.choice(["Stable"] * 5 + ["PreparingRebalance"]),
            "protocol": "range",
            "members": members,
        }
    return data


def same(a: AuditResult, b: AuditResult) -> None:
    assert a.rows == b.rows
    assert sorted(json.dumps(f.to_dict()) for f in a.findings) == sorted(json.dumps(f.to_dict()) for f in b.findings)
    assert a.what_if == b.what_if and a.totals == b.totals
    assert np.array_equal(a.fair_share, b.fair_share) and np.array_equal(a.fair_share_processes, b.fair_share_processes)


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    session = local_session(fast_start=True, driver_memory="1g")
    yield session
    stop_session(session)


@pytest.mark.parametrize("partitions", [None, 1, 5])
def test_on_spark_equals_in_process(spark: Any, partitions: int | None) -> None:
    snap, before = kafka_snapshot_from_dict(fleet(1)), kafka_snapshot_from_dict(fleet(2))
    # the same group names with other members: churn everywhere
    expected = audit_kafka(snap, before)
    assert expected.what_if and expected.findings and expected.totals.churned_queues > 0
    same(audit_kafka_on_spark(spark, snap, before, partitions=partitions), expected)
    same(audit_kafka_on_spark(spark, snap, what_if=("uniform",)), audit_kafka(snap, what_if=("uniform",)))


def test_cli_audit_over_spark_connect(spark_connect: ConnectServer, tmp_path: Path) -> None:
    path = tmp_path / "kafka.json"
    path.write_text(json.dumps(fleet(3)))
    args = ["audit", str(path), "--quiet"]
    here = subprocess.run(
        [str(MQBALANCE), *args, "--out", str(tmp_path / "a")], capture_output=True, text=True, timeout=120
    )
    remote = subprocess.run(
        [str(MQBALANCE), *args, "--out", str(tmp_path / "b"), "--remote", spark_connect.url],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert here.returncode == 0 and remote.returncode == 0, remote.stderr
    for name in ("findings.json", "group_topics.csv", "what_if.csv"):
        assert (tmp_path / "a" / name).read_text() == (tmp_path / "b" / name).read_text(), name
