"""``mqbalance.spark.assign_queues`` against native Spark SQL at scale, local mode (``local[2]``),
one warm session: AVG against window functions, CONSISTENT_HASH against a SQL hash ring
(``spark_functions_bench.py``). Results are checked equal (row count and an order-free hash of
every row) before timing; then each round runs ours, the native SQL and the floor (the same shuffle
and Arrow round trip with an identity in Python; once per run also the Arrow round trip alone) in
turn into the ``noop`` sink, ``--rounds`` rounds, medians compared and the spread kept. Writes
``results.json``, ``results.md`` and ``results.png`` to ``--out``.

    .venv/bin/python benches/spark_functions_scale.py --rows 10000000 --out benches/spark_functions_results
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mqbalance.fleet.spark import local_session, stop_session  # noqa: E402
from spark_functions_bench import (  # noqa: E402
    CONSISTENT_HASH,
    VIRTUAL_NODES,
    fingerprint,
    floor_arrow,
    floor_shuffle,
    inputs,
    interleaved_seconds,
    md5_seconds,
    native_avg,
    native_consistent_hash,
    noop,
    ours,
)

PER_GROUP = 100  # 4 brokers × 25 queues, 8 consumers per group


def write(out: Path, args: argparse.Namespace, rows: list[dict[str, Any]], *, plot: bool) -> None:
    """results.json and results.md of the finished cases; with ``plot`` also results.png."""
    meta = {
        "machine": f"{platform.machine()}, 2 cores shared, local[2]",
        "rounds": args.rounds,
        "command": " ".join(sys.argv),
    }
    (out / "results.json").write_text(json.dumps({"meta": meta, "results": rows}, indent=2) + "\n")

    def spread(r: dict[str, Any], key: str) -> str:
        v = r["times"][key]
        return f"{min(v):.1f}–{max(v):.1f}"

    lines = [
        (
            "| case | queue rows | mqbalance.spark (s) | native Spark SQL (s) | ratio "
            "| floor: same shuffle, identity (s) | ours / floor "
            "| floor with the owners' bytes + MD5s (s) | ours / that floor | native / that floor |"
        ),
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *(
            f"| {r['case']} | {r['rows']:,} | {r['ours_s']:.1f} ({spread(r, 'ours')}) "
            f"| {r['native_sql_s']:.1f} ({spread(r, 'native')}) | {r['ratio']:.2f}× "
            f"| {r['floor_shuffle_s']:.1f} ({spread(r, 'floor_shuffle')}) | {r['ours_over_floor']:.2f} "
            f"| {r['floor_owned_s']:.1f} + {r['md5_s']:.1f} | {r['ours_over_full_floor']:.2f} "
            f"| {r['native_over_full_floor']:.2f} |"
            for r in rows
        ),
        "",
        *(
            f"Arrow round trip alone (no shuffle, identity): {r['floor_arrow_s']:.1f} s ({spread(r, 'floor_arrow')})."
            for r in rows
            if r["floor_arrow_s"] is not None
        ),
        (
            f"Medians (range) of {args.rounds} interleaved rounds, one warm `local[2]` session. "
            f"Command: `{meta['command']}`"
        ),
    ]
    (out / "results.md").write_text("\n".join(lines) + "\n")
    if not plot:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 3.5))
    x = range(len(rows))
    ax.bar([i - 0.27 for i in x], [r["ours_s"] for r in rows], 0.27, label="mqbalance.spark")
    ax.bar(list(x), [r["floor_shuffle_s"] for r in rows], 0.27, label="floor: same shuffle, identity")
    ax.bar([i + 0.27 for i in x], [r["native_sql_s"] for r in rows], 0.27, label="native Spark SQL")
    ax.set_xticks(list(x), [f"{r['case']}\n{r['ratio']:.2f}×" for r in rows])
    ax.set_ylabel("seconds (median)")
    ax.set_title(f"{args.rows:,} queue rows, local[2]")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "results.png", dpi=110)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default="benches/spark_functions_results")
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--skip", default="", help="comma-separated cases to skip (AVG, CONSISTENT_HASH)")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    spark = local_session(driver_memory=args.driver_memory, shuffle_partitions=8)
    rows = []
    try:
        t = time.perf_counter()
        q, c = inputs(spark, args.rows // PER_GROUP)
        from pyspark.sql import functions as F

        # The floor's owner: a string as long as the consumers' ids on average.
        owner = "c" * round(c.select(F.avg(F.length("client_id"))).first()[0])
        print(
            f"inputs: {args.rows:,} queue rows, {args.rows // PER_GROUP * 8:,} consumers "
            f"({time.perf_counter() - t:.1f} s)",
            flush=True,
        )
        for name, strategy, native in (
            ("AVG", "AVG", native_avg),
            ("CONSISTENT_HASH", CONSISTENT_HASH, native_consistent_hash),
        ):
            if name in args.skip.split(","):
                continue
            t = time.perf_counter()
            a, b = fingerprint(ours(q, c, strategy)), fingerprint(native(q, c))
            assert a == b and a[0] == args.rows, (name, a, b)
            print(f"{name}: equal results ({time.perf_counter() - t:.1f} s)", flush=True)
            runs = {
                "ours": lambda s=strategy: noop(ours(q, c, s)),
                "native": lambda n=native: noop(n(q, c)),
                "floor_shuffle": lambda: noop(floor_shuffle(q, c)),
                "floor_owned": lambda: noop(floor_shuffle(q, c, owner)),
            }
            if not rows:  # strategy-free: once per run
                runs["floor_arrow"] = lambda: noop(floor_arrow(q))
            times = interleaved_seconds(runs, args.rounds, progress=True)
            med = {k: statistics.median(v) for k, v in times.items()}
            # A hash ring's floor also hashes every queue and virtual node.
            md5 = md5_seconds(q, c, VIRTUAL_NODES) if name == "CONSISTENT_HASH" else 0.0
            floor = med["floor_owned"] + md5
            row = {
                "case": name,
                "rows": args.rows,
                "ours_s": med["ours"],
                "native_sql_s": med["native"],
                "ratio": med["native"] / med["ours"],
                "floor_shuffle_s": med["floor_shuffle"],
                "ours_over_floor": med["ours"] / med["floor_shuffle"],
                "floor_arrow_s": med.get("floor_arrow"),
                "floor_owned_s": med["floor_owned"],
                "md5_s": md5,
                "floor_s": floor,
                "ours_over_full_floor": med["ours"] / floor,
                "native_over_full_floor": med["native"] / floor,
                "times": times,
            }
            print(
                f"{name}: ours {med['ours']:.1f} s, native SQL {med['native']:.1f} s, ratio {row['ratio']:.2f}x; "
                f"floor (same shuffle, identity) {med['floor_shuffle']:.1f} s, "
                f"ours/floor {row['ours_over_floor']:.2f}; "
                f"with the owners' bytes and the MD5s {floor:.1f} s: ours {row['ours_over_full_floor']:.2f}x it, "
                f"native SQL {row['native_over_full_floor']:.2f}x it (the most any such implementation can gain)",
                flush=True,
            )
            rows.append(row)
            write(out, args, rows, plot=False)  # a run cut short keeps its finished cases
    finally:
        stop_session(spark)
    write(out, args, rows, plot=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
