"""Churn: per (group, topic), the queues whose consumers differ from an earlier snapshot's
assignment of the same pair, computed in the same batch as the assignment (no join across the fleet).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mqbalance.fleet.rocketmq.schemas import PACKED_KEY_LIMIT
from mqbalance.fleet.rocketmq.snapshot import PAIR_SCHEMA, ConsumerGroup

__all__ = ["churn", "with_previous_routes"]


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


def changed_pairs(
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


def previous_pairs(pairs: pa.Table) -> pa.Table:
    """The pairs of a :func:`with_previous_routes` table that had a route before, with that route."""
    had = pairs.filter(pc.is_valid(pairs.column("previous_route")))
    return pa.table([had.column("group"), had.column("topic"), had.column("previous_route")], schema=PAIR_SCHEMA)


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
