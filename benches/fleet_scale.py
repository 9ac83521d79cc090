"""The main job at fleet scale: ``mqbalance audit`` (Spark, local mode, default settings) against the
in-process ``mqbalance assign`` of the same fleet, wall time and peak memory of all processes, at
growing fleet sizes. Writes ``out/fleet_scale/results.json`` and ``fleet_scale.png``.

    python benches/fleet_scale.py --sizes 1e5,1e6,1e7,2e7,3e7 [--out out/fleet_scale] [--connection-heavy]

Peak memory is also reported for the largest Spark Python worker alone (what each executor core
needs: flat, whatever the fleet). Fleets are Parquet snapshots (:func:`make_fleet`): topics of
8-1,024 queues over 8 brokers, thousands
of groups of 1-1,000 consumers (log-uniform) each subscribing to many topics, strategies AVG /
AVG_BY_CIRCLE / CONSISTENT_HASH, 1 % of groups with a duplicated client id; ``--connection-heavy``
gives one group per topic instead (about one process per queue). Peak memory is sampled from /proc
every 0.2 s over the command's process tree. Spark's start-up is measured in the same run as the
audit of a one-topic fleet, and each size reports ``audit / (2 × assign + start-up)`` (target ≤ 1).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

#: Groups of a generated fleet: one per topic up to this many, then topics are shared out among
#: them (a large fleet has thousands of groups, each subscribing to many topics, not one group per topic).
MAX_GROUPS = 1_000
#: ... and one more group per this many readable queues beyond (3×10^7 queues: 3,000 groups).
QUEUES_PER_GROUP = 10_000


def make_fleet(
    queues: int,
    directory: Path,
    seed: int = 1,
    *,
    leave_every: int = 0,
    changed_groups_every: int = 1,
    connection_heavy: bool = False,
) -> int:
    """A fleet of about ``queues`` readable queues: topics of 8-1,024 queues over 8 brokers, groups of
    1-1,000 consumers (log-uniform) on AVG / AVG_BY_CIRCLE / CONSISTENT_HASH, 1 % of them with a
    duplicated client id; ``max(MAX_GROUPS, queues / QUEUES_PER_GROUP)`` groups (at most one per
    topic), topic ``i`` subscribed by group ``i mod groups``. ``connection_heavy``: one group per
    topic instead (about one connection per queue: the per-connection cost at its worst).
    ``leave_every`` > 0 drops every such consumer of every ``changed_groups_every``-th group (the
    same fleet with some members gone: what ``--previous`` compares). Returns the readable queue
    count."""
    rng = np.random.default_rng(seed)
    sizes = np.array([8, 16, 32, 64, 128, 256, 512, 1024])
    counts = rng.choice(sizes, size=queues // 8 + 8, p=[0.1, 0.15, 0.2, 0.2, 0.15, 0.1, 0.06, 0.04])
    per_topic = counts[: int(np.searchsorted(np.cumsum(counts), queues)) + 1]
    n = len(per_topic)
    groups = n if connection_heavy else min(n, max(MAX_GROUPS, queues // QUEUES_PER_GROUP))
    topics = np.char.add("Topic", np.char.zfill(np.arange(n).astype(str), 8))
    brokers = np.array([f"broker-{b:02d}" for b in range(8)])
    per_broker = np.repeat(per_topic // 8, 8)
    qd = {
        "topic": np.repeat(topics, 8),
        "broker_name": np.tile(brokers, n),
        "read_queue_nums": per_broker,
        "write_queue_nums": per_broker,
        "perm": np.full(8 * n, 6),
    }
    consumers = np.minimum(np.exp(rng.uniform(0, np.log(1000), groups)).astype(int) + 1, 1000)
    strategies = np.array(["AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH"])[rng.integers(0, 3, groups)]
    names = np.char.add("cg-", np.char.zfill(np.arange(groups).astype(str), 7))
    group, client, strategy = [], [], []
    for i in range(groups):
        ids = [f"10.{i % 250}.{j // 250}.{j % 250}@{i}" for j in range(int(consumers[i]))]
        if i % 100 == 7 and len(ids) > 1:
            ids[1] = ids[0]  # a duplicated client id
        if leave_every and i % changed_groups_every == 0:
            ids = [x for j, x in enumerate(ids) if j % leave_every != leave_every - 1] or ids[:1]
        group += [str(names[i])] * len(ids)
        client += ids
        strategy += [str(strategies[i])] * len(ids)
    directory.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(qd), directory / "queue_data.parquet")
    pq.write_table(
        pa.table({"group": group, "client_id": client, "strategy": strategy}), directory / "connections.parquet"
    )
    pq.write_table(
        pa.table({"group": names[np.arange(n) % groups], "topic": topics}), directory / "subscriptions.parquet"
    )
    return int(per_topic.sum())


def _tree_rss(root: int) -> tuple[int, int]:
    """RSS of the process tree under ``root`` (bytes), and the largest of its Spark Python workers."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            rss[int(proc.name)] = int((proc / "statm").read_text().split()[1]) * 4096
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(proc.name))
    total, worker, todo = 0, 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        try:
            if b"pyspark.daemon" in Path(f"/proc/{pid}/cmdline").read_bytes():
                worker = max(worker, rss.get(pid, 0))
        except OSError:
            pass
        todo += children.get(pid, [])
    return total, worker


def run(cmd: list[str]) -> tuple[float, int, int, int]:
    """Wall seconds, peak RSS of the whole process tree and of its largest Spark Python worker
    (bytes), exit code."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak = worker = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak, worker
        while not done.wait(0.2):
            total, one = _tree_rss(proc.pid)
            peak, worker = max(peak, total), max(worker, one)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    _, err = proc.communicate()
    done.set()
    thread.join()
    if proc.returncode not in (0, 3):
        print(err[-3000:], file=sys.stderr)
    return time.perf_counter() - start, peak, worker, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1e5,1e6,1e7")
    parser.add_argument("--out", default="out/fleet_scale")
    parser.add_argument("--connection-heavy", action="store_true", help="one group per topic (~1 process per queue)")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    mq = [sys.executable, "-m", "mqbalance.cli"]
    with tempfile.TemporaryDirectory() as tmp:
        # Spark's start-up, measured the same way: the audit of a one-topic fleet (process start,
        # imports, JVM, the job, the report), what every audit pays whatever the fleet.
        tiny = Path(tmp) / "tiny"
        make_fleet(64, tiny)
        startup_s, _, _, _ = run([*mq, "audit", str(tiny), "--quiet", "--out", str(Path(tmp) / "audit")])
    print(json.dumps({"startup_s": round(startup_s, 1)}), flush=True)
    results = []
    for size in (int(float(s)) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            snap = Path(tmp) / "fleet"
            queues = make_fleet(size, snap, connection_heavy=args.connection_heavy)
            processes = pq.read_metadata(snap / "connections.parquet").num_rows
            assign_s, assign_mem, _, _ = run([*mq, "assign", str(snap), "--top", "10", "--quiet"])
            audit = [*mq, "audit", str(snap), "--quiet"]
            audit_s, audit_mem, worker_mem, code = run([*audit, "--out", str(Path(tmp) / "audit")])
            before = Path(tmp) / "before"
            make_fleet(size, before, leave_every=10, connection_heavy=args.connection_heavy)
            prev_s, prev_mem, _, _ = run(
                [*audit, "--previous", str(before), "--out", str(Path(tmp) / "audit-previous")]
            )
            # ... and as snapshots minutes apart usually are: a tenth of the groups changed
            some = Path(tmp) / "before-some"
            make_fleet(size, some, leave_every=10, changed_groups_every=10, connection_heavy=args.connection_heavy)
            some_s, _, _, _ = run([*audit, "--previous", str(some), "--out", str(Path(tmp) / "audit-previous-some")])
            row = {
                "queues": queues,
                "processes": processes,
                "assign_s": round(assign_s, 1),
                "assign_peak_gib": round(assign_mem / 2**30, 2),
                "audit_s": round(audit_s, 1),
                "audit_peak_gib": round(audit_mem / 2**30, 2),
                "audit_worker_peak_gib": round(worker_mem / 2**30, 2),
                "audit_exit": code,
                # the target: audit <= 2 x assign + Spark's start-up (<= 1.0 here)
                "audit_over_target": round(audit_s / (2 * assign_s + startup_s), 2),
                "audit_previous_s": round(prev_s, 1),
                "audit_previous_peak_gib": round(prev_mem / 2**30, 2),
                "previous_over_plain": round(prev_s / audit_s, 2),
                "audit_previous_tenth_changed_s": round(some_s, 1),
                "previous_tenth_changed_over_plain": round(some_s / audit_s, 2),
            }
            print(json.dumps(row), flush=True)
            results.append(row)
    (out / "results.json").write_text(json.dumps({"startup_s": round(startup_s, 1), "sizes": results}, indent=1) + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    q = [r["queues"] for r in results]
    left.plot(q, [r["audit_s"] for r in results], "o-", label="mqbalance audit (Spark local)")
    left.plot(q, [r["audit_previous_s"] for r in results], "^-", label="audit --previous (every group changed)")
    some = [r["audit_previous_tenth_changed_s"] for r in results]
    left.plot(q, some, "v-", label="audit --previous (a tenth changed)")
    left.plot(q, [r["assign_s"] for r in results], "s-", label="mqbalance assign (in-process)")
    right.plot(q, [r["audit_peak_gib"] for r in results], "o-", label="audit, all processes")
    right.plot(q, [r["audit_previous_peak_gib"] for r in results], "^-", label="audit --previous")
    right.plot(q, [r["assign_peak_gib"] for r in results], "s-", label="assign")
    right.plot(q, [r["audit_worker_peak_gib"] for r in results], "D-", label="audit, each Spark Python worker")
    right.axhline(8, color="#d62728", linestyle="--", linewidth=1, label="8 GiB budget")
    for ax, label in ((left, "wall time (s)"), (right, "peak memory (GiB)")):
        ax.set_xscale("log")
        ax.set_xlabel("readable queues")
        ax.set_ylabel(label)
        ax.legend()
        ax.grid(alpha=0.3)
    fig.suptitle("The main job at fleet scale (2 cores)")
    fig.tight_layout()
    fig.savefig(out / "fleet_scale.png", dpi=100)


if __name__ == "__main__":
    main()
