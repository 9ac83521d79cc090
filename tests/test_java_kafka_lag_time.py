"""Lag in seconds for Kafka groups on Apache Kafka 4.4.0 (``kafka_java``): a producer records its
own send times into a topic with ``CreateTime`` timestamps and one with ``LogAppendTime``; a group
is committed part-way (a stopped consumer), at the earliest offset (a replay) and at the end (no
lag). ``mqbalance snapshot --bootstrap`` reads the timestamp of the record at each committed
offset and ``mqbalance audit`` reports, per group and topic, the worst partition's age and its
timestamp type: within 1 s + 5 % of the true age from the producer's records, growing with the real
time on the idle topics."""

from __future__ import annotations

import csv
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaProducer
from kafka.admin import NewTopic
from kafka.structs import OffsetAndMetadata, TopicPartition

from kafka_cluster import MQBALANCE
from kafka_java_cluster import KafkaJavaBroker
from mqbalance.fleet.kafka.snapshot import load_kafka_snapshot
from server_process import wait_for

pytestmark = pytest.mark.java

GROUP = "g-lag-seconds"


def within(measured: float, true: float) -> bool:
    return abs(measured - true) <= 1.0 + 0.05 * true


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(MQBALANCE), *args], capture_output=True, text=True, timeout=180)


def test_lag_seconds_in_snapshot_and_audit(kafka_java: KafkaJavaBroker, tmp_path: Path) -> None:
    kafka_java.create_topic("lag-create", 2)
    append = NewTopic("lag-append", 1, 1, topic_configs={"message.timestamp.type": "LogAppendTime"})
    kafka_java.admin().create_topics([append])
    wait_for("lag-append to have a leader", lambda: kafka_java._ready("lag-append", 1), timeout=30)
    producer = KafkaProducer(bootstrap_servers=kafka_java.bootstrap)
    sent: dict[tuple[str, int, int], float] = {}
    for topic, partition, n in (("lag-create", 1, 3), ("lag-append", 0, 4), ("lag-create", 0, 5)):
        for _ in range(n):
            before = time.time()
            meta = producer.send(topic, b"x", partition=partition).get(timeout=30)
            sent[(topic, partition, meta.offset)] = before
            time.sleep(0.4)
    producer.close(10)
    # a consumer stopped at offset 2 of lag-create/0, one replaying lag-create/1 from the start,
    # lag-append/0 consumed to offset 1
    kafka_java.admin().alter_group_offsets(
        GROUP,
        {
            TopicPartition("lag-create", 0): OffsetAndMetadata(2, "", -1),
            TopicPartition("lag-create", 1): OffsetAndMetadata(0, "", -1),
            TopicPartition("lag-append", 0): OffsetAndMetadata(1, "", -1),
        },
    )
    time.sleep(2.0)  # idle: the ages grow
    path = tmp_path / "fleet.json"
    out = run("snapshot", "--bootstrap", kafka_java.bootstrap, "--group", GROUP, "-o", str(path), "--quiet")
    assert out.returncode == 0, out.stderr
    snap = load_kafka_snapshot(path)
    at = snap.read_at_ms / 1000  # type: ignore[operator]
    for (topic, partition), offset in (("lag-create", 0), 2), (("lag-create", 1), 0), (("lag-append", 0), 1):
        age = snap.lag_seconds(GROUP, topic, partition)
        assert age is not None and within(age, at - sent[(topic, partition, offset)]), (topic, partition, age)
    assert snap.lag_times[(GROUP, "lag-create", 0)][1] == "CreateTime"
    assert snap.lag_times[(GROUP, "lag-append", 0)][1] == "LogAppendTime"
    done = run("audit", str(path), "--out", str(tmp_path / "audit"), "--quiet")
    assert done.returncode == 0, done.stderr
    with (tmp_path / "audit" / "group_topics.csv").open() as f:
        rows = {r["topic"]: r for r in csv.DictReader(f) if r["group"] == GROUP}
    worst = at - sent[("lag-create", 1, 0)]  # the replayed partition's first record: the oldest
    assert within(float(rows["lag-create"]["lag_seconds"]), worst), (rows, worst)
    assert rows["lag-create"]["lag_timestamp"] == "CreateTime"
    assert rows["lag-append"]["lag_timestamp"] == "LogAppendTime"
    findings = json.loads((tmp_path / "audit" / "findings.json").read_text())["findings"]
    lag = [f for f in findings if f["group"] == GROUP and f["kind"] == "lag" and f["topic"] == "lag-create"]
    assert lag and "s old (CreateTime)" in lag[0]["detail"], lag


def test_a_snapshot_reads_every_groups_offsets_at_once_and_stamps_that_moment(
    kafka_java: KafkaJavaBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The committed offsets of many groups come from one OffsetFetch per coordinator (one here),
    equal to each group's own reading, and ``readAt`` is the middle of the offsets' reads: a
    ListOffsets held up by 1 s (a loaded machine, a slow broker) moves it by half that, and the
    record reads after it do not move it at all."""
    from mqbalance.fleet.kafka import live

    kafka_java.create_topic("at-once", 3)
    groups = [f"g-at-once-{k:02d}" for k in range(12)]
    for k, g in enumerate(groups):
        kafka_java.admin().alter_group_offsets(
            g, {TopicPartition("at-once", p): OffsetAndMetadata(k + p, "", -1) for p in range(3) if (k + p) % 4}
        )
    expected = {
        (g, tp.topic, tp.partition): om.offset
        for g in groups
        for tp, om in kafka_java.admin().list_group_offsets({g: None})[g].items()
        if om.offset >= 0
    }
    assert len(expected) > len(groups)
    sent: list[str] = []
    answered: list[float] = []

    class Counted(live._Admin):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            send = self._manager.send

            def counted(request: Any, *a: Any, **kw: Any) -> Any:
                sent.append(type(request).__name__)
                return send(request, *a, **kw)

            self._manager.send = counted

        def list_partition_offsets(self, *args: Any, **kwargs: Any) -> Any:
            time.sleep(1.0)
            try:
                return super().list_partition_offsets(*args, **kwargs)
            finally:
                answered.append(time.time())

    reads = live.read_record_times

    def late_reads(*args: Any, **kwargs: Any) -> Any:
        time.sleep(1.0)
        return reads(*args, **kwargs)

    monkeypatch.setattr(live, "_Admin", Counted)
    monkeypatch.setattr(live, "read_record_times", late_reads)
    asked = time.time()
    data = live.read_kafka_cluster(kafka_java.bootstrap, groups=groups)
    got = {(o["group"], o["topic"], o["partition"]): o["offset"] for o in data["offsets"] if o["topic"] == "at-once"}
    assert got == expected
    assert sum(1 for name in sent if name.startswith(("OffsetFetch", "RawOffsetFetch"))) == 1, sent
    assert answered, "ListOffsets was not sent"
    # the middle of [OffsetFetch, ListOffsets answered]: about half the 1 s hold before its end
    # (stamped after the reads, it was after it; 100 ms for a busy machine between the answer and
    # the stamp), and not before the middle of the whole call
    end = answered[0] * 1000
    assert (asked * 1000 + end) / 2 - 1 <= data["readAt"] <= end - 400, (asked, answered, data["readAt"])
