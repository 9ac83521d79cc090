"""``mqbalance snapshot --bootstrap`` then ``mqbalance audit`` on Apache Kafka 4.4.0 itself
(``kafka_java_cluster.py``), with the members' full data (client id, host, subscription, userData,
assignment), which the Tansu broker never returned: every partition finding made live.

* idle: three members (Java's and ours) on two partitions; the snapshot's members are what the
  members recorded; lag: records produced after the group left;
* unassigned: Java members that do not refresh metadata (``metadata.max.age.ms`` 10 min) while
  their topic gains partitions: the broker holds the old assignment;
* double-assigned: a Java leader running a deliberately wrong assignor (``everyone``: every member
  every partition); a classic group's broker stores whatever its leader sends;
* rebalancing: a member is stopped (SIGSTOP) and another joins: the group waits in
  ``PreparingRebalance`` for the stopped one until its session times out;
* a group of the consumer protocol (KIP-848): DescribeGroups answers it with GROUP_ID_NOT_FOUND,
  so the snapshot describes it with ConsumerGroupDescribe (a regression test: it had no members).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaProducer

from kafka_cluster import MQBALANCE
from kafka_java_cluster import KafkaJavaBroker, MixedKafkaGroup
from mqbalance.fleet.kafka.snapshot import KafkaSnapshot, load_kafka_snapshot
from mqbalance.record_files import load_records
from server_process import wait_for

pytestmark = pytest.mark.java

DEADLINE = 90.0


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(MQBALANCE), *args], capture_output=True, text=True, timeout=timeout)


def snapshot(broker: KafkaJavaBroker, path: Path) -> KafkaSnapshot:
    out = run("snapshot", "--bootstrap", broker.bootstrap, "-o", str(path), "--quiet")
    assert out.returncode == 0, out.stderr
    return load_kafka_snapshot(path)


def audit(path: Path, group: str) -> list[tuple[str, str | None, int]]:
    """``mqbalance audit`` of a snapshot file: the group's findings as (kind, topic, count)."""
    out_dir = path.with_suffix("")
    done = run("audit", str(path), "--out", str(out_dir), "--quiet")
    assert done.returncode == 0, done.stderr
    findings = json.loads((out_dir / "findings.json").read_text())["findings"]
    return sorted((f["kind"], f["topic"], f["count"]) for f in findings if f["group"] == group)


def produce(broker: KafkaJavaBroker, topic: str, per_partition: dict[int, int]) -> None:
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for p, n in per_partition.items():
        for i in range(n):
            producer.send(topic, f"{p}-{i}".encode(), partition=p)
    producer.flush(30)
    producer.close(10)


def latest_generations(group: MixedKafkaGroup) -> dict[str, dict[str, Any]]:
    """Each member's newest ``g`` record (its member id and assignment), by member name."""
    recs = load_records([m.records for m in group.members.values() if m.records.exists()])
    return {n: [r for r in rows if r["e"] == "g"][-1] for n, rows in recs.items() if any(r["e"] == "g" for r in rows)}


def committed(broker: KafkaJavaBroker, group: str) -> dict[tuple[str, int], int]:
    got = broker.admin().list_group_offsets({group: None})[group]
    return {(tp.topic, tp.partition): om.offset for tp, om in got.items()}


def test_full_members_then_idle_and_lag_found_live(kafka_java: KafkaJavaBroker, tmp_path: Path) -> None:
    kafka_java.create_topic("f-idle", 2)
    produce(kafka_java, "f-idle", {0: 5, 1: 4})
    with MixedKafkaGroup(kafka_java, "fleet-idle", tmp_path) as group:
        group.start_java("j1", ["f-idle"], "sticky")
        group.start("p1", ["f-idle"], "sticky")
        group.start_java("j2", ["f-idle"], "sticky")
        wait_for(
            "everything committed",
            lambda: committed(kafka_java, "fleet-idle") == {("f-idle", 0): 5, ("f-idle", 1): 4},
            timeout=DEADLINE,
        )

        def settled_snapshot() -> KafkaSnapshot | None:
            snap = snapshot(kafka_java, tmp_path / "live.json")
            read = snap.groups.get("fleet-idle")
            gens = latest_generations(group)
            recorded = {g["mid"]: g for g in gens.values()}
            if read is None or read.state != "Stable" or len(gens) != 3:
                return None
            if {m.member_id for m in read.members} != set(recorded):
                return None
            return snap if len({g["gen"] for g in gens.values()}) == 1 else None

        snap = wait_for("a snapshot of the settled group", settled_snapshot, timeout=DEADLINE)
        recorded = {g["mid"]: (n, g) for n, g in latest_generations(group).items()}
        for m in group.members.values():
            assert m.stop() == 0
    read = snap.groups["fleet-idle"]
    assert read.protocol_type == "consumer" and read.protocol == "sticky"
    for m in read.members:  # everything the Tansu broker left empty
        name, g = recorded[m.member_id]
        assert (m.client_id, m.host, m.subscription) == (name, "/127.0.0.1", ("f-idle",))
        assert sorted(f"{t}/{p}" for t, p in m.assignment or ()) == g["q"]
    assert not [e for e in snap.errors if e.get("group") == "fleet-idle"], snap.error_lines()
    found = audit(tmp_path / "live.json", "fleet-idle")
    assert found == [("idle-consumer", "f-idle", 1)], (found, read)

    produce(kafka_java, "f-idle", {0: 3})  # the group has left: exactly this is its lag
    snapshot(kafka_java, tmp_path / "after.json")
    assert audit(tmp_path / "after.json", "fleet-idle") == [("lag", "f-idle", 3)]


def test_consumer_protocol_group_is_described_with_its_members(kafka_java: KafkaJavaBroker, tmp_path: Path) -> None:
    """Regression: Apache Kafka answers DescribeGroups for a consumer-protocol group with
    GROUP_ID_NOT_FOUND; the snapshot recorded that error and the group without members."""
    kafka_java.create_topic("f-848", 2)
    with MixedKafkaGroup(kafka_java, "fleet-848", tmp_path) as group:
        for n in ("c1", "c2", "c3"):
            group.start_java(n, ["f-848"], "uniform", protocol="consumer")

        def settled_snapshot() -> KafkaSnapshot | None:
            snap = snapshot(kafka_java, tmp_path / "live.json")
            read = snap.groups.get("fleet-848")
            held = {g["mid"]: g["q"] for g in latest_generations(group).values()}
            if read is None or read.state != "Stable" or len(read.members) != 3:
                return None
            from_broker = {m.member_id: sorted(f"{t}/{p}" for t, p in m.assignment or ()) for m in read.members}
            return snap if from_broker == held and sum(map(len, held.values())) == 2 else None

        snap = wait_for("a snapshot of the settled consumer-protocol group", settled_snapshot, timeout=DEADLINE)
        for m in group.members.values():
            assert m.stop() == 0
    read = snap.groups["fleet-848"]
    assert read.protocol == "uniform" and {m.client_id for m in read.members} == {"c1", "c2", "c3"}
    assert all(m.subscription == ("f-848",) for m in read.members)
    assert not [e for e in snap.errors if e.get("group") == "fleet-848"], snap.error_lines()
    assert audit(tmp_path / "live.json", "fleet-848") == [("idle-consumer", "f-848", 1)]


def test_unassigned_partitions_found_live(kafka_java: KafkaJavaBroker, tmp_path: Path) -> None:
    kafka_java.create_topic("f-grow", 2)
    with MixedKafkaGroup(kafka_java, "fleet-grow", tmp_path) as group:
        for n in ("j1", "j2"):
            group.start_java(n, ["f-grow"], "range", metadata_max_age_ms=600_000)
        wait_for(
            "both members assigned",
            lambda: (
                (gens := latest_generations(group)).keys() == {"j1", "j2"}
                and sorted(q for g in gens.values() for q in g["q"]) == ["f-grow/0", "f-grow/1"]
            ),
            timeout=DEADLINE,
        )
        kafka_java.add_partitions("f-grow", 4)
        snap = snapshot(kafka_java, tmp_path / "live.json")
        assert snap.topics["f-grow"] == 4 and snap.groups["fleet-grow"].state == "Stable"
        found = audit(tmp_path / "live.json", "fleet-grow")
        for m in group.members.values():
            assert m.stop() == 0
    assert found == [("unowned", "f-grow", 2)]


def test_double_assigned_partitions_found_live(kafka_java: KafkaJavaBroker, tmp_path: Path) -> None:
    kafka_java.create_topic("f-dup", 3)
    everything = ["f-dup/0", "f-dup/1", "f-dup/2"]
    with MixedKafkaGroup(kafka_java, "fleet-dup", tmp_path) as group:
        for n in ("j1", "j2"):
            group.start_java(n, ["f-dup"], "everyone")

        def double() -> KafkaSnapshot | None:
            gens = latest_generations(group)
            if len(gens) != 2 or any(g["q"] != everything for g in gens.values()):
                return None
            snap = snapshot(kafka_java, tmp_path / "live.json")
            read = snap.groups["fleet-dup"]
            return snap if read.state == "Stable" and len(read.members) == 2 else None

        wait_for("both members holding every partition", double, timeout=DEADLINE)
        found = audit(tmp_path / "live.json", "fleet-dup")
        for m in group.members.values():
            assert m.stop() == 0
    assert found == [("double-owned", "f-dup", 3)]


def test_rebalancing_group_found_live(kafka_java: KafkaJavaBroker, tmp_path: Path) -> None:
    kafka_java.create_topic("f-rebal", 2)
    # a long session: the stopped member keeps the rebalance waiting for it that long
    with MixedKafkaGroup(
        kafka_java,
        "fleet-rebal",
        tmp_path,
        session_timeout_ms=40_000,
        heartbeat_interval_ms=1_000,
        max_poll_interval_ms=60_000,
    ) as group:
        stopped = group.start_java("j1", ["f-rebal"], "range")
        wait_for(
            "j1 assigned",
            lambda: len(latest_generations(group).get("j1", {}).get("q", [])) == 2,
            timeout=DEADLINE,
        )
        os.kill(stopped.server.pid, signal.SIGSTOP)
        try:
            group.start("p1", ["f-rebal"], "range")

            def rebalancing() -> KafkaSnapshot | None:
                snap = snapshot(kafka_java, tmp_path / "live.json")
                state = snap.groups["fleet-rebal"].state if "fleet-rebal" in snap.groups else None
                return snap if state in ("PreparingRebalance", "CompletingRebalance") else None

            snap = wait_for("the group seen rebalancing", rebalancing, timeout=DEADLINE)
            found = audit(tmp_path / "live.json", "fleet-rebal")
        finally:
            os.kill(stopped.server.pid, signal.SIGCONT)
        for m in group.members.values():
            m.stop()
    assert snap.groups["fleet-rebal"].state == "PreparingRebalance"
    assert [k for k, _, _ in found] == ["rebalancing"]
