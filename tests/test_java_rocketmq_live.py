"""Mixed consumer groups on Apache RocketMQ's own Java broker (``rocketmq_java_cluster.py``): Java
``DefaultMQPushConsumer`` processes of the 4.9.8 and 5.3.3 clients (``tests/java/.../RocketMQConsumer``)
and ``mqbalance rocketmq-consume`` processes in one group, all recording what they hold and process
in one format.

* At every steady state each queue is held by exactly one process, and each Java client's own view
  (``GET_CONSUMER_RUNNING_INFO``'s ``mqTable``) equals the owner ``mqbalance snapshot --namesrv``
  computes for it — for AVG, AVG_BY_CIRCLE, CONSISTENT_HASH and MACHINE_ROOM.
* Through a join, a graceful leave and a ``kill -9`` under steady production: nothing is lost, every
  committed offset is covered by what was processed, and messages processed twice are processed
  so only within a rebalance window (from the change until one rebalance interval after the
  group is steady again). The counts are measured and printed (``pytest -s``).
* Two Java consumers with one client id: the Java broker lists the id twice; the snapshot keeps
  both connections and the audit reports the duplicated id, the stranded and the double-held
  queues; one tick of ``mqbalance watch``'s collector sees the same.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import mqbalance
from java_harness import java_command
from mqbalance import MessageQueue, sort_client_ids, sort_queues, strategy
from mqbalance.cli import main
from mqbalance.fleet.findings import FindingKind
from mqbalance.fleet.rocketmq.assignment import assign_snapshot
from mqbalance.fleet.rocketmq.audit import audit_snapshot
from mqbalance.fleet.rocketmq.files import load_snapshot
from mqbalance.history.collector import Collector
from mqbalance.record_files import held_queues
from mqbalance.remoting import BrokerClient, running_info_queues
from mqbalance.rocketmq import check_records
from mqbalance.rocketmq.records import duplicates_between, load_records, ownership_intervals, window_figures
from rocketmq_cluster import send_through_busy
from rocketmq_java_cluster import RocketMQJavaCluster, module_cluster
from server_process import ServerProcess, wait_for

pytestmark = pytest.mark.java

REBALANCE_MS = 5_000  # both kinds of member: Java's rocketmq.client.rebalance.waitInterval, ours
PER_BROKER = 4
# MACHINE_ROOM reads a broker's room from its name, ROOM@NAME (a name without '@' is in no room)
BROKERS = ["hz@broker-a", "sh@broker-b"]
IDCS = "hz,sh"
SRC = Path(mqbalance.__file__).resolve().parents[1]


class Member:
    """One group member process (a Java client or ``mqbalance rocketmq-consume``) and its record file."""

    def __init__(self, kind: str, client_id: str, server: ServerProcess, record: Path) -> None:
        self.kind, self.client_id, self.server, self.record = kind, client_id, server, record
        self.died: float | None = None

    @property
    def java(self) -> bool:
        return self.kind != "mqbalance"

    def rows(self) -> list[dict[str, Any]]:
        return load_records([self.record]).get(self.record.stem, []) if self.record.exists() else []

    def held(self, topic: str) -> set[str]:
        """The queues of ``topic`` it holds by its records (``a`` / ``r``), as ``broker/topic/queue``."""
        return {q for q in held_queues(self.rows()) if q.split("/")[1] == topic}

    def started(self) -> bool:
        return any(r["e"] == "start" for r in self.rows())

    def __repr__(self) -> str:
        return f"{self.kind}:{self.client_id}"


class Group:
    """A consumer group on the Java cluster: its members, a producer, the checks."""

    def __init__(self, cluster: RocketMQJavaCluster, name: str, topic: str, directory: Path, strategy_name: str):
        self.cluster, self.name, self.topic, self.dir, self.strategy = cluster, name, topic, directory, strategy_name
        cluster.create_topic(topic, {b.broker_name: PER_BROKER for b in cluster.brokers})
        self.queues = sort_queues(
            [MessageQueue(topic, b.broker_name, i) for b in cluster.brokers for i in range(PER_BROKER)]
        )
        self.members: list[Member] = []
        self.ends: dict[str, int] = {}
        self.sent = 0
        self._stop = threading.Event()
        self._producer: threading.Thread | None = None
        self._n = itertools.count()

    def qname(self, mq: MessageQueue) -> str:
        return f"{mq.broker_name}/{mq.topic}/{mq.queue_id}"

    # -- members --------------------------------------------------------------------------
    def start(self, kind: str, client_id: str) -> Member:
        """``kind``: ``rocketmq4`` / ``rocketmq5`` (the Java client of that module) or ``mqbalance``."""
        record = self.dir / f"{kind}-{client_id.replace('@', '_')}-{next(self._n)}.jsonl"
        args = ["--namesrv", self.cluster.namesrv_addr, "--group", self.name, "--topic", self.topic,
                "--client-id", client_id, "--strategy", self.strategy, "--record", str(record),
                "--from", "first"]  # fmt: skip
        if self.strategy == "MACHINE_ROOM":
            args += ["--idcs", IDCS]
        if kind == "mqbalance":
            argv = [sys.executable, "-m", "mqbalance.cli", "rocketmq-consume", *args, "--persist-interval-ms", "500",
                    "--heartbeat-interval-ms", "2000", "--rebalance-interval-ms", str(REBALANCE_MS)]  # fmt: skip
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
        else:
            home = self.dir / f"home-{record.stem}"
            props = {"user.home": str(home), "rocketmq.client.logRoot": str(home / "logs"),
                     "rocketmq.client.rebalance.waitInterval": str(REBALANCE_MS)}  # fmt: skip
            argv = [*java_command(kind, "io.mqbalance.harness.RocketMQConsumer", heap_mb=128, properties=props), *args,
                    "--persist-ms", "500", "--heartbeat-ms", "2000", "--poll-ns-ms", "2000"]  # fmt: skip
            env = dict(os.environ)
        server = ServerProcess(f"{kind} {client_id}", argv, log=record.with_suffix(".out"), env=env)
        server.start()
        member = Member(kind, client_id, server, record)
        self.members.append(member)
        wait_for(f"{member} to start", member.started, timeout=90, server=server)
        return member

    def live(self) -> list[Member]:
        return [m for m in self.members if m.server.alive()]

    def stop_all(self) -> None:
        self.stop_producing()
        for m in self.members:
            m.server.stop()

    # -- production ----------------------------------------------------------------------
    def start_producing(self, per_second: float = 40.0, limit: int = 20_000) -> None:
        """Send round-robin to every queue at ``per_second`` until :meth:`stop_producing` (or ``limit``)."""
        clients = {b.broker_name: BrokerClient(b.addr) for b in self.cluster.brokers}

        def run() -> None:
            try:
                for k in range(limit):
                    if self._stop.wait(1 / per_second):
                        return
                    mq = self.queues[k % len(self.queues)]
                    r = send_through_busy(clients[mq.broker_name], mq.topic, mq.queue_id, f"m{k}".encode())
                    self.ends[self.qname(mq)] = r.queue_offset + 1
                    self.sent += 1
            finally:
                for c in clients.values():
                    c.close()

        self._stop.clear()
        self._producer = threading.Thread(target=run, daemon=True)
        self._producer.start()

    def stop_producing(self) -> None:
        self._stop.set()
        if self._producer is not None:
            self._producer.join(10)

    def records(self) -> dict[str, list[dict[str, Any]]]:
        return {m.record.stem: m.rows() for m in self.members}

    def committed(self) -> dict[str, int]:
        out = {}
        for b in self.cluster.brokers:
            with BrokerClient(b.addr) as bc:
                for i in range(PER_BROKER):
                    out[f"{b.broker_name}/{self.topic}/{i}"] = max(0, bc.query_offset(self.name, self.topic, i))
        return out

    # -- views ---------------------------------------------------------------------------
    def broker_ids(self) -> list[str]:
        with BrokerClient(self.cluster.brokers[0].addr) as bc:
            return sort_client_ids(bc.consumer_ids(self.name))

    def java_view(self, member: Member) -> set[str]:
        """The Java client's own account (``GET_CONSUMER_RUNNING_INFO``'s ``mqTable``), for this topic."""
        with BrokerClient(self.cluster.brokers[0].addr, timeout=10) as bc:
            info = bc.consumer_running_info(self.name, member.client_id)
        return {f"{b}/{t}/{q}" for t, b, q in running_info_queues(info) if t == self.topic}

    def snapshot_file(self, tmp: Path) -> Path:
        """``mqbalance snapshot --namesrv`` of the cluster, written."""
        out = tmp / f"snapshot-{time.monotonic_ns()}.json"
        assert main(["snapshot", "--namesrv", self.cluster.namesrv_addr, "-o", str(out), "--quiet"]) == 0
        return out

    def snapshot(self, tmp: Path) -> Any:
        """``mqbalance snapshot --namesrv`` of the cluster, loaded."""
        return load_snapshot(self.snapshot_file(tmp))

    def owners(self, snap: Any) -> dict[str, set[str]]:
        """What the snapshot's assignment gives each consumer of this group and topic."""
        owners: dict[str, set[str]] = {}
        for r in assign_snapshot(snap).to_pylist():
            if r["group"] == self.name and r["topic"] == self.topic and r["consumer"] is not None:
                owners.setdefault(r["consumer"], set()).add(f"{r['broker_name']}/{self.topic}/{r['queue_id']}")
        return owners

    def expected(self, ids: list[str]) -> dict[str, set[str]]:
        """Java's allocation among ``ids`` (the broker's list, sorted as the clients sort it)."""
        params = {"consumer_idcs": IDCS.split(",")} if self.strategy == "MACHINE_ROOM" else {}
        s = strategy(self.strategy, **params)
        return {cid: {self.qname(q) for q in s.allocate(self.name, cid, self.queues, ids)} for cid in ids}

    def steady(self) -> bool:
        """Every live member listed, each holding what Java's allocation among the listed ids gives
        it, every queue held exactly once."""
        live = self.live()
        ids = self.broker_ids()
        if ids != sort_client_ids([m.client_id for m in live]):
            return False
        want = self.expected(ids)
        held = [m.held(self.topic) for m in live]
        if any(h != want[m.client_id] for m, h in zip(live, held)):
            return False
        return sorted(q for h in held for q in h) == sorted(self.qname(q) for q in self.queues)

    def wait_steady(self, what: str, timeout: float = 120.0) -> float:
        wait_for(f"the group to be steady after {what} (members {self.live()})", self.steady, timeout=timeout)
        return time.monotonic()

    def check_views(self, tmp: Path) -> None:
        """Each Java client's own view equals what the snapshot computes for it; every live
        member's records agree."""
        written = self.snapshot_file(tmp)
        snap = load_snapshot(written)
        group = snap.consumer_groups()[self.name]
        ids = sort_client_ids(group.client_ids)
        assert ids == self.broker_ids()
        reported = {c.client_id: c.strategy.display_name for c in group.connections}
        assert set(reported.values()) == {self.strategy}, reported  # each client reported its strategy (307)
        if self.strategy == "MACHINE_ROOM":
            # ConsumerRunningInfo names the strategy's class, not its consumeridcs: a live snapshot
            # does not know the rooms. The group is not computed (a finding of its own, its queues
            # neither unowned nor double-owned) and the rest of the fleet is audited as before.
            assert not [r for r in assign_snapshot(snap).to_pylist() if r["group"] == self.name]
            result = audit_snapshot(snap)
            routes = snap.readable_routes()
            subscribed = [t for g, t in snap.subscription_pairs() if g == self.name]
            queues = sum(n for t in subscribed for _, n in routes.get(t, []))  # its topic's and its retry topic's
            assert self.topic in subscribed and queues >= len(self.queues), (subscribed, routes)
            mine = [f for f in result.findings if f.group == self.name]
            assert [(f.kind, f.count) for f in mine] == [(FindingKind.SETTINGS_UNKNOWN, queues)], mine
            assert "MACHINE_ROOM's consumer idcs" in mine[0].detail
            assert not [r for r in result.rows if r.group == self.name]
            assert result.totals.not_computed_queues == queues
            assert result.totals.settings_unknown_groups == 1
            # the rooms given as the group's "consumeridcs" in the snapshot file: computed exactly
            data = json.loads(written.read_text())
            data["groups"][self.name]["consumeridcs"] = IDCS.split(",")
            written.write_text(json.dumps(data))
            snap = load_snapshot(written)
            assert audit_snapshot(snap).totals.not_computed_queues == 0
            owners = self.owners(snap)
            assert owners == {c: q for c, q in self.expected(ids).items() if q}  # the rooms the test gave
        else:
            owners = self.owners(snap)
        for m in self.live():
            mine = owners.get(m.client_id, set())
            assert m.held(self.topic) == mine, (m, sorted(mine))
            if m.java:
                assert self.java_view(m) == mine, (m, sorted(mine))


@pytest.fixture(scope="module")
def rooms(request: pytest.FixtureRequest) -> Iterator[RocketMQJavaCluster]:
    """The Java name server and two brokers, each in a machine room of its own."""
    yield from module_cluster(request, broker_names=BROKERS)


def make_group(cluster: RocketMQJavaCluster, tmp: Path, tag: str, strategy_name: str) -> Group:
    return Group(cluster, f"g-{tag}", f"T-{tag}", tmp, strategy_name)


@pytest.fixture
def cleanup() -> Iterator[list[Group]]:
    groups: list[Group] = []
    yield groups
    for g in groups:
        g.stop_all()


@pytest.mark.parametrize("strategy_name", ["AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "MACHINE_ROOM"])
def test_mixed_group_holds_every_queue_once_and_each_java_view_is_the_snapshots(
    rooms: RocketMQJavaCluster,
    tmp_path: Path,
    cleanup: list[Group],
    strategy_name: str,
) -> None:
    g = make_group(rooms, tmp_path, f"mix-{strategy_name.lower().replace('_', '')}", strategy_name)
    cleanup.append(g)
    g.start("rocketmq4", "10.0.1.1@java4")
    g.start("rocketmq5", "10.0.1.2@java5")
    g.start("mqbalance", "10.0.1.3@mqb")
    g.wait_steady("three joined")
    g.check_views(tmp_path)
    g.start_producing(per_second=50)
    time.sleep(2)
    g.stop_producing()
    wait_for("everything consumed", lambda: check_records(g.records(), g.ends).ok, timeout=60)
    assert check_records(g.records(), g.ends).duplicates == 0  # steady: nothing processed twice


def test_join_leave_and_kill_lose_nothing_and_duplicate_only_in_rebalance_windows(
    rooms: RocketMQJavaCluster,
    tmp_path: Path,
    cleanup: list[Group],
) -> None:
    g = make_group(rooms, tmp_path, "life", "AVG")
    cleanup.append(g)
    java4 = g.start("rocketmq4", "10.0.2.1@java4")
    java5 = g.start("rocketmq5", "10.0.2.2@java5")
    g.start("mqbalance", "10.0.2.3@mqb1")
    g.wait_steady("three joined")
    g.start_producing(per_second=40)
    time.sleep(3)
    windows: list[tuple[str, float, float]] = []

    joiner = g.start("mqbalance", "10.0.2.4@mqb2")
    t = next(r["t"] for r in joiner.rows() if r["e"] == "start")  # the process's own start (it joins next)
    windows.append(("join", t, g.wait_steady("a join")))
    time.sleep(3)

    t = time.monotonic()
    java5.server.stop()  # SIGTERM: the client shuts down (offsets persisted, unregistered)
    windows.append(("graceful leave", t, g.wait_steady("a graceful leave")))
    time.sleep(3)

    t = time.monotonic()
    java4.server.stop(kill=True)
    java4.died = t
    windows.append(("kill -9", t, g.wait_steady("a kill -9")))
    time.sleep(3)
    g.stop_producing()

    # nothing lost: everything sent is processed, and every committed offset is covered
    wait_for("everything consumed", lambda: check_records(g.records(), g.ends).ok, timeout=90)
    committed = g.committed()
    records = g.records()
    assert check_records(records, committed).ok, check_records(records, committed).summary()
    assert all(committed[q] <= g.ends.get(q, 0) for q in committed), (committed, g.ends)
    # duplicates only inside a window: from the change to one rebalance interval after steady
    total = check_records(records, g.ends).duplicates
    slack = REBALANCE_MS / 1000
    end = time.monotonic()
    # each window ends one rebalance interval after steady, or where the next change starts
    steady = {n: t1 - t0 for n, t0, t1 in windows}
    windows = [(n, t0, min(t1 + slack, nxt)) for (n, t0, t1), nxt in zip(windows, [w[1] for w in windows[1:]] + [end])]
    inside = {name: duplicates_between(records, t0, t1) for name, t0, t1 in windows}
    died = {java4.record.stem: java4.died}
    intervals = ownership_intervals(records, end=end, died=died)
    names = [g.qname(q) for q in g.queues]
    figures = {name: window_figures(intervals, names, t0, t1) for name, t0, t1 in windows}
    print(
        f"\nmixed AVG group, {g.sent} messages at 40/s over {len(names)} queues; duplicates {total} "
        f"(by window {inside}); to steady "
        + ", ".join(f"{n} {d:.1f} s" for n, d in steady.items())
        + "; pauses (queue-s) "
        + ", ".join(f"{n} {f['pause_queue_s']:.2f}" for n, f in figures.items())
        + "; held twice (queue-s) "
        + ", ".join(f"{n} {f['owned_twice_queue_s']:.2f}" for n, f in figures.items())
    )
    assert total == sum(inside.values()), (total, inside)


def test_duplicated_client_id_is_listed_twice_and_the_audit_reports_it(
    rooms: RocketMQJavaCluster,
    tmp_path: Path,
    cleanup: list[Group],
) -> None:
    g = make_group(rooms, tmp_path, "dup", "AVG")
    cleanup.append(g)
    g.start("rocketmq5", "10.0.3.1@java")
    dup1 = g.start("rocketmq5", "10.0.3.9@dup")
    dup2 = g.start("rocketmq4", "10.0.3.9@dup")
    ids = ["10.0.3.1@java", "10.0.3.9@dup", "10.0.3.9@dup"]
    wait_for("the Java broker to list the id twice", lambda: g.broker_ids() == ids, timeout=60)
    want = g.expected(ids)  # both processes compute the same index: the third slot's queues are stranded
    stranded = {g.qname(q) for q in g.queues} - set().union(*want.values())
    assert len(stranded) == 2  # 8 queues: 3 + 3 + 2

    def settled() -> bool:
        return all(m.held(g.topic) == want[m.client_id] for m in g.live())

    wait_for("every process to hold what Java gives its id", settled, timeout=120)
    for m in (dup1, dup2):
        assert g.java_view(m) == want[m.client_id]
    snap = g.snapshot(tmp_path)
    assert sort_client_ids(snap.consumer_groups()[g.name].client_ids) == ids  # every connection kept
    result = audit_snapshot(snap)
    mine = [f for f in result.findings if f.group == g.name]
    kinds = {f.kind: f for f in mine}
    assert kinds[FindingKind.DUPLICATE_CLIENT_ID].count == 2, mine
    assert kinds[FindingKind.UNOWNED].count == len(stranded), mine
    assert kinds[FindingKind.DOUBLE_OWNED].count == len(want["10.0.3.9@dup"]), mine
    assert g.owners(snap) == want
    # `mqbalance watch`'s collector, one tick: the id on two connections, its queues on two
    # processes, the stranded ones on none
    collector = Collector(rooms.namesrv_addr, tmp_path / "history", interval=1, offsets_interval=3600)
    try:
        state = collector.tick().state
    finally:
        collector.close()
    assert sort_client_ids([k[1] for k in state.members if k[0] == g.name]) == ids
    seen = {f"{q[2]}/{q[1]}/{q[3]}": n for q, (_owner, n) in state.ownership.items() if q[:2] == (g.name, g.topic)}
    assert {q for q, n in seen.items() if n == 2} == want["10.0.3.9@dup"], seen
    assert {q for q, n in seen.items() if n == 0} == stranded, seen
