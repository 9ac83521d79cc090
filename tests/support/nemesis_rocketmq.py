"""RocketMQ members under network faults: the group driver and the measurements of
``test_nemesis_rocketmq.py``.

The name server and the broker each run in a network namespace of their own
(:class:`rocketmq_cluster.RocketMQCluster` placed with ``namesrv_host`` / ``broker_hosts``), every
``mqbalance rocketmq-consume`` member in its own (:class:`nemesis_net.Node`), so a member reaches the
cluster only through its veth, and the broker is reached by everyone only through its own: cutting
either is a real partition (packets vanish, connections hang). The producer and the checks run in
the root namespace.

What is measured comes from the members' record files (:mod:`mqbalance.rocketmq.records`):
ownership intervals from their ``a`` / ``r`` records, with the partitioned member's clipped out
while it is cut off (it still *holds* its queues, but works on none of them) —
:func:`reachable_intervals`; queue-seconds owned by no reachable member and by two
(:func:`~mqbalance.rocketmq.records.window_figures`), duplicates after the partition heals
(:func:`~mqbalance.rocketmq.records.duplicates_between`), and nothing lost below the brokers' max
offsets (:func:`~mqbalance.rocketmq.records.check_records`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from mqbalance.exceptions import MQBalanceError
from mqbalance.remoting import BrokerClient
from mqbalance.rocketmq import load_records
from nemesis_net import Network, Node
from nemesis_zk import PACKAGE_ROOT
from rocketmq_cluster import RocketMQCluster

#: The member timers of every scenario (the simulator runs with the same).
HEARTBEAT_MS, PERSIST_MS, REBALANCE_MS, REQUEST_TIMEOUT_S = 1_000, 500, 3_000, 1.0
#: The broker's ``channelExpiredTimeout``: a consumer silent this long is dropped at the next scan.
CHANNEL_EXPIRED_MS = 4_000

Intervals = dict[str, list[tuple[float, float, str]]]


def start_cluster(network: Network) -> tuple[RocketMQCluster, Node, Node]:
    """A name server and one broker (``broker-a``), each in its own namespace."""
    ns, brk = network.node("namesrv"), network.node("broker")
    cluster = RocketMQCluster(
        brokers=1,
        namesrv_host=(ns.addr, ns.netns),
        broker_hosts={"broker-a": (brk.addr, brk.netns)},
        broker_config={"channelExpiredTimeout": CHANNEL_EXPIRED_MS},
    )
    try:
        cluster.start()
    except BaseException:
        cluster.close()
        raise
    return cluster, ns, brk


def make_topic(cluster: RocketMQCluster, topic: str, queues: int) -> list[str]:
    """Create ``topic`` with ``queues`` queues on every broker; wait for its route. Its queue names."""
    cluster.create_topic(topic, {b.broker_name: queues for b in cluster.brokers})
    return [f"{b.broker_name}/{topic}/{q}" for b in cluster.brokers for q in range(queues)]


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.05) -> float:
    """Poll until ``predicate()`` is true; the ``time.monotonic()`` it became so."""
    end = time.monotonic() + timeout
    while True:
        try:
            ok = predicate()
        except (MQBalanceError, OSError):  # a server briefly unreachable
            ok = False
        if ok:
            return time.monotonic()
        if time.monotonic() > end:
            raise AssertionError(f"not within {timeout:g} s: {what}")
        time.sleep(interval)


class RmqGroup:
    """``mqbalance rocketmq-consume`` processes of one group, each in its own namespace, with record files."""

    def __init__(self, network: Network, cluster: RocketMQCluster, out: Path, group: str, topic: str) -> None:
        self.network, self.cluster, self.out, self.group, self.topic = network, cluster, out, group, topic
        self.nodes: dict[str, Node] = {}
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str) -> Node:
        node = self.network.node(name)
        cmd = [sys.executable, "-m", "mqbalance.cli", "rocketmq-consume", "--namesrv", self.cluster.namesrv_addr]
        cmd += ["--group", self.group, "--topic", self.topic, "--client-id", f"{node.addr}@{name}", "--from", "first"]
        cmd += ["--record", str(self.out / f"{name}.jsonl"), "--heartbeat-interval-ms", str(HEARTBEAT_MS)]
        cmd += ["--persist-interval-ms", str(PERSIST_MS), "--rebalance-interval-ms", str(REBALANCE_MS)]
        cmd += ["--timeout", str(REQUEST_TIMEOUT_S)]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, os.environ.get("PYTHONPATH")) if p)
        self.procs[name] = node.popen(cmd, log=self.out / f"{name}.log", env=env)
        self.nodes[name] = node
        return node

    def records(self) -> dict[str, list[dict[str, Any]]]:
        return load_records(sorted(self.out.glob("*.jsonl")))

    def held(self) -> dict[str, set[str]]:
        """Member → the queues its records say it holds now."""
        out: dict[str, set[str]] = {}
        for name, rows in self.records().items():
            held: set[str] = set()
            for r in rows:
                if r.get("e") == "a":
                    held |= set(r["q"])
                elif r.get("e") == "r":
                    held -= set(r["q"])
            out[name] = held
        return out

    def split_exactly(self, queues: list[str], members: list[str]) -> bool:
        """Every queue held by exactly one of ``members``, each holding some."""
        h = self.held()
        got = [q for m in members for q in h.get(m, ())]
        return sorted(got) == sorted(queues) and all(h.get(m) for m in members)

    def consumer_ids(self) -> list[str]:
        """The group's client ids as the broker lists them now."""
        with BrokerClient(self.cluster.brokers[0].addr, timeout=1.0) as bc:
            return bc.consumer_ids(self.group)

    def _per_queue(self, queues: list[str], read: Callable[[BrokerClient, str, int], int]) -> dict[str, int]:
        """``read(broker, topic, queue id)`` of every queue, on the broker holding it."""
        out = {}
        for b in self.cluster.brokers:
            with BrokerClient(b.addr) as bc:
                for q in queues:
                    broker, topic, qid = q.split("/")
                    if broker == b.broker_name:
                        out[q] = read(bc, topic, int(qid))
        return out

    def max_offsets(self, queues: list[str]) -> dict[str, int]:
        return self._per_queue(queues, lambda bc, topic, qid: bc.max_offset(topic, qid))

    def committed(self, queues: list[str]) -> dict[str, int]:
        return self._per_queue(queues, lambda bc, topic, qid: bc.query_offset(self.group, topic, qid))

    def caught_up(self, queues: list[str]) -> bool:
        """Everything produced so far was processed by someone (the union of ``p`` ranges reaches each max offset)."""
        ends = self.max_offsets(queues)
        top: dict[str, int] = {}
        for rows in self.records().values():
            for r in rows:
                if r.get("e") == "p":
                    top[r["q"]] = max(top.get(r["q"], 0), r["b"])
        return all(top.get(q, 0) >= end for q, end in ends.items())

    def stop_all(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    p.send_signal(signal.SIGTERM)
        for p in self.procs.values():
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-2500:]}" for p in sorted(self.out.glob("*.log"))
        )


class Producer(threading.Thread):
    """Sends to every queue round-robin at ``rate`` msg/s from the root namespace; a send that fails
    (the broker cut off) is counted and the next one tried — nothing it reports as sent is lost."""

    def __init__(self, cluster: RocketMQCluster, topic: str, queues: int, rate: float) -> None:
        super().__init__(daemon=True)
        self.cluster, self.topic, self.queues, self.rate = cluster, topic, queues, rate
        self.halt = threading.Event()
        self.sent = self.failed = 0

    def run(self) -> None:
        t0, n = time.monotonic(), 0
        bc: BrokerClient | None = None
        try:
            while not self.halt.is_set():
                wait = t0 + n / self.rate - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                    continue
                try:
                    if bc is None:
                        bc = BrokerClient(self.cluster.brokers[0].addr, timeout=1.0)
                    bc.send(self.topic, n % self.queues, str(n).encode())
                    self.sent += 1
                except (MQBalanceError, OSError):
                    self.failed += 1
                    if bc is not None:
                        bc.client.close()
                    bc = None
                    time.sleep(0.2)
                n += 1
        finally:
            if bc is not None:
                bc.client.close()


def reachable_intervals(intervals: Intervals, member: str, cut: float, healed: float) -> Intervals:
    """``intervals`` (queue → ``(from, to, member)``) with ``member``'s ownership removed over
    ``[cut, healed)``: cut off, it holds its queues but can work on none of them."""
    out: Intervals = {}
    for q, ivs in intervals.items():
        for a, b, m in ivs:
            if m != member:
                out.setdefault(q, []).append((a, b, m))
                continue
            for x, y in ((a, min(b, cut)), (max(a, healed), b)):
                if x < y:
                    out.setdefault(q, []).append((x, y, m))
    return out


def commit_regressions(records: Mapping[str, list[dict[str, Any]]]) -> int:
    """Offset commits (``c`` records, in time order over all members) lower than the one before on the same queue."""
    rows = sorted((r["t"], r["q"], r["o"]) for rs in records.values() for r in rs if r.get("e") == "c")
    last: dict[str, int] = {}
    n = 0
    for _, q, o in rows:
        if q in last and o < last[q]:
            n += 1
        last[q] = o
    return n
