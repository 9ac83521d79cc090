"""ZooKeeper member processes under network faults: the group driver and the measurements of the
``test_nemesis_zk*.py`` scenarios.

A :class:`ZkGroup` runs real ``mqbalance zk-consume`` processes, each in its own network namespace
(:class:`nemesis_net.Node`), reaching ZooKeeper only through that namespace's veth (or through a
:class:`nemesis_proxy.FaultProxy` listening on the veth's root side). An admin client in the root
namespace watches the owner nodes. The checks read the members' record files afterwards, as the
soak test does (:func:`mqbalance.coordination.records.check_records`), plus what this module
measures from them: :func:`paused_queue_seconds` (time a queue made no progress although messages
were waiting), :func:`first_work_after` (when a queue was worked on again).

:func:`replay` runs, from a member's namespace, the exact ZooKeeper request a zombie would send
late — its fenced commit, or a deposed leader's publication — with the tokens it last held, to
show ZooKeeper refuses it.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

import mqbalance
from mqbalance.allocation.registry import StrategySpec
from mqbalance.coordination import GroupPaths, group_status
from mqbalance.coordination.assignment import group_assignment
from mqbalance.coordination.layout import MemberInfo
from mqbalance.coordination.records import RecordCheck, check_records, load_records
from nemesis_net import Node

PACKAGE_ROOT = str(Path(mqbalance.__file__).resolve().parent.parent)
TESTS = Path(__file__).resolve().parent
#: Rounds of every scenario (``MQBALANCE_NEMESIS_ROUNDS=N`` for a long run).
ROUNDS = int(os.environ.get("MQBALANCE_NEMESIS_ROUNDS", "0")) or None
#: Messages per second per queue of the synthetic source; a queue idle longer than PAUSE_S while
#: messages wait counts as paused.
RATE = 20.0
PAUSE_S = 0.25


def rounds(default: int) -> int:
    return ROUNDS or default


def seed_for(name: str) -> int:
    """The scenario's seed: ``MQBALANCE_NEMESIS_SEED`` or a fresh one (printed by the test on failure)."""
    env = os.environ.get("MQBALANCE_NEMESIS_SEED")
    return int(env) if env else random.SystemRandom().randrange(1, 2**31) ^ (hash(name) & 0xFFFF)


class ZkGroup:
    """One consumer group of ``mqbalance zk-consume`` processes over ``queues`` queues of one topic."""

    def __init__(
        self,
        admin_hosts: str,
        name: str,
        mode: str,
        strategy: str,
        out: Path,
        *,
        queues: int = 12,
        session_s: float = 2.0,
    ) -> None:
        self.admin_hosts, self.name, self.mode, self.strategy, self.out = admin_hosts, name, mode, strategy, out
        self.queues, self.session_s = queues, session_s
        self.spec = StrategySpec.parse(strategy)
        self.topic = f"{name}-t"
        self.paths = GroupPaths(name)
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.nodes: dict[str, Node] = {}
        self.leaving: set[str] = set()
        self.admin = self._admin(admin_hosts)

    @staticmethod
    def _admin(hosts: str) -> KazooClient:
        admin = KazooClient(hosts=hosts, timeout=10.0, connection_retry={"max_tries": -1, "max_delay": 0.5})
        admin.start(timeout=20)
        return admin

    def admin_on(self, hosts: str) -> None:
        """Read the group through ``hosts`` from now on (a server the next fault leaves alone)."""
        old, self.admin = self.admin, self._admin(hosts)
        old.stop()
        old.close()

    def spawn(self, cid: str, node: Node, hosts: str) -> None:
        """Start member ``cid`` in ``node``'s namespace, talking to ZooKeeper at ``hosts``."""
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([PACKAGE_ROOT, os.environ.get("PYTHONPATH", "")])}
        cmd = [sys.executable, "-m", "mqbalance.cli", "zk-consume", "--zk", hosts, "--group", self.name, "-v"]
        cmd += ["--topic", f"{self.topic}:{self.queues}", "--client-id", cid, "--record", str(self.records(cid))]
        cmd += ["--strategy", self.strategy, "--mode", self.mode, "--session-timeout", str(self.session_s)]
        cmd += ["--rebalance-backoff-ms", "250", "--rebalance-max-retries", "8", "--rate", str(RATE)]
        cmd += ["--commit-interval-ms", "300", "--batch", "20"]
        self.procs[cid] = node.popen(cmd, log=self.out / f"{cid}.log", env=env)
        self.nodes[cid] = node

    def records(self, cid: str) -> Path:
        return self.out / f"{cid}.jsonl"

    def live(self) -> list[str]:
        """Members running and not leaving (see :meth:`leave`)."""
        return sorted(c for c, p in self.procs.items() if p.poll() is None and c not in self.leaving)

    def leave(self, cid: str) -> None:
        """Ask member ``cid`` to leave gracefully (SIGTERM); it no longer counts as live."""
        self.leaving.add(cid)
        self.procs[cid].send_signal(signal.SIGTERM)

    def owners(self) -> dict[int, str]:
        """``{queue: owner member}`` as ZooKeeper holds it now."""
        out: dict[int, str] = {}
        base = f"{self.paths.owners}/{self.topic}"
        try:
            children = self.admin.get_children(base)
        except NoNodeError:
            return out
        for q in children:
            try:
                who = self.admin.get(f"{base}/{q}")[0].decode()
            except NoNodeError:
                continue
            out[int(q)] = who.rsplit("-", 1)[0] if self.strategy == "range" else who
        return out

    def registered(self) -> list[str]:
        try:
            return sorted(self.admin.get_children(self.paths.ids))
        except NoNodeError:
            return []

    def session_of(self, cid: str) -> int | None:
        stat = self.admin.exists(self.paths.member(cid))
        return None if stat is None else int(stat.ephemeralOwner)

    def converged(self, members: Iterable[str]) -> bool:
        """Every queue owned by one of ``members``, all of them registered and nobody else, and the
        split the strategy prescribes for them (balanced, for a sticky one)."""
        alive = set(members)
        try:
            if set(self.admin.get_children(self.paths.ids)) != alive:
                return False
        except NoNodeError:
            return False
        owner = self.owners()
        if len(owner) != self.queues or not set(owner.values()) <= alive:
            return False
        if self.spec.info.needs_previous:
            counts = Counter(owner.values())
            return max(counts.get(c, 0) for c in alive) - min(counts.get(c, 0) for c in alive) <= 1
        infos = {c: MemberInfo(c, {self.topic: 1}) for c in alive}
        expected = group_assignment(self.spec, infos, {self.topic: dict.fromkeys(range(self.queues), 0)})
        return owner == {tp.partition: m for tp, (m, _) in expected.items()}

    def owned_by(self, members: Iterable[str]) -> bool:
        """Every queue has an owner node, held by one of ``members`` (whatever the split)."""
        owner = self.owners()
        return len(owner) == self.queues and set(owner.values()) <= set(members)

    def wait(self, what: Callable[[], bool], timeout: float) -> float | None:
        """Seconds until ``what()`` holds (polled every 50 ms), or ``None`` after ``timeout``."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            try:
                if what():
                    return time.monotonic() - t0
            except Exception:  # noqa: S112 - the admin session reconnecting
                pass
            time.sleep(0.05)
        return None

    def stop_all(self, timeout: float = 60.0) -> None:
        """SIGTERM to every member, then wait up to ``timeout`` s in all; a member still running
        is asked for its threads' stacks (SIGQUIT, into its log), killed, and named with its log."""
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for cid, p in self.procs.items():
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGQUIT)
                time.sleep(1.0)
                p.kill()
                p.wait(10)
                tail = (self.out / f"{cid}.log").read_text(errors="replace")[-6000:]
                raise AssertionError(f"{cid} did not stop within {timeout:g} s of SIGTERM; its log:\n{tail}") from None

    def check(self) -> tuple[RecordCheck, dict[str, list[dict[str, Any]]]]:
        """The record check against the offsets committed in ZooKeeper (after :meth:`stop_all`)."""
        st = group_status(self.admin_hosts, self.name)
        final = {f"{row.topic}/{row.partition}": row.offset or 0 for row in st.partitions}
        records = load_records(sorted(self.out.glob("*.jsonl")))
        return check_records(records, final), records

    def close(self) -> None:
        self.admin.stop()
        self.admin.close()

    def logs(self) -> str:
        out = []
        for log in sorted(self.out.glob("*.log")):
            text = log.read_text(errors="replace").strip()
            if text:
                out.append(f"--- {log.name}\n{text[-2500:]}")
        return "\n".join(out)


def held(rows: list[dict[str, Any]], until: float | None = None) -> set[str]:
    """The queues a member held by its own record file (assignments minus revocations) at ``until``."""
    out: set[str] = set()
    for r in rows:
        if until is not None and r.get("t", 0) > until:
            break
        if r.get("e") == "a":
            out |= set(r["q"])
        elif r.get("e") == "r":
            out -= set(r["q"])
    return out


def last_work(rows: list[dict[str, Any]], queues: set[str] | None = None) -> float:
    """When the member last finished processing (any of ``queues``)."""
    return max((r["t1"] for r in rows if r.get("e") == "p" and (queues is None or r["q"] in queues)), default=0.0)


def first_work_after(
    records: Mapping[str, list[dict[str, Any]]], queue: str, after: float, exclude: str | None = None
) -> tuple[float, str] | None:
    """``(start, member)`` of the first processing of ``queue`` started after ``after`` by anyone but ``exclude``."""
    best: tuple[float, str] | None = None
    for m, rows in records.items():
        if m == exclude:
            continue
        for r in rows:
            if r.get("e") == "p" and r["q"] == queue and r["t0"] >= after and (best is None or r["t0"] < best[0]):
                best = (r["t0"], m)
                break
    return best


def paused_queue_seconds(records: Mapping[str, list[dict[str, Any]]], t0: float, t1: float) -> float:
    """Queue-seconds in ``[t0, t1]`` during which a queue made no progress for longer than
    :data:`PAUSE_S` (messages arrive every ``1 / RATE`` s, so a longer gap means nobody worked it)."""
    by_queue: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for rows in records.values():
        for r in rows:
            if r.get("e") == "p":
                by_queue[r["q"]].append((r["t0"], r["t1"]))
    total = 0.0
    for ivs in by_queue.values():
        ivs.sort()
        prev_end = t0
        for a, b in ivs + [(t1, t1)]:
            a, b = max(a, t0), min(b, t1)
            if a - prev_end > PAUSE_S:
                total += a - prev_end
            prev_end = max(prev_end, b)
            if prev_end >= t1:
                break
    return total


def replay(node: Node, hosts: str, action: dict[str, Any]) -> dict[str, Any]:
    """Run ``nemesis_replay.py`` in ``node``'s namespace with ``action``; its JSON answer."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([PACKAGE_ROOT, str(TESTS), os.environ.get("PYTHONPATH", "")])}
    cp = subprocess.run(
        [
            "ip",
            "netns",
            "exec",
            node.netns,
            sys.executable,
            str(TESTS / "nemesis_replay.py"),
            hosts,
            json.dumps(action),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    if cp.returncode != 0:
        raise AssertionError(f"replay {action} failed: {cp.stderr[-1500:]}")
    out: dict[str, Any] = json.loads(cp.stdout.strip().splitlines()[-1])
    return out


@dataclass
class Table:
    """One scenario's numbers over its rounds (what the README tables show)."""

    scenario: str
    rounds: int = 0
    violations: int = 0
    owned_again_s: list[float] = field(default_factory=list)
    paused_queue_s: list[float] = field(default_factory=list)
    duplicates: int = 0
    extra: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))

    def row(self) -> dict[str, Any]:
        def mm(xs: list[float]) -> str:
            return f"{median(xs):.2f} / {max(xs):.2f}" if xs else "-"

        return {
            "scenario": self.scenario,
            "rounds": self.rounds,
            "violations": self.violations,
            "owned_again_s (median / max)": mm(self.owned_again_s),
            "paused_queue_s (median / max)": mm(self.paused_queue_s),
            "duplicates": self.duplicates,
            **{k: mm(v) for k, v in self.extra.items()},
        }


def conclude(table: Table, rounds: int, violations: list[str], check: RecordCheck, seed: int, queues: int) -> None:
    """Record the scenario's ``table`` (its rounds, violations and the record check's duplicates),
    then fail on any violation, or on too little progress to have shown anything."""
    table.rounds, table.violations, table.duplicates = rounds, len(violations), check.duplicates
    write_result(table)
    assert not violations, f"seed {seed}: " + "\n".join(violations)
    assert check.processed > queues * 20, f"seed {seed}: too little progress ({check.processed} messages)"


def write_result(table: Table) -> None:
    """Append the table's row to ``$MQBALANCE_NEMESIS_OUT`` (JSON lines) when set (the README script)."""
    path = os.environ.get("MQBALANCE_NEMESIS_OUT")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(table.row()) + "\n")
    print(json.dumps(table.row()))
