"""Benchmark: ``mqbalance snapshot --bootstrap`` time on a real Kafka broker holding many topics and
consumer groups, and the in-process ``audit`` of the snapshot it writes. ``--broker kafka`` (the
default): Apache Kafka's KRaft broker of the tests (``make java``); ``--broker tansu``: Tansu in
memory (``make tansu``).

The broker gets ``--topics`` topics of ``--partitions`` partitions (CreateTopics, in batches) and
``--groups`` consumer groups, each holding committed offsets on ``--topics-per-group`` topics (set
with OffsetCommit through the admin client: Tansu lists a group only once it has offsets). Then,
``--repeats`` times: the snapshot (the same function the command calls, so the time is the reading,
not the interpreter's start) and the audit of it, median reported; and every group's committed
offsets read by ours (:func:`~mqbalance.fleet.kafka.wire.read_committed_offsets`, the snapshot's
reader) against kafka-python's ``list_group_offsets`` of every group, checked equal, ratio of medians.

Usage (a few minutes on a quiet 2-core machine)::

    python benches/kafka_snapshot_scale.py --topics 1000 --groups 100 --out benches/kafka_snapshot_results
    python benches/kafka_snapshot_scale.py --topics 200 --groups 1000 --topics-per-group 2 --out /tmp/many_groups

writes ``results.json`` and ``table.md`` there.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))

from kafka.admin import KafkaAdminClient, NewTopic  # noqa: E402
from kafka.structs import OffsetAndMetadata, TopicPartition  # noqa: E402

from kafka_cluster import TansuBroker  # noqa: E402
from kafka_java_cluster import VERSION as KAFKA_VERSION  # noqa: E402
from kafka_java_cluster import KafkaJavaBroker, topics_led  # noqa: E402
from mqbalance.fleet.kafka.audit import audit_kafka  # noqa: E402
from mqbalance.fleet.kafka.live import read_kafka_cluster  # noqa: E402
from mqbalance.fleet.kafka.snapshot import kafka_snapshot_from_dict  # noqa: E402
from mqbalance.fleet.kafka.wire import read_committed_offsets  # noqa: E402
from server_process import wait_for  # noqa: E402

BROKERS = {"kafka": f"Apache Kafka {KAFKA_VERSION}, KRaft", "tansu": "Tansu 0.6.0, in memory"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--topics", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--groups", type=int, default=100)
    ap.add_argument("--topics-per-group", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path("benches/kafka_snapshot_results"))
    ap.add_argument("--broker", choices=("kafka", "tansu"), default="kafka")
    args = ap.parse_args(argv)
    with KafkaJavaBroker() if args.broker == "kafka" else TansuBroker() as broker:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=60_000)
        t0 = time.monotonic()
        names = [f"topic-{i:05d}" for i in range(args.topics)]
        for i in range(0, len(names), 100):
            admin.create_topics([NewTopic(n, args.partitions, 1) for n in names[i : i + 100]])
            print(f"created {min(i + 100, len(names)):,}/{len(names):,} topics", file=sys.stderr)
        # a broker creates topics after it answers: commits to a topic it has no leader for yet are lost
        wait_for("every topic to have its leaders", lambda: topics_led(admin, names, args.partitions), timeout=600)
        groups = [f"group-{g:04d}" for g in range(args.groups)]
        wanted: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        for g, group in enumerate(groups):
            mine = [names[(g * args.topics_per_group + k) % len(names)] for k in range(args.topics_per_group)]
            wanted[group] = {
                TopicPartition(t, p): OffsetAndMetadata(0, "", -1) for t in mine for p in range(args.partitions)
            }
            admin.alter_group_offsets(group, wanted[group])
        got = admin.list_group_offsets(groups)
        assert all(set(got.get(g, {})) == set(w) for g, w in wanted.items()), "offsets missing after the commits"
        setup = time.monotonic() - t0
        print(f"set up in {setup:.1f} s", file=sys.stderr)
        snapshot_s, audit_s, ours_offsets_s, kafka_python_offsets_s = [], [], [], []
        data: dict = {}
        for _ in range(args.repeats):
            t = time.perf_counter()
            data = read_kafka_cluster(broker.bootstrap, timeout=30.0)
            snapshot_s.append(time.perf_counter() - t)
            snap = kafka_snapshot_from_dict(data)
            t = time.perf_counter()
            audit_kafka(snap)
            audit_s.append(time.perf_counter() - t)
            # every group's committed offsets, one admin client for both: ours (the snapshot's and
            # the watcher's reader) against kafka-python's own list_group_offsets of every group
            t = time.perf_counter()
            ours = read_committed_offsets(admin, groups)
            ours_offsets_s.append(time.perf_counter() - t)
            t = time.perf_counter()
            theirs = admin.list_group_offsets(groups)
            kafka_python_offsets_s.append(time.perf_counter() - t)
            flat = {(g, tp.topic, "", tp.partition): om.offset for g, ps in theirs.items() for tp, om in ps.items()}
            assert ours == flat, "the two readings differ"
        admin.close()
    result = {
        "topics": len(data["topics"]),
        "partitions": sum(s["partitions"] for s in data["topics"].values()),
        "groups": len(data["groups"]),
        "committed_offsets": len(data["offsets"]),
        "errors": len(data["errors"]),
        "snapshot_s": snapshot_s,
        "audit_s": audit_s,
        "snapshot_median_s": statistics.median(snapshot_s),
        "audit_median_s": statistics.median(audit_s),
        "committed_offsets_ours_s": ours_offsets_s,
        "committed_offsets_kafka_python_s": kafka_python_offsets_s,
        "committed_offsets_ratio": statistics.median(kafka_python_offsets_s) / statistics.median(ours_offsets_s),
        "setup_s": setup,
        "broker": BROKERS[args.broker],
        "command": " ".join(["python", "benches/kafka_snapshot_scale.py", *(argv or sys.argv[1:])]),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(result, indent=1) + "\n")
    table = [
        "| topics | partitions | groups | committed offsets | snapshot (median) | audit (median) |",
        "|---|---|---|---|---|---|",
        (
            f"| {result['topics']:,} | {result['partitions']:,} | {result['groups']:,} "
            f"| {result['committed_offsets']:,} | {result['snapshot_median_s']:.2f} s "
            f"| {result['audit_median_s']:.2f} s |"
        ),
        "",
        f"`{result['command']}` ({BROKERS[args.broker]}; median of {args.repeats})",
        "",
        (
            f"Every group's committed offsets: ours {statistics.median(ours_offsets_s) * 1000:.1f} ms, "
            f"kafka-python's list_group_offsets {statistics.median(kafka_python_offsets_s) * 1000:.1f} ms "
            f"({result['committed_offsets_ratio']:.1f}×, medians, same admin client)"
        ),
    ]
    (args.out / "table.md").write_text("\n".join(table) + "\n")
    print("\n".join(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
