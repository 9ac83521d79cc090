"""The fleet assignment engine: who consumes every readable queue of every (group, topic), computed
with the Rust core exactly as the clients compute it. No Spark here: the in-process ``mqbalance
assign`` runs it directly and the Spark executors run it on their batches.

The steps:

1. :meth:`Snapshot.pair_table <mqbalance.fleet.rocketmq.snapshot.Snapshot.pair_table>` (the snapshot
   model's) — one row per subscribed (group, topic) with the topic's readable route
   (READ-permission queue data sorted by broker): the only thing that travels.
2. :func:`expand_pairs` — a batch of pairs into one row per queue (``0..readQueueNums-1`` per
   broker), contiguous per pair, and the pair boundaries.
3. :func:`assign_batch` — owners of all those queues: clustering pairs whose clients share one
   strategy in one core call (:func:`mqbalance.allocation.bulk.owners_by_pair`), the rest pair by pair. Each
   connection uses its *own* strategy (a misconfigured group is reproduced as it behaves);
   broadcasting groups consume every queue on every connection.
4. :func:`pair_counts` — per pair: queues, unowned, double-owned, and per (pair, consumer) the
   queue count: what :mod:`mqbalance.fleet.findings` turns into findings.
5. :func:`what_if` (optional) — per pair and candidate strategy: the queues that would move if
   the group switched to it now, and the max load and idle processes it would give.
6. :func:`churn` (optional) — per pair: the queues whose consumers differ from an earlier
   snapshot's assignment of the same pair, computed in the same batch (no join across the fleet).

The output of 3 is one row per (queue, consuming process) — ``group, topic, broker_name,
queue_id, consumer`` — and a queue nobody consumes has one row with a null consumer. A group whose
strategy the snapshot lacks settings for (:attr:`ConsumerGroup.unknown_settings
<mqbalance.fleet.rocketmq.snapshot.ConsumerGroup.unknown_settings>`, e.g. MACHINE_ROOM without its
consumer idcs, which a live snapshot never has) is not computed: its queues have no row, and the
audit reports the group (:mod:`mqbalance.fleet.rocketmq.audit`) while every other group is assigned.
:func:`snapshot_facts` runs them all in-process and hands back the :class:`AuditFacts` that
:func:`mqbalance.fleet.rocketmq.audit.summarise` reads; :func:`fact_blocks` is the same per Spark task.

>>> from mqbalance.fleet.rocketmq.from_json import snapshot_from_dict
>>> snap = snapshot_from_dict({"topics": {"T": {"queueDatas": [
...     {"brokerName": "b", "readQueueNums": 3, "writeQueueNums": 3, "perm": 6}]}},
...     "groups": {"g": {"subscriptions": ["T"], "connections": [{"clientId": "c2"}, {"clientId": "c1"}]}}})
>>> assign_snapshot(snap).column("consumer").to_pylist()  # AVG after the Java sort: c1 gets 2
['c1', 'c1', 'c2']
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mqbalance.allocation import bulk
from mqbalance.allocation.registry import StrategySpec
from mqbalance.exceptions import SnapshotError
from mqbalance.fleet.rocketmq.schemas import ASSIGNMENT_SCHEMA
from mqbalance.fleet.rocketmq.snapshot import (
    ConsumerGroup,
    MessageModel,
    Snapshot,
    SnapshotStrategy,
    check_queue_budget,
    computable,
)
from mqbalance.spark.arrow import ROWS_PER_BATCH

__all__ = [
    "ASSIGNMENT_QUEUE_BYTES",
    "assign_batch",
    "assign_pair",
    "assign_snapshot",
    "check_assignable",
    "expand_pairs",
]


def _route_entries(pairs: pa.Table) -> tuple[pa.StructArray, np.ndarray, np.ndarray]:
    """The route entries of all pairs flattened, their queue counts and the pair of each entry."""
    route = pairs.column("route").combine_chunks()
    flat = route.flatten()
    nums = flat.field("read_queue_nums").to_numpy(zero_copy_only=False).astype(np.int64)
    return flat, nums, pc.list_parent_indices(route).to_numpy()


def expand_pairs(pairs: pa.Table) -> tuple[pa.Table, np.ndarray]:
    """Pair rows → one row per readable queue ``(group, topic, broker_name, queue_id)``,
    contiguous per pair (vectorised), and the pair boundaries (pair ``p`` = rows
    ``bounds[p]:bounds[p+1]``)."""
    flat, nums, parent = _route_entries(pairs)
    total = int(nums.sum())
    entry = np.repeat(np.arange(len(nums)), nums)
    starts = np.cumsum(nums) - nums
    queue_id = (np.arange(total) - starts[entry]).astype(np.int32)
    pair = pa.array(parent[entry])
    per_pair = np.bincount(parent, weights=nums, minlength=pairs.num_rows).astype(np.int64)
    bounds = np.concatenate(([0], np.cumsum(per_pair)))
    table = pa.table(
        {
            "group": pairs.column("group").take(pair),
            "topic": pairs.column("topic").take(pair),
            "broker_name": flat.field("broker_name").take(pa.array(entry)),
            "queue_id": pa.array(queue_id),
        }
    )
    return table, bounds


def assign_pair(
    group: ConsumerGroup | None, topics: object, brokers: object, queue_ids: np.ndarray
) -> tuple[np.ndarray, list[str]]:
    """One (group, topic): ``(row indices, consumer ids)``, one entry per (queue, consuming
    process) — a row appears once per process consuming it."""
    n = len(queue_ids)
    if group is None or not group.connections:
        return np.zeros(0, dtype=np.int64), []
    ids = group.client_ids
    if group.message_model is MessageModel.BROADCASTING:
        return np.tile(np.arange(n, dtype=np.int64), len(ids)), [cid for cid in ids for _ in range(n)]
    first: dict[str, int] = {}
    for j, cid in enumerate(ids):
        first.setdefault(cid, j)
    by_strategy: dict[SnapshotStrategy, list[int]] = defaultdict(list)
    for j, conn in enumerate(group.connections):
        by_strategy[conn.strategy].append(j)
    row_parts, who = [], []
    for spec, members in by_strategy.items():
        owners = bulk.owners(computable(spec).build(), topics, brokers, queue_ids, ids)
        for j in members:
            rows = np.flatnonzero(owners == first[ids[j]])
            row_parts.append(rows)
            who.extend([ids[j]] * len(rows))
    return (np.concatenate(row_parts) if row_parts else np.zeros(0, dtype=np.int64)), who


def _batchable(group: ConsumerGroup | None) -> bool:
    """Clustering, every client on one strategy that many pairs can share a core call with."""
    if group is None or group.message_model is not MessageModel.CLUSTERING:
        return False
    strategies = group.strategies
    return len(strategies) == 1 and isinstance(strategies[0], StrategySpec) and strategies[0].info.batchable


def id_ranges(groups: Sequence[ConsumerGroup]) -> tuple[pa.Array, list[tuple[int, int]]]:
    """One column of client ids and each group's ``(start, stop)`` in it: the snapshot's own column
    when every group was built from it (nothing copied), else the groups' ids laid end to end,
    each distinct group once."""
    shared: pa.Array | None = None
    ranges: list[tuple[int, int]] = []
    for g in groups:
        if g.id_column is None or (shared is not None and g.id_column[0] is not shared):
            break
        shared, start, stop = g.id_column
        ranges.append((start, stop))
    else:
        if shared is not None:
            return shared, ranges
    at: dict[int, tuple[int, int]] = {}
    parts: list[pa.Array] = []
    end = 0
    for g in groups:
        if id(g) not in at:
            part = pa.array(g.client_ids, type=pa.string())
            at[id(g)] = (end, end + len(part))
            parts.append(part)
            end += len(part)
    column = pa.concat_arrays(parts) if parts else pa.array([], pa.string())
    return column, [at[id(g)] for g in groups]


def assign_batch(table: pa.Table, groups: Mapping[str, ConsumerGroup], bounds: np.ndarray) -> pa.Table:
    """Every (group, topic) of a table of queue rows ``(group, topic, broker_name, queue_id)``
    contiguous per pair (:func:`expand_pairs` gives both) → the assignment rows
    (:data:`ASSIGNMENT_SCHEMA`)."""
    return assign_batch_rows(table, groups, bounds)[0]


def assign_batch_rows(
    table: pa.Table, groups: Mapping[str, ConsumerGroup], bounds: np.ndarray
) -> tuple[pa.Table, np.ndarray]:
    """:func:`assign_batch`, and for every assignment row the queue row of ``table`` it is about."""
    if table.num_rows == 0:
        return ASSIGNMENT_SCHEMA.empty_table(), np.zeros(0, dtype=np.int64)
    pair_groups = table.column("group").take(pa.array(bounds[:-1])).to_pylist()
    brokers = pc.dictionary_encode(table.column("broker_name").combine_chunks())
    topics = pc.dictionary_encode(table.column("topic").combine_chunks())
    qids = table.column("queue_id").to_numpy().astype(np.int64)
    parts: list[pa.Table] = []
    sources: list[np.ndarray] = []
    owned_mask = np.zeros(table.num_rows, dtype=bool)
    base = table.select(["group", "topic", "broker_name", "queue_id"])

    def emit(rows: np.ndarray, consumer: pa.Array) -> None:
        parts.append(base.take(pa.array(rows)).append_column("consumer", consumer))
        sources.append(rows)
        owned_mask[rows] = True

    batched: list[np.ndarray] = []
    batched_bounds, batched_strategies = [0], []
    batched_groups: list[ConsumerGroup] = []
    for p, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
        group = groups.get(pair_groups[p])
        if group is not None and group.unknown_settings:
            owned_mask[a:b] = True  # not computed: no row at all (its queues are neither owned nor unowned)
            continue
        if _batchable(group):
            assert group is not None
            batched.append(np.arange(a, b))
            batched_bounds.append(batched_bounds[-1] + (b - a))
            batched_strategies.append(computable(group.strategies[0]).build())
            batched_groups.append(group)
            continue
        rows, who = assign_pair(group, topics.slice(a, b - a), brokers.slice(a, b - a), qids[a:b])
        if len(rows):
            emit(rows + a, pa.array(who, type=pa.string()))
    if batched:
        sub = np.concatenate(batched)
        everything = len(sub) == table.num_rows  # no pair fell back: rows stay in place
        idx = None if everything else pa.array(sub)
        t_col = topics if everything else topics.take(idx)
        b_col = brokers if everything else brokers.take(idx)
        ids, ranges = id_ranges(batched_groups)
        # Each row's owner as a position in ``ids`` (-1: nobody): no Python string per id.
        owners = bulk.owners_by_pair_in_column(
            t_col,
            b_col,
            qids if everything else qids[sub],
            batched_bounds,
            batched_strategies,
            ids,
            [a for a, _ in ranges],
            [b for _, b in ranges],
        )
        owned = owners >= 0
        consumer = ids.take(pa.array(np.maximum(owners, 0), mask=~owned))
        parts.insert(0, (base if everything else base.take(idx)).append_column("consumer", consumer))
        sources.insert(0, sub)
        owned_mask[sub] = True  # their unowned rows are already in, with a null consumer
        # A duplicated id: every further process with it consumes the same queues.
        for s, group in enumerate(batched_groups):
            if not group.duplicated_ids:  # known from the group: no hashing of its ids
                continue
            first: dict[str, int] = {}
            lo, hi, start = batched_bounds[s], batched_bounds[s + 1], ranges[s][0]
            for j, cid in enumerate(group.client_ids):
                if first.setdefault(cid, j) != j:
                    rows = sub[lo:hi][owners[lo:hi] == start + first[cid]]
                    if len(rows):
                        emit(rows, pa.array([cid] * len(rows), type=pa.string()))
    unowned = np.flatnonzero(~owned_mask)
    if len(unowned):
        parts.append(base.take(pa.array(unowned)).append_column("consumer", pa.nulls(len(unowned), type=pa.string())))
        sources.append(unowned)
    if not parts:
        return ASSIGNMENT_SCHEMA.empty_table(), np.zeros(0, dtype=np.int64)
    return pa.concat_tables(parts).cast(ASSIGNMENT_SCHEMA), np.concatenate(sources).astype(np.int64)


#: Queue rows expanded and assigned at once (a pair larger than this is assigned alone).
MAX_QUEUES_PER_SLICE = 1_000_000


def pair_queue_counts(pairs: pa.Table) -> np.ndarray:
    """Readable queues of every pair row."""
    _, nums, parent = _route_entries(pairs)
    return np.bincount(parent, weights=nums, minlength=pairs.num_rows).astype(np.int64)


def pair_slices(pairs: pa.Table, max_queues: int = MAX_QUEUES_PER_SLICE) -> Iterator[pa.Table]:
    """Consecutive slices of ``pairs`` holding at most ``max_queues`` readable queues each (a pair
    with more is a slice of its own), so that memory does not grow with the batch Spark hands over."""
    if pairs.num_rows == 0:
        return
    ends = np.cumsum(pair_queue_counts(pairs))
    start = 0
    while start < pairs.num_rows:
        base = int(ends[start - 1]) if start else 0
        stop = max(int(np.searchsorted(ends, base + max_queues, side="right")), start + 1)
        yield pairs.slice(start, stop - start)
        start = stop


def assign_batches(
    pairs: pa.Table, groups: Mapping[str, ConsumerGroup], *, max_queues: int = MAX_QUEUES_PER_SLICE
) -> Iterator[pa.Table]:
    """:func:`assign_batch` over ``pairs`` in slices of at most ``max_queues`` queues."""
    for part in pair_slices(pairs, max_queues):
        yield _assign_pairs(part, groups)


def assignment_blocks(
    pair_batches: Iterable[pa.RecordBatch], groups: Mapping[str, ConsumerGroup]
) -> Iterator[pa.RecordBatch]:
    """What an executor does for :func:`mqbalance.fleet.rocketmq.spark.assign_fleet`: assignment rows of
    every pair, in blocks of at most :data:`mqbalance.spark.arrow.ROWS_PER_BATCH` rows."""
    for batch in pair_batches:
        for table in assign_batches(pa.Table.from_batches([batch]), groups):
            yield from table.to_batches(max_chunksize=ROWS_PER_BATCH)


def _assign_pairs(pairs: pa.Table, groups: Mapping[str, ConsumerGroup]) -> pa.Table:
    return assign_pairs_rows(pairs, groups)[0]


def assign_pairs_rows(pairs: pa.Table, groups: Mapping[str, ConsumerGroup]) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """:func:`_assign_pairs`, with the queue row (in the pairs' expansion) of every assignment row
    and the expansion's pair boundaries (:func:`expand_pairs`)."""
    table, bounds = expand_pairs(pairs)
    return (*assign_batch_rows(table, groups, bounds), bounds)


#: Memory per readable queue to hold a snapshot's whole assignment table in-process
#: (:func:`assign_snapshot`, every row at once; measured: 6.7 GiB at 3×10^7 queues, ~240 bytes a
#: queue). ``mqbalance assign`` and :func:`snapshot_facts` stream slices instead and need no more
#: than loading does (:data:`mqbalance.fleet.rocketmq.snapshot.QUEUE_BYTES`).
ASSIGNMENT_QUEUE_BYTES = 400


def check_assignable(snapshot: Snapshot) -> None:
    """Refuse (:class:`~mqbalance.exceptions.SnapshotError`) a snapshot too large to assign
    in-process within the memory budget (every assignment row at once); the Spark audit needs far
    less per queue."""
    check_queue_budget(snapshot.source, snapshot.readable_queue_count(), ASSIGNMENT_QUEUE_BYTES)


def assign_snapshot(snapshot: Snapshot, *, progress: Callable[[int, int], None] | None = None) -> pa.Table:
    """Every (group, topic) of a snapshot, in-process: the assignment rows. ``progress(done, total)``
    is called after each slice of at most :data:`MAX_QUEUES_PER_SLICE` queues (counted per pair)."""
    if not isinstance(snapshot, Snapshot):
        raise SnapshotError(f"assign_snapshot needs a Snapshot (see load_snapshot), got {snapshot!r}", snapshot)
    if progress is not None and not callable(progress):
        raise SnapshotError(f"assign_snapshot: progress must be callable, got {progress!r:.80}", progress)
    check_assignable(snapshot)
    pairs, groups = snapshot.pair_table(), snapshot.consumer_groups()
    done = np.cumsum(pair_queue_counts(pairs))
    total = int(done[-1]) if len(done) else 0
    parts, rows = [], 0
    for part in pair_slices(pairs):
        parts.append(_assign_pairs(part, groups))
        rows += part.num_rows
        if progress is not None:
            progress(int(done[rows - 1]), total)
    return pa.concat_tables(parts) if parts else ASSIGNMENT_SCHEMA.empty_table()


"""Audit facts in one table, a few rows per pair whatever its size: a pair row (``consumer``,
``strategy`` and ``load`` null) with ``queues, unowned, double_owned`` (and ``moved``, its
:func:`churn`, when an earlier snapshot was compared) and its loads ``processes, idle, load_total,
min_load, max_load``; a load row (``load`` set) with ``count``, the processes of the pair
consuming that many queues (> 0); a group row (``topic`` null): ``processes``, those of the group
consuming something of some topic (:func:`busy_processes`); or a what-if row (``strategy`` set,
:func:`what_if`) with ``queues, moved, max_load, idle``. :func:`load_facts` computes them,
:func:`split_facts` takes them apart."""
