"""Benchmark: ``mqbalance history`` over generated days of a large fleet, on Spark local.

The generator (seeded) writes, through the real writer, what ``mqbalance watch`` would record for
``--queues`` queues in ``--groups`` groups (one topic of queues/groups queues per group, 2 to 6
members each, AVG allocation): a membership tick every 10 s with realistic churn (``--churn``
changes per hour across the fleet, and ``--flappers`` members restarting every 5 minutes), an
offsets reading every 60 s in which every queue's committed and max offsets move, and a
checkpoint every hour. One history of the largest number of days is generated; each number of
days is the analysis of its first days (``end`` at that day's last tick). Measured per number of
days: dataset size, generation time (the share of those days), and the analysis' wall time and
peak memory (the Python driver plus the Spark JVM and its workers, sampled
every 0.2 s). Target (issue 23): a day analysed in at most 2 minutes on 2 cores, memory flat in
the number of days.

With ``--against REV`` (issue 36: at least 2x faster than the ``history`` of REV on the same day)
each analysis runs in its own process, once with this tree's ``mqbalance`` and once with REV's
(``git archive`` of its ``python/``, with this tree's compiled extension), alternating, ``--rounds``
times each on the same generated data; the rows give the median and range of both and their
ratio, and ``--keep DIR`` keeps (or reuses) the generated history there.

    python benches/history_scale.py --queues 100000 --groups 1000 --days 1,2 --out benches/history_results
    python benches/history_scale.py --queues 100000 --groups 1000 --days 1 --against main --rounds 3 \
        --keep /tmp/h5 --out benches/history_results/against_main

writes ``results.json``, ``table.md`` and ``scale.png`` there.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from mqbalance.fleet.spark import local_session, stop_session
from mqbalance.history.job import analyse
from mqbalance.history.writer import HistoryWriter

T0 = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)


def _owners(members: list[str], n: int) -> list[str]:
    """AVG over ``n`` queues and the sorted members (Java's AllocateMessageQueueAveragely)."""
    ids = sorted(members)
    out = []
    for i, cid in enumerate(ids):
        mod = n % len(ids)
        size = n // len(ids) + (1 if i < mod else 0) if n > len(ids) else (1 if i < n else 0)
        out += [cid] * size
    return out + [None] * (n - len(out))  # type: ignore[list-item]


def generate(root: Path, *, queues: int, groups: int, days: int, churn: int, flappers: int, seed: int) -> float:
    started = time.perf_counter()
    rng = random.Random(seed)
    per = queues // groups
    w = HistoryWriter(root, run_id="gen")
    members = {g: [f"10.0.{g % 250}.{k}@{g}-{k}" for k in range(rng.randint(2, 6))] for g in range(groups)}
    owner = {g: _owners(members[g], per) for g in range(groups)}
    committed = np.zeros(queues, dtype=np.int64)
    top = np.zeros(queues, dtype=np.int64)
    group_col = pa.array([f"cg-{g:04d}" for g in range(groups) for _ in range(per)])
    topic_col = pa.array([f"t-{g:04d}" for g in range(groups) for _ in range(per)])
    broker_col = pa.array(["broker-a"] * (groups * per))
    qid_col = pa.array(np.tile(np.arange(per, dtype=np.int32), groups))
    rate = np.array([rng.randint(0, 200) for _ in range(groups * per)], dtype=np.int64)
    flapping = [rng.randrange(groups) for _ in range(flappers)]
    ticks_per_day = 8640
    tick_id = 0
    for day in range(days):
        for k in range(ticks_per_day):
            tick_id += 1
            s = day * 86400 + k * 10
            ts = T0 + dt.timedelta(seconds=s)
            checkpoint = k % 360 == 0
            offsets_now = k % 6 == 0
            events: dict[str, object] = {}
            changed: set[int] = set()
            member_rows, owner_rows = [], []
            if rng.random() < churn / 360:
                changed.add(rng.randrange(groups))
            for i, g in enumerate(flapping):
                if (k + i * 7) % 30 == 0:
                    changed.add(g)
            for g in changed:
                name = f"cg-{g:04d}"
                ids = members[g]
                if len(ids) > 2 and (len(ids) >= 6 or rng.random() < 0.5):
                    gone = ids.pop(rng.randrange(len(ids)))
                    member_rows.append({"event": "leave", "group": name, "client_id": gone, "client_addr": "a"})
                else:
                    cid = f"10.1.{g % 250}.{tick_id % 250}@{g}-{tick_id}"
                    ids.append(cid)
                    member_rows.append({"event": "join", "group": name, "client_id": cid, "client_addr": "a"})
                new = _owners(ids, per)
                for q, (a, b) in enumerate(zip(owner[g], new, strict=True)):
                    if a != b:
                        owner_rows.append(
                            {
                                "event": "change",
                                "group": name,
                                "topic": f"t-{g:04d}",
                                "broker_name": "broker-a",
                                "queue_id": q,
                                "owner": b,
                                "processes": 1,
                            }  # fmt: skip
                        )
                owner[g] = new
            if checkpoint:
                member_rows = [
                    {"event": "checkpoint", "group": f"cg-{g:04d}", "client_id": c, "client_addr": "a"}
                    for g in range(groups)
                    for c in members[g]
                ]
                events["ownership"] = pa.table(
                    {
                        "event": pa.array(["checkpoint"] * (groups * per)),
                        "group": group_col,
                        "topic": topic_col,
                        "broker_name": broker_col,
                        "queue_id": qid_col,
                        "owner": pa.array([o for g in range(groups) for o in owner[g]], pa.string()),
                        "processes": pa.array(np.ones(groups * per, dtype=np.int16)),
                    }
                )
            elif owner_rows:
                events["ownership"] = owner_rows
            if member_rows:
                events["members"] = member_rows
            if offsets_now:
                top += rate + 1
                committed += rate
                events["offsets"] = pa.table(
                    {
                        "event": pa.array(["checkpoint" if checkpoint else "change"] * (groups * per)),
                        "group": group_col,
                        "topic": topic_col,
                        "broker_name": broker_col,
                        "queue_id": qid_col,
                        "committed": pa.array(committed),
                        "max_offset": pa.array(top),
                    }
                )
            w.commit_tick(
                tick_id,
                ts,
                events,
                {
                    "kind": "both" if offsets_now else "membership",
                    "checkpoint": checkpoint,
                    "duration_ms": 300,
                    "skipped_before": 0,
                    "clock_jump_ms": 0,
                    "groups": groups,
                    "changed_groups": len(changed),
                    "requests": 1200,
                    "errors": 0,
                },  # fmt: skip
            )
            if k % 1440 == 0:
                print(f"day {day + 1}: {k / ticks_per_day:.0%}", file=sys.stderr)
    w.close()
    return time.perf_counter() - started


def _tree_rss(pid: int) -> dict[str, int]:
    """RSS (bytes) of ``pid`` and its descendants, from /proc: ``jvm`` (Spark's JVM), ``driver``
    (``pid``: the Python driver holding the results), ``workers`` (Spark's Python workers, where
    the per-group work runs) and ``total``."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(parent, []).append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    out = {"jvm": 0, "driver": 0, "workers": 0, "total": 0}
    stack = [pid]
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/statm") as f:
                rss = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            with open(f"/proc/{p}/comm") as f:
                kind = "jvm" if f.read().strip() == "java" else "driver" if p == pid else "workers"
        except OSError:
            continue
        out[kind] += rss
        out["total"] += rss
        stack += children.get(p, [])
    return out


def _date_of(f: Path, root: Path) -> str:
    """The ``date=`` partition of a dataset file (``""`` for files outside one: always counted)."""
    part = next((p for p in f.relative_to(root).parts if p.startswith("date=")), "date=")
    return part[5:]


def _analysis(root: Path, days: int, driver_memory: str, engine: str = "spark") -> dict[str, object]:
    """One analysis of the first ``days`` of ``root`` in this process (the child of :func:`_timed`),
    on local Spark or (``engine="local"``) in process: its time from the start of the command's work
    (Spark's start included: `mqbalance history` pays it too), and a digest of every result table
    (the same digest: the same results)."""
    t = time.perf_counter()
    spark = local_session(fast_start=True, driver_memory=driver_memory) if engine == "spark" else None
    try:
        result = analyse(spark, root, end=T0 + dt.timedelta(days=days, seconds=-10))
        took = time.perf_counter() - t
    finally:
        if spark is not None:
            stop_session(spark)
    rows = dataclasses.asdict(result)
    for e in rows["episodes"]:
        e.pop("causes", None)  # said since 2026-11-27: a revision before has none to compare
    digest = hashlib.sha256(json.dumps(rows, sort_keys=True, default=str).encode())
    return {"analyse_s": took, "episodes": len(result.episodes), "health_rows": len(result.health),
            "digest": digest.hexdigest()}  # fmt: skip


def _timed(python_path: Path, root: Path, days: int, driver_memory: str, engine: str = "spark") -> dict[str, object]:
    """:func:`_analysis` in a child process running the ``mqbalance`` at ``python_path``, with the
    peak RSS of its process tree (sampled every 0.2 s)."""
    env = {**os.environ, "PYTHONPATH": str(python_path)}
    argv = [sys.executable, __file__, "--child", str(root), "--days", str(days), "--driver-memory", driver_memory,
            "--engine", engine]  # fmt: skip
    child = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)
    peak = 0
    while child.poll() is None:
        peak = max(peak, _tree_rss(child.pid)["total"])
        time.sleep(0.2)
    out = child.stdout.read() if child.stdout else ""
    if child.returncode:
        raise RuntimeError(f"analysis with {python_path} failed ({child.returncode})")
    row: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    row["peak_rss_bytes"] = peak
    return row


def against(args: argparse.Namespace, root: Path) -> list[dict[str, object]]:
    """Each number of days analysed by this tree and by ``args.against``, alternating (see the
    module docs); the results' digests must agree."""
    here = Path(__file__).resolve().parents[1]
    base = Path(tempfile.mkdtemp(prefix="mqbalance-history-base-"))
    try:
        archive = subprocess.run(["git", "-C", str(here), "archive", args.against, "python"], check=True,
                                 capture_output=True).stdout  # fmt: skip
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        for ext in (here / "python" / "mqbalance").glob("_core*.so"):
            shutil.copy(ext, base / "python" / "mqbalance" / ext.name)
        rows = []
        for days in sorted(int(d) for d in args.days.split(",")):
            runs: dict[str, list[dict[str, object]]] = {"new": [], "base": []}
            for _ in range(args.rounds):
                for side, path, engine in (("base", base / "python", "spark"), ("new", here / "python", args.engine)):
                    runs[side].append(_timed(path, root, days, args.driver_memory, engine))
                    print(days, side, runs[side][-1], file=sys.stderr)
            digests = {str(r["digest"]) for side in runs.values() for r in side}
            if len(digests) != 1:
                raise AssertionError(f"{days} days: the results differ between {args.against} and this tree")
            row: dict[str, object] = {"days": days, "episodes": runs["new"][0]["episodes"],
                                      "health_rows": runs["new"][0]["health_rows"]}  # fmt: skip
            for side, got in runs.items():
                times = sorted(float(str(r["analyse_s"])) for r in got)
                row[f"{side}_s"] = [round(t, 1) for t in times]
                row[f"{side}_median_s"] = round(statistics.median(times), 1)
                row[f"{side}_peak_rss_bytes"] = max(int(str(r["peak_rss_bytes"])) for r in got)
            row["ratio"] = round(float(str(row["base_median_s"])) / float(str(row["new_median_s"])), 2)
            rows.append(row)
        return rows
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _against_table(args: argparse.Namespace, rows: list[dict[str, object]], command: str) -> list[str]:
    lines = [
        (
            f"{args.queues:,} queues, {args.groups:,} groups; `history` of {args.against} against this tree, "
            f"alternating, {args.rounds} rounds each, median [range]"
        ),
        "",
        f"| days | {args.against} | this tree | faster | peak memory {args.against} / this tree | episodes |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        b, n = r["base_s"], r["new_s"]
        assert isinstance(b, list) and isinstance(n, list)
        lines.append(
            f"| {r['days']} | {r['base_median_s']} s [{b[0]}–{b[-1]}] | {r['new_median_s']} s [{n[0]}–{n[-1]}] "
            f"| {r['ratio']}× | {int(str(r['base_peak_rss_bytes'])) / 2**30:.2f} / "
            f"{int(str(r['new_peak_rss_bytes'])) / 2**30:.2f} GiB | {r['episodes']:,} |"
        )
    return [*lines, "", f"`{command}`"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queues", type=int, default=100_000)
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--days", default="1,2")
    ap.add_argument("--churn", type=int, default=100, help="membership changes per hour across the fleet")
    ap.add_argument("--flappers", type=int, default=5)
    ap.add_argument("--out", type=Path, default=Path("benches/history_results"))
    ap.add_argument("--driver-memory", default="2g", help="the Spark JVM's heap (spark.driver.memory)")
    ap.add_argument("--against", help="a git revision: time its `history` against this tree's (see the docs)")
    ap.add_argument("--rounds", type=int, default=3, help="with --against: analyses per side")
    ap.add_argument("--keep", type=Path, help="generate the history here and keep it (reused when present)")
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    ap.add_argument(
        "--engine",
        choices=("spark", "local"),
        default="spark",
        help="where this tree's analysis runs with --against (REV's always on Spark)",
    )
    args = ap.parse_args(argv)
    if args.child is not None:
        print(json.dumps(_analysis(args.child, int(args.days), args.driver_memory, args.engine)))
        return 0
    rows = []
    counts = sorted(int(d) for d in args.days.split(","))
    root = (args.keep or Path(tempfile.mkdtemp(prefix="mqbalance-history-bench-"))) / "h"
    command = " ".join(["python", "benches/history_scale.py", *(argv if argv is not None else sys.argv[1:])])
    try:
        gen_s = 0.0
        if not (root / "ticks").exists():
            gen_s = generate(root, queues=args.queues, groups=args.groups, days=counts[-1], churn=args.churn,
                             flappers=args.flappers, seed=23)  # fmt: skip
        if args.against:
            compared = against(args, root)
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / "results.json").write_text(json.dumps({"rows": compared, "command": command}, indent=1) + "\n")
            lines = _against_table(args, compared, command)
            (args.out / "table.md").write_text("\n".join(lines) + "\n")
            print("\n".join(lines))
            return 0
        for days in counts:  # the first ``days`` of one generated history (``end``: its last tick)
            last_day = (T0 + dt.timedelta(days=days - 1)).date().isoformat()
            size = sum(f.stat().st_size for f in root.rglob("*") if f.is_file() and _date_of(f, root) <= last_day)
            peak = {"jvm": 0, "driver": 0, "workers": 0, "total": 0}
            done = threading.Event()

            def sample(done: threading.Event = done, peak: dict[str, int] = peak) -> None:
                while not done.wait(0.2):
                    for k, v in _tree_rss(os.getpid()).items():
                        peak[k] = max(peak[k], v)

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            t = time.perf_counter()
            spark = local_session(fast_start=True, driver_memory=args.driver_memory)
            try:
                end = T0 + dt.timedelta(days=days, seconds=-10)
                result = analyse(spark, root, end=end, progress=lambda m: print(m, file=sys.stderr))
            finally:
                stop_session(spark)
            took = time.perf_counter() - t
            done.set()
            sampler.join()
            rows.append(
                {
                    "days": days,
                    "dataset_bytes": size,
                    "generate_s": round(gen_s * days / counts[-1], 1),
                    "analyse_s": round(took, 1),
                    "peak_rss_bytes": peak["total"],
                    "peak_jvm_bytes": peak["jvm"],
                    "peak_driver_bytes": peak["driver"],
                    "peak_workers_bytes": peak["workers"],
                    "episodes": len(result.episodes),
                    "health_rows": len(result.health),
                    "flapping_clients": len(result.flapping_clients),
                }  # fmt: skip
            )
            print(rows[-1], file=sys.stderr)
    finally:
        if args.keep is None:
            shutil.rmtree(root.parent, ignore_errors=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps({"rows": rows, "command": command}, indent=1) + "\n")
    lines = [
        (
            f"{args.queues:,} queues, {args.groups:,} groups; membership every 10 s, offsets every 60 s; "
            f"Spark driver memory {args.driver_memory}"
        ),
        "",
        (
            "| days | dataset | analysis (Spark local[2]) | peak memory | JVM | Python driver | Python workers "
            "| episodes "
            "| queues evaluated |"
        ),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['days']} | {r['dataset_bytes'] / 2**20:,.0f} MiB | {r['analyse_s']:.0f} s "
            f"| {r['peak_rss_bytes'] / 2**30:.2f} GiB | {r['peak_jvm_bytes'] / 2**30:.2f} GiB "
            f"| {r['peak_driver_bytes'] / 2**30:.2f} GiB | {r['peak_workers_bytes'] / 2**30:.2f} GiB "
            f"| {r['episodes']:,} | {r['health_rows']:,} |"
        )
    lines += ["", f"`{command}`"]
    (args.out / "table.md").write_text("\n".join(lines) + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.2))
    a.plot([r["days"] for r in rows], [r["analyse_s"] for r in rows], "o-")
    a.set_xlabel("days of history")
    a.set_ylabel("analysis (s)")
    b.plot([r["days"] for r in rows], [r["peak_rss_bytes"] / 2**30 for r in rows], "o-", color="#d62728")
    b.set_xlabel("days of history")
    b.set_ylabel("peak memory (GiB)")
    fig.suptitle(f"mqbalance history: {args.queues:,} queues, {args.groups:,} groups")
    fig.tight_layout()
    fig.savefig(args.out / "scale.png", dpi=100)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
