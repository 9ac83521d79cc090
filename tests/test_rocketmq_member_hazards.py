"""Live hazards on a real broker (the Rust port) with ``mqbalance rocketmq-consume`` subprocess members: a
member killed with ``kill -9`` (its queues taken over, nothing lost) and two processes started
with the same client id (what the broker lists, what our members see, refusing to consume); the
strategy given to ``mqbalance rocketmq-consume`` is the one its member runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mqbalance import MessageQueue, sort_client_ids, sort_queues, strategy
from mqbalance.record_files import held_queues
from mqbalance.remoting import BrokerClient
from mqbalance.rocketmq import check_records, load_records
from mqbalance.rocketmq.worker import EXIT_REFUSED, queue_name
from rocketmq_cluster import RocketMQCluster

PER_BROKER = 4


@pytest.fixture(scope="module")
def cluster():
    with RocketMQCluster(brokers=2) as c:
        yield c


def make_topic(cluster, topic):
    cluster.create_topic(topic, {b.broker_name: PER_BROKER for b in cluster.brokers})
    return [f"{b.broker_name}/{topic}/{q}" for b in cluster.brokers for q in range(PER_BROKER)]


@pytest.fixture
def groups():
    """Every Group a test starts is stopped at its end, whatever happened."""
    made: list[Group] = []
    yield made
    for g in made:
        g.stop_all()


class Group:
    """Subprocess members of one group, each with its record file."""

    def __init__(self, cluster, tmp: Path, group: str, topic: str) -> None:
        self.cluster, self.tmp, self.group, self.topic = cluster, tmp, group, topic
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, client_id: str, *extra: str) -> subprocess.Popen[bytes]:
        cmd = [sys.executable, "-m", "mqbalance.cli", "rocketmq-consume", "--namesrv", self.cluster.namesrv_addr]
        cmd += ["--group", self.group, "--topic", self.topic, "--client-id", client_id, "--from", "first"]
        cmd += ["--record", str(self.tmp / f"{name}.jsonl"), "--heartbeat-interval-ms", "2000"]
        cmd += ["--persist-interval-ms", "500", "--rebalance-interval-ms", "5000", *extra]
        with open(self.tmp / f"{name}.log", "wb") as log:
            p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.procs[name] = p
        return p

    def records(self):
        return load_records(sorted(self.tmp.glob("*.jsonl")))

    def held(self) -> dict[str, set[str]]:
        """Member → the queues its records say it holds now."""
        return {name: held_queues(rows) for name, rows in self.records().items()}

    def ids(self) -> list[str]:
        with BrokerClient(self.cluster.brokers[0].addr) as bc:
            return bc.consumer_ids(self.group)

    def max_offsets(self, queues):
        ends = {}
        for b in self.cluster.brokers:
            with BrokerClient(b.addr) as bc:
                for q in range(PER_BROKER):
                    ends[f"{b.broker_name}/{self.topic}/{q}"] = bc.max_offset(self.topic, q)
        return {q: ends[q] for q in queues}

    def stop_all(self) -> dict[str, int]:
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        codes = {}
        for n, p in self.procs.items():
            try:
                codes[n] = p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                codes[n] = p.wait(10)
        return codes

    def log(self, name: str) -> str:
        return (self.tmp / f"{name}.log").read_text(errors="replace")


class Producer(threading.Thread):
    def __init__(self, cluster, topic, rate=50.0):
        super().__init__(daemon=True)
        self.cluster, self.topic, self.rate = cluster, topic, rate
        self.halt = threading.Event()
        self.sent = 0

    def run(self):
        clients = [(BrokerClient(b.addr), q) for b in self.cluster.brokers for q in range(PER_BROKER)]
        t0 = time.monotonic()
        try:
            while not self.halt.is_set():
                wait = t0 + self.sent / self.rate - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                    continue
                bc, q = clients[self.sent % len(clients)]
                bc.send(self.topic, q, str(self.sent).encode())
                self.sent += 1
        finally:
            for bc, _ in clients:
                bc.client.close()


def wait(predicate, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"not within {timeout} s: {what}")


def test_a_member_killed_with_kill_9_is_unlisted_its_queues_are_taken_over_and_nothing_is_lost(
    cluster, tmp_path, groups
):
    topic, group = "T-kill", "g-kill"
    queues = make_topic(cluster, topic)
    g = Group(cluster, tmp_path, group, topic)
    groups.append(g)
    ids = {"m1": "10.2.0.1@1", "m2": "10.2.0.2@2", "m3": "10.2.0.3@3"}
    for name, cid in ids.items():
        g.start(name, cid)
    producer = Producer(cluster, topic)
    producer.start()
    try:
        wait(lambda: sorted(q for h in g.held().values() for q in h) == sorted(queues), 30, "three members split")
        victim = g.held()["m2"]
        assert victim
        g.procs["m2"].send_signal(signal.SIGKILL)
        killed = time.monotonic()
        g.procs["m2"].wait(10)
        wait(lambda: ids["m2"] not in g.ids(), 150, "the killed member unlisted")
        unlisted = time.monotonic() - killed
        assert unlisted < 5  # on one host the dead process's socket closes: no 120 s channel expiry
        wait(
            lambda: (h := g.held()) and sorted(h["m1"] | h["m3"]) == sorted(queues) and not (h["m1"] & h["m3"]),
            30,
            "the survivors hold every queue",
        )
        taken = time.monotonic() - killed
        assert taken < 5 + 2  # nobody is notified (the Rust broker): the periodic rebalance, 5 s here
        time.sleep(2)
    finally:
        producer.halt.set()
        producer.join()
    ends = g.max_offsets(queues)
    wait(lambda: check_records(g.records(), ends).ok, 30, "every produced message consumed")
    codes = g.stop_all()
    assert codes["m1"] == codes["m3"] == 0 and codes["m2"] == -signal.SIGKILL
    check = check_records(g.records(), ends)
    assert check.ok and check.unique == sum(ends.values()) == producer.sent, check.summary()
    print(f"kill -9: unlisted after {unlisted:.1f} s, queues taken over after {taken:.1f} s, {check.duplicates} dup")


def test_two_processes_with_one_client_id_are_listed_once_take_the_same_share_and_see_it(cluster, tmp_path, groups):
    topic, group = "T-dup", "g-dup"
    queues = make_topic(cluster, topic)
    g = Group(cluster, tmp_path, group, topic)
    groups.append(g)
    g.start("a", "10.3.0.1@1")
    g.start("b", "10.3.0.2@2")
    wait(lambda: sorted(q for h in g.held().values() for q in h) == sorted(queues), 30, "two members split")
    g.start("b2", "10.3.0.2@2")  # the same id as b
    try:
        wait(lambda: g.held().get("b2") == g.held()["b"] and g.held()["b2"], 30, "b2 takes b's share")
        # the Rust broker keeps one entry per client id: listed once, so a and b/b2 split the queues
        assert sorted(g.ids()) == ["10.3.0.1@1", "10.3.0.2@2"]
        with BrokerClient(cluster.brokers[0].addr) as bc:
            conns = bc.consumer_connections(group).connections
        assert sorted(c.client_id for c in conns) == ["10.3.0.1@1", "10.3.0.2@2"]
        held = g.held()
        assert sorted(held["a"] | held["b"]) == sorted(queues) and not held["a"] & held["b"]
        # our members see it: the id on a connection that is not theirs
        wait(
            lambda: any(r["e"] == "dup" for n in ("b", "b2") for r in g.records().get(n, [])),
            30,
            "a member reports the duplicated id",
        )
        assert "DUPLICATED CLIENT ID" in g.log("b") + g.log("b2")
    finally:
        g.stop_all()


def test_a_member_configured_to_refuse_a_duplicated_id_leaves_and_nothing_is_lost(cluster, tmp_path, groups):
    topic, group = "T-refuse", "g-refuse"
    queues = make_topic(cluster, topic)
    g = Group(cluster, tmp_path, group, topic)
    groups.append(g)
    g.start("a", "10.4.0.1@1", "--refuse-duplicate-id")
    g.start("b", "10.4.0.2@2", "--refuse-duplicate-id")
    wait(lambda: sorted(q for h in g.held().values() for q in h) == sorted(queues), 30, "two members split")
    producer = Producer(cluster, topic)
    producer.start()
    try:
        newcomer = g.start("b2", "10.4.0.2@2", "--refuse-duplicate-id")
        assert newcomer.wait(60) == EXIT_REFUSED
        assert any(r["e"] == "refused" for r in g.records()["b2"])
        assert g.procs["b"].poll() is None  # the incumbent keeps consuming
        wait(
            lambda: (h := g.held()) and sorted(h["a"] | h["b"]) == sorted(queues) and not h["b2"],
            30,
            "a and b hold every queue, b2 none",
        )
        time.sleep(3)
    finally:
        producer.halt.set()
        producer.join()
    ends = g.max_offsets(queues)
    wait(lambda: check_records(g.records(), ends).ok, 30, "every produced message consumed")
    codes = g.stop_all()
    assert codes == {"a": 0, "b": 0, "b2": EXIT_REFUSED}
    assert check_records(g.records(), ends).unique == producer.sent


def test_consume_runs_the_strategy_it_is_given(cluster, tmp_path, groups):
    """``--strategy`` reaches the member unchanged (any case, as the registry reads names): the
    split is CONSISTENT_HASH's, not the default AVG's, and the member says so to the broker."""
    topic, group = "T-strategy", "g-strategy"
    queues = make_topic(cluster, topic)
    mqs = sort_queues([MessageQueue(topic, b, int(q)) for b, _, q in (name.split("/") for name in queues)])
    ids = {"s1": "10.5.0.1@1", "s2": "10.5.0.2@2", "s3": "10.5.0.3@3"}

    def split(name):
        s, cids = strategy(name), sort_client_ids(list(ids.values()))
        return {n: {queue_name(mq) for mq in s.allocate(group, cid, mqs, cids)} for n, cid in ids.items()}

    want = split("CONSISTENT_HASH")
    assert want != split("AVG")  # the two strategies split these queues differently
    g = Group(cluster, tmp_path, group, topic)
    groups.append(g)
    for name, cid in ids.items():
        g.start(name, cid, "--strategy", "consistent_hash")
    wait(lambda: g.held() == want, 30, "the members split the queues as CONSISTENT_HASH does")
    assert all(g.records()[n][0]["strategy"] == "consistent_hash" for n in ids)  # recorded as given
    with BrokerClient(cluster.brokers[0].addr) as bc:
        info = bc.consumer_running_info(group, ids["s1"], timeout=5)
    assert info["properties"]["allocateMessageQueueStrategy"] == "CONSISTENT_HASH"
    assert g.stop_all() == dict.fromkeys(ids, 0)
