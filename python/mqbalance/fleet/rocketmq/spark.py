"""RocketMQ fleet assignment on Spark: the ``mapInArrow`` glue around
the engine (:mod:`mqbalance.fleet.rocketmq.assignment`, :mod:`mqbalance.fleet.rocketmq.facts`).

``pyspark`` is imported lazily, so ``import mqbalance`` works without it. Local mode is the
default; a cluster is the same code with another master URL (executors need ``mqbalance``
installed).

Only the (group, topic) pairs travel through Spark, each with its topic's readable route;
``mapInArrow`` hands batches of pairs to the executors, which expand them into queues and assign
them all with the engine (one Rust call per batch), so no queue row is shuffled for the
assignment itself. :func:`audit` then counts per pair with Spark and builds the findings.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from mqbalance.allocation.registry import StrategySpec
from mqbalance.fleet.findings import AuditResult
from mqbalance.fleet.rocketmq.assignment import assignment_blocks, pair_queue_counts
from mqbalance.fleet.rocketmq.audit import summarise
from mqbalance.fleet.rocketmq.churn import with_previous_routes
from mqbalance.fleet.rocketmq.facts import busy_processes, fact_blocks, load_facts, split_facts, what_if_facts
from mqbalance.fleet.rocketmq.schemas import ASSIGNMENT_SCHEMA, FACT_SCHEMA
from mqbalance.fleet.rocketmq.snapshot import GroupIndex, Snapshot
from mqbalance.fleet.rocketmq.what_if import what_if_candidates
from mqbalance.fleet.spark import is_connect

__all__ = ["assign_fleet", "audit", "audit_fleet"]


def _work_partitions(pairs_table: pa.Table, groups: GroupIndex, n: int) -> pa.Table:
    """``pairs_table`` with a ``part`` column: every pair of a group in the same partition (a task
    counts the group's busy processes), the groups spread by estimated work (queues × consumers of
    their pairs) evenly over ``n`` partitions, heaviest first, each to the least loaded so far."""
    queues = pair_queue_counts(pairs_table)
    names = pairs_table.column("group").to_pylist()
    consumers = np.array([_size(groups, g) for g in names], dtype=np.int64)
    group_of = pc.dictionary_encode(pairs_table.column("group").combine_chunks()).indices.to_numpy()
    work = np.bincount(group_of, weights=queues * consumers)
    load = np.zeros(n)
    part_of_group = np.empty(len(work), dtype=np.int32)
    for g in np.argsort(-work, kind="stable").tolist():
        part_of_group[g] = k = int(np.argmin(load))
        load[k] += work[g]
    return pairs_table.append_column("part", pa.array(part_of_group[group_of]))


class _Shipped:
    """A value pickled with the function that reads it (what a broadcast gives, where there is none)."""

    def __init__(self, value: Any) -> None:
        self.value = value


def _size(groups: GroupIndex, name: str) -> int:
    try:
        return max(1, groups.size(name))
    except KeyError:  # subscribed, no connection
        return 1


#: Tasks per core by default: finer progress and balance; a Python worker (and the broadcast it
#: reads) is reused from task to task, so more tasks cost little.
TASKS_PER_CORE = 4


def _map_pairs(
    spark: Any,
    snapshot: Snapshot,
    partitions: int | None,
    blocks: Callable[..., Iterator[pa.RecordBatch]],
    schema: str,
    previous: Snapshot | None = None,
    assignments_dir: str | None = None,
) -> Any:
    """The (group, topic, route) pairs spread over the partitions by work, mapped by ``blocks`` in
    the executors; ``None`` when there are no pairs. Nothing but the partition numbers goes through
    Spark's rows: the pairs (with their partition) and the consumer groups are broadcast once, and
    task ``p`` takes the pairs of partition ``p``. With ``previous`` (an earlier snapshot) each pair
    also carries its earlier route, and ``blocks`` receives the earlier groups as
    ``previous_groups``. With ``assignments_dir``, ``blocks`` receives an ``assignments`` sink and
    each task writes its assignment rows to ``part-<p>.parquet`` there."""
    pairs_table = snapshot.pair_table()
    if pairs_table.num_rows == 0:
        return None
    index = snapshot.group_index()
    earlier = None if previous is None else (previous.pair_table(), previous.group_index())
    remote = is_connect(spark)
    cores = int(spark.conf.get("spark.sql.shuffle.partitions")) if remote else spark.sparkContext.defaultParallelism
    n = min(partitions or TASKS_PER_CORE * cores, pairs_table.num_rows)
    table = _work_partitions(pairs_table, index, n)
    if earlier is not None:
        table = with_previous_routes(table, earlier[0])
    if remote:  # no SparkContext over Spark Connect: the work travels inside the function, once per job
        work, groups = _Shipped(table), _Shipped(index)
        before = None if earlier is None else _Shipped(earlier[1])
    else:
        sc = spark.sparkContext
        work, groups = sc.broadcast(table), sc.broadcast(index)
        before = None if earlier is None else sc.broadcast(earlier[1])

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        pairs = work.value
        for batch in batches:
            for part in batch.column(0).to_pylist():
                mine = pairs.filter(pc.equal(pairs.column("part"), part)).drop_columns(["part"])
                extra: dict[str, Any] = {} if before is None else {"previous_groups": before.value}
                with _assignment_sink(assignments_dir, part) as sink:
                    if sink is not None:
                        extra["assignments"] = sink
                    yield from blocks(mine.to_batches(), groups.value, **extra)

    return spark.range(0, n, 1, numPartitions=n).mapInArrow(run, schema)


@contextmanager
def _assignment_sink(directory: str | None, part: int) -> Iterator[Callable[[pa.Table], None] | None]:
    """A function writing assignment tables to ``directory/part-<part>.parquet`` (in place only
    once the task is done: a retried task writes the same file again), or ``None``."""
    if directory is None:
        yield None
        return
    final = os.path.join(directory, f"part-{part:05d}.parquet")
    tmp = f"{final}.{os.getpid()}.tmp"
    writer = pq.ParquetWriter(tmp, ASSIGNMENT_SCHEMA)
    try:
        yield lambda table: writer.write_table(table.cast(ASSIGNMENT_SCHEMA))
        writer.close()
        os.replace(tmp, final)
    finally:
        writer.close()
        if os.path.exists(tmp):
            os.remove(tmp)


def assign_fleet(spark: Any, snapshot: Snapshot, *, partitions: int | None = None) -> Any:
    """DataFrame ``(group, topic, broker_name, queue_id, consumer)``: one row per (queue,
    consuming process), ``consumer`` null for a queue nobody consumes. The consumer groups travel
    once per executor (a broadcast); every task hands back blocks of bounded size."""
    schema = "group string, topic string, broker_name string, queue_id int, consumer string"
    assigned = _map_pairs(spark, snapshot, partitions, assignment_blocks, schema)
    return spark.createDataFrame([], schema) if assigned is None else assigned


def audit_fleet(
    spark: Any,
    snapshot: Snapshot,
    *,
    partitions: int | None = None,
    previous: Snapshot | tuple[Any, Any] | None = None,
    what_if: Iterable[StrategySpec | str] | str = (),
    assignments_dir: str | os.PathLike[str] | None = None,
) -> AuditResult:
    """The audit in one pass: each task assigns its pairs and hands back only their facts
    (:data:`mqbalance.fleet.FACT_SCHEMA`), so no queue row is shuffled, cached or collected.
    ``previous``, an earlier :class:`Snapshot`, adds churn in the same pass: each task also
    assigns its pairs as they were then and compares queue by queue (:func:`mqbalance.fleet.rocketmq.churn.churn`). (The
    assignment DataFrames of this and an earlier snapshot, ``(current, before)``, are still taken:
    they are joined in Spark, a shuffle of every queue.) ``what_if``: candidate strategies whose
    switch each task also computes from the same assignment (:func:`mqbalance.fleet.what_if`).
    ``assignments_dir``: a directory every executor can write (local mode, or a shared file system),
    created or emptied; each task also writes its assignment rows there as ``part-<p>.parquet``
    (what :func:`assign_fleet` gives, without assigning the fleet a second time), then ``_SUCCESS``."""
    schema = ", ".join(f"{f.name} {_SPARK_TYPES[f.type]}" for f in FACT_SCHEMA)
    candidates = what_if_candidates(what_if)
    earlier = previous if isinstance(previous, Snapshot) else None
    churn = None if previous is None or isinstance(previous, Snapshot) else _churn(previous[0], previous[1])
    blocks = partial(fact_blocks, candidates=candidates)
    target = None if assignments_dir is None else _empty_dir(assignments_dir)
    facts = _map_pairs(spark, snapshot, partitions, blocks, schema, previous=earlier, assignments_dir=target)
    if facts is None:
        if target is not None:
            _write_empty_assignments(target)
        return summarise(snapshot, [], [], [], churn if earlier is None else {})
    table = facts.toArrow().cast(FACT_SCHEMA) if is_connect(spark) else None
    if table is None:
        table = pa.Table.from_batches(facts._collect_as_arrow(), schema=FACT_SCHEMA)
    if target is not None:
        open(os.path.join(target, "_SUCCESS"), "w").close()
    per_pair, loads, busy = split_facts(table)
    if earlier is not None:
        moved = per_pair.column("moved").to_pylist()
        churn = dict(zip(zip(per_pair.column("group").to_pylist(), per_pair.column("topic").to_pylist()), moved))
    return summarise(snapshot, per_pair, loads, busy, churn, what_if=what_if_facts(table))


_SPARK_TYPES = {pa.string(): "string", pa.int64(): "long"}


def _empty_dir(path: str | os.PathLike[str]) -> str:
    """``path`` as an absolute str, created, with nothing left from an earlier run."""
    target = os.path.abspath(os.fspath(path))
    if os.path.isdir(target):
        shutil.rmtree(target)
    os.makedirs(target)
    return target


def _write_empty_assignments(target: str) -> None:
    pq.write_table(ASSIGNMENT_SCHEMA.empty_table(), os.path.join(target, "part-00000.parquet"))
    open(os.path.join(target, "_SUCCESS"), "w").close()


def _churn(assignments: Any, previous: Any) -> dict[tuple[str, str], int]:
    """Queues per (group, topic) whose consumers differ between two assignment DataFrames."""
    from pyspark.sql import functions as F

    keys = ["group", "topic", "broker_name", "queue_id"]
    cur = assignments.groupBy(*keys).agg(F.sort_array(F.collect_list("consumer")).alias("now"))
    old = previous.groupBy(*keys).agg(F.sort_array(F.collect_list("consumer")).alias("before"))
    moved = cur.join(old, keys).where(F.col("now") != F.col("before")).groupBy("group", "topic").count().collect()
    return {(r["group"], r["topic"]): r["count"] for r in moved}


def audit(snapshot: Snapshot, assignments: Any, *, previous: Any = None) -> AuditResult:
    """Audit an assignment DataFrame (:func:`assign_fleet`); ``previous`` is the assignment
    DataFrame of an earlier snapshot (for churn)."""
    from pyspark.sql import functions as F

    keys = ["group", "topic", "broker_name", "queue_id"]
    per_queue = assignments.groupBy(*keys).agg(F.count("consumer").alias("n"))
    per_pair = (
        per_queue.groupBy("group", "topic")
        .agg(
            F.count("*").alias("queues"),
            F.sum((F.col("n") == 0).cast("int")).alias("unowned"),
            F.sum((F.col("n") > 1).cast("int")).alias("double_owned"),
        )
        .collect()
    )
    per_id = assignments.where(F.col("consumer").isNotNull()).groupBy("group", "topic", "consumer").count().collect()
    churn = None if previous is None else _churn(assignments, previous)
    groups = snapshot.consumer_groups()
    pairs, loads, busy = load_facts(
        pa.Table.from_pylist([r.asDict() for r in per_pair], schema=_PER_PAIR),
        pa.Table.from_pylist([r.asDict() for r in per_id], schema=_PER_ID),
        groups,
    )
    return summarise(snapshot, pairs, loads, busy_processes(busy, groups), churn)


_PER_PAIR = pa.schema(
    [("group", pa.string()), ("topic", pa.string())] + [(c, pa.int64()) for c in ("queues", "unowned", "double_owned")]
)


_PER_ID = pa.schema([("group", pa.string()), ("topic", pa.string()), ("consumer", pa.string()), ("count", pa.int64())])
