"""Benchmark: ``mqbalance snapshot --bootstrap`` time on a real Kafka-protocol broker (Tansu) holding
many topics and consumer groups, and the in-process ``audit`` of the snapshot it writes.

The broker gets ``--topics`` topics of ``--partitions`` partitions (CreateTopics, in batches) and
``--groups`` consumer groups, each holding committed offsets on ``--topics-per-group`` topics (set
with OffsetCommit through the admin client: Tansu lists a group only once it has offsets). Then,
``--repeats`` times: the snapshot (the same function the command calls, so the time is the reading,
not the interpreter's start) and the audit of it, median reported.

Usage (a few minutes on a quiet 2-core machine)::

    python benches/kafka_snapshot_scale.py --topics 1000 --groups 100 --out benches/kafka_snapshot_results

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
from mqbalance.fleet.kafka.audit import audit_kafka  # noqa: E402
from mqbalance.fleet.kafka.live import read_kafka_cluster  # noqa: E402
from mqbalance.fleet.kafka.snapshot import kafka_snapshot_from_dict  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--topics", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--groups", type=int, default=100)
    ap.add_argument("--topics-per-group", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path("benches/kafka_snapshot_results"))
    args = ap.parse_args(argv)
    with TansuBroker() as broker:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=60_000)
        t0 = time.monotonic()
        names = [f"topic-{i:05d}" for i in range(args.topics)]
        for i in range(0, len(names), 100):
            admin.create_topics([NewTopic(n, args.partitions, 1) for n in names[i : i + 100]])
            print(f"created {min(i + 100, len(names)):,}/{len(names):,} topics", file=sys.stderr)
        for g in range(args.groups):
            mine = [names[(g * args.topics_per_group + k) % len(names)] for k in range(args.topics_per_group)]
            offsets = {TopicPartition(t, p): OffsetAndMetadata(0, "", -1) for t in mine for p in range(args.partitions)}
            admin.alter_group_offsets(f"group-{g:04d}", offsets)
        admin.close()
        setup = time.monotonic() - t0
        print(f"set up in {setup:.1f} s", file=sys.stderr)
        snapshot_s, audit_s = [], []
        data: dict = {}
        for _ in range(args.repeats):
            t = time.perf_counter()
            data = read_kafka_cluster(broker.bootstrap, timeout=30.0)
            snapshot_s.append(time.perf_counter() - t)
            snap = kafka_snapshot_from_dict(data)
            t = time.perf_counter()
            audit_kafka(snap)
            audit_s.append(time.perf_counter() - t)
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
        "setup_s": setup,
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
        f"`{result['command']}` (Tansu 0.6.0, in-memory; median of {args.repeats})",
    ]
    (args.out / "table.md").write_text("\n".join(table) + "\n")
    print("\n".join(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
