"""Soak: real member processes (``mqbalance zk-consume``) on a real ZooKeeper, under faults.

Two groups run side by side on one server (one per mode), 8 member processes each over 32
queues. Faults, in rounds: ``kill -9`` a member and start a new one; stop one gracefully and
start a new one; ``SIGSTOP`` one past its session timeout, then ``SIGCONT`` it (the zombie); and
once, a ZooKeeper restart (SIGKILL, same port and data). Afterwards, from the members' record files
and ZooKeeper: no message lost below the committed offsets, no two members ever processed a queue
at overlapping times, committed offsets never went backwards, after every fault every queue
was owned again within ``OWNED_BOUND_S`` (after the server's restart: from when it serves again),
and the zombie, once resumed, revoked everything it held and came back with a new session.

About 45 s per parametrization on this 2-core machine; ``MQBALANCE_SOAK_ROUNDS=N`` repeats the
fault rounds for longer runs.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

import mqbalance
from mqbalance.allocation.registry import StrategySpec
from mqbalance.coordination import GroupPaths, ZooKeeperServer, group_status
from mqbalance.coordination.assignment import group_assignment
from mqbalance.coordination.layout import MemberInfo
from mqbalance.coordination.records import check_records, load_records
from mqbalance.kafka import TopicPartition
from mqbalance.record_files import held_queues
from server_process import free_port

SESSION_S = 2.0
QUEUES = 32
MEMBERS = 8
#: after a fault, every queue has a live owner again within: session timeout (a dead member's
#: nodes expire) + a rebalance round with back-off retries, with slack for a loaded 2-core machine.
#: On a busier machine the bound grows with what this run measured: twice the time the first
#: members took to start and own everything (a fault's recovery starts a new member process too).
OWNED_BOUND_S = 12.0
ROUNDS = int(os.environ.get("MQBALANCE_SOAK_ROUNDS", "1"))
PACKAGE_ROOT = str(Path(mqbalance.__file__).resolve().parent.parent)


class Group:
    def __init__(self, hosts: str, name: str, mode: str, strategy: str, out: Path) -> None:
        self.hosts, self.name, self.mode, self.strategy, self.out = hosts, name, mode, strategy, out
        self.spec = StrategySpec.parse(strategy)
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.serial = 0
        self.topic = f"{name}-t"
        self.stopped: str | None = None

    def spawn(self) -> str:
        cid = f"{self.name}-m{self.serial:02d}"
        self.serial += 1
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([PACKAGE_ROOT, os.environ.get("PYTHONPATH", "")])}
        cmd = [sys.executable, "-m", "mqbalance.cli", "zk-consume", "--zk", self.hosts, "--group", self.name]
        cmd += ["--topic", f"{self.topic}:{QUEUES}", "--client-id", cid, "--record", str(self.out / f"{cid}.jsonl")]
        cmd += ["--strategy", self.strategy, "--mode", self.mode, "--session-timeout", str(SESSION_S)]
        cmd += ["--rebalance-backoff-ms", "250", "--rebalance-max-retries", "8", "--rate", "20"]
        cmd += ["--commit-interval-ms", "300", "--batch", "20"]
        with open(self.out / f"{cid}.log", "wb") as log:
            self.procs[cid] = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
        return cid

    def live(self) -> list[str]:
        return [c for c, p in self.procs.items() if p.poll() is None]

    def owned_by_live(self, admin: KazooClient) -> bool:
        """Every queue owned by a live, registered member, exactly as the strategy prescribes for the
        live members (a sticky one, which depends on the history: balanced) — not merely owned while a
        rebalance is still under way."""
        p = GroupPaths(self.name)
        try:
            ids = set(admin.get_children(p.ids))
            alive = {c for c in self.live() if c != self.stopped}
            if ids != alive:
                return False
            owner: dict[TopicPartition, str] = {}
            for part in admin.get_children(f"{p.owners}/{self.topic}"):
                who = admin.get(f"{p.owners}/{self.topic}/{part}")[0].decode()
                owner[TopicPartition(self.topic, int(part))] = (
                    who if self.strategy != "range" else who.rsplit("-", 1)[0]
                )
        except NoNodeError:
            return False
        if len(owner) != QUEUES or not set(owner.values()) <= alive:
            return False
        if self.spec.info.needs_previous:
            counts = Counter(owner.values())
            return max(counts.get(c, 0) for c in alive) - min(counts.get(c, 0) for c in alive) <= 1
        infos = {c: MemberInfo(c, {self.topic: 1}) for c in alive}
        expected = group_assignment(self.spec, infos, {self.topic: dict.fromkeys(range(QUEUES), 0)})
        return owner == {tp: m for tp, (m, _) in expected.items()}

    def owning(self, admin: KazooClient) -> list[str]:
        """Live members that own at least one queue (candidates for the zombie)."""
        p = GroupPaths(self.name)
        who = set()
        for q in admin.get_children(f"{p.owners}/{self.topic}"):
            try:
                w = admin.get(f"{p.owners}/{self.topic}/{q}")[0].decode()
            except NoNodeError:  # released meanwhile
                continue
            who.add(w if self.strategy != "range" else w.rsplit("-", 1)[0])
        return sorted(who & set(self.live()))


def stop_a_holder(g: Group, admin: KazooClient, rng: random.Random) -> tuple[str, set[str], int]:
    """SIGSTOP a member that holds queues, as its frozen record file shows, and return it with those
    queues and its ZooKeeper session id. In every-member mode a member may be between releasing and
    claiming (a late notification), owning nodes in ZooKeeper but nothing in its own books: such a
    member is resumed at once (well inside its session) and another one is tried."""
    for _ in range(50):
        candidates = g.owning(admin)
        if candidates:
            cid = rng.choice(candidates)
            try:
                session = admin.exists(f"{GroupPaths(g.name).ids}/{cid}").ephemeralOwner
            except AttributeError:  # unregistered meanwhile
                continue
            g.procs[cid].send_signal(signal.SIGSTOP)
            held = held_queues(load_records([g.out / f"{cid}.jsonl"]).get(cid, []))
            if held:
                return cid, held, session
            g.procs[cid].send_signal(signal.SIGCONT)
        time.sleep(0.1)
    raise AssertionError(f"{g.name}: no member held queues by its records for 5 s")


def wait_owned(
    groups: list[Group], admin: KazooClient, since: float, times: dict[str, list[float]], bound: float
) -> None:
    pending = {g.name: g for g in groups}
    while pending:
        for name, g in list(pending.items()):
            try:
                ok = g.owned_by_live(admin)
            except Exception:  # the admin session reconnecting after a server restart
                ok = False
            if ok:
                times[name].append(time.monotonic() - since)
                del pending[name]
        if time.monotonic() - since > bound + 10:
            for name in pending:
                times[name].append(float("inf"))
            return
        time.sleep(0.05)


@pytest.mark.parametrize(
    "configs",
    [
        [("every-member", "AVG"), ("leader", "CONSISTENT_HASH")],
        [("every-member", "range"), ("leader", "sticky")],
    ],
    ids=["AVG+CONSISTENT_HASH", "range+sticky"],
)
def test_soak(tmp_path: Path, configs: list[tuple[str, str]]) -> None:
    rng = random.Random(12)
    server = ZooKeeperServer(tick_ms=500, port=free_port())  # restarted on this port: outside the ephemeral range
    server.start()
    groups: list[Group] = []
    admin = KazooClient(hosts=server.hosts, timeout=10.0, connection_retry={"max_tries": -1, "max_delay": 0.5})
    times: dict[str, list[float]] = {}
    zombie_revocations: dict[str, list[list[str]]] = {}
    try:
        admin.start(timeout=10)
        for mode, strat in configs:
            g = Group(server.hosts, f"soak-{mode}-{strat}".replace("_", "-").lower(), mode, strat, tmp_path)
            groups.append(g)
            times[g.name] = []
            zombie_revocations[g.name] = []
            for _ in range(MEMBERS):
                g.spawn()
        started: dict[str, list[float]] = {g.name: [] for g in groups}
        wait_owned(groups, admin, time.monotonic(), started, 60.0)
        startup_s = max(x for xs in started.values() for x in xs)
        assert startup_s < 70, f"the first members did not own every queue: {started}"
        bound = max(OWNED_BOUND_S, SESSION_S + 2 * startup_s)
        for r in range(ROUNDS):
            # kill -9 one member of every group, start a new one
            t = time.monotonic()
            for g in groups:
                g.procs[rng.choice(g.live())].kill()
                g.spawn()
            wait_owned(groups, admin, t, times, bound)
            # stop one gracefully, start a new one
            t = time.monotonic()
            for g in groups:
                victim = g.procs[rng.choice(g.live())]
                victim.send_signal(signal.SIGTERM)
                victim.wait(30)
                g.spawn()
            wait_owned(groups, admin, t, times, bound)
            # the zombie: SIGSTOP past the session timeout, then SIGCONT
            zombies = {}
            for g in groups:
                zombies[g.name] = stop_a_holder(g, admin, rng)
                g.stopped = zombies[g.name][0]
            time.sleep(SESSION_S + 1.5)
            t = time.monotonic()
            wait_owned(groups, admin, t - SESSION_S - 1.5, {g.name: [] for g in groups}, bound)  # survivors took over
            resumed = time.monotonic()
            for g in groups:
                g.procs[zombies[g.name][0]].send_signal(signal.SIGCONT)
                g.stopped = None
            wait_owned(groups, admin, t, times, bound)
            for g in groups:  # the zombie noticed: it let go of what it held and came back with a new session
                cid, held, session = zombies[g.name]
                stat = admin.exists(f"{GroupPaths(g.name).ids}/{cid}")
                assert stat is not None and stat.ephemeralOwner != session, f"{g.name}: {cid} kept its session"
                rows = load_records([g.out / f"{cid}.jsonl"])[cid]
                revoked = {q for row in rows if row.get("e") == "r" and row["t"] >= resumed for q in row["q"]}
                assert held <= revoked, f"{g.name}: zombie {cid} never revoked {sorted(held - revoked)}"
                zombie_revocations[g.name].append(
                    sorted({row["why"] for row in rows if row.get("e") == "r" and row["t"] >= resumed})
                )
            if r == 0:  # a ZooKeeper restart, once: counted from when it serves again (its JVM's start
                server.restart(kill=True)  # is not the members' doing, and takes seconds on a loaded machine)
                wait_owned(groups, admin, time.monotonic(), times, bound)
        time.sleep(1.0)
        for g in groups:
            for p in g.procs.values():
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
        for g in groups:
            for p in g.procs.values():
                p.wait(30)
        results: dict[str, Any] = {}
        for g in groups:
            # A member's close request can miss ZooKeeper: its nodes then go with its session, one
            # session timeout later. (Once seen after the server's restart: a session given up while
            # the server was down; a member now closes such a session when connected again.)
            deadline = time.monotonic() + 2 * SESSION_S
            st = group_status(server.hosts, g.name)
            while (st.members or st.unowned != QUEUES) and time.monotonic() < deadline:
                time.sleep(0.2)
                st = group_status(server.hosts, g.name)
            final = {f"{row.topic}/{row.partition}": row.offset or 0 for row in st.partitions}
            records = load_records(sorted(tmp_path.glob(f"{g.name}-m*.jsonl")))
            check = check_records(records, final)
            lost_sessions = sum(1 for rows in records.values() for r in rows if r.get("why") == "session-lost")
            results[g.name] = {
                **check.summary(),
                "owned_again_s": [round(x, 2) for x in times[g.name]],
                "session_lost_revocations": lost_sessions,
                "zombie_revocation_reasons": zombie_revocations[g.name],
            }
            assert st.members == [] and st.unowned == QUEUES  # everyone left cleanly at the end
            assert sum(final.values()) > QUEUES * 20, f"{g.name}: too little progress {final}"
        print(results)
        for name, res in results.items():
            assert res["ok"], f"{name}: {res}"
            assert max(res["owned_again_s"]) <= bound, f"{name}: {res['owned_again_s']} (bound {bound:.1f} s)"
    except BaseException:
        for log in sorted(tmp_path.glob("*.log")):
            text = log.read_text(errors="replace").strip()
            if text:
                print(f"--- {log.name}\n{text[-3000:]}")
        raise
    finally:
        for g in groups:
            for p in g.procs.values():
                if p.poll() is None:
                    p.send_signal(signal.SIGCONT)
                    p.kill()
                p.wait(30)
        admin.stop()
        admin.close()
        server.close()
