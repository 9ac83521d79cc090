"""``mqbalance assign`` (in-process) against ``mqbalance audit`` (Spark, local mode) on the same
JSON snapshot, as a large user runs them: wall time and peak memory of the whole process tree, and
the ratio assign / audit measured in the same run (target ≤ 1; at 10^6 queues assign under 2 s).

    python benches/assign_scale.py --sizes 1e6,3e6,3e7 [--out benches/assign_scale_results] [--no-audit]
    python benches/assign_scale.py --connections [--sizes 1e6] [--rounds 5]

``--connections`` (issue 36): ``mqbalance assign`` on 10^6 queues with about one process per queue
(one group per 140 queues, 1-1,000 consumers: 1,031,544 processes) against the same queues,
groups, subscriptions and strategies with about one process per 100 queues (each group's consumer
count scaled down, at least one), both files written before any timing; the two commands
alternate ``--rounds`` times and the ratio of the medians is printed (target ≤ 1.5), with the
spread of each side and, in the same run, the floors under the difference: ``json.loads`` of each
file alone and the MD5 of the CONSISTENT_HASH groups' virtual nodes (``connections.json``).

Fleets (:func:`make_json_fleet`) are JSON snapshots shaped like the one of issue 24: topics of
8-1,024 queues over 8 brokers, one group per 1,000 readable queues (30,000 groups at 3×10^7), each
of 1-150 consumers (log-uniform: about one process per 30 queues, 10^6 at 3×10^7), AVG /
AVG_BY_CIRCLE / CONSISTENT_HASH, 1 % of the groups with a duplicated client id. Writes
``results.json`` and ``assign_scale.md`` (a Markdown table) to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fleet_scale import run  # noqa: E402

#: One consumer group per this many readable queues (3×10^7 queues: 30,000 groups).
QUEUES_PER_GROUP = 1_000
#: Consumers per group: log-uniform from 1 to this (about 30 on average).
MAX_CONSUMERS = 150


def make_json_fleet(
    queues: int,
    path: Path,
    seed: int = 1,
    *,
    max_consumers: int = MAX_CONSUMERS,
    queues_per_group: int = QUEUES_PER_GROUP,
    processes: int | None = None,
) -> tuple[int, int, int]:
    """Write a JSON snapshot of about ``queues`` readable queues to ``path`` (groups of 1 to
    ``max_consumers`` consumers); returns ``(readable queues, groups, processes)``. Written piece by
    piece: the file is never one Python object. ``processes``: scale every group's consumer count
    so that they add up to about that many (at least one each); topics, groups, subscriptions and
    strategies stay those of the unscaled fleet."""
    rng = np.random.default_rng(seed)
    sizes = np.array([8, 16, 32, 64, 128, 256, 512, 1024])
    counts = rng.choice(sizes, size=queues // 8 + 8, p=[0.1, 0.15, 0.2, 0.2, 0.15, 0.1, 0.06, 0.04])
    per_topic = counts[: int(np.searchsorted(np.cumsum(counts), queues)) + 1]
    n = len(per_topic)
    groups = min(n, max(1, queues // queues_per_group))
    consumers = np.minimum(np.exp(rng.uniform(0, np.log(max_consumers), groups)).astype(int) + 1, max_consumers)
    strategies = np.array(["AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH"])[rng.integers(0, 3, groups)]
    if processes is not None:  # the factor (bisected) whose scaled counts add up to about `processes`
        low, high = 0.0, 1.0
        for _ in range(60):
            factor = (low + high) / 2
            low, high = (
                (factor, high) if np.maximum(np.rint(consumers * factor), 1).sum() < processes else (low, factor)
            )
        consumers = np.maximum(np.rint(consumers * high), 1).astype(int)
    subs: list[list[str]] = [[] for _ in range(groups)]
    processes = 0
    with path.open("w", encoding="utf-8") as f:
        f.write('{"topics": {')
        for i in range(n):
            per_broker = int(per_topic[i]) // 8
            datas = ", ".join(
                f'{{"brokerName": "broker-{b:02d}", "readQueueNums": {per_broker}, '
                f'"writeQueueNums": {per_broker}, "perm": 6}}'
                for b in range(8)
            )
            f.write(f'{"," if i else ""}\n"Topic{i:08d}": {{"queueDatas": [{datas}]}}')
            subs[i % groups].append(f"Topic{i:08d}")
        f.write('},\n"groups": {')
        for i in range(groups):
            ids = [f"10.{i % 250}.{j // 250}.{j % 250}@{i}" for j in range(int(consumers[i]))]
            if i % 100 == 7 and len(ids) > 1:
                ids[1] = ids[0]  # a duplicated client id
            processes += len(ids)
            group = {
                "subscriptions": subs[i],
                "strategy": str(strategies[i]),
                "connections": [{"clientId": c, "language": "JAVA", "version": 453} for c in ids],
            }
            f.write(f'{"," if i else ""}\n"cg-{i:07d}": {json.dumps(group)}')
        f.write("}}\n")
    return int(per_topic.sum()), groups, processes


def write_outputs(results: list[dict[str, Any]], out: Path) -> None:
    """``results.json``, ``assign_scale.md`` (a Markdown table) and ``assign_scale.png`` in ``out``."""
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    lines = [
        (
            "| readable queues | groups | consumers per group | processes | JSON | `mqbalance assign` | peak "
            "| `mqbalance audit` (Spark local) "
            "| peak, all / one worker | assign / audit |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        audit_cells = (
            f"{r['audit_s']} s | {r['audit_peak_gib']} / {r['audit_worker_peak_gib']} GiB | {r['assign_over_audit']}"
            if "audit_s" in r
            else "– | – | –"
        )
        lines.append(
            f"| {r['queues']:,} | {r['groups']:,} | 1-{r.get('max_consumers', MAX_CONSUMERS):,} | {r['processes']:,} "
            f"| {r['json_mib']} MiB | {r['assign_s']} s "
            f"| {r['assign_peak_gib']} GiB | {audit_cells} |"
        )
    (out / "assign_scale.md").write_text("\n".join(lines) + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    default = {"max_consumers": MAX_CONSUMERS, "queues_per_group": QUEUES_PER_GROUP}
    rows = sorted(
        (r for r in results if "audit_s" in r and all(r.get(k, v) == v for k, v in default.items())),
        key=lambda r: r["queues"],
    )
    if not rows:
        return
    q = [r["queues"] for r in rows]
    left.plot(q, [r["assign_s"] for r in rows], "s-", label="mqbalance assign (in-process, streamed)")
    left.plot(q, [r["audit_s"] for r in rows], "o-", label="mqbalance audit (Spark local)")
    right.plot(q, [r["assign_peak_gib"] for r in rows], "s-", label="assign")
    right.plot(q, [r["audit_peak_gib"] for r in rows], "o-", label="audit, all processes")
    right.axhline(3, color="#d62728", linestyle="--", linewidth=1, label="3 GiB target")
    for ax, label in ((left, "wall time (s)"), (right, "peak memory (GiB)")):
        ax.set_xscale("log")
        ax.set_xlabel("readable queues (JSON snapshot)")
        ax.set_ylabel(label)
        ax.legend()
        ax.grid(alpha=0.3)
    fig.suptitle("mqbalance assign vs audit on the same JSON fleet (2 cores)")
    fig.tight_layout()
    fig.savefig(out / "assign_scale.png", dpi=100)


#: ``--connections``: the connection-heavy fleet (about one process per queue) ...
HEAVY = {"max_consumers": 1000, "queues_per_group": 140}
#: ... and the same queues and groups with about one process per this many queues.
LIGHT_QUEUES_PER_PROCESS = 100


def ring_md5_floor(path: Path) -> float:
    """Seconds of MD5 alone (the core's, all cores, timed in Rust) over the virtual-node keys of the
    snapshot's CONSISTENT_HASH groups (10 per connection): work that grows with connections."""
    return ring_md5_floor_cpu(path)[0]


def ring_md5_floor_cpu(path: Path, rounds: int = 3) -> tuple[float, float]:
    """:func:`ring_md5_floor` and the CPU seconds (user + system, all threads) of one round of it."""
    from mqbalance._core import _bench

    data = json.loads(path.read_text())
    keys = [
        f"{c['clientId']}-{r}"
        for g in data["groups"].values()
        if g.get("strategy") == "CONSISTENT_HASH"
        for c in g["connections"]
        for r in range(10)
    ]
    before = resource.getrusage(resource.RUSAGE_SELF)
    wall = float(_bench.time_md5_floor(keys, rounds))
    after = resource.getrusage(resource.RUSAGE_SELF)
    return wall, (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / rounds


def json_floor(path: Path, rounds: int = 3) -> float:
    """Median seconds of reading and ``json.loads`` of the file alone (no key check), in a fresh process."""
    code = (
        "import json, sys, time, statistics; t = []\n"
        "for _ in range(int(sys.argv[2])):\n"
        "    s = time.perf_counter(); json.loads(open(sys.argv[1], encoding='utf-8').read())\n"
        "    t.append(time.perf_counter() - s)\n"
        "print(statistics.median(t))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(path), str(rounds)], capture_output=True, text=True, check=True
    )
    return float(out.stdout)


def connections(size: int, rounds: int, out: Path) -> dict[str, Any]:
    """The ``--connections`` row: both fleets written first, then the two commands alternated."""
    mq = [sys.executable, "-m", "mqbalance.cli"]
    with tempfile.TemporaryDirectory() as tmp:
        heavy, light = Path(tmp) / "heavy.json", Path(tmp) / "light.json"
        queues, groups, heavy_processes = make_json_fleet(size, heavy, **HEAVY)
        _, _, light_processes = make_json_fleet(size, light, **HEAVY, processes=size // LIGHT_QUEUES_PER_PROCESS)
        times: dict[str, list[float]] = {"heavy": [], "light": []}
        cpu: dict[str, list[float]] = {"heavy": [], "light": []}
        peaks: dict[str, int] = {"heavy": 0, "light": 0}
        for _ in range(rounds):
            for name, path in (("heavy", heavy), ("light", light)):
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                wall, peak, _, code = run([*mq, "assign", str(path), "--top", "10", "--quiet"])
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                if code != 0:
                    raise SystemExit(f"mqbalance assign {path} exited {code}")
                times[name].append(wall)
                cpu[name].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
                peaks[name] = max(peaks[name], peak)
        md5_heavy, md5_heavy_cpu = ring_md5_floor_cpu(heavy)
        md5_light, md5_light_cpu = ring_md5_floor_cpu(light)
        floors = {
            "json_heavy_s": json_floor(heavy),
            "json_light_s": json_floor(light),
            "md5_ring_heavy_s": md5_heavy,
            "md5_ring_light_s": md5_light,
            "md5_ring_heavy_cpu_s": md5_heavy_cpu,
            "md5_ring_light_cpu_s": md5_light_cpu,
        }
        # The floor: the light run plus the ring MD5 of the connections it does not have.
        floor_cpu = statistics.median(cpu["light"]) + md5_heavy_cpu - md5_light_cpu
        med = {k: statistics.median(v) for k, v in times.items()}
        row: dict[str, Any] = {
            "queues": queues,
            "groups": groups,
            "processes_heavy": heavy_processes,
            "processes_light": light_processes,
            "json_mib_heavy": round(heavy.stat().st_size / 2**20, 1),
            "json_mib_light": round(light.stat().st_size / 2**20, 1),
            "rounds": rounds,
            "heavy_s": round(med["heavy"], 2),
            "light_s": round(med["light"], 2),
            "heavy_spread_s": [round(min(times["heavy"]), 2), round(max(times["heavy"]), 2)],
            "light_spread_s": [round(min(times["light"]), 2), round(max(times["light"]), 2)],
            "ratio": round(med["heavy"] / med["light"], 2),
            # CPU seconds (user + system, all threads) move less than wall time on a loaded machine
            "cpu_heavy_s": round(statistics.median(cpu["heavy"]), 2),
            "cpu_light_s": round(statistics.median(cpu["light"]), 2),
            "cpu_ratio": round(statistics.median(cpu["heavy"]) / statistics.median(cpu["light"]), 2),
            "target": 1.5,
            "floor_cpu_s": round(floor_cpu, 2),
            "cpu_ratio_to_floor": round(statistics.median(cpu["heavy"]) / floor_cpu, 2),
            "cpu_spread_heavy_s": [round(min(cpu["heavy"]), 2), round(max(cpu["heavy"]), 2)],
            "cpu_spread_light_s": [round(min(cpu["light"]), 2), round(max(cpu["light"]), 2)],
            "peak_gib_heavy": round(peaks["heavy"] / 2**30, 2),
            "peak_gib_light": round(peaks["light"] / 2**30, 2),
            **{k: round(v, 3) for k, v in floors.items()},
        }
    out.mkdir(parents=True, exist_ok=True)
    (out / "connections.json").write_text(json.dumps(row, indent=1) + "\n")
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1e6,3e6")
    parser.add_argument("--out", default="out/assign_scale")
    parser.add_argument("--no-audit", action="store_true", help="time mqbalance assign only")
    parser.add_argument("--queues-per-group", type=int, default=QUEUES_PER_GROUP, help="one group per this many queues")
    parser.add_argument(
        "--max-consumers", type=int, default=MAX_CONSUMERS, help="consumers per group: log-uniform from 1 to this"
    )
    parser.add_argument(
        "--connections",
        action="store_true",
        help="one process per queue against one per 100 queues, same queues (issue 36); --sizes 1e6 by default",
    )
    parser.add_argument("--rounds", type=int, default=5, help="--connections: alternating runs of each command")
    args = parser.parse_args()
    if args.connections:
        size = int(float(args.sizes.split(",")[0])) if args.sizes != "1e6,3e6" else 10**6
        print(json.dumps(connections(size, args.rounds, Path(args.out))), flush=True)
        return
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    mq = [sys.executable, "-m", "mqbalance.cli"]
    results = []
    for size in (int(float(s)) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            snap = Path(tmp) / "fleet.json"
            started = time.perf_counter()
            queues, groups, processes = make_json_fleet(
                size, snap, max_consumers=args.max_consumers, queues_per_group=args.queues_per_group
            )
            made_s = time.perf_counter() - started
            assign_s, assign_mem, _, assign_code = run([*mq, "assign", str(snap), "--top", "10", "--quiet"])
            row = {
                "max_consumers": args.max_consumers,
                "queues_per_group": args.queues_per_group,
                "queues": queues,
                "groups": groups,
                "processes": processes,
                "json_mib": round(snap.stat().st_size / 2**20, 1),
                "generate_s": round(made_s, 1),
                "assign_s": round(assign_s, 2),
                "assign_peak_gib": round(assign_mem / 2**30, 2),
                "assign_exit": assign_code,
            }
            if not args.no_audit:
                audit = [*mq, "audit", str(snap), "--quiet", "--no-assignments", "--what-if", "none"]
                audit_s, audit_mem, worker_mem, audit_code = run([*audit, "--out", str(Path(tmp) / "audit")])
                row |= {
                    "audit_s": round(audit_s, 2),
                    "audit_peak_gib": round(audit_mem / 2**30, 2),
                    "audit_worker_peak_gib": round(worker_mem / 2**30, 2),
                    "audit_exit": audit_code,
                    "assign_over_audit": round(assign_s / audit_s, 2),
                }
            print(json.dumps(row), flush=True)
            results.append(row)
    write_outputs(results, out)


if __name__ == "__main__":
    main()
