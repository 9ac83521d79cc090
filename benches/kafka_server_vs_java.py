"""Broker-side ``uniform`` / ``range``: ours against Kafka's own Java classes, same inputs, same run.

Kafka's benchmark points (``ServerSideAssignorBenchmark``): 10,000 members x 10 partitions per
member over 1,000 and 100 topics, homogeneous and heterogeneous (5 buckets), a full assignment and
an incremental one (one member joins a settled group). Java runs in one warm JVM: the group is
built once, then ``assign`` is called ``--warmup`` times untimed and ``--rounds`` times timed; ours
likewise (inputs built outside the timed region) through the columnar entry point and through the
dict API. The statistic is the median of the timed rounds.

The Java side is ``io.mqbalance.harness.kafka.ServerAssignorBench`` of the Java harness's ``kafka``
module (``make java``): Kafka 4.4.0's ``UniformAssignor`` / ``RangeAssignor`` from the
kafka-group-coordinator jar, one JVM per point; it reads the group as one line on stdin (see
``_tokens``) and prints ``{"min_ns", "median_ns", "rounds", "assigned"}``.

    python benches/kafka_server_vs_java.py --out benches/kafka_server_results
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))

from java_harness import java_command  # noqa: E402
from kafka_server_groups import Group, build  # noqa: E402
from mqbalance.kafka import server_assign, server_assign_columns  # noqa: E402

BENCH_CLASS = "io.mqbalance.harness.kafka.ServerAssignorBench"

POINTS = [
    (topics, heterogeneous, incremental)
    for topics in (1000, 100)
    for heterogeneous in (False, True)
    for incremental in (False, True)
]


def _tokens(g: Group) -> str:
    """The harness's line: name, topics (id count)*, members (id instance rack nsubs subs* ncur
    (topic n p*)*)*; ``~`` for none; nsubs ``=`` reuses the previous member's subscription."""
    out = [g.name, str(len(g.topic_ids))]
    for t, c in zip(g.topic_ids, g.counts.tolist(), strict=True):
        out += [t, str(c)]
    out.append(str(len(g.members)))
    previous: Any = None
    for i, m in enumerate(g.members):
        out += [m, "~", "~"]
        if g.subs[i] is previous:
            out.append("=")
        else:
            out.append(str(len(g.subs[i])))
            out += [g.topic_ids[t] for t in g.subs[i]]
        previous = g.subs[i]
        out.append(str(len(g.current[i])))
        for t, ps in g.current[i]:
            out += [g.topic_ids[t], str(len(ps)), *map(str, ps)]
    return " ".join(out)


def _median(f: Any, warmup: int, rounds: int) -> float:
    for _ in range(warmup):
        f()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--heap-mb", type=int, default=2048, help="the Java side's heap")
    ap.add_argument("--only", default="", help="run only points whose 'assignor/topics/het/inc' contains this")
    ap.add_argument("--out", default="benches/kafka_server_results")
    ap.add_argument("--members", type=int, default=10_000)
    ap.add_argument("--ratio", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    rows = []
    for name in ("uniform", "range"):
        for topics, het, inc in POINTS:
            label = f"{name}/{topics}/{'het' if het else 'hom'}/{'inc' if inc else 'full'}"
            if args.only not in label:
                continue
            g = build(
                members=args.members, ratio=args.ratio, topics=topics, heterogeneous=het, incremental=inc, name=name
            )
            cols = g.columns()
            java = subprocess.run(
                [*java_command("kafka", BENCH_CLASS, heap_mb=args.heap_mb), str(args.warmup), str(args.rounds)],
                input=_tokens(g) + "\n", capture_output=True, text=True, check=True,
            )  # fmt: skip
            answer = json.loads(java.stdout.splitlines()[0])
            assert answer["assigned"] == int(g.counts.sum()), (label, answer["assigned"])
            java_s = answer["median_ns"] / 1e9
            cols_s = _median(lambda: server_assign_columns(name, **cols), args.warmup, args.rounds)  # noqa: B023
            dict_s = _median(lambda: server_assign(name, g.dicts, g.topics), args.warmup, args.rounds)  # noqa: B023
            row = {
                "assignor": name,
                "topics": topics,
                "subscriptions": "heterogeneous" if het else "homogeneous",
                "assignment": "incremental" if inc else "full",
                "java_ms": round(java_s * 1e3, 2),
                "columns_ms": round(cols_s * 1e3, 2),
                "dict_ms": round(dict_s * 1e3, 2),
                "columns_speedup": round(java_s / cols_s, 2),
                "dict_speedup": round(java_s / dict_s, 2),
            }
            print(row, file=sys.stderr, flush=True)
            rows.append(row)
    if args.only:
        return  # a partial run leaves the results alone
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    keys = list(rows[0])
    (out / "vs_java.csv").write_text(
        "\n".join([",".join(keys)] + [",".join(str(r[k]) for k in keys) for r in rows]) + "\n"
    )
    md = [
        (
            f"Broker-side assignors, {args.members:,} members x {args.ratio} partitions/member; median of "
            f"{args.rounds} rounds after {args.warmup} warm-up rounds; speedup = Java / ours."
        ),
        "",
        "| " + " | ".join(keys) + " |",
        "|" + "---|" * len(keys),
        *("| " + " | ".join(str(r[k]) for k in keys) + " |" for r in rows),
    ]
    (out / "vs_java.md").write_text("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
