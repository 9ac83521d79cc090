"""Benchmark: rebalance time of real kafka-python groups on a real Kafka-protocol broker (Tansu).

A group of N ``mqbalance kafka-consume`` processes (half with kafka-python's own assignor class,
half with ours, for the same assignor name) over one topic of P partitions. Per assignor and per
membership change — a member joins, a member leaves gracefully, a member is killed with SIGKILL —
repeated R times:

* time until settled: every live member's latest completed generation is the same and their
  assignments cover every partition exactly once (read from the members' record files, so the
  time includes the members' own reaction; a kill waits for the session timeout first);
* partitions moved (owner before ≠ owner after, among partitions whose owner survived).

A change after which the group does not settle within ``--settle-timeout`` is reported as such
(Tansu 0.6.0's coordinator has no join barrier; see ``tests/test_kafka_live.py``, GENERATIONS).
Usage (about 10 minutes on a quiet 2-core machine)::

    python benches/kafka_rebalance.py --members 8 --partitions 64 --repeats 3 --out benches/kafka_rebalance_results

writes ``results.json`` and ``table.md`` there.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))

from kafka.admin import KafkaAdminClient, NewTopic  # noqa: E402

from kafka_cluster import KafkaGroup, TansuBroker  # noqa: E402
from mqbalance.record_files import load_records  # noqa: E402

ASSIGNORS = ["range", "roundrobin", "sticky", "cooperative-sticky"]


def settled(group: KafkaGroup, topic: str, partitions: int, timeout: float) -> dict[str, set[str]] | None:
    """The settled assignment per member, or ``None`` if it did not settle within ``timeout``."""
    need = {f"{topic}/{p}" for p in range(partitions)}
    deadline = time.monotonic() + timeout
    seen: tuple[int, float] | None = None
    while time.monotonic() < deadline:
        recs = load_records([m.records for m in group.members.values() if m.records.exists()])
        latest = {}
        for m in group.live():
            gs = [r for r in recs.get(m.name, []) if r["e"] == "g"]
            latest[m.name] = gs[-1] if gs else None
        if latest and None not in latest.values() and len({g["gen"] for g in latest.values()}) == 1:
            flat = [q for g in latest.values() for q in g["q"]]
            if len(flat) == len(set(flat)) and set(flat) == need:
                gen = next(iter(latest.values()))["gen"]
                if seen is None or seen[0] != gen:
                    seen = (gen, time.monotonic())
                elif time.monotonic() - seen[1] >= 0.5:
                    return {n: set(g["q"]) for n, g in latest.items()}
            else:
                seen = None
        time.sleep(0.05)
    return None


def moved(before: dict[str, set[str]], after: dict[str, set[str]]) -> int:
    owner = {q: n for n, qs in before.items() for q in qs}
    return sum(1 for n, qs in after.items() for q in qs if q in owner and owner[q] != n and owner[q] in after)


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    with TansuBroker() as broker, tempfile.TemporaryDirectory() as tmp:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        for name in args.assignors:
            for rep in range(args.repeats):
                topic, group_id = f"t-{name}-{rep}", f"g-{name}-{rep}"
                admin.create_topics([NewTopic(topic, args.partitions, 1)])
                directory = Path(tmp) / group_id
                directory.mkdir()
                with KafkaGroup(broker, group_id, directory) as group:
                    for i in range(args.members - 1):
                        impl = "kafka-python" if i % 2 else "mqbalance"
                        group.start(f"m{i}", [topic], name, impl=impl)
                    before = settled(group, topic, args.partitions, args.settle_timeout)
                    for event in ("join", "leave", "kill"):
                        if before is None:  # the group did not settle before this change: not run
                            rows.append(
                                {
                                    "assignor": name,
                                    "event": event,
                                    "rep": rep,
                                    "seconds": None,
                                    "moved": None,
                                    "run": False,
                                }
                            )
                            continue
                        t0 = time.monotonic()
                        if event == "join":
                            group.start(f"m{args.members - 1}", [topic], name, impl="kafka-python")
                        elif event == "leave":
                            group.members["m1"].stop()
                        else:
                            t0 = group.members["m2"].kill()
                        after = settled(group, topic, args.partitions, args.settle_timeout)
                        seconds = None if after is None else time.monotonic() - t0
                        rows.append(
                            {
                                "assignor": name,
                                "event": event,
                                "rep": rep,
                                "seconds": seconds,
                                "moved": None if after is None else moved(before, after),
                                "run": True,
                            }
                        )
                        print(rows[-1], flush=True)
                        before = after
        admin.close()
    return rows


def table(rows: list[dict[str, Any]], args: argparse.Namespace) -> str:
    head = (
        f"{args.members} consumers (half kafka-python's assignor class, half ours) over {args.partitions} "
        f"partitions on Tansu 0.6.0; median of {args.repeats}; session timeout 4 s, heartbeat 0.4 s."
    )
    lines = [
        head,
        "",
        "A change is run only once the group settled after the previous one (the first: 7 members starting);",
        f"'did not settle': not within {args.settle_timeout:g} s (Tansu: see the README).",
        "",
        "| assignor | event | settled (s, median) | settled / run / repeats | partitions moved (median) |",
        "|---|---|---|---|---|",
    ]
    for name in args.assignors:
        for event in ("join", "leave", "kill"):
            rs = [r for r in rows if r["assignor"] == name and r["event"] == event]
            ran = [r for r in rs if r.get("run", True)]
            ok = [r for r in ran if r["seconds"] is not None]
            sec = f"{statistics.median(r['seconds'] for r in ok):.2f}" if ok else "did not settle" if ran else "not run"
            mv = f"{statistics.median(r['moved'] for r in ok):g}" if ok else "-"
            lines.append(f"| {name} | {event} | {sec} | {len(ok)} / {len(ran)} / {len(rs)} | {mv} |")
    return "\n".join(lines) + "\n"


def render(out: Path, args: argparse.Namespace) -> None:
    """Rewrite ``table.md`` from ``results.json`` (``--table-only``)."""
    rows = json.loads((out / "results.json").read_text())
    (out / "table.md").write_text(table(rows, args))
    print(table(rows, args))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--members", type=int, default=8)
    p.add_argument("--partitions", type=int, default=64)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--assignors", default=",".join(ASSIGNORS))
    p.add_argument("--settle-timeout", type=float, default=30.0)
    p.add_argument("--out", default="benches/kafka_rebalance_results")
    p.add_argument("--table-only", action="store_true", help="rewrite table.md from results.json, run nothing")
    args = p.parse_args()
    args.assignors = args.assignors.split(",")
    out = Path(args.out)
    if not args.table_only:
        rows = run(args)
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.json").write_text(json.dumps(rows, indent=1) + "\n")
    render(out, args)


if __name__ == "__main__":
    main()
