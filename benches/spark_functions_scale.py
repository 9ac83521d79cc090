"""``mqbalance.spark.assign_queues`` against native Spark SQL at scale, local mode (``local[2]``),
one warm session: AVG against window functions, CONSISTENT_HASH against a SQL hash ring
(``spark_functions_bench.py``). Results are checked equal (row count and an order-free hash of
every row) before timing; each side then runs ``--rounds`` times into the ``noop`` sink, medians
compared. Writes ``results.json``, ``results.md`` and ``results.png`` to ``--out``.

    .venv/bin/python benches/spark_functions_scale.py --rows 10000000 --out benches/spark_functions_results
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mqbalance.fleet.spark import local_session, stop_session  # noqa: E402
from spark_functions_bench import (  # noqa: E402
    CONSISTENT_HASH,
    fingerprint,
    inputs,
    median_seconds,
    native_avg,
    native_consistent_hash,
    noop,
    ours,
)

PER_GROUP = 100  # 4 brokers × 25 queues, 8 consumers per group


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default="benches/spark_functions_results")
    parser.add_argument("--driver-memory", default="8g")
    parser.add_argument("--skip", default="", help="comma-separated cases to skip (AVG, CONSISTENT_HASH)")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    spark = local_session(driver_memory=args.driver_memory, shuffle_partitions=8)
    rows = []
    try:
        t = time.perf_counter()
        q, c = inputs(spark, args.rows // PER_GROUP)
        print(
            f"inputs: {args.rows:,} queue rows, {args.rows // PER_GROUP * 8:,} consumers "
            f"({time.perf_counter() - t:.1f} s)"
        )
        for name, strategy, native in (
            ("AVG", "AVG", native_avg),
            ("CONSISTENT_HASH", CONSISTENT_HASH, native_consistent_hash),
        ):
            if name in args.skip.split(","):
                continue
            a, b = fingerprint(ours(q, c, strategy)), fingerprint(native(q, c))
            assert a == b and a[0] == args.rows, (name, a, b)
            ours_s = median_seconds(lambda s=strategy: noop(ours(q, c, s)), args.rounds)
            native_s = median_seconds(lambda n=native: noop(n(q, c)), args.rounds)
            row = {
                "case": name,
                "rows": args.rows,
                "ours_s": ours_s,
                "native_sql_s": native_s,
                "ratio": native_s / ours_s,
            }
            print(json.dumps(row))
            rows.append(row)
    finally:
        stop_session(spark)
    meta = {
        "machine": f"{platform.machine()}, 2 cores shared, local[2]",
        "rounds": args.rounds,
        "command": " ".join(sys.argv),
    }
    (out / "results.json").write_text(json.dumps({"meta": meta, "results": rows}, indent=2) + "\n")
    lines = [
        "| case | queue rows | mqbalance.spark (s) | native Spark SQL (s) | ratio |",
        "|---|---:|---:|---:|---:|",
        *(
            f"| {r['case']} | {r['rows']:,} | {r['ours_s']:.1f} | {r['native_sql_s']:.1f} | {r['ratio']:.2f}× |"
            for r in rows
        ),
        "",
        f"Medians of {args.rounds} rounds, one warm `local[2]` session. Command: `{meta['command']}`",
    ]
    (out / "results.md").write_text("\n".join(lines) + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    x = range(len(rows))
    ax.bar([i - 0.2 for i in x], [r["ours_s"] for r in rows], 0.4, label="mqbalance.spark")
    ax.bar([i + 0.2 for i in x], [r["native_sql_s"] for r in rows], 0.4, label="native Spark SQL")
    ax.set_xticks(list(x), [f"{r['case']}\n{r['ratio']:.2f}×" for r in rows])
    ax.set_ylabel("seconds (median)")
    ax.set_title(f"{args.rows:,} queue rows, local[2]")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "results.png", dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
