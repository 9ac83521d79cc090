"""The cost of a ``mqbalance watch --bootstrap`` tick on the real Apache Kafka broker (the
``kafka_java`` broker of the tests: 4.4.0, KRaft, one node), and of following ``__consumer_offsets``
for the classic generations.

* ``--groups G --members M --partitions P [--first-groups F]``: one topic of P partitions, G
  classic groups of M members each (first F, measured, then the rest: the per-group cost is the
  difference) (kafka-python consumers, one thread each, in this process: they join, are given
  their partitions and heartbeat; the broker's DescribeGroups carries every assignment). Then the
  watcher's ticks (:class:`~mqbalance.history.kafka_collector.KafkaCollector`, in process): the
  first (a checkpoint), then ``--ticks`` unchanged ones (membership; offsets at every tick with
  ``--offsets``): median and spread of their time, bytes written and requests.
* ``--commits N``: N offset-commit records appended to ``__consumer_offsets`` (OffsetCommit of
  1,000 partitions at a time), then the time :class:`~mqbalance.fleet.kafka.group_log.GroupLog`
  takes to read the topic from its start (skipping them by their key) and to follow 1,000 more.

    python benches/kafka_watch_tick.py --first-groups 5 --groups 25 --members 2 --partitions 1000 --commits 50000

Prints one JSON object. Needs the Java harness (``make java``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

from kafka_java_cluster import KafkaJavaBroker  # noqa: E402
from mqbalance.fleet.kafka.group_log import GroupLog  # noqa: E402
from mqbalance.history.kafka_collector import KafkaCollector  # noqa: E402

TOPIC = "bench"


class Members:
    """Classic members (kafka-python consumers, one polling thread each) until :meth:`close`."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.stop = threading.Event()
        self.consumers: list[Any] = []
        self.threads: list[threading.Thread] = []
        self.groups = 0

    def add(self, groups: int, members: int) -> None:
        """``groups`` more groups of ``members`` members each."""
        from kafka import KafkaConsumer

        for g in range(self.groups, self.groups + groups):
            for m in range(members):
                c = KafkaConsumer(
                    TOPIC,
                    bootstrap_servers=self.bootstrap,
                    group_id=f"bench-{g:03d}",
                    client_id=f"b{g:03d}-{m}",
                    enable_auto_commit=False,
                    session_timeout_ms=45_000,
                    heartbeat_interval_ms=5_000,
                    max_poll_interval_ms=300_000,
                    request_timeout_ms=120_000,
                    bootstrap_timeout_ms=300_000,
                )
                self.consumers.append(c)
                t = threading.Thread(target=self._poll, args=(c,), daemon=True)
                t.start()
                self.threads.append(t)
        self.groups += groups

    def _poll(self, consumer: Any) -> None:
        while not self.stop.is_set():
            consumer.poll(timeout_ms=200)

    def close(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(10)
        for c in self.consumers:
            c.close()


def settled(admin: Any, groups: int, members: int) -> bool:
    ids = [f"bench-{g:03d}" for g in range(groups)]
    described = admin.describe_groups(ids)
    return all(d["group_state"] == "Stable" and len(d["members"]) == members for d in described.values())


def measure_ticks(bootstrap: str, ticks: int, offsets: bool) -> dict[str, Any]:
    out = Path(tempfile.mkdtemp(prefix="mqbalance-watch-bench-"))
    c = KafkaCollector(bootstrap, out / "h", interval=1, offsets_interval=0 if offsets else 10**6)
    try:
        first = c.tick()
        c.tick()  # the first comparison with a previous tick: every group is decoded once more
        rows, cpu = [], []
        for _ in range(ticks):
            t = time.thread_time()  # the watcher's own thread (kafka-python parses on its network thread)
            rows.append(c.tick())
            cpu.append((time.thread_time() - t) * 1000)
    finally:
        c.close()
    ms = [r.duration_s * 1000 for r in rows]
    return {
        "first_tick": {"ms": round(first.duration_s * 1000), "events": first.events, "bytes": first.bytes_written},
        "unchanged_ms_median": round(statistics.median(ms), 1),
        "unchanged_ms_min_max": [round(min(ms), 1), round(max(ms), 1)],
        "unchanged_thread_cpu_ms_median": round(statistics.median(cpu), 1),
        "unchanged_thread_cpu_ms_min_max": [round(min(cpu), 1), round(max(cpu), 1)],
        "unchanged_events": sorted({r.events for r in rows}),
        "unchanged_bytes": sorted({r.bytes_written for r in rows}),
        "requests_per_tick": sorted(set(_requests(out / "h"))),
        "groups": len(c.state.groups),
        "members": len(c.state.members),
        "partitions_owned": sum(1 for o, _n in c.state.ownership.values() if o),
    }


def _requests(root: Path) -> list[int]:
    from mqbalance.history.writer import read_ticks

    return [int(r) for r in read_ticks(root).column("requests").to_pylist()[1:]]


def measure_log(bootstrap: str, admin: Any, partitions: int, commits: int) -> dict[str, Any]:
    from kafka.structs import OffsetAndMetadata, TopicPartition

    per_call = min(partitions, 1000)
    tps = [TopicPartition(TOPIC, p) for p in range(per_call)]
    t0 = time.monotonic()
    for _i in range(commits // per_call):
        admin.alter_group_offsets("bench-commits", {tp: OffsetAndMetadata(0, "", -1) for tp in tps})
    commit_s = time.monotonic() - t0
    log = GroupLog(bootstrap, timeout=60)
    try:
        t1 = time.monotonic()
        log.update()
        first_s = time.monotonic() - t1
        records, bytes_read = log.records, log.bytes
        admin.alter_group_offsets("bench-commits", {tp: OffsetAndMetadata(1, "", -1) for tp in tps})
        t2 = time.monotonic()
        log.update()
        follow_s = time.monotonic() - t2
        t3 = time.monotonic()
        log.update()
        idle_s = time.monotonic() - t3
    finally:
        log.close()
    return {
        "commits_written": commits // per_call * per_call,
        "commit_s": round(commit_s, 1),
        "from_start": {"records": records, "bytes": bytes_read, "s": round(first_s, 2),
                       "records_per_s": round(records / first_s) if first_s else None},
        "follow_1000_commits_s": round(follow_s, 3),
        "idle_update_s": round(idle_s, 3),
        "group_records": log.group_records,
        "classic_groups_known": len(log.groups),
    }  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--groups", type=int, default=20)
    p.add_argument("--first-groups", type=int, help="measure at this many groups first, then at --groups")
    p.add_argument("--members", type=int, default=5)
    p.add_argument("--partitions", type=int, default=1000)
    p.add_argument("--ticks", type=int, default=10)
    p.add_argument("--settle-s", type=float, default=300.0, help="wait this long at most for every group Stable")
    p.add_argument("--commits", type=int, default=0)
    p.add_argument("--offsets", action="store_true", help="read offsets at every tick too")
    args = p.parse_args()
    result: dict[str, Any] = {"args": vars(args)}
    with KafkaJavaBroker(quick_jit=False) as broker:
        admin = broker.admin()
        broker.create_topic(TOPIC, args.partitions)
        members = Members(broker.bootstrap)
        try:
            sizes = [args.groups] if args.first_groups is None else [args.first_groups, args.groups]
            for size in sizes:
                t0 = time.monotonic()
                members.add(size - members.groups, args.members)
                deadline = time.monotonic() + args.settle_s
                while not settled(admin, size, args.members) and time.monotonic() < deadline:
                    time.sleep(2)  # a busy machine may never see every group Stable at once: measure anyway
                result[f"{size}_groups"] = {
                    "settled_s": round(time.monotonic() - t0, 1),
                    **measure_ticks(broker.bootstrap, args.ticks, args.offsets),
                }
                print(json.dumps(result[f"{size}_groups"]), file=sys.stderr, flush=True)
            if args.commits:
                result["group_log"] = measure_log(broker.bootstrap, admin, args.partitions, args.commits)
        finally:
            members.close()
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
