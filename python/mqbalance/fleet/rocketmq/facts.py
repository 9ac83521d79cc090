"""The audit facts of a RocketMQ snapshot, Spark-free: per (group, topic) counts of queues,
unowned, double-owned and idle processes, loads, busy processes, churn and what-if rows, in the
schemas of :mod:`mqbalance.fleet.rocketmq.schemas`; :func:`snapshot_facts` runs every step
in-process, :func:`fact_blocks` the same per Spark task.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mqbalance.allocation.registry import StrategySpec
from mqbalance.exceptions import SnapshotError
from mqbalance.fleet.rocketmq.assignment import assign_pairs_rows, pair_queue_counts, pair_slices
from mqbalance.fleet.rocketmq.churn import changed_pairs, pair_churn, previous_pairs, with_previous_routes
from mqbalance.fleet.rocketmq.schemas import (
    BUSY_SCHEMA,
    FACT_SCHEMA,
    GROUP_BUSY_SCHEMA,
    LOAD_SCHEMA,
    PACKED_KEY_LIMIT,
    PAIR_FACT_COLUMNS,
    WHAT_IF_SCHEMA,
)
from mqbalance.fleet.rocketmq.snapshot import PAIR_SCHEMA, ConsumerGroup, Snapshot
from mqbalance.fleet.rocketmq.what_if import what_if
from mqbalance.spark.arrow import ROWS_PER_BATCH

__all__ = ["AuditFacts", "busy_processes", "load_facts", "pair_counts", "snapshot_facts", "what_if_facts"]


def fact_blocks(
    pair_batches: Iterable[pa.RecordBatch],
    groups: Mapping[str, ConsumerGroup],
    candidates: Sequence[StrategySpec] = (),
    previous_groups: Mapping[str, ConsumerGroup] | None = None,
    assignments: Callable[[pa.Table], None] | None = None,
) -> Iterator[pa.RecordBatch]:
    """What an executor does for :func:`mqbalance.fleet.rocketmq.spark.audit_fleet`: assign the pairs and
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
            table, queue_rows, bounds = assign_pairs_rows(part.select(PAIR_SCHEMA.names), groups)
            if assignments is not None:
                assignments(table)
            rows = what_if(table, groups, candidates) if candidates else None
            moved = None
            if previous_groups is not None:
                # Only pairs whose group or route changed can have moved queues: the others are
                # neither assigned again nor compared.
                changed = np.flatnonzero(
                    changed_pairs(part, groups, previous_groups, same_group).to_numpy(zero_copy_only=False)
                )
                before = assign_pairs_rows(previous_pairs(part.take(changed)), previous_groups)
                moved = pair_churn(part, changed, (table, queue_rows, bounds), before)
            yield from facts(table, groups, busy_ids, rows, moved).to_batches(max_chunksize=ROWS_PER_BATCH)
    if busy_ids:
        busy = busy_processes(pa.concat_tables(busy_ids), groups)
        yield from _fact_rows(busy, GROUP_BUSY_SCHEMA.names).to_batches(max_chunksize=ROWS_PER_BATCH)


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


def load_facts(
    per_pair: pa.Table, per_id: pa.Table, groups: Mapping[str, ConsumerGroup]
) -> tuple[pa.Table, pa.Table, pa.Table]:
    """:func:`pair_counts` ``(per_pair, per_id)`` folded into what an audit keeps, none of it per
    process: ``per_pair`` with ``processes, idle, load_total, min_load, max_load`` (queues per
    process); the loads (:data:`LOAD_SCHEMA`: per pair and load > 0, how many processes consume
    that many); the busy ids (:data:`BUSY_SCHEMA`: per group, the distinct ids consuming
    something). A duplicated id's ``k`` connections share its count (``count // k`` each).

    >>> from mqbalance.fleet.rocketmq.from_json import snapshot_from_dict
    >>> snap = snapshot_from_dict({"topics": {"T": {"queueDatas": [
    ...     {"brokerName": "b", "readQueueNums": 3, "writeQueueNums": 3, "perm": 6}]}},
    ...     "groups": {"g": {"subscriptions": ["T"], "connections": [{"clientId": c} for c in "abcd"]}}})
    >>> from mqbalance.fleet.rocketmq.assignment import assign_snapshot
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
        # Only those groups' rows reach Python (not one pair of strings per busy process).
        some = ids.filter(pc.is_in(ids.column("group"), value_set=pa.array(sorted(duplicated), pa.string())))
        for g, cid in zip(some.column("group").to_pylist(), some.column("consumer").to_pylist()):
            weighted[g] += groups[g].id_counts.get(cid, 1)
        counts = [weighted.get(g, n) for g, n in zip(names, counts)]
    return pa.table([pa.array(names, pa.string()), pa.array(counts, pa.int64())], schema=GROUP_BUSY_SCHEMA)


class AuditFacts(NamedTuple):
    """An audit's facts, none of them per process, in the order
    :func:`mqbalance.fleet.rocketmq.audit.summarise` takes them: ``per_pair`` (:data:`PAIR_FACT_SCHEMA`),
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

    >>> from mqbalance.fleet.rocketmq.from_json import snapshot_from_dict
    >>> snap = snapshot_from_dict({"topics": {"T": {"queueDatas": [
    ...     {"brokerName": "b", "readQueueNums": 3, "writeQueueNums": 3, "perm": 6}]}},
    ...     "groups": {"g": {"subscriptions": ["T"], "connections": [{"clientId": c} for c in "ab"]}}})
    >>> from mqbalance.fleet.rocketmq.what_if import what_if_candidates
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
