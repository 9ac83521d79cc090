"""The fleet assignment engine: who consumes every readable queue of every (group, topic), computed
with the Rust core exactly as the clients compute it. No Spark here: the in-process ``mqbalance
assign`` runs it directly and the Spark executors run it on their batches.

The steps:

1. :meth:`Snapshot.pair_table <mqbalance.fleet.snapshot.Snapshot.pair_table>` (the snapshot
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
queue_id, consumer`` — and a queue nobody consumes has one row with a null consumer.
:func:`snapshot_facts` runs them all in-process and hands back the :class:`AuditFacts` that
:func:`mqbalance.fleet.findings.summarise` reads; :func:`fact_blocks` is the same per Spark task.

>>> from mqbalance.fleet.snapshot import snapshot_from_dict
>>> snap = snapshot_from_dict({"topics": {"T": {"queueDatas": [
...     {"brokerName": "b", "readQueueNums": 3, "writeQueueNums": 3, "perm": 6}]}},
...     "groups": {"g": {"subscriptions": ["T"], "connections": [{"clientId": "c2"}, {"clientId": "c1"}]}}})
>>> assign_snapshot(snap).column("consumer").to_pylist()  # AVG after the Java sort: c1 gets 2
['c1', 'c1', 'c2']
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mqbalance._validate import not_a_collection
from mqbalance.allocation import bulk
from mqbalance.allocation.registry import StrategySpec, Use
from mqbalance.exceptions import UnknownStrategyError
from mqbalance.fleet.snapshot import (
    PAIR_SCHEMA,
    ConsumerGroup,
    MessageModel,
    Snapshot,
    SnapshotError,
    check_queue_budget,
)

__all__ = [
    "ASSIGNMENT_QUEUE_BYTES",
    "ASSIGNMENT_SCHEMA",
    "DEFAULT_WHAT_IF",
    "BUSY_SCHEMA",
    "FACT_SCHEMA",
    "GROUP_BUSY_SCHEMA",
    "LOAD_SCHEMA",
    "PAIR_FACT_COLUMNS",
    "PAIR_FACT_SCHEMA",
    "WHAT_IF_SCHEMA",
    "AuditFacts",
    "assign_batch",
    "assign_pair",
    "assign_snapshot",
    "busy_processes",
    "check_assignable",
    "churn",
    "expand_pairs",
    "load_facts",
    "pair_counts",
    "snapshot_facts",
    "what_if",
    "with_previous_routes",
    "what_if_candidates",
    "what_if_facts",
]

ASSIGNMENT_SCHEMA = pa.schema(
    [
        ("group", pa.string()),
        ("topic", pa.string()),
        ("broker_name", pa.string()),
        ("queue_id", pa.int32()),
        ("consumer", pa.string()),
    ]
)


def with_previous_routes(pairs: pa.Table, previous: pa.Table) -> pa.Table:
    """``pairs`` (:meth:`Snapshot.pair_table`) with a ``previous_route`` column: the route the same
    (group, topic) had in ``previous`` (the pairs of an earlier snapshot), null where it had none.

    >>> now = pa.table({"group": ["g", "g"], "topic": ["A", "B"], "route": [[], []]}, schema=PAIR_SCHEMA)
    >>> before = pa.table({"group": ["g"], "topic": ["B"], "route": [[{"broker_name": "b", "read_queue_nums": 4}]]},
    ...                   schema=PAIR_SCHEMA)
    >>> with_previous_routes(now, before).column("previous_route").to_pylist()
    [None, [{'broker_name': 'b', 'read_queue_nums': 4}]]
    """
    where = {
        key: i for i, key in enumerate(zip(previous.column("group").to_pylist(), previous.column("topic").to_pylist()))
    }
    rows = [where.get(key) for key in zip(pairs.column("group").to_pylist(), pairs.column("topic").to_pylist())]
    return pairs.append_column("previous_route", previous.column("route").take(pa.array(rows, pa.int64())))


def _changed_pairs(
    pairs: pa.Table,
    groups: Mapping[str, ConsumerGroup],
    previous_groups: Mapping[str, ConsumerGroup],
    same_group: dict[str, bool],
) -> pa.Array:
    """Per pair of a :func:`with_previous_routes` table: whether it had a route before and its
    route or its group (connections, strategies, model) differs now; ``same_group`` caches the
    comparison of each group."""
    n = pairs.num_rows
    had = pc.is_valid(pairs.column("previous_route")).to_numpy(zero_copy_only=False)
    route_changed = _route_changed(pairs)
    names = pairs.column("group").to_pylist()
    for g in set(names) - same_group.keys():
        same_group[g] = _same_group(groups.get(g), previous_groups.get(g))
    group_changed = np.array([not same_group[g] for g in names], dtype=bool).reshape(n)
    return pa.array(had & (route_changed | group_changed))


def _route_changed(pairs: pa.Table) -> np.ndarray:
    """Per pair of a :func:`with_previous_routes` table: its route differs from its previous one
    (a pair without a previous route counts as changed)."""
    route, before = pairs.column("route").combine_chunks(), pairs.column("previous_route").combine_chunks()
    lengths = pc.fill_null(pc.list_value_length(route), -1).to_numpy(zero_copy_only=False)
    was = pc.fill_null(pc.list_value_length(before), -2).to_numpy(zero_copy_only=False)
    changed = np.asarray(lengths != was, dtype=bool)
    aligned = np.flatnonzero(~changed)
    if len(aligned):
        at = pa.array(aligned)
        now_flat, then_flat = route.take(at).flatten(), before.take(at).flatten()
        entry_differs = pc.or_(
            pc.not_equal(now_flat.field("broker_name"), then_flat.field("broker_name")),
            pc.not_equal(now_flat.field("read_queue_nums"), then_flat.field("read_queue_nums")),
        ).to_numpy(zero_copy_only=False)
        parent = pc.list_parent_indices(route.take(at)).to_numpy()
        changed[aligned] = np.bincount(parent, weights=entry_differs, minlength=len(aligned)) > 0
    return changed


def _same_group(now: ConsumerGroup | None, before: ConsumerGroup | None) -> bool:
    """The group assigns its queues the same way in both snapshots: the same model, client ids
    in the same order and the same strategy on every connection."""
    if now is None or before is None:
        return now is before
    if now.message_model is not before.message_model or now.client_ids != before.client_ids:
        return False
    if len(now.strategies) == 1 and len(before.strategies) == 1:
        return now.strategies[0] == before.strategies[0]
    return [c.strategy for c in now.connections] == [c.strategy for c in before.connections]


def _previous_pairs(pairs: pa.Table) -> pa.Table:
    """The pairs of a :func:`with_previous_routes` table that had a route before, with that route."""
    had = pairs.filter(pc.is_valid(pairs.column("previous_route")))
    return pa.table([had.column("group"), had.column("topic"), had.column("previous_route")], schema=PAIR_SCHEMA)


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
    by_strategy: dict[StrategySpec, list[int]] = defaultdict(list)
    for j, conn in enumerate(group.connections):
        by_strategy[conn.strategy].append(j)
    row_parts, who = [], []
    for spec, members in by_strategy.items():
        owners = bulk.owners(spec.build(), topics, brokers, queue_ids, ids)
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
    return len(strategies) == 1 and strategies[0].info.batchable


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
    batched_bounds, batched_strategies, batched_ids = [0], [], []
    for p, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
        group = groups.get(pair_groups[p])
        if _batchable(group):
            assert group is not None
            batched.append(np.arange(a, b))
            batched_bounds.append(batched_bounds[-1] + (b - a))
            batched_strategies.append(group.strategies[0].build())
            batched_ids.append(group.client_ids)
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
        owners = bulk.owners_by_pair(
            t_col, b_col, qids if everything else qids[sub], batched_bounds, batched_strategies, batched_ids
        )
        offsets = np.cumsum([0] + [len(ids) for ids in batched_ids])
        flat_ids = pa.array([cid for ids in batched_ids for cid in ids], type=pa.string())
        seg_of_row = np.repeat(np.arange(len(batched_ids)), np.diff(batched_bounds))
        owned = owners >= 0
        # One consumer per batched row, aligned with the rows (null where nobody consumes).
        positions = np.where(owned, offsets[seg_of_row] + np.maximum(owners, 0), 0)
        consumer = flat_ids.take(pa.array(positions, mask=~owned))
        parts.insert(0, (base if everything else base.take(idx)).append_column("consumer", consumer))
        sources.insert(0, sub)
        owned_mask[sub] = True  # their unowned rows are already in, with a null consumer
        # A duplicated id: every further process with it consumes the same queues.
        for s, ids in enumerate(batched_ids):
            if len(set(ids)) == len(ids):
                continue
            first: dict[str, int] = {}
            lo, hi = batched_bounds[s], batched_bounds[s + 1]
            for j, cid in enumerate(ids):
                if first.setdefault(cid, j) != j:
                    rows = sub[lo:hi][owners[lo:hi] == first[cid]]
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
#: Rows per Arrow block handed back (Spark's ``arrow.maxRecordsPerBatch`` default).
MAX_ROWS_PER_BLOCK = 10_000


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
    """What an executor does for :func:`mqbalance.fleet.spark.assign_fleet`: assignment rows of
    every pair, in blocks of at most :data:`MAX_ROWS_PER_BLOCK` rows."""
    for batch in pair_batches:
        for table in assign_batches(pa.Table.from_batches([batch]), groups):
            yield from table.to_batches(max_chunksize=MAX_ROWS_PER_BLOCK)


def fact_blocks(
    pair_batches: Iterable[pa.RecordBatch],
    groups: Mapping[str, ConsumerGroup],
    candidates: Sequence[StrategySpec] = (),
    previous_groups: Mapping[str, ConsumerGroup] | None = None,
    assignments: Callable[[pa.Table], None] | None = None,
) -> Iterator[pa.RecordBatch]:
    """What an executor does for :func:`mqbalance.fleet.spark.audit_fleet`: assign the pairs and
    hand back only their audit facts (:data:`FACT_SCHEMA`; every pair of a group must be in the same
    call, as the group's busy processes are counted at its end), with the :func:`what_if` rows of
    ``candidates`` computed from the same assignment; the queue rows never leave the task (but to
    ``assignments``, when given: it receives every assignment table, e.g. to write it). With
    ``previous_groups`` (an earlier snapshot's groups; the pairs then carry
    :func:`with_previous_routes`), each pair is also assigned as it was then and its :func:`churn`
    is the pair row's ``moved``."""
    busy_ids: list[pa.Table] = []
    same_group: dict[str, bool] = {}
    for batch in pair_batches:
        for part in pair_slices(pa.Table.from_batches([batch])):
            table, queue_rows, bounds = _assign_pairs_rows(part.select(PAIR_SCHEMA.names), groups)
            if assignments is not None:
                assignments(table)
            rows = what_if(table, groups, candidates) if candidates else None
            moved = None
            if previous_groups is not None:
                # Only pairs whose group or route changed can have moved queues: the others are
                # neither assigned again nor compared.
                changed = np.flatnonzero(
                    _changed_pairs(part, groups, previous_groups, same_group).to_numpy(zero_copy_only=False)
                )
                before = _assign_pairs_rows(_previous_pairs(part.take(changed)), previous_groups)
                moved = pair_churn(part, changed, (table, queue_rows, bounds), before)
            yield from facts(table, groups, busy_ids, rows, moved).to_batches(max_chunksize=MAX_ROWS_PER_BLOCK)
    if busy_ids:
        busy = busy_processes(pa.concat_tables(busy_ids), groups)
        yield from _fact_rows(busy, GROUP_BUSY_SCHEMA.names).to_batches(max_chunksize=MAX_ROWS_PER_BLOCK)


def _assign_pairs(pairs: pa.Table, groups: Mapping[str, ConsumerGroup]) -> pa.Table:
    return _assign_pairs_rows(pairs, groups)[0]


def _assign_pairs_rows(pairs: pa.Table, groups: Mapping[str, ConsumerGroup]) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """:func:`_assign_pairs`, with the queue row (in the pairs' expansion) of every assignment row
    and the expansion's pair boundaries (:func:`expand_pairs`)."""
    table, bounds = expand_pairs(pairs)
    return (*assign_batch_rows(table, groups, bounds), bounds)


#: Memory per readable queue to hold a snapshot's whole assignment table in-process
#: (:func:`assign_snapshot`, every row at once; measured: 6.7 GiB at 3×10^7 queues, ~240 bytes a
#: queue). ``mqbalance assign`` and :func:`snapshot_facts` stream slices instead and need no more
#: than loading does (:data:`mqbalance.fleet.snapshot.QUEUE_BYTES`).
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


#: Above this many (pair, broker, queue id) combinations the per-queue key does not fit an int64.
PACKED_KEY_LIMIT = 2**62


def _codes(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, pa.Array]:
    """Dictionary codes (int64, ``-1`` for null) and the distinct values of a string column."""
    encoded = pc.dictionary_encode(column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column)
    codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    return codes, encoded.dictionary


def pair_counts(assignments: pa.Table) -> tuple[pa.Table, pa.Table]:
    """``(per pair, per consumer)`` counts of an assignment table: ``group, topic, queues,
    unowned, double_owned`` and ``group, topic, consumer, count`` (owned queues per id).

    Grouped on integer codes (the strings are dictionary-encoded once), which is what keeps this
    cheap inside every executor task."""
    if assignments.num_rows == 0:
        per_pair = pa.table({"group": pa.array([], pa.string()), "topic": pa.array([], pa.string())})
        for name in ("queues", "unowned", "double_owned"):
            per_pair = per_pair.append_column(name, pa.array([], pa.int64()))
        per_id = pa.table(
            {"group": pa.array([], pa.string()), "topic": pa.array([], pa.string())}
            | {"consumer": pa.array([], pa.string()), "count": pa.array([], pa.int64())}
        )
        return per_pair, per_id
    g, groups = _codes(assignments.column("group"))
    t, topics = _codes(assignments.column("topic"))
    b, _ = _codes(assignments.column("broker_name"))
    c, consumers = _codes(assignments.column("consumer"))
    q = assignments.column("queue_id").to_numpy().astype(np.int64)
    pair = g * len(topics) + t
    pair_ids, pair_of_row = np.unique(pair, return_inverse=True)
    # one row per (queue, consuming process): the consumers of a queue, counted
    span = int(b.max()) + 1, int(q.max()) + 1
    if len(pair_ids) * span[0] * span[1] < PACKED_KEY_LIMIT:  # one int64 key per queue
        queue_key = (pair_of_row * span[0] + b) * span[1] + q
        keys, queue_of_row = np.unique(queue_key, return_inverse=True)
        consumers_per_queue = np.bincount(queue_of_row, weights=c >= 0, minlength=len(keys))
        pair_of_queue = keys // (span[0] * span[1])
    else:
        per_queue = (
            pa.table({"pair": pair_of_row, "broker": b, "queue": q, "owned": (c >= 0).astype(np.int64)})
            .group_by(["pair", "broker", "queue"], use_threads=False)
            .aggregate([("owned", "sum")])
        )
        pair_of_queue = per_queue.column("pair").to_numpy()
        consumers_per_queue = per_queue.column("owned_sum").to_numpy()
    n = len(pair_ids)
    per_pair = pa.table(
        {
            "group": groups.take(pa.array(pair_ids // len(topics))),
            "topic": topics.take(pa.array(pair_ids % len(topics))),
            "queues": pa.array(np.bincount(pair_of_queue, minlength=n).astype(np.int64)),
            "unowned": pa.array(
                np.bincount(pair_of_queue, weights=consumers_per_queue == 0, minlength=n).astype(np.int64)
            ),
            "double_owned": pa.array(
                np.bincount(pair_of_queue, weights=consumers_per_queue > 1, minlength=n).astype(np.int64)
            ),
        }
    )
    owned = c >= 0
    keys = pair_of_row[owned] * (len(consumers) + 1) + c[owned]
    id_keys, counts = np.unique(keys, return_counts=True)
    id_pairs = pair_ids[id_keys // (len(consumers) + 1)]
    per_id = pa.table(
        {
            "group": groups.take(pa.array(id_pairs // len(topics))),
            "topic": topics.take(pa.array(id_pairs % len(topics))),
            "consumer": consumers.take(pa.array(id_keys % (len(consumers) + 1))),
            "count": pa.array(counts.astype(np.int64)),
        }
    )
    return per_pair, per_id


FACT_SCHEMA = pa.schema(
    [
        ("group", pa.string()),
        ("topic", pa.string()),
        ("consumer", pa.string()),
        ("queues", pa.int64()),
        ("unowned", pa.int64()),
        ("double_owned", pa.int64()),
        ("count", pa.int64()),
        ("strategy", pa.string()),
        ("moved", pa.int64()),
        ("max_load", pa.int64()),
        ("idle", pa.int64()),
        ("processes", pa.int64()),
        ("load_total", pa.int64()),
        ("min_load", pa.int64()),
        ("load", pa.int64()),
    ]
)
"""Audit facts in one table, a few rows per pair whatever its size: a pair row (``consumer``,
``strategy`` and ``load`` null) with ``queues, unowned, double_owned`` (and ``moved``, its
:func:`churn`, when an earlier snapshot was compared) and its loads ``processes, idle, load_total,
min_load, max_load``; a load row (``load`` set) with ``count``, the processes of the pair
consuming that many queues (> 0); a group row (``topic`` null): ``processes``, those of the group
consuming something of some topic (:func:`busy_processes`); or a what-if row (``strategy`` set,
:func:`what_if`) with ``queues, moved, max_load, idle``. :func:`load_facts` computes them,
:func:`split_facts` takes them apart."""

#: The pair columns of :func:`load_facts` (what :func:`mqbalance.fleet.findings.summarise` reads) ...
PAIR_FACT_COLUMNS = (
    *("group", "topic", "queues", "unowned", "double_owned"),
    *("processes", "idle", "load_total", "min_load", "max_load"),
)
#: ... and their types.
PAIR_FACT_SCHEMA = pa.schema([FACT_SCHEMA.field(c) for c in PAIR_FACT_COLUMNS])
LOAD_SCHEMA = pa.schema([("group", pa.string()), ("topic", pa.string()), ("load", pa.int64()), ("count", pa.int64())])
BUSY_SCHEMA = pa.schema([("group", pa.string()), ("consumer", pa.string())])
GROUP_BUSY_SCHEMA = pa.schema([("group", pa.string()), ("processes", pa.int64())])


def load_facts(
    per_pair: pa.Table, per_id: pa.Table, groups: Mapping[str, ConsumerGroup]
) -> tuple[pa.Table, pa.Table, pa.Table]:
    """:func:`pair_counts` ``(per_pair, per_id)`` folded into what an audit keeps, none of it per
    process: ``per_pair`` with ``processes, idle, load_total, min_load, max_load`` (queues per
    process); the loads (:data:`LOAD_SCHEMA`: per pair and load > 0, how many processes consume
    that many); the busy ids (:data:`BUSY_SCHEMA`: per group, the distinct ids consuming
    something). A duplicated id's ``k`` connections share its count (``count // k`` each).

    >>> from mqbalance.fleet.snapshot import snapshot_from_dict
    >>> snap = snapshot_from_dict({"topics": {"T": {"queueDatas": [
    ...     {"brokerName": "b", "readQueueNums": 3, "writeQueueNums": 3, "perm": 6}]}},
    ...     "groups": {"g": {"subscriptions": ["T"], "connections": [{"clientId": c} for c in "abcd"]}}})
    >>> pairs, loads, busy = load_facts(*pair_counts(assign_snapshot(snap)), snap.consumer_groups())
    >>> pairs.select(["processes", "idle", "min_load", "max_load"]).to_pylist(), loads["count"].to_pylist()
    ([{'processes': 4, 'idle': 1, 'min_load': 0, 'max_load': 1}], [3])
    """
    n = per_pair.num_rows
    index = pa.table({"group": per_pair.column("group"), "topic": per_pair.column("topic"), "p": np.arange(n)})
    joined = per_id.select(["group", "topic", "consumer", "count"]).join(index, ["group", "topic"], use_threads=False)
    p = joined.column("p").to_numpy()
    k = np.ones(len(p), dtype=np.int64)
    names = per_pair.column("group").to_pylist()
    duplicated = [g for g in set(names) if g in groups and groups[g].duplicated_ids]
    if duplicated:
        mask = pc.is_in(joined.column("group"), pa.array(duplicated, pa.string())).to_numpy(zero_copy_only=False)
        rows = zip(joined.column("group").filter(mask).to_pylist(), joined.column("consumer").filter(mask).to_pylist())
        k[mask] = [groups[g].id_counts.get(cid, 1) for g, cid in rows]
    load = joined.column("count").to_numpy() // k
    processes = np.array([len(groups[g].connections) if g in groups else 0 for g in names], dtype=np.int64)
    busy = load > 0
    idle = processes - np.bincount(p[busy], weights=k[busy], minlength=n).astype(np.int64)
    high = np.zeros(n, dtype=np.int64)
    np.maximum.at(high, p, load)
    low = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(low, p[busy], load[busy])
    pairs = per_pair.select(["group", "topic", "queues", "unowned", "double_owned"])
    for name, values in (
        ("processes", processes),
        ("idle", idle),
        ("load_total", np.bincount(p, weights=k * load, minlength=n).astype(np.int64)),
        ("min_load", np.where((idle > 0) | (low == np.iinfo(np.int64).max), 0, low)),
        ("max_load", high),
    ):
        pairs = pairs.append_column(name, pa.array(values, pa.int64()))
    per_load = (
        pa.table({"p": p[busy], "load": load[busy], "k": k[busy]})
        .group_by(["p", "load"], use_threads=False)
        .aggregate([("k", "sum")])
    )
    at = pa.array(per_load.column("p").to_numpy())
    loads = pa.table(
        [
            pairs.column("group").take(at),
            pairs.column("topic").take(at),
            per_load.column("load"),
            per_load.column("k_sum"),
        ],
        schema=LOAD_SCHEMA,
    )
    used = pa.table({"group": joined.column("group"), "consumer": joined.column("consumer")}).filter(pa.array(busy))
    busy_ids = used.group_by(["group", "consumer"], use_threads=False).aggregate([]).cast(BUSY_SCHEMA)
    return pairs, loads, busy_ids


WHAT_IF_SCHEMA = pa.schema(
    [
        ("group", pa.string()),
        ("topic", pa.string()),
        ("strategy", pa.string()),
        ("queues", pa.int64()),
        ("moved", pa.int64()),
        ("max_load", pa.int64()),
        ("idle", pa.int64()),
    ]
)


#: The candidates of ``mqbalance audit --what-if`` by default: the balanced one clients compute
#: today, the bounded ring every client can compute, and the sticky one a leader computes.
DEFAULT_WHAT_IF = ("AVG", "CONSISTENT_HASH_BOUNDED", "STICKY")


def what_if_candidates(values: Iterable[StrategySpec | str] | str) -> tuple[StrategySpec, ...]:
    """Candidate strategies for :func:`what_if`, parsed and checked once: names (``"AVG,STICKY"``
    or a list) or specs, duplicates dropped. A strategy without an owner per queue (``CONFIG``) or
    needing per-client configuration (``MACHINE_ROOM*``) cannot be tried on a whole fleet:
    :class:`~mqbalance.exceptions.UnsupportedStrategyError`.

    >>> [s.display_name for s in what_if_candidates("avg, STICKY,AVG")]
    ['AVG', 'STICKY']
    """
    if isinstance(values, str):
        items: list[Any] = [v.strip() for v in values.split(",") if v.strip()]
    elif isinstance(values, StrategySpec) or not_a_collection(values):
        raise UnknownStrategyError(
            f"what-if: expected comma-separated strategy names or a list of them, got {values!r}", values
        )
    else:
        items = list(values)
    out = dict.fromkeys(StrategySpec.parse(item, where="what-if", use=Use.WHAT_IF) for item in items)
    return tuple(out)


def _changes(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """``True`` where a value differs from the one before (the first row always starts a run)."""
    col = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    n = len(col)
    out = np.ones(n, dtype=bool)
    if n > 1:
        out[1:] = pc.fill_null(pc.not_equal(col.slice(1), col.slice(0, n - 1)), True).to_numpy(zero_copy_only=False)
    return out


def _kept_if_balanced(now: list[str], ids: list[str]) -> list[int] | None:
    """STICKY's answer without the core when the previous assignment (``now``: the one consumer of
    every queue, all in ``ids``, no id repeated) is already balanced: its rules keep every queue (the
    members holding ⌈q/k⌉ are exactly those that get the larger quotas), so the owners are the
    current ones, as positions in ``ids``; ``None`` when it is not balanced."""
    held = Counter(now)
    low = min(held.values()) if len(held) == len(ids) else 0
    if max(held.values(), default=0) - low > 1:
        return None
    slot = {cid: j for j, cid in enumerate(ids)}
    return [slot[c] for c in now]


def what_if(
    assignments: pa.Table,
    groups: Mapping[str, ConsumerGroup],
    candidates: Iterable[StrategySpec],
    *,
    _shortcut: bool = True,
) -> pa.Table:
    """What would happen if each clustering (group, topic) of an assignment table switched to each
    candidate strategy (:data:`WHAT_IF_SCHEMA`): ``queues``; ``moved``, the queues consumed now
    whose owner under the candidate is not one of their current consumers (each a pause and a
    burst of duplicates at the switch); ``max_load``, the most queues one process would consume;
    ``idle``, the processes that would consume nothing. The candidate runs over the group's client
    ids as the clients would compute it; a candidate that needs the previous assignment (``STICKY``)
    starts from the current one (what a leader taking over would do; a pair already balanced keeps
    its assignment without a core call). Every queue of a pair must be in the table (as
    :func:`assign_batch` hands them over).

    >>> from mqbalance.fleet.snapshot import snapshot_from_dict
    >>> snap = snapshot_from_dict({"topics": {"T": {"queueDatas": [
    ...     {"brokerName": "b", "readQueueNums": 8, "writeQueueNums": 8, "perm": 6}]}},
    ...     "groups": {"g": {"subscriptions": ["T"], "connections": [
    ...         {"clientId": c, "strategy": "CONSISTENT_HASH"} for c in ("c1", "c2", "c3", "c4")]}}})
    >>> rows = what_if(assign_snapshot(snap), snap.consumer_groups(), what_if_candidates("AVG,STICKY"))
    >>> [(r["strategy"], r["queues"], r["max_load"]) for r in rows.to_pylist()]  # both balanced: 2 each
    [('AVG', 8, 2), ('STICKY', 8, 2)]
    >>> rows.column("moved").to_pylist()[1] <= rows.column("moved").to_pylist()[0]  # STICKY moves the fewest
    True
    """
    specs = list(candidates)
    if not specs or assignments.num_rows == 0:
        return WHAT_IF_SCHEMA.empty_table()
    clustering = [
        g
        for g in pc.unique(assignments.column("group")).to_pylist()
        if (found := groups.get(g)) is not None and found.connections and found.message_model is MessageModel.CLUSTERING
    ]
    a = assignments.filter(pc.is_in(assignments.column("group"), value_set=pa.array(clustering, pa.string())))
    if a.num_rows == 0:
        return WHAT_IF_SCHEMA.empty_table()
    keys = ["group", "topic", "broker_name", "queue_id"]
    a = a.take(pc.sort_indices(a, sort_keys=[(k, "ascending") for k in keys]))
    new_pair = _changes(a.column("group")) | _changes(a.column("topic"))
    new_queue = new_pair | _changes(a.column("broker_name")) | _changes(a.column("queue_id"))
    queue_rows = np.flatnonzero(new_queue)  # first row of every queue
    queue_of_row = np.cumsum(new_queue) - 1
    pair_starts = np.searchsorted(queue_rows, np.flatnonzero(new_pair))  # in queue numbers
    bounds = np.append(pair_starts, len(queue_rows))
    uq = a.take(pa.array(queue_rows))
    topics = pc.dictionary_encode(uq.column("topic").combine_chunks())
    brokers = pc.dictionary_encode(uq.column("broker_name").combine_chunks())
    qids = uq.column("queue_id").to_numpy().astype(np.int64)
    current = uq.column("consumer").combine_chunks()
    pair_group = uq.column("group").take(pa.array(pair_starts)).to_pylist()
    pair_topic = uq.column("topic").take(pa.array(pair_starts)).to_pylist()
    ids = [groups[g].client_ids for g in pair_group]
    offsets = np.cumsum([0] + [len(x) for x in ids])
    flat_ids = pa.array([cid for x in ids for cid in x], type=pa.string())
    weight = np.ones(offsets[-1], dtype=np.int64)  # processes per slot: its id's count on its first slot
    for p, x in enumerate(ids):
        found = groups[pair_group[p]]
        if found.duplicated_ids:
            seen: set[str] = set()
            for j, cid in enumerate(x):
                weight[offsets[p] + j] = 0 if cid in seen else found.id_counts[cid]
                seen.add(cid)
    pair_of_queue = np.repeat(np.arange(len(ids)), np.diff(bounds))
    owned = pc.is_valid(current).to_numpy(zero_copy_only=False)
    n_queues = np.diff(bounds)
    # Pairs where every queue has exactly one consumer now (a balanced one is what STICKY keeps).
    rows_per_queue = np.diff(np.append(queue_rows, a.num_rows))
    once = np.minimum.reduceat(((rows_per_queue == 1) & owned).astype(np.int8), pair_starts).astype(bool)
    parts = []
    for spec in specs:
        if spec.info.batchable:
            owners = bulk.owners_by_pair(topics, brokers, qids, bounds, [spec.build()] * len(ids), ids)
        else:
            owners = np.empty(len(qids), dtype=np.int64)
            built = spec.build()
            for p, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
                prev = current.slice(lo, hi - lo) if spec.info.needs_previous else None
                if prev is not None and _shortcut and once[p] and not groups[pair_group[p]].duplicated_ids:
                    unchanged = _kept_if_balanced(prev.to_pylist(), ids[p])
                    if unchanged is not None:
                        owners[lo:hi] = unchanged
                        continue
                owners[lo:hi] = bulk.owners(
                    built, topics.slice(lo, hi - lo), brokers.slice(lo, hi - lo), qids[lo:hi], ids[p], previous=prev
                )
        has = owners >= 0
        slot = offsets[pair_of_queue] + np.maximum(owners, 0)
        candidate = flat_ids.take(pa.array(slot, mask=~has)).take(pa.array(queue_of_row))
        same = pc.fill_null(pc.equal(a.column("consumer"), candidate), False).to_numpy(zero_copy_only=False)
        kept = np.bitwise_or.reduceat(same, queue_rows) if len(same) else same
        moved = np.add.reduceat((owned & ~kept).astype(np.int64), pair_starts)
        load = np.bincount(slot[has], minlength=offsets[-1])
        max_load = np.maximum.reduceat(load, offsets[:-1])
        idle = np.add.reduceat(np.where(load == 0, weight, 0), offsets[:-1])
        parts.append(
            pa.table(
                {
                    "group": pair_group,
                    "topic": pair_topic,
                    "strategy": [spec.display_name] * len(ids),
                    "queues": n_queues,
                    "moved": moved,
                    "max_load": max_load,
                    "idle": idle,
                },
                schema=WHAT_IF_SCHEMA,
            )
        )
    return pa.concat_tables(parts)


def churn(current: pa.Table, previous: pa.Table) -> pa.Table:
    """Per (group, topic) of ``current``: ``moved``, the queues whose set of consumers differs in
    ``previous`` (two assignment tables, e.g. of the same pairs in this and an earlier snapshot). A
    queue in only one of them was added or removed, not moved: it does not count. Exact: consumers
    are compared as multisets (an id consuming a queue twice is not the same as once).

    >>> now = pa.table({"group": ["g"] * 3, "topic": ["T"] * 3, "broker_name": ["b"] * 3,
    ...                 "queue_id": [0, 1, 2], "consumer": ["c1", "c2", None]})
    >>> before = pa.table({"group": ["g"] * 2, "topic": ["T"] * 2, "broker_name": ["b"] * 2,
    ...                    "queue_id": [0, 1], "consumer": ["c1", "c1"]})
    >>> churn(now, before).to_pylist()  # queue 1 moved; queue 2 is new
    [{'group': 'g', 'topic': 'T', 'moved': 1}]
    """
    keys = ["group", "topic", "broker_name", "queue_id"]
    both = pa.concat_tables([current.select([*keys, "consumer"]), previous.select([*keys, "consumer"])])
    if current.num_rows == 0:
        return pa.table(
            {"group": pa.array([], pa.string()), "topic": pa.array([], pa.string()), "moved": pa.array([], pa.int64())}
        )

    def codes(column: pa.ChunkedArray) -> np.ndarray:
        # One dictionary over both tables, so equal strings get equal codes on either side.
        encoded = pc.dictionary_encode(pc.fill_null(column, "").combine_chunks())
        return np.asarray(encoded.indices.to_numpy(zero_copy_only=False))

    side = np.repeat(np.array([0, 1], dtype=np.int64), [current.num_rows, previous.num_rows])
    columns = [codes(both.column(k)) for k in ("group", "topic", "broker_name")]
    qid = both.column("queue_id").to_numpy().astype(np.int64)
    consumer = codes(both.column("consumer")).astype(np.int64)
    spans = [int(c.max()) + 1 for c in columns] + [int(qid.max()) + 1]
    if np.prod(np.array(spans, dtype=float)) < PACKED_KEY_LIMIT:  # one int64 per queue, one per (side, consumer)
        key = ((columns[0] * spans[1] + columns[1]) * spans[2] + columns[2]) * spans[3] + qid
        order = np.lexsort((side * (int(consumer.max()) + 1) + consumer, key))
        sorted_key = key[order]
        new = np.ones(len(order), dtype=bool)
        new[1:] = sorted_key[1:] != sorted_key[:-1]
    else:
        order = np.lexsort((consumer, side, qid, *reversed(columns)))  # by queue, then side, then consumer
        queue_key = [c[order] for c in (*columns, qid)]
        new = np.ones(len(order), dtype=bool)
        new[1:] = np.logical_or.reduce([k[1:] != k[:-1] for k in queue_key])
    queue = np.cumsum(new) - 1
    side, consumer = side[order], consumer[order]
    now = np.bincount(queue, weights=side == 0).astype(np.int64)  # rows per queue in each table
    before = np.bincount(queue, weights=side == 1).astype(np.int64)
    # Sorted by side then consumer, a queue's rows are its current consumers then its previous
    # ones: with equal counts, row i differs from row i + count exactly when the multisets differ.
    row = np.arange(len(order))
    pairable = (side == 0) & (now[queue] == before[queue])
    partner = np.where(pairable, row + now[queue], row)
    differs = np.bincount(queue, weights=pairable & (consumer != consumer[partner])) > 0
    moved = (now > 0) & (before > 0) & ((now != before) | differs)
    first = np.flatnonzero(new)
    in_current = now > 0
    queues = both.take(pa.array(order[first[in_current]])).select(["group", "topic"])
    per_pair = queues.append_column("moved", pa.array(moved[in_current].astype(np.int64))).group_by(
        ["group", "topic"], use_threads=False
    )
    out = per_pair.aggregate([("moved", "sum")])
    return pa.table({"group": out.column("group"), "topic": out.column("topic"), "moved": out.column("moved_sum")})


def _no_churn() -> pa.Table:
    return pa.table(
        {"group": pa.array([], pa.string()), "topic": pa.array([], pa.string()), "moved": pa.array([], pa.int64())}
    )


def pair_churn(
    pairs: pa.Table,
    changed: np.ndarray,
    now: tuple[pa.Table, np.ndarray, np.ndarray],
    before: tuple[pa.Table, np.ndarray, np.ndarray],
) -> pa.Table:
    """:func:`churn` of the pairs at positions ``changed`` of ``pairs`` (a :func:`with_previous_routes`
    table; each of them had a route), computed from ``now`` — the assignment of ``pairs``, the queue
    row of every assignment row (:func:`assign_batch_rows`) and the pair boundaries of the expansion
    (:func:`expand_pairs`) — and ``before``, the same for their previous routes and groups. Where a
    pair's route is unchanged, queue row ``k`` of its expansion is the same queue on both sides, so a
    queue with one consumer on each side is compared in place; pairs with another route or a queue
    consumed by several processes go through :func:`churn`. The result is :func:`churn`'s, one row
    per changed pair.

    >>> route = [{"broker_name": "b", "read_queue_nums": 3}]
    >>> pairs = pa.table({"group": ["g"], "topic": ["T"], "route": [route], "previous_route": [route]})
    >>> now = (pa.table({"consumer": ["c1", "c2", "c2"]}), np.array([0, 1, 2]), np.array([0, 3]))
    >>> before = (pa.table({"consumer": ["c1", "c1", "c2"]}), np.array([0, 1, 2]), np.array([0, 3]))
    >>> pair_churn(pairs, np.array([0]), now, before).to_pylist()  # queue 1 moved
    [{'group': 'g', 'topic': 'T', 'moved': 1}]
    """
    table, rows, now_start = now
    earlier, earlier_rows, then_start = before
    if len(changed) == 0:
        return _no_churn()
    changed = np.asarray(changed, dtype=np.int64)
    sub = pairs.take(pa.array(changed))
    same_route = ~_route_changed(sub)
    n = int(now_start[-1])
    # The queues of the changed pairs in the current expansion, and the pair (0..len(changed)) of each.
    lengths = now_start[changed + 1] - now_start[changed]
    pair_of = np.repeat(np.arange(len(changed)), lengths)
    queues = np.arange(len(pair_of)) - np.repeat(np.cumsum(lengths) - lengths, lengths) + now_start[changed][pair_of]
    # Rows before, mapped onto the current queue rows where the route is unchanged (-1 elsewhere).
    before_pair = np.searchsorted(then_start, earlier_rows, side="right") - 1
    aligned = same_route[before_pair]
    mapped = np.where(aligned, earlier_rows - then_start[before_pair] + now_start[changed][before_pair], -1)
    count_now = np.bincount(rows, minlength=n)
    count_before = np.bincount(mapped[aligned], minlength=n)
    odd = (count_now[queues] != 1) | (count_before[queues] != 1)
    general = ~same_route | (np.bincount(pair_of, weights=odd, minlength=len(changed)) > 0)
    parts = []
    simple = ~general[pair_of]
    if simple.any():
        now_row = np.full(n, -1, dtype=np.int64)
        now_row[rows] = np.arange(len(rows))
        then_row = np.full(n, -1, dtype=np.int64)
        then_row[mapped[aligned]] = np.flatnonzero(aligned)
        at = queues[simple]
        a = pc.fill_null(table.column("consumer").take(pa.array(now_row[at])), "")
        b = pc.fill_null(earlier.column("consumer").take(pa.array(then_row[at])), "")
        differs = pc.not_equal(a, b).to_numpy(zero_copy_only=False)
        moved = np.bincount(pair_of[simple], weights=differs, minlength=len(changed)).astype(np.int64)
        keep = pa.array(np.flatnonzero(~general))
        parts.append(
            pa.table(
                {
                    "group": sub.column("group").take(keep),
                    "topic": sub.column("topic").take(keep),
                    "moved": pa.array(moved[~general]),
                }
            )
        )
    if general.any():
        in_general = np.zeros(n, dtype=bool)
        in_general[queues[general[pair_of]]] = True
        parts.append(churn(table.filter(pa.array(in_general[rows])), earlier.filter(pa.array(general[before_pair]))))
    return pa.concat_tables(parts)


def facts(
    assignments: pa.Table,
    groups: Mapping[str, ConsumerGroup],
    busy_ids: list[pa.Table],
    what_if_rows: pa.Table | None = None,
    moved: pa.Table | None = None,
) -> pa.Table:
    """:func:`load_facts` of an assignment table (and :func:`what_if` rows, if given) as
    :data:`FACT_SCHEMA` rows; ``moved`` (:func:`churn`) fills the pair rows' ``moved``; the busy
    ids are appended to ``busy_ids`` (a group's count is only known once all its pairs are done:
    :func:`busy_processes`). Every queue of a pair is in the same assignment table, so the facts
    of separate tables simply concatenate."""
    per_pair, loads, busy = load_facts(*pair_counts(assignments), groups)
    busy_ids.append(busy)
    if moved is not None:
        per_pair = per_pair.join(moved, ["group", "topic"], join_type="left outer", use_threads=False)
        per_pair = per_pair.set_column(
            per_pair.schema.get_field_index("moved"), "moved", pc.fill_null(per_pair.column("moved"), 0)
        )
    parts = [_fact_rows(per_pair, per_pair.column_names), _fact_rows(loads, LOAD_SCHEMA.names)]
    if what_if_rows is not None and what_if_rows.num_rows:
        parts.append(_fact_rows(what_if_rows, WHAT_IF_SCHEMA.names))
    return pa.concat_tables(parts)


def _fact_rows(table: pa.Table, columns: Sequence[str]) -> pa.Table:
    """``columns`` of ``table`` as :data:`FACT_SCHEMA` rows (the other columns null)."""
    n = table.num_rows
    return pa.table(
        {f.name: table.column(f.name) if f.name in columns else pa.nulls(n, f.type) for f in FACT_SCHEMA},
        schema=FACT_SCHEMA,
    )


def busy_processes(busy_ids: pa.Table, groups: Mapping[str, ConsumerGroup]) -> pa.Table:
    """Per group, its processes that consume something of some topic (:data:`GROUP_BUSY_SCHEMA`),
    from the ids doing so (:data:`BUSY_SCHEMA` rows, repeats allowed); a duplicated id counts once
    per connection using it."""
    ids = busy_ids.group_by(BUSY_SCHEMA.names, use_threads=False).aggregate([])
    per_group = ids.group_by("group", use_threads=False).aggregate([("consumer", "count")])
    names = per_group.column("group").to_pylist()
    counts = per_group.column("consumer_count").to_pylist()
    duplicated = {g for g in names if g in groups and groups[g].duplicated_ids}
    if duplicated:
        weighted: dict[str, int] = dict.fromkeys(duplicated, 0)
        for g, cid in zip(ids.column("group").to_pylist(), ids.column("consumer").to_pylist()):
            if g in weighted:
                weighted[g] += groups[g].id_counts.get(cid, 1)
        counts = [weighted.get(g, n) for g, n in zip(names, counts)]
    return pa.table([pa.array(names, pa.string()), pa.array(counts, pa.int64())], schema=GROUP_BUSY_SCHEMA)


class AuditFacts(NamedTuple):
    """An audit's facts, none of them per process, in the order
    :func:`mqbalance.fleet.findings.summarise` takes them: ``per_pair`` (:data:`PAIR_FACT_SCHEMA`),
    ``loads`` (:data:`LOAD_SCHEMA`), ``busy`` (:data:`GROUP_BUSY_SCHEMA`, :func:`busy_processes`),
    ``churn`` (moved queues per (group, topic), when an earlier snapshot was compared) and
    ``what_if`` (:data:`WHAT_IF_SCHEMA`, when candidate strategies were tried)."""

    per_pair: pa.Table
    loads: pa.Table
    busy: pa.Table
    churn: dict[tuple[str, str], int] | None = None
    what_if: pa.Table | None = None


def snapshot_facts(
    snapshot: Snapshot,
    *,
    candidates: Sequence[StrategySpec] = (),
    previous: Snapshot | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> AuditFacts:
    """The audit facts of a snapshot, in-process (no Spark), streamed as the Spark tasks stream them
    (:func:`fact_blocks` over slices of at most :data:`MAX_QUEUES_PER_SLICE` queues): each slice is
    assigned, its facts kept and its assignment rows dropped, so memory holds one slice's rows,
    never the fleet's (:func:`assign_snapshot` gives them all, when asked). ``progress(done,
    total)`` is called after each slice (queues, counted per pair); the :func:`what_if` rows of
    ``candidates`` (:func:`what_if_candidates`) and the :func:`churn` against ``previous`` (an
    earlier snapshot, its changed pairs assigned the same way) come from the same pass.

    >>> from mqbalance.fleet.snapshot import snapshot_from_dict
    >>> snap = snapshot_from_dict({"topics": {"T": {"queueDatas": [
    ...     {"brokerName": "b", "readQueueNums": 3, "writeQueueNums": 3, "perm": 6}]}},
    ...     "groups": {"g": {"subscriptions": ["T"], "connections": [{"clientId": c} for c in "ab"]}}})
    >>> facts = snapshot_facts(snap, candidates=what_if_candidates("AVG"), previous=snap)
    >>> facts.per_pair["max_load"].to_pylist(), facts.busy.to_pylist(), facts.churn
    ([2], [{'group': 'g', 'processes': 2}], {('g', 'T'): 0})
    """
    if progress is not None and not callable(progress):
        raise SnapshotError(f"snapshot_facts: progress must be callable, got {progress!r:.80}", progress)
    pairs, groups = snapshot.pair_table(), snapshot.consumer_groups()
    previous_groups = None
    if previous is not None:
        pairs = with_previous_routes(pairs, previous.pair_table())
        previous_groups = previous.consumer_groups()
    done = np.cumsum(pair_queue_counts(pairs))
    total = int(done[-1]) if len(done) else 0

    def slices() -> Iterator[pa.RecordBatch]:
        rows = 0
        for part in pair_slices(pairs):
            yield from part.combine_chunks().to_batches()
            rows += part.num_rows
            if progress is not None:
                progress(int(done[rows - 1]), total)

    blocks = list(fact_blocks(slices(), groups, candidates, previous_groups))
    table = pa.Table.from_batches(blocks, schema=FACT_SCHEMA)
    per_pair, loads, busy = split_facts(table)
    moved = None
    if previous is not None:
        keys = zip(per_pair.column("group").to_pylist(), per_pair.column("topic").to_pylist())
        moved = dict(zip(keys, per_pair.column("moved").to_pylist()))
    rows = what_if_facts(table) if candidates else None
    return AuditFacts(per_pair.select(list(PAIR_FACT_COLUMNS)), loads, busy, moved, rows)


def split_facts(table: pa.Table) -> tuple[pa.Table, pa.Table, pa.Table]:
    """``(per pair, loads, busy processes per group)`` back from :data:`FACT_SCHEMA` rows (as
    :func:`load_facts` and :func:`busy_processes` give them); the what-if rows are
    :func:`what_if_facts`."""
    is_what_if = pc.is_valid(table.column("strategy"))
    is_group = pc.is_null(table.column("topic"))
    is_load = pc.is_valid(table.column("load"))
    is_pair = pc.invert(pc.or_(pc.or_(is_what_if, is_group), is_load))
    per_pair = table.filter(is_pair).select([*PAIR_FACT_COLUMNS, "moved"])
    loads = table.filter(is_load).select(LOAD_SCHEMA.names)
    busy = table.filter(is_group).select(GROUP_BUSY_SCHEMA.names)
    return per_pair, loads, busy


def what_if_facts(table: pa.Table) -> pa.Table:
    """The :func:`what_if` rows (:data:`WHAT_IF_SCHEMA`) back from :data:`FACT_SCHEMA` rows."""
    return table.filter(pc.is_valid(table.column("strategy"))).select(WHAT_IF_SCHEMA.names).cast(WHAT_IF_SCHEMA)
