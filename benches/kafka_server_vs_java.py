"""Broker-side ``uniform`` / ``range``: ours against Kafka's own Java classes, same inputs, same run.

Kafka's benchmark points (``ServerSideAssignorBenchmark``): 10,000 members x 10 partitions per
member over 1,000 and 100 topics, homogeneous and heterogeneous (5 buckets), a full assignment and
an incremental one (one member joins a settled group). Java runs in one warm JVM per point, its
group spec built once; ours gets the same group through the columnar entry point and through the
dict API, inputs built outside the timed region. Each side runs ``--warmup`` untimed rounds, then
``--rounds`` timed rounds interleaved one by one (Java, then each of ours), so that a change of load
on the shared machine falls on every side. Our sides (and the floors below) run in an order rotated
each round, so each takes each position equally often: a side timed right after one that freed an
answer of the same shape, or right after Java, takes a fifth less or more time. The statistic is
the median; the spread is the interquartile range of each side's rounds. A round times the call up
to its returned result on both sides: Java's result is left to its collector, ours is freed after
the clock stops.

``build_ms`` is what the dict API's result costs to build alone, in the same run: CPython copying
the finished answer into new dicts and lists (``{m: {t: ps.copy()}}``, the collector paused as
``server_assign`` pauses it), the objects any dict API must return. ``floor_ms`` is the columnar
entry point's unavoidable work, timed in Rust (``mqbalance._core._bench``, the ``bench`` cargo
feature): the member ids read from their list, every current-assignment row checked and
narrowed, the owner array allocated and filled. ``dict_floor_ms`` is the dict API's own floor, timed
in Rust the same way: reading the member dicts as any reader must (each member's fields, each
distinct subscription list's ids, for ``uniform`` every current entry's topic id and partition
``int``s; nothing checked or kept) plus making the answer's objects anew (a dict per member, a list
per member and topic, the answer's own keys and ``int``s), collector paused.

The Java side is ``io.mqbalance.harness.kafka.ServerAssignorBench`` of the Java harness's ``kafka``
module (``make java``): Kafka 4.4.0's ``UniformAssignor`` / ``RangeAssignor`` from the
kafka-group-coordinator jar. It reads the group as one line on stdin (see ``_tokens``), then runs
the rounds it is asked for.

    python benches/kafka_server_vs_java.py --out benches/kafka_server_results
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))

from java_harness import java_command  # noqa: E402
from kafka_server_groups import Group, build  # noqa: E402
from mqbalance import _core  # noqa: E402
from mqbalance.kafka import server_assign, server_assign_columns  # noqa: E402
from server_process import ServerProcess  # noqa: E402

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


class JavaSide:
    """One JVM holding one group, timing rounds on request."""

    def __init__(self, g: Group, heap_mb: int, log: Path) -> None:
        argv = java_command("kafka", BENCH_CLASS, heap_mb=heap_mb, quick_jit=False)  # C2: timed
        self.server = ServerProcess(f"kafka-assignor-bench-{g.name}", argv, log=log, pipes=True)
        self.server.start()
        self.ask(_tokens(g))

    def ask(self, line: str) -> Any:
        proc = self.server.proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        proc.stdin.write((line + "\n").encode())
        proc.stdin.flush()
        answer = proc.stdout.readline()
        if not answer:
            raise RuntimeError(f"the Java bench stopped; its log:\n{self.server.log_tail()}")
        return json.loads(answer)

    def rounds(self, k: int) -> tuple[list[float], int]:
        answer = self.ask(str(k))
        return [ns / 1e9 for ns in answer["ns"]], answer["assigned"]

    def stop(self) -> None:
        self.server.stop(kill=True)
        proc = self.server.proc
        for pipe in (proc.stdin, proc.stdout) if proc is not None else ():
            if pipe is not None:
                pipe.close()


def _timed(f: Any) -> float:
    t0 = time.perf_counter()
    result = f()
    elapsed = time.perf_counter() - t0
    del result  # freed after the clock stops, as Java leaves its result to the collector
    return elapsed


def _stats(times: list[float]) -> tuple[float, float]:
    """Median and interquartile range."""
    q = statistics.quantiles(times, n=4) if len(times) > 1 else [times[0]] * 3
    return statistics.median(times), q[2] - q[0]


def floor(cols: dict[str, Any]) -> float:
    """One round of the columnar entry point's unavoidable work, timed in Rust (see the module
    docstring)."""
    bench = getattr(_core, "_bench", None)
    if bench is None:
        raise SystemExit("mqbalance._core was built without the `bench` cargo feature (make dev builds it)")
    seconds: float = bench.time_server_columns_floor(
        cols["member_ids"],
        cols["current_topics"],
        cols["current_partitions"],
        len(cols["topic_ids"]),
        int(cols["partition_counts"].sum()),
        1,
    )
    return seconds


def dict_floor(members: list[dict[str, Any]], answer: dict[str, Any], name: str) -> float:
    """One round of what any dict API must do for this group, timed in Rust (see the module
    docstring): read the members, make the answer's objects."""
    bench = _core._bench  # checked by floor()
    gc.disable()
    try:
        seconds: float = bench.time_dict_input_floor(members, name == "uniform", 1)
        seconds += bench.time_dict_result_floor(answer, 1)
    finally:
        gc.enable()
    return seconds


def _copy(answer: dict[str, dict[str, list[int]]]) -> dict[str, dict[str, list[int]]]:
    """The answer's objects made anew, the collector paused as ``server_assign`` pauses it."""
    gc.disable()
    try:
        return {m: {t: ps.copy() for t, ps in d.items()} for m, d in answer.items()}
    finally:
        gc.enable()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--heap-mb", type=int, default=2048, help="the Java side's heap")
    ap.add_argument("--only", default="", help="run only points whose 'assignor/topics/het/inc' contains this")
    ap.add_argument("--out", default="benches/kafka_server_results")
    ap.add_argument("--members", type=int, default=10_000)
    ap.add_argument("--ratio", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    rows = []
    log = Path(tempfile.mkdtemp(prefix="kafka-assignor-bench-")) / "java.log"
    for name in ("uniform", "range"):
        for topics, het, inc in POINTS:
            label = f"{name}/{topics}/{'het' if het else 'hom'}/{'inc' if inc else 'full'}"
            if args.only not in label:
                continue
            g = build(
                members=args.members, ratio=args.ratio, topics=topics, heterogeneous=het, incremental=inc, name=name
            )
            cols = g.columns()
            answer = server_assign(name, g.dicts, g.topics)
            sides = {
                "columns": lambda: server_assign_columns(name, **cols),  # noqa: B023
                "dict": lambda: server_assign(name, g.dicts, g.topics),  # noqa: B023
                "build": lambda: _copy(answer),  # noqa: B023
            }
            java = JavaSide(g, args.heap_mb, log)
            try:
                java.rounds(args.warmup)
                for f in sides.values():
                    for _ in range(args.warmup):
                        _timed(f)
                # Our sides in an order rotated each round: what runs just before a side (Java, or a
                # side freeing an answer of the same shape) changes its time by a fifth or more, so
                # each side takes each position equally often.
                measure: dict[str, Callable[[], float]] = {
                    **{k: partial(_timed, f) for k, f in sides.items()},
                    "floor": partial(floor, cols),
                    "dict_floor": partial(dict_floor, g.dicts, answer, name),
                }
                ours = list(measure)
                times: dict[str, list[float]] = {"java": [], **{k: [] for k in ours}}
                for i in range(args.rounds):
                    t, assigned = java.rounds(1)
                    times["java"] += t
                    for k in ours[i % len(ours) :] + ours[: i % len(ours)]:
                        times[k].append(measure[k]())
            finally:
                java.stop()
            assert assigned == int(g.counts.sum()), (label, assigned)
            med = {k: _stats(v) for k, v in times.items()}
            row = {
                "assignor": name,
                "topics": topics,
                "subscriptions": "heterogeneous" if het else "homogeneous",
                "assignment": "incremental" if inc else "full",
                "java_ms": round(med["java"][0] * 1e3, 2),
                "columns_ms": round(med["columns"][0] * 1e3, 2),
                "dict_ms": round(med["dict"][0] * 1e3, 2),
                "build_ms": round(med["build"][0] * 1e3, 2),
                "columns_speedup": round(med["java"][0] / med["columns"][0], 2),
                "dict_speedup": round(med["java"][0] / med["dict"][0], 2),
                "dict_over_build": round(med["dict"][0] / med["build"][0], 2),
                "floor_ms": round(med["floor"][0] * 1e3, 2),
                "columns_over_floor": round(med["columns"][0] / med["floor"][0], 2),
                "dict_floor_ms": round(med["dict_floor"][0] * 1e3, 2),
                "dict_over_floor": round(med["dict"][0] / med["dict_floor"][0], 2),
                "iqr_ms java/columns/dict": "/".join(f"{med[k][1] * 1e3:.2f}" for k in ("java", "columns", "dict")),
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
            f"{args.rounds} interleaved rounds after {args.warmup} warm-up rounds; speedup = Java / ours; "
            "build = the dict result's objects alone (CPython copying the answer); floor = the columnar "
            "entry point's input and output work alone; dict_floor = the dict API's: the members read, "
            "the answer's objects made, in Rust."
        ),
        "",
        "| " + " | ".join(keys) + " |",
        "|" + "---|" * len(keys),
        *("| " + " | ".join(str(r[k]) for k in keys) + " |" for r in rows),
    ]
    (out / "vs_java.md").write_text("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
