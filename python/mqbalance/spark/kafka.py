"""Kafka's classic assignors over Arrow tables, the executor side of
:func:`mqbalance.spark.assign_partitions`: many groups per call, each assigned with
:func:`mqbalance.kafka.assign_columns` (the same code as :func:`mqbalance.kafka.assignor`).

>>> import pyarrow as pa
>>> parts = pa.table({"group": ["g"] * 3, "topic": ["t"] * 3, "partition": [2, 0, 1]})
>>> members = pa.table({"group": ["g", "g"], "member_id": ["m2", "m1"], "topic": ["t", "t"]})
>>> out = partition_assigner("range")(parts, members)
>>> out.column("partition").to_pylist(), out.column("member_id").to_pylist()
([0, 1, 2], ['m1', 'm1', 'm2'])
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mqbalance import _core
from mqbalance.exceptions import ColumnError
from mqbalance.kafka.assignors import ASSIGNORS, _assignor_name, assign_columns

__all__ = ["PARTITION_ASSIGNMENT_SCHEMA", "PartitionColumns", "assign_partition_tables", "partition_assigner"]

#: The output of :func:`partition_assigner` with the default column names, as Spark DDL.
PARTITION_ASSIGNMENT_SCHEMA = "group string, topic string, partition int, member_id string"


@dataclass(frozen=True, slots=True)
class PartitionColumns:
    """Column names: the partitions' ``group, topic, partition`` (and ``previous``, the member
    that owned it, for the sticky assignors), the members' ``group, member_id, topic`` (one row
    per subscribed topic)."""

    group: str = "group"
    topic: str = "topic"
    partition: str = "partition"
    member_id: str = "member_id"
    previous: str | None = None


def partition_assigner(
    assignor: str = "range", *, columns: PartitionColumns | None = None
) -> Callable[[pa.Table, pa.Table], pa.Table]:
    """The function for a cogrouped ``applyInArrow`` of partitions and members: the partitions'
    columns plus ``member_id`` (null where no member subscribes), sorted by group, topic,
    partition. ``assignor``: ``range``, ``roundrobin``, ``sticky``, ``cooperative-sticky``."""
    name = _assignor_name(assignor, ASSIGNORS)
    cols = columns or PartitionColumns()

    def assign(partitions: pa.Table, members: pa.Table) -> pa.Table:
        return assign_partition_tables(partitions, members, name, cols)

    return assign


def _col(table: pa.Table, name: str) -> pa.Array:
    col = table.column(name).combine_chunks()
    if col.null_count:
        raise ColumnError(f"column {name!r} holds nulls", name)
    return col


def assign_partition_tables(partitions: pa.Table, members: pa.Table, assignor: str, c: PartitionColumns) -> pa.Table:
    """Every group of ``partitions`` assigned over its ``members``; see :func:`partition_assigner`."""
    if partitions.num_rows == 0:
        return partitions.append_column(c.member_id, pa.nulls(0, pa.string()))
    groups, topics = _col(partitions, c.group).to_pylist(), _col(partitions, c.topic).to_pylist()
    numbers = _col(partitions, c.partition).to_numpy(zero_copy_only=False).astype(np.int64)
    prev = None if c.previous is None else partitions.column(c.previous).combine_chunks().to_pylist()
    subs: dict[str, dict[str, list[str]]] = {}
    for g, m, t in zip(
        _col(members, c.group).to_pylist(), _col(members, c.member_id).to_pylist(), _col(members, c.topic).to_pylist()
    ):
        subs.setdefault(g, {}).setdefault(m, []).append(t)
    rows_of: dict[str, list[int]] = {}
    for k, g in enumerate(groups):
        rows_of.setdefault(g, []).append(k)
    owner: list[str | None] = [None] * len(groups)
    for g, rows in rows_of.items():
        per_topic: dict[str, set[int]] = {}
        where: dict[tuple[str, int], int] = {}
        for k in rows:
            key = (topics[k], int(numbers[k]))
            if key in where:
                raise ColumnError(
                    f"duplicated partition in columns {c.topic!r}, {c.partition!r}: group {g!r}, topic {key[0]!r}, "
                    f"partition {key[1]}",
                    c.partition,
                )
            where[key] = k
            per_topic.setdefault(key[0], set()).add(key[1])
        counts = {}
        for t, ps in per_topic.items():
            if min(ps) < 0 or len(ps) != max(ps) + 1:
                raise ColumnError(
                    f"column {c.partition!r}: group {g!r} topic {t!r} must list partitions 0..n-1, "
                    f"got {sorted(ps)[:5]}…",
                    c.partition,
                )
            counts[t] = len(ps)
        member_ids = list(subs.get(g, {}))
        if not member_ids:
            continue
        owned = None
        if prev is not None:
            index = {m: i for i, m in enumerate(member_ids)}
            held = [(index[prev[k]], topics[k], int(numbers[k])) for k in rows if prev[k] in index]
            owned = (
                np.array([h[0] for h in held], dtype=np.int64),
                np.array([h[1] for h in held], dtype=object),
                np.array([h[2] for h in held], dtype=np.int64),
            )
        result = assign_columns(assignor, counts, member_ids, [subs[g][m] for m in member_ids], owned=owned)
        for m, t, p in zip(result.member.tolist(), result.topic.tolist(), result.partition.tolist()):
            owner[where[(result.topics[t], p)]] = member_ids[m]
    out = partitions.append_column(c.member_id, pa.array(owner, pa.string()))
    return out.take(pa.array(_order(groups, topics, numbers)))


def _order(groups: list[str], topics: list[str], numbers: np.ndarray) -> np.ndarray:
    """Rows by group and topic (Java String order), then partition."""

    def rank(values: list[str]) -> np.ndarray:
        encoded = pc.dictionary_encode(pa.array(values, pa.string()))
        names = encoded.dictionary.to_pylist()
        r = np.empty(len(names), dtype=np.int64)
        r[np.asarray(_core.sort_strings_order(names), dtype=np.int64)] = np.arange(len(names))
        ranked: np.ndarray = r[encoded.indices.to_numpy()]
        return ranked

    order: np.ndarray = np.lexsort((numbers, rank(topics), rank(groups)))
    return order
