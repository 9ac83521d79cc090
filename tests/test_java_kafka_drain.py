"""Time to drain and lag seconds for Kafka groups on Apache Kafka 4.4.0 (``kafka_java``), against
what really happened.

* The audit: two Java ``KafkaConsumer`` members (the harness's ``KafkaMember``, slowed with
  ``--work-ms`` and ``--max-poll-records``: about ``50 * 1000 / 250`` = 200 records a second each)
  hold one partition each of a 2-partition topic; the test sends a burst far faster than they
  consume, stops, and takes ``mqbalance snapshot --bootstrap`` a few seconds apart while they catch
  up. ``mqbalance audit LATER --previous EARLIER``'s time to drain (and the same from each later
  pair of snapshots, :func:`mqbalance.fleet.drains`) is compared with the drain observed — the first
  moment both committed offsets reached the partitions' ends, polled by the test: the median
  absolute error must be ≤ 20 % (issue 35). A group caught up on its topic is ``idle``; a group
  stopped on a topic that keeps being produced to is ``never``.
* The watcher: ``mqbalance watch --bootstrap --metrics-port``, scraped over HTTP, serves
  ``mqbalance_group_lag_seconds{group,topic}`` for a stopped group within 1 s + 5 % of the true age
  of its oldest unconsumed record at the scrape (from the producer's own send times), growing with
  the real time; and a finite ``mqbalance_group_drain_seconds`` for a group while its
  slowed Java member drains a backlog, ``0`` once it has.
"""

from __future__ import annotations

import csv
import json
import math
import statistics
import subprocess
import threading
import time
import urllib.request
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaProducer
from kafka.structs import OffsetAndMetadata, TopicPartition
from prometheus_client.parser import text_string_to_metric_families

from kafka_cluster import MQBALANCE
from kafka_java_cluster import JavaMember, KafkaJavaBroker, MixedKafkaGroup
from mqbalance.fleet import drains, load_any_snapshot
from mqbalance.history.writer import MARKER_FILE, read_ticks
from paced_thread import PacedThread
from server_process import ServerProcess, free_port, wait_for

pytestmark = pytest.mark.java

WORK_MS, POLL_RECORDS = 250, 50  # a member consumes at most 200 records a second
WAIT = 120.0  # generous deadlines for observed events on a busy machine
DRAIN_WINDOW = 5  # the watcher's offsets readings per drain estimate (WatchMetrics' default)


def within(measured: float, true: float) -> bool:
    """Issue 35's accuracy for lag seconds: 1 s + 5 % of the true age."""
    return abs(measured - true) <= 1.0 + 0.05 * true


def assigned(m: JavaMember) -> list[str]:
    """The partitions of the member's last assignment record (``topic/partition``)."""
    got: list[str] = []
    try:
        lines = m.records.read_text().splitlines()
    except OSError:
        return got
    for line in lines:
        try:
            r = json.loads(line)
        except ValueError:
            break  # a torn last line
        if r["e"] == "a":
            got = list(r["q"])
    return got


def committed(broker: KafkaJavaBroker, group: str) -> dict[int, int]:
    """The group's committed offsets by partition (one topic), as the broker reports them."""
    found = broker.admin().list_group_offsets({group: None})[group]
    return {tp.partition: o.offset for tp, o in found.items() if o.offset >= 0}


def snapshot(broker: KafkaJavaBroker, path: Path, groups: list[str]) -> None:
    done = subprocess.run(
        [str(MQBALANCE), "snapshot", "--bootstrap", broker.bootstrap, "-o", str(path), "--quiet",
         *(a for g in groups for a in ("--group", g))],
        capture_output=True, text=True, timeout=WAIT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


class Steady(PacedThread):
    """A producer sending ``rate`` records a second to one partition from a thread (a topic that
    keeps being produced to), with each record's send time by offset."""

    def __init__(self, bootstrap: str, topic: str, rate: float) -> None:
        super().__init__(period=1 / rate)
        self.producer = KafkaProducer(bootstrap_servers=bootstrap)
        self.topic = topic
        self.sent: dict[int, float] = {}
        self.start()

    def step(self) -> bool:
        at = time.time()
        self.sent[self.producer.send(self.topic, b"s", partition=0).get(timeout=30).offset] = at
        return True

    def close(self) -> None:
        self.halt()
        self.producer.close(10)


def burst(broker: KafkaJavaBroker, sizes: dict[str, list[int]]) -> tuple[dict[str, list[int]], float]:
    """``sizes[topic][p]`` records to each partition, as fast as one producer sends; each
    partition's end offset and how long it took."""
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=20, batch_size=256 * 1024)
    started = time.time()
    futures = [
        producer.send(t, b"m" * 100, partition=p)
        for i in range(max(max(n) for n in sizes.values()))
        for t, per_partition in sizes.items()
        for p, n in enumerate(per_partition)
        if i < n
    ]
    producer.flush(WAIT)
    producer.close(10)
    ends = {t: [0] * len(n) for t, n in sizes.items()}
    for f in futures:
        meta = f.get(timeout=WAIT)
        ends[meta.topic][meta.partition] = max(ends[meta.topic][meta.partition], meta.offset + 1)
    return ends, time.time() - started


class Draining:
    """A group of ``members`` slowed Java members, one partition each of its own topic."""

    def __init__(self, broker: KafkaJavaBroker, name: str, members: int, burst: int, directory: Path) -> None:
        self.group, self.topic, self.burst = f"g-{name}", name, burst
        broker.create_topic(self.topic, members)
        self.members = MixedKafkaGroup(broker, self.group, directory)
        self.java = [
            self.members.start_java(
                f"{name}-{i}", [self.topic], "range", work_ms=WORK_MS, max_poll_records=POLL_RECORDS
            )
            for i in range(members)
        ]
        self.drained: dict[int, float] = {}  # partition -> when its committed offset reached its end

    def holding(self) -> bool:
        return all(len(assigned(m)) == 1 for m in self.java)

    def close(self) -> None:
        for m in self.java:
            if m.alive():
                assert m.stop() == 0, m.server.log_tail()
        self.members.close()


def test_audit_time_to_drain_from_live_snapshots(kafka_java: KafkaJavaBroker, tmp_path: Path) -> None:
    idle_topic, steady_topic = "drain-idle", "drain-steady"
    idle_group, stopped_group = "g-drain-idle", "g-drain-stopped"
    kafka_java.create_topic(idle_topic, 1)
    kafka_java.create_topic(steady_topic, 1)
    admin = kafka_java.admin()
    # caught up on an idle topic: idle; stopped at 0 on a topic produced to all along: never
    producer = KafkaProducer(bootstrap_servers=kafka_java.bootstrap)
    for _ in range(3):
        producer.send(idle_topic, b"i", partition=0).get(timeout=30)
    producer.close(10)
    admin.alter_group_offsets(idle_group, {TopicPartition(idle_topic, 0): OffsetAndMetadata(3, "", -1)})
    admin.alter_group_offsets(stopped_group, {TopicPartition(steady_topic, 0): OffsetAndMetadata(0, "", -1)})
    steady = Steady(kafka_java.bootstrap, steady_topic, rate=10.0)
    # two draining groups: two members on two partitions (~22 s of backlog), one on one (~30 s)
    groups: list[Draining] = []
    paths: list[Path] = []
    try:
        groups.append(Draining(kafka_java, "drain-two", 2, 4_500, tmp_path))
        groups.append(Draining(kafka_java, "drain-one", 1, 6_000, tmp_path))
        wait_for(
            "each Java member to hold one partition",
            lambda: all(d.holding() for d in groups),
            timeout=WAIT,
            server=groups[0].java[0].server,
        )
        ends, burst_s = burst(kafka_java, {d.topic: [d.burst] * len(d.java) for d in groups})
        stopped = time.time()
        for d in groups:
            at_stop = committed(kafka_java, d.group)
            behind = [ends[d.topic][p] - at_stop.get(p, 0) for p in range(len(d.java))]
            assert min(behind) >= d.burst // 2, ("the burst did not outpace the consumers", d.group, behind)
        # snapshots a few seconds apart while the groups drain; the drains observed meanwhile
        done = threading.Event()
        poll_error: list[BaseException] = []

        def poll() -> None:
            try:
                while not done.is_set():
                    for d in groups:
                        now_committed, now = committed(kafka_java, d.group), time.time()
                        for p, end in enumerate(ends[d.topic]):
                            if now_committed.get(p, -1) >= end:
                                d.drained.setdefault(p, now)
                    if all(len(d.drained) == len(d.java) for d in groups):
                        return
                    done.wait(0.1)
            except BaseException as e:  # noqa: BLE001  (said by the test)
                poll_error.append(e)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        while len(paths) < 5 and poller.is_alive():
            if paths:
                done.wait(1.0)
            path = tmp_path / f"snap{len(paths)}.json"
            snapshot(kafka_java, path, [*(d.group for d in groups), idle_group, stopped_group])
            paths.append(path)
        poller.join(WAIT)
        done.set()
        assert not poll_error, poll_error
        for d in groups:
            assert len(d.drained) == len(d.java), ("not drained", d.group, committed(kafka_java, d.group))
            assert all(m.alive() for m in d.java), [m.server.log_tail() for m in d.java]
    finally:
        steady.close()
        for d in groups:
            d.close()
    assert steady.error is None, steady.error
    snaps = [load_any_snapshot(p) for p in paths]
    read_at = [s.read_at_ms / 1000 for s in snaps]  # type: ignore[union-attr,operator]
    # each group, from every later snapshot read at least 2 s before its drain and its predecessor
    pairs = []
    for i in range(1, len(snaps)):
        got = drains(snaps[i], snaps[i - 1])
        assert got[(idle_group, idle_topic)].state == "idle", got
        assert got[(stopped_group, steady_topic)].state == "never", got
        for d in groups:
            true = max(d.drained.values()) - read_at[i]
            if true < 2.0:
                continue  # drained (nearly) at the read: nothing left to estimate
            est = got[(d.group, d.topic)]
            assert est.state == "draining" and est.seconds is not None, (i, d.group, est)
            pairs.append((d.group, i, est.seconds, true))
    errors = [abs(est - true) / true for _g, _i, est, true in pairs]
    report: dict[str, Any] = {
        "burst_s": round(burst_s, 2),
        "sent": {t: sum(e) for t, e in ends.items()},
        "drained_after_burst_s": {d.group: round(max(d.drained.values()) - stopped, 2) for d in groups},
        "snapshots_s": [round(t - stopped, 2) for t in read_at],
        "pairs": [(g, i, round(est, 2), round(true, 2)) for g, i, est, true in pairs],
        "errors": [round(e, 3) for e in errors],
        "median_error": round(statistics.median(errors), 3) if errors else None,
    }
    print(json.dumps(report))
    assert len(pairs) >= 2 and statistics.median(errors) <= 0.20, report
    # the command line on the first pair: the CSV, findings.json and the report say the same
    out = tmp_path / "audit"
    done_audit = subprocess.run(
        [str(MQBALANCE), "audit", str(paths[1]), "--previous", str(paths[0]), "--out", str(out), "--quiet",
         "--what-if", "none"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done_audit.returncode == 0, done_audit.stderr
    with (out / "group_topics.csv").open() as f:
        rows = {r["group"]: r for r in csv.DictReader(f)}
    slow = groups[1]
    first = drains(snaps[1], snaps[0])[(slow.group, slow.topic)]
    assert rows[slow.group]["drain"] == "draining", rows[slow.group]
    assert math.isclose(float(rows[slow.group]["drain_seconds"]), first.seconds or 0.0, rel_tol=1e-6), rows
    assert rows[idle_group]["drain"] == "idle" and rows[stopped_group]["drain"] == "never", rows
    said = {(d["group"], d["drain"]) for d in json.loads((out / "findings.json").read_text())["drain"]}
    assert {(slow.group, "draining"), (stopped_group, "never")} <= said, said
    assert (idle_group, "idle") not in said, said
    page = (out / "report.html").read_text()
    assert '<section id="drain">' in page and f"{first.seconds:,.1f} s" in page
    # one snapshot alone has no rates
    assert drains(snaps[1])[(slow.group, slow.topic)].said() == "unknown (one reading)"


def scrape(port: int) -> dict[tuple[str, str, str], float]:
    """``(metric, group, topic)`` -> value of the watcher's per-group-and-topic lag and drain gauges."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    wanted = ("mqbalance_group_lag_seconds", "mqbalance_group_drain_seconds")
    return {
        (s.name, s.labels["group"], s.labels.get("topic", "")): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name in wanted
    }


def tick_times(out: Path, *, offsets: bool = False) -> list[float]:
    """The wall-clock start of each tick the watcher wrote (its lag seconds are measured at it);
    ``offsets``: only the ticks that read the offsets."""
    times: list[float] = []
    for t in read_ticks(out).to_pylist():
        if offsets and t["kind"] != "both":
            continue
        ts = t["ts"]
        times.append(ts.timestamp() if isinstance(ts, datetime) else ts / 1000)
    return times


def test_watch_lag_seconds_and_drain_metrics(kafka_java: KafkaJavaBroker, tmp_path: Path) -> None:
    stopped_topic, drain_topic = "watch-lag", "watch-drain"
    stopped_group, drain_group = "g-watch-stopped", "g-watch-drain"
    kafka_java.create_topic(stopped_topic, 1)
    kafka_java.create_topic(drain_topic, 1)
    # a stopped group at offset 2 of records sent 0.4 s apart, their send times recorded
    producer = KafkaProducer(bootstrap_servers=kafka_java.bootstrap)
    sent: dict[int, float] = {}
    for _ in range(6):
        before = time.time()
        sent[producer.send(stopped_topic, b"x", partition=0).get(timeout=30).offset] = before
        time.sleep(0.4)
    producer.close(10)
    kafka_java.admin().alter_group_offsets(
        stopped_group, {TopicPartition(stopped_topic, 0): OffsetAndMetadata(2, "", -1)}
    )
    oldest = sent[2]
    port, out = free_port(), tmp_path / "h"
    argv = [str(MQBALANCE), "watch", "--bootstrap", kafka_java.bootstrap, "--out", str(out), "--interval", "0.5s",
            "--offsets-interval", "1s", "--metrics-port", str(port), "--quiet"]  # fmt: skip
    watcher = ServerProcess("mqbalance watch --bootstrap", argv, log=tmp_path / "watch.log")
    watcher.start()
    ages: list[tuple[float, float, float, float]] = []  # (answered, served, true age asked, answered)
    drain_seen: list[tuple[float, float]] = []  # (when scraped, served)
    try:
        wait_for(
            "the watcher's first tick",
            lambda: (out / MARKER_FILE).exists() and read_ticks(out).num_rows > 0,
            timeout=WAIT,
            server=watcher,
        )
        key = ("mqbalance_group_lag_seconds", stopped_group, stopped_topic)
        wait_for("the stopped group's lag seconds", lambda: key in scrape(port), timeout=WAIT, server=watcher)
        # lag seconds against the true age at the scrape (what a user sees: the tick's age plus the
        # time since it); over a few seconds, growing with the clock
        first = time.time()
        while time.time() - first < 4.0 or len(ages) < 3:
            assert time.time() - first < WAIT, ages
            asked = time.time()
            value = scrape(port)[key]
            answered = time.time()
            ages.append((answered, value, asked - oldest, answered - oldest))
            time.sleep(1.0)  # pacing, not a measurement
        # a backlog drained by one slowed Java member: a finite drain time while it drains (once the
        # watcher's window holds no production), 0 after
        with MixedKafkaGroup(kafka_java, drain_group, tmp_path) as members:
            member = members.start_java("w0", [drain_topic], "range", work_ms=WORK_MS, max_poll_records=POLL_RECORDS)
            wait_for(
                "the Java member's partition", lambda: len(assigned(member)) == 1, timeout=WAIT, server=member.server
            )
            ends = burst(kafka_java, {drain_topic: [2_500]})[0][drain_topic]  # about 12 s of consumption
            stopped = time.time()
            drain_key = ("mqbalance_group_drain_seconds", drain_group, drain_topic)
            drained_at: list[float] = []

            def drained() -> bool:
                asked = time.time()
                value = scrape(port).get(drain_key)
                if value is not None:
                    drain_seen.append((time.time(), value))
                if committed(kafka_java, drain_group).get(0, -1) >= ends[0]:
                    # a 0 served in this same poll means the watcher read the last commit first: the
                    # drain happened before the scrape was asked
                    drained_at.append(asked if value == 0.0 else time.time())
                return bool(drained_at)

            wait_for("the Java member to drain its backlog", drained, timeout=WAIT, server=member.server)
            assert member.stop() == 0
        wait_for(
            "the drain gauge at 0 (idle)",
            lambda: scrape(port).get(drain_key) == 0.0,
            timeout=WAIT,
            server=watcher,
        )
    finally:
        status = watcher.stop(timeout=30)
    assert status == 0, watcher.log_tail()
    # the estimates served once the window (the last DRAIN_WINDOW offsets readings, and one more: the
    # gauge may be a tick old) lies after the burst, until the drain observed
    readings = tick_times(out, offsets=True)

    def clean(at: float) -> bool:
        before = [r for r in readings if r <= at]
        return len(before) > DRAIN_WINDOW and before[-DRAIN_WINDOW - 1] >= stopped

    draining = [(at, v) for at, v in drain_seen if clean(at) and at < drained_at[0]]
    served: dict[float, float] = {}
    for at, value in draining:
        served.setdefault(value, at)
    report = {
        "lag_seconds_served_true_asked_answered": [(round(v, 2), round(t, 2), round(s, 2)) for _a, v, t, s in ages],
        "drain_served_observed": [(round(v, 2), round(drained_at[0] - at, 2)) for v, at in served.items()],
        "never_served_before_clean": sum(1 for at, v in drain_seen if v == math.inf and not clean(at)),
    }
    print(json.dumps(report))
    for _at, value, asked, answered in ages:
        assert within(value, asked) and within(value, answered), report
    grown, elapsed = ages[-1][1] - ages[0][1], ages[-1][0] - ages[0][0]
    assert elapsed >= 3.0 and abs(grown - elapsed) <= 1.0, ("the age does not grow with the clock", report)
    assert draining and all(0 < v < math.inf for _a, v in draining), report
