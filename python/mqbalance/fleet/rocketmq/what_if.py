"""What if a group switched strategy: per (group, topic) and candidate strategy, the queues that
would move now, the most queues one process would consume and the processes left idle.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mqbalance._validate import not_a_collection
from mqbalance.allocation import bulk
from mqbalance.allocation.registry import StrategySpec, Use
from mqbalance.exceptions import UnknownStrategyError
from mqbalance.fleet.rocketmq.schemas import WHAT_IF_SCHEMA
from mqbalance.fleet.rocketmq.snapshot import (
    ConsumerGroup,
    MessageModel,
    value_changes,
)

__all__ = ["DEFAULT_WHAT_IF", "what_if", "what_if_candidates"]


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

    >>> from mqbalance.fleet.rocketmq.from_json import snapshot_from_dict
    >>> snap = snapshot_from_dict({"topics": {"T": {"queueDatas": [
    ...     {"brokerName": "b", "readQueueNums": 8, "writeQueueNums": 8, "perm": 6}]}},
    ...     "groups": {"g": {"subscriptions": ["T"], "connections": [
    ...         {"clientId": c, "strategy": "CONSISTENT_HASH"} for c in ("c1", "c2", "c3", "c4")]}}})
    >>> from mqbalance.fleet.rocketmq.assignment import assign_snapshot
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
    new_pair = value_changes(a.column("group")) | value_changes(a.column("topic"))
    new_queue = new_pair | value_changes(a.column("broker_name")) | value_changes(a.column("queue_id"))
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
