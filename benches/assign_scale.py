"""``mqbalance assign`` (in-process) against ``mqbalance audit`` (Spark, local mode) on the same
JSON snapshot, as a large user runs them: wall time and peak memory of the whole process tree, and
the ratio assign / audit measured in the same run (target ≤ 1; at 10^6 queues assign under 2 s).

    python benches/assign_scale.py --sizes 1e6,3e6,3e7 [--out benches/assign_scale_results] [--no-audit]

Fleets (:func:`make_json_fleet`) are JSON snapshots shaped like the one of issue 24: topics of
8-1,024 queues over 8 brokers, one group per 1,000 readable queues (30,000 groups at 3×10^7), each
of 1-150 consumers (log-uniform: about one process per 30 queues, 10^6 at 3×10^7), AVG /
AVG_BY_CIRCLE / CONSISTENT_HASH, 1 % of the groups with a duplicated client id. Writes
``results.json`` and ``assign_scale.md`` (a Markdown table) to ``--out``.
"""

from __future__ import annotations

import argparse
import json
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
) -> tuple[int, int, int]:
    """Write a JSON snapshot of about ``queues`` readable queues to ``path`` (groups of 1 to
    ``max_consumers`` consumers); returns ``(readable queues, groups, processes)``. Written piece by
    piece: the file is never one Python object."""
    rng = np.random.default_rng(seed)
    sizes = np.array([8, 16, 32, 64, 128, 256, 512, 1024])
    counts = rng.choice(sizes, size=queues // 8 + 8, p=[0.1, 0.15, 0.2, 0.2, 0.15, 0.1, 0.06, 0.04])
    per_topic = counts[: int(np.searchsorted(np.cumsum(counts), queues)) + 1]
    n = len(per_topic)
    groups = min(n, max(1, queues // queues_per_group))
    consumers = np.minimum(np.exp(rng.uniform(0, np.log(max_consumers), groups)).astype(int) + 1, max_consumers)
    strategies = np.array(["AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH"])[rng.integers(0, 3, groups)]
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1e6,3e6")
    parser.add_argument("--out", default="out/assign_scale")
    parser.add_argument("--no-audit", action="store_true", help="time mqbalance assign only")
    parser.add_argument("--queues-per-group", type=int, default=QUEUES_PER_GROUP, help="one group per this many queues")
    parser.add_argument(
        "--max-consumers", type=int, default=MAX_CONSUMERS, help="consumers per group: log-uniform from 1 to this"
    )
    args = parser.parse_args()
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
