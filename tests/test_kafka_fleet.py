"""The Kafka fleet snapshot and audit: ``mqbalance snapshot --bootstrap`` against Apache Kafka
4.4.0 (``kafka_java_cluster.py``) with a real kafka-python group, and ``mqbalance audit`` /
``assign`` over Kafka snapshots.

What the snapshot reads is checked against what the members themselves recorded (their member ids,
subscriptions and commits) and what the test produced (partition counts, log-end offsets); the
decoding of members' metadata and assignment bytes is checked on bytes kafka-python's own
consumer-protocol encoder writes, and the audit's partition findings on snapshots in Apache Kafka's
layout, with expected values built by hand or computed directly with our assignors. A broker that
describes members without their metadata (Tansu 0.6.0 did) is covered by a stripped member's
decoding and planted snapshots.
"""

from __future__ import annotations

import json
import logging
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewTopic
from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from kafka_cluster import MQBALANCE, KafkaGroup
from kafka_java_cluster import KafkaJavaBroker
from mqbalance.exceptions import SnapshotError
from mqbalance.fleet.kafka.audit import audit_kafka
from mqbalance.fleet.kafka.live import _decode_member
from mqbalance.fleet.kafka.snapshot import kafka_snapshot_from_dict, load_kafka_snapshot, snapshot_kind
from mqbalance.kafka import Subscription, TopicPartition, assignor, server_assign
from mqbalance.kafka import user_data as java_user_data
from mqbalance.kafka.kafka_python import StickyAssignor
from mqbalance.record_files import load_records
from server_process import free_port
from test_kafka_python_dropin import Member, cluster


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(MQBALANCE), *args], capture_output=True, text=True, timeout=timeout)


def produce_one_per_batch(broker: KafkaJavaBroker, topic: str, per_partition: dict[int, int]) -> None:
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for p, n in per_partition.items():
        for i in range(n):
            producer.send(topic, f"{p}-{i}".encode(), partition=p)
            producer.flush()
    producer.close(10)


def last_commits(records: dict[str, list[dict[str, Any]]]) -> dict[tuple[str, int], int]:
    """The highest offset any member committed per partition (commits only move forward here)."""
    out: dict[tuple[str, int], int] = {}
    for rows in records.values():
        for r in rows:
            if r["e"] == "c":
                topic, _, p = r["q"].rpartition("/")
                out[(topic, int(p))] = max(out.get((topic, int(p)), 0), r["o"])
    return out


@pytest.mark.java
def test_snapshot_of_a_live_group_then_the_audit_finds_its_lag(kafka_java: KafkaJavaBroker, tmp_path: Path) -> None:
    admin = KafkaAdminClient(bootstrap_servers=kafka_java.bootstrap, request_timeout_ms=20_000)
    admin.create_topics([NewTopic("fleet-a", 4, 1), NewTopic("fleet-b", 3, 1)])
    admin.close()
    produced = {0: 3, 1: 2, 2: 4, 3: 1}
    produce_one_per_batch(kafka_java, "fleet-a", produced)
    with KafkaGroup(kafka_java, "fleet-g", tmp_path) as group:
        group.start("m1", ["fleet-a", "fleet-b"], "range")
        group.start("m2", ["fleet-a"], "range")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            commits = last_commits(load_records([m.records for m in group.members.values() if m.records.exists()]))
            if all(commits.get(("fleet-a", p)) == n for p, n in produced.items()):
                break
            time.sleep(0.5)
        else:
            pytest.fail(f"the members did not commit everything produced: {commits}")
        # snapshot the group once it is stable with the members' recorded generations (on a loaded
        # machine a member may be rejoining at the first read: then read again)
        deadline = time.monotonic() + 30
        while True:
            live = run("snapshot", "--bootstrap", kafka_java.bootstrap, "-o", str(tmp_path / "live.json"), "--quiet")
            assert live.returncode == 0, live.stderr
            records = load_records([m.records for m in group.members.values()])
            member_ids = {r["mid"] for rows in records.values() for r in rows if r["e"] == "g"}
            read = load_kafka_snapshot(tmp_path / "live.json").groups.get("fleet-g")
            settled = read is not None and read.state == "Stable" and len(read.members) == 2
            if (settled and {m.member_id for m in read.members} <= member_ids) or time.monotonic() > deadline:
                break
            time.sleep(1.0)
        for m in group.members.values():
            assert m.stop() == 0
    snap = load_kafka_snapshot(tmp_path / "live.json")
    assert snapshot_kind(tmp_path / "live.json") == "kafka"
    assert {t: n for t, n in snap.topics.items() if t.startswith("fleet-")} == {"fleet-a": 4, "fleet-b": 3}
    group_read = snap.groups["fleet-g"]
    assert group_read.state == "Stable" and group_read.protocol_type == "consumer"
    assert {m.member_id for m in group_read.members} <= member_ids and len(group_read.members) == 2
    assert {(t, p): o for (g, t, p), o in snap.committed.items() if g == "fleet-g"} == {
        ("fleet-a", p): n for p, n in produced.items()
    }
    assert {tp: o for tp, o in snap.end_offsets.items() if tp[0] == "fleet-a"} == {
        ("fleet-a", p): n for p, n in produced.items()
    }
    subscribed = {"m1": ("fleet-a", "fleet-b"), "m2": ("fleet-a",)}
    assert sorted((m.client_id, m.subscription) for m in group_read.members) == sorted(subscribed.items())
    held = sorted(tp for m in group_read.members for tp in m.assignment or ())
    assert held == [("fleet-a", p) for p in range(4)] + [("fleet-b", p) for p in range(3)]
    assert not [e for e in snap.errors if e.get("group") == "fleet-g"], snap.error_lines()

    # The group has left; two more records land on fleet-a/1: the audit finds exactly that lag.
    produce_one_per_batch(kafka_java, "fleet-a", {1: 2})
    out = run("snapshot", "--bootstrap", kafka_java.bootstrap, "-o", str(tmp_path / "after.json"), "--quiet")
    assert out.returncode == 0, out.stderr
    after = load_kafka_snapshot(tmp_path / "after.json")
    assert after.groups["fleet-g"].state == "Empty" and after.groups["fleet-g"].members == ()
    audit = run("audit", str(tmp_path / "after.json"), "--out", str(tmp_path / "audit"), "--quiet")
    assert audit.returncode == 0, audit.stderr
    findings = json.loads((tmp_path / "audit" / "findings.json").read_text())["findings"]
    assert [(f["kind"], f["group"], f["topic"], f["count"]) for f in findings if f["group"] == "fleet-g"] == [
        ("lag", "fleet-g", "fleet-a", 2)
    ]
    assert (tmp_path / "audit" / "report.html").stat().st_size > 0
    shown = run("assign", str(tmp_path / "after.json"))
    assert shown.returncode == 0, shown.stderr
    assert any(
        line.split()[:2] == ["fleet-g", "fleet-a"] and line.split()[8] == "2" for line in shown.stdout.splitlines()
    )


def test_snapshot_of_an_unreachable_bootstrap_is_one_line(tmp_path: Path) -> None:
    port = free_port()
    t = time.monotonic()
    got = run("snapshot", "--bootstrap", f"127.0.0.1:{port}", "-o", str(tmp_path / "x.json"), "--timeout", "1")
    assert got.returncode == 2
    assert got.stderr.count("\n") == 1 and f"127.0.0.1:{port}" in got.stderr
    assert time.monotonic() - t < 15
    assert not (tmp_path / "x.json").exists()


def test_snapshot_needs_one_cluster_and_json_for_kafka(tmp_path: Path) -> None:
    both = run("snapshot", "--bootstrap", "127.0.0.1:1", "--namesrv", "127.0.0.1:2", "-o", str(tmp_path / "x.json"))
    neither = run("snapshot", "-o", str(tmp_path / "x.json"))
    parquet = run("snapshot", "--bootstrap", "127.0.0.1:1", "-o", str(tmp_path / "x.parquet"))
    assert [r.returncode for r in (both, neither, parquet)] == [2, 2, 2]
    assert "--bootstrap" in both.stderr and "--bootstrap" in neither.stderr and "JSON" in parquet.stderr


# --- decoding what Apache Kafka returns (bytes from kafka-python's own encoder) -----------------


def test_members_metadata_and_assignment_decoded_from_the_consumer_protocol() -> None:
    claim = java_user_data.encode([("t", 1)], 3)
    member = SimpleNamespace(
        member_id="c-1-abc",
        client_id="c-1",
        client_host="/10.0.0.7",
        group_instance_id=None,
        member_metadata=ConsumerProtocolSubscription(0, ["t", "u"], claim).encode(),
        member_assignment=ConsumerProtocolAssignment(0, [("t", [1, 0]), ("u", [2])], b"").encode(),
    )
    got = _decode_member(member)
    assert got == {
        "memberId": "c-1-abc",
        "clientId": "c-1",
        "host": "/10.0.0.7",
        "groupInstanceId": None,
        "subscription": ["t", "u"],
        "assignment": {"t": [0, 1], "u": [2]},
        "userData": claim.hex(),
    }
    stripped = SimpleNamespace(**{**vars(member), "member_metadata": b"", "member_assignment": b"", "client_id": ""})
    assert _decode_member(stripped)["subscription"] is None and _decode_member(stripped)["assignment"] is None


# --- the audit on snapshots in Apache Kafka's layout --------------------------------------------


def kafka(groups: dict[str, Any], topics: dict[str, int], **extra: Any) -> dict[str, Any]:
    return {"kind": "kafka", "topics": {t: {"partitions": n} for t, n in topics.items()}, "groups": groups, **extra}


def member(mid: str, subscription: list[str], assignment: dict[str, list[int]], **extra: Any) -> dict[str, Any]:
    return {
        "memberId": mid,
        "clientId": mid.split("-")[0],
        "subscription": subscription,
        "assignment": assignment,
        **extra,
    }


def kinds(result: Any, group: str) -> list[tuple[str, str | None, int]]:
    return sorted((f.kind.value, f.topic, f.count) for f in result.findings if f.group == group)


def test_audit_finds_unassigned_double_assigned_and_idle_partitions() -> None:
    snap = kafka_snapshot_from_dict(
        kafka(
            {
                "idle": {
                    "state": "Stable",
                    "protocol": "range",
                    "members": [
                        member("a-1", ["t"], {"t": [0]}),
                        member("b-1", ["t"], {"t": [1]}),
                        member("c-1", ["t"], {}),
                    ],
                },
                "broken": {
                    "state": "Stable",
                    "protocol": "range",
                    "members": [member("a-2", ["u"], {"u": [0, 1]}), member("b-2", ["u"], {"u": [1]})],
                },
                "moving": {
                    "state": "PreparingRebalance",
                    "protocol": "range",
                    "members": [member("a-3", ["u"], {"u": [0]})],
                },
            },
            {"t": 2, "u": 4},
        )
    )
    result = audit_kafka(snap, what_if=())
    assert kinds(result, "idle") == [("idle-consumer", "t", 1)]
    assert kinds(result, "broken") == [("double-owned", "u", 1), ("unowned", "u", 2)]
    # read mid-rebalance: recorded as such, its partial assignment not judged
    assert kinds(result, "moving") == [("rebalancing", None, 1)]
    row = next(r for r in result.rows if r.group == "idle")
    assert (row.units, row.consumers, row.min_load, row.max_load) == (2, 3, 0, 1)


def test_audit_what_if_is_what_the_assignors_compute() -> None:
    counts = {"t": 5, "u": 3}
    members = [("a-1", ["t", "u"], {"t": [0, 1, 2], "u": [0, 1, 2]}), ("b-1", ["t"], {"t": [3, 4]}), ("c-1", ["t"], {})]
    ids = {"t": "AAAAAAAAAAAAAAAAAAAAAQ", "u": "AAAAAAAAAAAAAAAAAAAAAg"}
    data = kafka({"g": {"state": "Stable", "protocol": "range", "members": [member(*m) for m in members]}}, counts)
    for t, tid in ids.items():
        data["topics"][t]["topicId"] = tid
    result = audit_kafka(kafka_snapshot_from_dict(data))
    now = {(t, p): mid for mid, _, a in members for t, ps in a.items() for p in ps}
    expected = {}
    for name in ("range", "roundrobin", "sticky", "cooperative-sticky"):
        sticky = "sticky" in name
        subs = {
            mid: Subscription(
                s, [TopicPartition(t, p) for t, ps in a.items() for p in ps] if sticky else (), 1 if sticky else None
            )
            for mid, s, a in members
        }
        got = {(tp.topic, tp.partition): mid for mid, tps in assignor(name).assign(counts, subs).items() for tp in tps}
        expected[name] = got
    for name, server in (("uniform", "uniform"), ("server-range", "range")):
        back = {v: k for k, v in ids.items()}
        given = [
            {
                "member_id": mid,
                "subscribed_topic_ids": [ids[t] for t in s],
                "current_assignment": [[ids[t], ps] for t, ps in sorted(a.items())],
            }
            for mid, s, a in members
        ]
        got_server = server_assign(server, given, {ids[t]: n for t, n in counts.items()})
        expected[name] = {
            (back[tid], p): mid for mid, parts in got_server.items() for tid, ps in parts.items() for p in ps
        }
    for w in result.what_if:
        owner = expected[w.strategy]
        assert w.moved == sum(1 for p in range(counts[w.topic]) if owner.get((w.topic, p)) != now.get((w.topic, p))), w
        subscribers = [mid for mid, s, _ in members if w.topic in s]
        loads = [sum(1 for (t, _), m in owner.items() if t == w.topic and m == mid) for mid in subscribers]
        assert (w.max_load, w.idle, w.consumers) == (max(loads), loads.count(0), len(subscribers)), w
    assert {w.strategy for w in result.what_if} == set(expected)


def test_audit_churn_between_two_snapshots_and_mixed_user_data_layouts() -> None:
    java = java_user_data.encode([("t", 0)], 2).hex()
    theirs = (
        StickyAssignorUserData(
            previous_assignment=[StickyAssignorUserData.TopicPartition(topic="t", partitions=[1])], generation=2
        )
        .encode()
        .hex()
    )
    before = kafka_snapshot_from_dict(
        kafka(
            {
                "g": {
                    "state": "Stable",
                    "protocol": "sticky",
                    "members": [member("a-1", ["t"], {"t": [0, 1]}), member("b-1", ["t"], {"t": [2, 3]})],
                }
            },
            {"t": 4},
        )
    )
    after = kafka_snapshot_from_dict(
        kafka(
            {
                "g": {
                    "state": "Stable",
                    "protocol": "sticky",
                    "members": [
                        member("a-2", ["t"], {"t": [0]}, userData=java),
                        member("b-2", ["t"], {"t": [1, 2, 3]}, userData=theirs),
                    ],
                }
            },
            {"t": 4},
        )
    )
    result = audit_kafka(after, before, what_if=())
    assert kinds(result, "g") == [("churn", "t", 1), ("strategy-mismatch", None, 2)]
    assert result.totals.churned_queues == 1


def test_sticky_user_data_in_another_layout_is_ignored_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    theirs = StickyAssignorUserData(
        previous_assignment=[StickyAssignorUserData.TopicPartition(topic="t", partitions=[0, 1, 2])], generation=4
    ).encode()
    members = [
        Member(
            member_id=mid,
            group_instance_id=None,
            metadata=ConsumerProtocolSubscription.decode(ConsumerProtocolSubscription(0, ["t"], data).encode()),
        )
        for mid, data in (("a", theirs), ("b", java_user_data.encode([("t", 3)], 4)))
    ]
    with caplog.at_level(logging.WARNING, logger="mqbalance.kafka"):
        got = StickyAssignor().assign(cluster({"t": 4}), members)
    assert [r.getMessage() for r in caplog.records if "not in Java's layout" in r.getMessage()]
    assert any("member a:" in r.getMessage() for r in caplog.records)
    assert not any("member b:" in r.getMessage() for r in caplog.records)
    owned = {mid: sorted(p for _, ps in a.assigned_partitions for p in ps) for mid, a in got.items()}
    # a's claim ignored: b keeps its partition 3, the rest is balanced
    assert 3 in owned["b"] and sorted(owned["a"] + owned["b"]) == [0, 1, 2, 3] and len(owned["a"]) == 2


@pytest.mark.parametrize(
    ("data", "named"),
    [
        ({"kind": "kafka", "topics": {"t": {"partitions": -1}}}, "topics.t.partitions"),
        ({"kind": "kafka", "groups": {"g": {"members": [{"memberId": 5}]}}}, "groups.g.members[0].memberId"),
        (
            {"kind": "kafka", "groups": {"g": {"members": [{"memberId": "m", "assignment": {"t": ["x"]}}]}}},
            "groups.g.members[0].assignment.t[0]",
        ),
        (
            {"kind": "kafka", "offsets": [{"group": "g", "topic": "t", "partition": 0, "offset": "9"}]},
            "offsets[0].offset",
        ),
        (
            {"kind": "kafka", "groups": {"g": {"members": [{"memberId": "m"}, {"memberId": "m"}]}}},
            "member id listed twice",
        ),
    ],
)
def test_bad_kafka_snapshots_name_the_field(data: dict[str, Any], named: str, tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match=named.replace("[", r"\[").replace("]", r"\]")):
        kafka_snapshot_from_dict(data, "s.json")
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data))
    got = run("assign", str(path))
    assert got.returncode == 2 and named in got.stderr and got.stderr.count("\n") == 1


def test_a_json_of_neither_kind_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"kind": "zookeeper", "nodes": []}))
    for command in (["assign", str(path)], ["audit", str(path), "--out", str(tmp_path / "o")]):
        got = run(*command)
        assert got.returncode == 2 and got.stderr.count("\n") == 1 and str(path) in got.stderr, got.stderr
