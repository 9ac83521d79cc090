"""Benchmark: consumer groups on a real ZooKeeper, every-member (seed 004) vs leader mode.

For groups of N members over Q queues, per membership change — a member joins, a member leaves
gracefully, a member is killed with SIGKILL (a real member process) — and per mode × strategy:

* time until stable (every queue owned exactly once by a live member, every member ACQUIRED, the
  assignment the strategy prescribes for the new member set);
* ZooKeeper requests (round trips; a multi counts once) and operations sent by the members,
  watch notifications they received (the herd), claim conflicts and rebalance retries;
* queues paused (work stopped and ownership released: every-member stops the world) and queues
  moved (owner before ≠ owner after).

Members run in this process (one kazoo session each); the killed one is a separate
``mqbalance zk-consume`` process. Usage::

    python benches/coordination_bench.py --sizes 4,16,32 --queues 1024 --out out/coordination

writes ``results.json``, ``table.md`` and ``coordination.png`` there.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

import mqbalance
from mqbalance.allocation.registry import StrategySpec
from mqbalance.coordination import GroupMember, GroupPaths, MemberState, ZooKeeperServer, set_partitions
from mqbalance.coordination.assignment import group_assignment
from mqbalance.coordination.layout import MemberInfo
from mqbalance.kafka import TopicPartition

COUNTERS = ("requests", "operations", "notifications", "conflicts", "retries", "released")
CONFIGS = [
    ("every-member", "AVG"),
    ("every-member", "CONSISTENT_HASH"),
    ("leader", "AVG"),
    ("leader", "CONSISTENT_HASH"),
    ("leader", "kafka-sticky"),
]


def wait(pred: Callable[[], bool], timeout: float) -> float | None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if pred():
            return time.monotonic() - t0
        time.sleep(0.005)
    return None


class Bench:
    def __init__(self, hosts: str, mode: str, strategy: str, n: int, queues: int, args: argparse.Namespace) -> None:
        self.hosts, self.mode, self.strategy, self.n, self.queues, self.args = hosts, mode, strategy, n, queues, args
        self.group = f"bench-{mode}-{strategy}-{n}".lower().replace("_", "-")
        self.topic = f"{self.group}-t"
        self.members: list[GroupMember] = []
        self.serial = 0
        self.spec = StrategySpec.parse(strategy)
        self.admin = KazooClient(hosts=hosts, timeout=10.0)
        self.admin.start(timeout=10)
        set_partitions(self.admin, self.topic, queues)
        self.victim: subprocess.Popen[bytes] | None = None

    def member(self) -> GroupMember:
        cid = f"m{self.serial:03d}"
        self.serial += 1
        return GroupMember(
            self.hosts,
            self.group,
            [self.topic],
            client_id=cid,
            strategy=self.strategy,
            mode=self.mode,
            session_timeout=self.args.session_timeout,
            rebalance_backoff_ms=self.args.backoff_ms,
            rebalance_max_retries=4,
        )

    def expected(self, ids: list[str]) -> dict[TopicPartition, str] | None:
        if self.spec.info.needs_previous:  # depends on the history: checked for balance instead
            return None
        infos = {c: MemberInfo(c, {self.topic: 1}) for c in ids}
        owners = group_assignment(self.spec, infos, {self.topic: dict.fromkeys(range(self.queues), 0)})
        return {tp: m for tp, (m, _) in owners.items()}

    def owners(self) -> dict[TopicPartition, str] | None:
        own: dict[TopicPartition, str] = {}
        for m in self.members:
            for tp in m.assignment:
                if tp in own:
                    return None
                own[tp] = m.client_id
        return own

    def stable(self, expected: dict[TopicPartition, str] | None, extra_owned: int = 0) -> bool:
        if any(m.state is not MemberState.ACQUIRED or m.pending for m in self.members):
            return False
        own = self.owners()
        if own is None:
            return False
        if expected is not None:
            return own == {tp: m for tp, m in expected.items() if m != "victim"} and (
                extra_owned == 0 or self.victim_owned() == extra_owned
            )
        victim = self.victim_owned() if extra_owned else None
        if len(own) + (victim or 0) != self.queues:
            return False
        # a sticky strategy with identical subscriptions: balanced (max - min <= 1) over the live members
        counts = [len(m.assignment) for m in self.members] + ([] if victim is None else [victim])
        return max(counts) - min(counts) <= 1 and len({m.generation for m in self.members}) == 1

    def victim_owned(self) -> int:
        p = GroupPaths(self.group)
        n = 0
        for part in self.admin.get_children(f"{p.owners}/{self.topic}"):
            try:
                if self.admin.get(f"{p.owners}/{self.topic}/{part}")[0] == b"victim":
                    n += 1
            except Exception:
                pass
        return n

    def totals(self, extra: list[GroupMember] = ()) -> dict[str, int]:  # type: ignore[assignment]
        out = dict.fromkeys(COUNTERS, 0)
        for m in [*self.members, *extra]:
            s = m.stats.as_dict()
            for k in COUNTERS:
                out[k] += s[k]
        return out

    def measure(self, change: str, act: Callable[[], list[GroupMember]], ids_after: list[str]) -> dict[str, Any]:
        before_owner = self.owners() or {}
        before = self.totals()
        t0 = time.monotonic()
        gone = act()
        exp = self.expected(ids_after)
        took = wait(lambda: self.stable(exp), self.args.timeout)
        elapsed = took if took is None else time.monotonic() - t0
        after = self.totals(gone)
        after_owner = self.owners() or {}
        moved = sum(1 for tp, m in after_owner.items() if before_owner.get(tp) != m)
        row = {
            "mode": self.mode,
            "strategy": self.strategy,
            "members": self.n,
            "queues": self.queues,
            "change": change,
            "stable_s": None if elapsed is None else round(elapsed, 3),
            "moved": moved,
            **{k: after[k] - before[k] for k in COUNTERS},
        }
        print(json.dumps(row), flush=True)
        return row

    def run(self) -> list[dict[str, Any]]:
        rows = []
        for _ in range(self.n):
            m = self.member()
            m.start()
            self.members.append(m)
        ids = [m.client_id for m in self.members]
        if wait(lambda: self.stable(self.expected(ids)), self.args.timeout * 3) is None:
            raise RuntimeError(f"{self.group}: never stable at start")
        time.sleep(0.3)
        # join
        newcomer = self.member()

        def join() -> list[GroupMember]:
            newcomer.start()
            self.members.append(newcomer)
            return []

        rows.append(self.measure("join", join, [*ids, newcomer.client_id]))
        time.sleep(0.3)

        # graceful leave (the newcomer leaves again)
        def leave() -> list[GroupMember]:
            self.members.remove(newcomer)
            newcomer.close()
            return [newcomer]

        rows.append(self.measure("leave", leave, ids))
        time.sleep(0.3)
        # kill -9 of a member process
        self.spawn_victim()
        exp = self.expected([*ids, "victim"])
        share = sum(1 for m in (exp or {}).values() if m == "victim") if exp else self.queues // (self.n + 1)
        if exp is None:
            ok = wait(lambda: self.victim_owned() >= share and self.stable(None, extra_owned=share), 60)
        else:
            ok = wait(lambda: self.stable(exp, extra_owned=share), 60)
        if ok is None:
            raise RuntimeError(f"{self.group}: never stable with the victim")
        time.sleep(0.3)

        def kill() -> list[GroupMember]:
            assert self.victim is not None
            self.victim.send_signal(signal.SIGKILL)
            self.victim.wait()
            return []

        rows.append(self.measure("kill -9", kill, ids))
        return rows

    def spawn_victim(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(Path(mqbalance.__file__).resolve().parent.parent)}
        rec = Path(tempfile.gettempdir()) / f"{self.group}-victim.jsonl"
        cmd = [sys.executable, "-m", "mqbalance.cli", "zk-consume", "--zk", self.hosts, "--group", self.group]
        cmd += ["--topic", self.topic, "--client-id", "victim", "--strategy", self.strategy, "--mode", self.mode]
        cmd += [
            "--session-timeout",
            str(self.args.session_timeout),
            "--rebalance-backoff-ms",
            str(self.args.backoff_ms),
        ]
        cmd += ["--record", str(rec), "--rate", "1"]
        self.victim = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def close(self) -> None:
        for m in self.members:
            m.close()
        if self.victim is not None and self.victim.poll() is None:
            self.victim.kill()
            self.victim.wait()
        self.admin.stop()
        self.admin.close()


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| mode | strategy | members | change | stable s | ZK requests | ops | notifications | conflicts | retries "
        "| paused | moved |"
    )
    lines = [head, "|" + "---|" * 12]
    for r in rows:
        st = "timeout" if r["stable_s"] is None else f"{r['stable_s']:.2f}"
        lines.append(
            f"| {r['mode']} | {r['strategy']} | {r['members']} | {r['change']} | {st} | {r['requests']:,} | "
            f"{r['operations']:,} | {r['notifications']:,} | {r['conflicts']} | {r['retries']} | {r['released']} | "
            f"{r['moved']} |"
        )
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    changes = ["join", "leave", "kill -9"]
    configs = [(m, s) for m, s in CONFIGS if any(r["mode"] == m and r["strategy"] == s for r in rows)]
    sizes = sorted({r["members"] for r in rows})
    top = max(sizes)
    fig, axes = plt.subplots(1, 4, figsize=(20, 4.8))
    width = 0.8 / max(len(configs), 1)
    for k, (metric, label, log) in enumerate(
        [
            ("stable_s", "time to stable (s)", False),
            ("requests", "ZooKeeper requests", True),
            ("released", "queues paused (released)", False),
            ("moved", "queues moved", False),
        ]
    ):
        ax = axes[k]
        for i, (mode, strat) in enumerate(configs):
            vals = []
            for ch in changes:
                r = next(
                    (
                        x
                        for x in rows
                        if (x["mode"], x["strategy"], x["members"], x["change"]) == (mode, strat, top, ch)
                    ),
                    None,
                )
                v = r[metric] if r else None
                vals.append(float("nan") if v is None else v)
            ax.bar([j + i * width for j in range(len(changes))], vals, width, label=f"{mode} / {strat}")
        ax.set_xticks([j + width * (len(configs) - 1) / 2 for j in range(len(changes))], changes)
        ax.set_title(f"{label}, {top} members")
        if log:
            ax.set_yscale("log")
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"Consumer group on ZooKeeper: every-member (seed 004) vs leader mode, {rows[0]['queues']} queues")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="4,16,32")
    ap.add_argument("--queues", type=int, default=1024)
    ap.add_argument("--configs", help="comma-separated mode/strategy pairs, e.g. leader/kafka-sticky (default: all)")
    ap.add_argument("--session-timeout", type=float, default=3.0)
    ap.add_argument("--backoff-ms", type=int, default=2000, help="every-member rebalance back-off (Kafka's 2000)")
    ap.add_argument("--timeout", type=float, default=60.0, help="give up waiting for stability after this")
    ap.add_argument("--out", default="out/coordination")
    ap.add_argument("--hosts", help="an existing ZooKeeper (default: start a throwaway one)")
    args = ap.parse_args(argv)
    configs = [tuple(c.split("/")) for c in args.configs.split(",")] if args.configs else CONFIGS
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    server = None if args.hosts else ZooKeeperServer().start()
    hosts = args.hosts or server.hosts  # type: ignore[union-attr]
    rows: list[dict[str, Any]] = []
    t_all = time.monotonic()
    try:
        for n in [int(x) for x in args.sizes.split(",")]:
            for mode, strat in configs:
                b = Bench(hosts, mode, strat, n, args.queues, args)
                try:
                    rows += b.run()
                finally:
                    b.close()
    finally:
        if server is not None:
            server.close()
    (out / "results.json").write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    md = table(rows)
    (out / "table.md").write_text(md + "\n", encoding="utf-8")
    print(md)
    try:
        plot(rows, out / "coordination.png")
        print(f"wrote {out / 'coordination.png'}")
    except ImportError:
        print("matplotlib missing: no plot")
    print(f"total {time.monotonic() - t_all:.0f} s")
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the server and members on the way out
    sys.exit(main())
