"""The audit of a Kafka fleet in Spark's executors (a classic session or Spark Connect): the groups
split over the tasks, each task runs :func:`mqbalance.fleet.kafka.audit.audit_kafka` on its groups,
and the driver merges what they return into the same result.
"""

from __future__ import annotations

import functools
import operator
import pickle
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from mqbalance.fleet.findings import AuditResult
from mqbalance.fleet.kafka.audit import KAFKA_WHAT_IF, audit_kafka, checked_audit_arguments
from mqbalance.fleet.kafka.snapshot import KafkaSnapshot
from mqbalance.fleet.spark import is_connect

__all__ = ["audit_kafka_on_spark"]


def _subset(snapshot: KafkaSnapshot, names: Sequence[str]) -> KafkaSnapshot:
    """The snapshot with only the groups ``names`` (topics and log-end offsets kept whole)."""
    keep = set(names)
    return KafkaSnapshot(
        snapshot.source,
        snapshot.topics,
        {g: snapshot.groups[g] for g in names if g in snapshot.groups},
        {k: v for k, v in snapshot.committed.items() if k[0] in keep},
        snapshot.end_offsets,
        snapshot.topic_ids,
    )


def _merge(parts: Sequence[AuditResult]) -> AuditResult:
    """One result from the results of disjoint sets of groups."""
    rows = sorted((r for p in parts for r in p.rows), key=lambda r: (r.group, r.topic))
    findings = [f for p in parts for f in p.findings]
    switched = sorted((w for p in parts for w in p.what_if), key=lambda w: (w.group, w.topic, w.strategy))
    totals = functools.reduce(operator.add, (p.totals for p in parts))
    share = np.concatenate([p.fair_share for p in parts]) if parts else np.zeros(0)
    weight = np.concatenate([p.fair_share_processes for p in parts]) if parts else np.zeros(0, dtype=np.int64)
    values, where = np.unique(share, return_inverse=True)
    counts = np.bincount(where, weights=weight, minlength=len(values)).astype(np.int64)
    return AuditResult(rows, findings, totals, values, counts, switched)


def audit_kafka_on_spark(
    spark: Any,
    snapshot: KafkaSnapshot,
    previous: KafkaSnapshot | None = None,
    what_if: Sequence[str] = KAFKA_WHAT_IF,
    *,
    partitions: int | None = None,
) -> AuditResult:
    """:func:`audit_kafka` in Spark's executors: the groups are dealt over ``partitions`` tasks
    (default: twice the cores, at most one per group) by their size, each task audits its groups
    and returns its result, and the driver merges them. Equal to :func:`audit_kafka` of the whole
    snapshot. The snapshot travels inside the task function (no SparkContext is needed, so a Spark
    Connect session works too)."""
    candidates = checked_audit_arguments(snapshot, previous, what_if)  # on the driver, before the job
    names = sorted(snapshot.groups)
    if not names:
        return audit_kafka(snapshot, previous, what_if)
    remote = is_connect(spark)
    cores = int(spark.conf.get("spark.sql.shuffle.partitions")) if remote else spark.sparkContext.defaultParallelism
    n = max(1, min(partitions or 2 * cores, len(names)))
    load = {
        g: 1 + sum(snapshot.topics.get(t, 0) for m in snapshot.groups[g].members for t in m.subscription or ())
        for g in names
    }
    chunks: list[list[str]] = [[] for _ in range(n)]
    weights = [0] * n
    for g in sorted(names, key=lambda g: -load[g]):  # largest first, each to the lightest task
        i = weights.index(min(weights))
        chunks[i].append(g)
        weights[i] += load[g]
    work = [(_subset(snapshot, c), None if previous is None else _subset(previous, c)) for c in chunks]

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for part in batch.column(0).to_pylist():
                snap, before = work[part]
                result = audit_kafka(snap, before, candidates)
                yield pa.record_batch([pa.array([pickle.dumps(result)], pa.binary())], names=["result"])

    table = spark.range(0, n, 1, numPartitions=n).mapInArrow(run, "result binary").toArrow()
    parts = [pickle.loads(b) for b in table.column("result").to_pylist()]
    return _merge(parts)
