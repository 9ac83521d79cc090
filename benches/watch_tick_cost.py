"""Benchmark: the cost of one ``mqbalance watch`` tick on a real cluster (the Rust port of RocketMQ):
2 brokers × ``--topics`` topics × 8 queues and ``--groups`` consumer groups (one client per
group per broker, 10 topics each, with committed offsets), built outside the timed region.

Measured per tick: wall time, requests the process sent, bytes written to the history — when
nothing changed (membership ticks and offsets ticks) and when 10 % of the groups gained a member.
Targets (issue 23): a tick under 1 s; an unchanged tick under 1 KB on disk.

    python benches/watch_tick_cost.py --topics 1000 --groups 100 --out benches/watch_results

writes ``results.json`` and ``table.md`` there.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))

from mqbalance.history.collector import Collector  # noqa: E402
from mqbalance.history.writer import read_ticks  # noqa: E402
from mqbalance.remoting import BrokerClient, ConsumerData  # noqa: E402
from rocketmq_cluster import RocketMQCluster  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--topics", type=int, default=1000)
    ap.add_argument("--groups", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", type=Path, default=Path("benches/watch_results"))
    args = ap.parse_args(argv)
    rows: dict[str, list[dict[str, Any]]] = {
        "unchanged": [],
        "unchanged, offsets read": [],
        "10 % of groups changed": [],
    }
    with RocketMQCluster(brokers=2) as c:
        names = [f"WatchTopic{i:04d}" for i in range(args.topics)]
        admins = [BrokerClient(b.addr, timeout=10.0) for b in c.brokers]
        with ThreadPoolExecutor(8) as pool:
            for admin in admins:
                list(pool.map(lambda t, a=admin: a.create_topic(t, read=8, write=8), names))
        members: list[BrokerClient] = []
        subs = {g: [names[(g * 10 + k) % args.topics] for k in range(10)] for g in range(args.groups)}
        for g in range(args.groups):
            for admin, b in zip(admins, c.brokers, strict=True):
                m = BrokerClient(b.addr)
                m.heartbeat(f"10.1.0.{g}@{g}", [ConsumerData(f"cg-watch-{g:03d}", subs[g])])
                members.append(m)
                admin.update_offset(f"cg-watch-{g:03d}", subs[g][0], 0, 100 + g)
        print(f"cluster built: {args.topics} topics x 2 brokers, {args.groups} groups", file=sys.stderr)
        with tempfile.TemporaryDirectory() as out:
            collector = Collector(c.namesrv_addr, out, interval=1, offsets_interval=10**6, running_info=False)
            first = collector.tick()  # the first tick writes the checkpoint
            print(f"checkpoint tick: {first.duration_s:.2f} s, {first.bytes_written:,} bytes", file=sys.stderr)
            for k in range(args.repeats):
                r = collector.tick()
                rows["unchanged"].append({"s": r.duration_s, "bytes": r.bytes_written, "events": r.events})
                collector.offsets_interval = 0
                r = collector.tick()
                rows["unchanged, offsets read"].append(
                    {"s": r.duration_s, "bytes": r.bytes_written, "events": r.events}
                )
                collector.offsets_interval = 10**6
                extra = []
                for g in range(k, args.groups, 10):  # 10 % of the groups gain a member on broker a
                    m = BrokerClient(c.brokers[0].addr)
                    m.heartbeat(f"10.2.{k}.{g}@x{g}", [ConsumerData(f"cg-watch-{g:03d}", subs[g])])
                    extra.append(m)
                r = collector.tick()
                rows["10 % of groups changed"].append({"s": r.duration_s, "bytes": r.bytes_written, "events": r.events})
                for m in extra:
                    m.close()
                time.sleep(0.5)
                collector.tick()  # their leave, not measured
                print(f"round {k + 1}/{args.repeats}", file=sys.stderr)
            requests = [t["requests"] for t in _ticks(out)]
        for m in members:
            m.close()
        for a in admins:
            a.close()
    result = {
        name: {
            "median_s": statistics.median(x["s"] for x in xs),
            "median_bytes": statistics.median(x["bytes"] for x in xs),
            "median_events": statistics.median(x["events"] for x in xs),
        }
        for name, xs in rows.items()
    }
    result["requests_per_tick_median"] = statistics.median(requests)  # type: ignore[assignment]
    command = " ".join(["python", "benches/watch_tick_cost.py", *(argv if argv is not None else sys.argv[1:])])
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps({"result": result, "command": command}, indent=1) + "\n")
    lines = [
        f"2 brokers × {args.topics:,} topics × 8 queues, {args.groups} groups; median of {args.repeats}",
        "",
        "| tick | time | bytes written | events |",
        "|---|---|---|---|",
    ]
    for name in rows:
        r = result[name]
        lines.append(f"| {name} | {r['median_s']:.2f} s | {r['median_bytes']:,.0f} | {r['median_events']:,.0f} |")
    lines += ["", f"requests per tick (median): {result['requests_per_tick_median']:,}", "", f"`{command}`"]
    (args.out / "table.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


def _ticks(root: str) -> list[dict[str, Any]]:
    return read_ticks(root).to_pylist()  # type: ignore[no-any-return]


if __name__ == "__main__":
    sys.exit(main())
