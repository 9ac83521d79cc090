"""Where a Spark task's time goes for ``assign_queues`` and for its floor: each Python call of the
``mapInArrow`` logs its rows, how long it took to receive its input, to yield its first output
batch and in all, its CPU seconds (user and system, the Rust threads included) and page faults.
The same inputs and session as ``spark_functions_scale.py``, CONSISTENT_HASH, rounds interleaved
(ours, then the floor that sends every queue row back owned by one string).

    .venv/bin/python benches/spark_partition_times.py --rows 10000000 --rounds 3

Prints one line per Python call and one per job. Ours must hold a partition before it answers,
so its calls show three phases (rows in, computing, rows out) where the floor's stream.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mqbalance.fleet.spark import local_session, stop_session  # noqa: E402
from mqbalance.spark.arrow import queue_partition_assigner  # noqa: E402
from spark_functions_bench import CONSISTENT_HASH, _identity, inputs, noop, through_shuffle  # noqa: E402

Partition = Callable[[Iterator[Any]], Iterator[Any]]


def timed(tag: str, log: str, fn: Partition) -> Partition:
    """``fn``, appending one JSON line per call to ``log`` (the executors' Python writes it)."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import os
        import resource

        t0, r0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
        seen = {"rows": 0, "read": 0.0}

        def counted() -> Iterator[Any]:
            for b in batches:
                seen["rows"] += b.num_rows
                yield b
            seen["read"] = time.perf_counter() - t0

        first, out = None, 0
        for batch in fn(counted()):
            first = first if first is not None else time.perf_counter() - t0
            out += batch.num_rows
            yield batch
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        line = {
            "tag": tag,
            "rows_in": seen["rows"],
            "rows_out": out,
            "read_s": seen["read"],
            "first_out_s": first,
            "total_s": time.perf_counter() - t0,
            "user_s": r1.ru_utime - r0.ru_utime,
            "sys_s": r1.ru_stime - r0.ru_stime,
            "faults": r1.ru_minflt - r0.ru_minflt,
            "pid": os.getpid(),
        }
        with open(log, "a") as f:
            f.write(json.dumps(line) + "\n")

    return run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--log", default="spark_partition_times.jsonl")
    args = ap.parse_args()
    Path(args.log).unlink(missing_ok=True)
    spark = local_session(driver_memory="4g", shuffle_partitions=8)  # as spark_functions_scale.py
    try:
        q, c = inputs(spark, args.rows // 100)
        from pyspark.sql import functions as F

        owner = "c" * round(c.select(F.avg(F.length("client_id"))).first()[0])
        cases = {"ours": queue_partition_assigner(CONSISTENT_HASH), "floor": _identity("is_consumer", owner)}

        def job(tag: str) -> float:
            plan = through_shuffle(q, c, timed(tag, args.log, cases[tag.split()[0]]))
            t = time.perf_counter()
            noop(plan)
            return time.perf_counter() - t

        job("ours warm-up")
        for r in range(args.rounds):
            for tag in cases:
                seconds = job(f"{tag} {r}")
                lines = [json.loads(x) for x in Path(args.log).read_text().splitlines()]
                mine = [x for x in lines if x["tag"] == f"{tag} {r}"]
                for x in mine:
                    print(
                        f"  {x['tag']}: {x['rows_in']:,} rows in, {x['rows_out']:,} out; read {x['read_s']:.2f} s, "
                        f"first out {x['first_out_s'] or 0:.2f} s, all {x['total_s']:.2f} s; "
                        f"CPU {x['user_s']:.2f} s user + {x['sys_s']:.2f} s system, "
                        f"{x['faults']:,} page faults (pid {x['pid']})"
                    )
                print(
                    f"{tag} round {r + 1}: {seconds:.1f} s, {len(mine)} Python calls, "
                    f"CPU {sum(x['user_s'] + x['sys_s'] for x in mine):.2f} s in them",
                    flush=True,
                )
    finally:
        stop_session(spark)
    return 0


if __name__ == "__main__":
    sys.exit(main())
