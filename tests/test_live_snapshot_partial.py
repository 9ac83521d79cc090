"""Partial failure against real servers: a broker that stops answering (SIGSTOP: its socket
still accepts, nothing replies) and one that is gone (SIGKILL) are recorded in the snapshot and
shown by the CLI and the audit report; the rest of the cluster is still read, within the timeout,
lag seconds included (``snapshot`` and ``audit --namesrv`` read them of the brokers that answer)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from collections.abc import Iterator

import pytest

from kafka_cluster import MQBALANCE
from mqbalance.cli import main
from mqbalance.fleet.rocketmq.live import live_snapshot
from mqbalance.remoting import BrokerClient, ConsumerData
from rocketmq_cluster import RocketMQCluster

#: what a silent broker fails first: its topic table or its groups, asked for at once
FIRST = r"(GET_ALL_TOPIC_CONFIG \(21\)|GET_ALL_SUBSCRIPTIONGROUP_CONFIG \(201\))"
FIRST_NAME = r"(GET_ALL_TOPIC_CONFIG|GET_ALL_SUBSCRIPTIONGROUP_CONFIG)"


@pytest.fixture(scope="module")
def cluster() -> Iterator[RocketMQCluster]:
    with RocketMQCluster(brokers=2) as c:
        clients = []
        c.create_topic("TopicP", {b.broker_name: 4 for b in c.brokers})
        for b in c.brokers:
            client = BrokerClient(b.addr, timeout=20.0)  # a busy machine: generous
            client.heartbeat("10.0.0.1@p", [ConsumerData("cg-p", ["TopicP"])])
            clients.append(client)
        # broker-a's queue 0: 3 messages, 2 of them unconsumed (lag seconds to read there)
        a = clients[[b.broker_name for b in c.brokers].index("broker-a")]
        for _ in range(3):
            a.send("TopicP", 0, b"x")
        a.update_offset("cg-p", "TopicP", 0, 1)
        yield c
        for client in clients:
            client.close()


def test_a_silent_broker_is_recorded_not_waited_for(cluster: RocketMQCluster, tmp_path, capsys):
    b = cluster.broker("broker-b")
    assert b.proc is not None
    b.proc.send_signal(signal.SIGSTOP)
    try:
        start = time.monotonic()
        snap = live_snapshot(cluster.namesrv_addr, timeout=1.0)
        elapsed = time.monotonic() - start
        assert elapsed < 10, elapsed  # one timeout for the broker, then it is skipped
        errors = snap.errors.to_pylist()
        assert [(e["broker_name"], e["address"]) for e in errors] == [("broker-b", b.addr)]
        assert snap.offsets.to_pylist() == [
            {"group": "cg-p", "topic": "TopicP", "broker_name": "broker-a", "queue_id": 0, "offset": 1}
        ]
        # the first request it was sent (its topic table and its groups are asked for at once)
        assert re.search(rf"no response to {FIRST} within 1 s", errors[0]["error"]), errors
        assert snap.consumer_groups()["cg-p"].client_ids == ["10.0.0.1@p"]  # read from broker-a
        assert snap.readable_routes()["TopicP"] == [("broker-a", 4), ("broker-b", 4)]  # the name server's view
        code = main(
            ["snapshot", "--namesrv", cluster.namesrv_addr, "-o", str(tmp_path / "f.json"), "--timeout", "1"]
            + ["--quiet", "--fail-on-partial"]
        )
        assert code == 4
        err = capsys.readouterr().err
        assert "is partial, 1 read error(s)" in err and re.search(rf"broker-b: {FIRST_NAME}: ", err), err
        written = json.loads((tmp_path / "f.json").read_text())
        assert written["meta"]["unreachableBrokers"] == ["broker-b"]
        # lag seconds read of broker-a (GET_CONSUME_STATS, one PULL_MESSAGE), none asked of broker-b
        [lagging] = written["lagTimes"]
        where = (lagging["brokerName"], lagging["queueId"], lagging["committed"], lagging["maxOffset"])
        assert where == ("broker-a", 0, 1, 3), lagging
        assert lagging["state"] == "exact" and lagging["storeTimestamp"] <= lagging["readAt"]
        assert len(written["errors"]) == 1
    finally:
        b.proc.send_signal(signal.SIGCONT)


def test_the_audit_report_shows_a_partial_snapshot(cluster: RocketMQCluster, tmp_path):
    """A process of its own: the audit's Spark JVM ends with it."""
    b = cluster.broker("broker-b")
    assert b.proc is not None
    b.proc.send_signal(signal.SIGSTOP)
    try:
        out = tmp_path / "audit"
        done = subprocess.run(
            [str(MQBALANCE), "audit", "--namesrv", cluster.namesrv_addr, "--timeout", "1", "--out", str(out)]
            + ["--quiet", "--what-if", "none", "--no-assignments"],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    finally:
        b.proc.send_signal(signal.SIGCONT)
    assert done.returncode == 0, done.stderr
    report = (out / "report.md").read_text()
    assert "**Partial snapshot**: 1 read error(s)" in report
    assert re.search(rf"- broker-b: {FIRST_NAME}: ", report) and "within 1 s" in report, report
    [error] = json.loads((out / "findings.json").read_text())["snapshot_errors"]
    assert re.match(rf"broker-b: {FIRST_NAME}:", error), error
    # the live audit read lag seconds of broker-a as `snapshot` does (no error of its own)
    [lag] = [f for f in json.loads((out / "findings.json").read_text())["findings"] if f["kind"] == "lag"]
    assert (lag["group"], lag["topic"], lag["count"]) == ("cg-p", "TopicP", 2)
    assert re.search(r"the oldest unconsumed message is [\d,.]+ s old \(store time\)", lag["detail"]), lag
    assert "is partial, 1 read error(s)" in done.stderr


def test_a_killed_broker_leaves_the_cluster(cluster: RocketMQCluster):
    """Measured: the name server drops a broker whose registration connection closes, so a killed
    broker is simply no longer part of the cluster (no error; its queues leave the routes)."""
    cluster.broker("broker-b").stop(kill=True)
    time.sleep(0.5)
    snap = live_snapshot(cluster.namesrv_addr, timeout=1.0)
    assert snap.error_lines() == []
    assert snap.readable_routes()["TopicP"] == [("broker-a", 4)]
    assert snap.consumer_groups()["cg-p"].client_ids == ["10.0.0.1@p"]
