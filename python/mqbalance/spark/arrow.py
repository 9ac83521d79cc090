"""The executor side of :mod:`mqbalance.spark`: queue assignment over Arrow tables, one Rust call
per batch of (group, topic) pairs. Needs only pyarrow, so it runs (and is tested) without Spark.

:func:`queue_assigner` builds the function a cogrouped ``applyInArrow`` calls: the queues and the
consumers of some groups in, the queues with their owner (``client_id``, null for nobody) out,
sorted the Java way (group, then ``MessageQueue`` order).

>>> import pyarrow as pa
>>> queues = pa.table({"group": ["g"] * 3, "topic": ["T"] * 3, "broker_name": ["b"] * 3, "queue_id": [2, 0, 1]})
>>> consumers = pa.table({"group": ["g", "g"], "client_id": ["c2", "c1"]})
>>> out = queue_assigner("AVG")(queues, consumers)
>>> out.column("queue_id").to_pylist(), out.column("client_id").to_pylist()
([0, 1, 2], ['c1', 'c1', 'c2'])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mqbalance import _core
from mqbalance.allocation.bulk import owners, owners_by_pair
from mqbalance.allocation.columns import str_column
from mqbalance.allocation.registry import StrategySpec, Use
from mqbalance.exceptions import ColumnError, InvalidInputError, PreviousAssignmentRequiredError

__all__ = ["QUEUE_ASSIGNMENT_SCHEMA", "QueueColumns", "assign_queue_tables", "queue_assigner"]

#: The output of :func:`queue_assigner` with the default column names, as Spark DDL (what
#: ``applyInArrow(..., schema=)`` takes when the queues have only the four key columns).
QUEUE_ASSIGNMENT_SCHEMA = "group string, topic string, broker_name string, queue_id int, client_id string"


@dataclass(frozen=True, slots=True)
class QueueColumns:
    """The column names :func:`queue_assigner` reads (``previous``: STICKY's previous owner, a
    column of the queues) and writes (``client_id``, also the consumers' id column)."""

    group: str = "group"
    topic: str = "topic"
    broker_name: str = "broker_name"
    queue_id: str = "queue_id"
    client_id: str = "client_id"
    previous: str | None = None

    @property
    def keys(self) -> tuple[str, str, str, str]:
        return (self.group, self.topic, self.broker_name, self.queue_id)


@dataclass(frozen=True, slots=True)
class _Plan:
    default: StrategySpec
    by_group: Mapping[str, StrategySpec] = field(default_factory=dict)
    columns: QueueColumns = QueueColumns()


def parse_strategies(
    strategy: Any, by_group: Mapping[str, Any] | None, *, previous: bool
) -> tuple[StrategySpec, dict[str, StrategySpec]]:
    """The default spec and the per-group ones, each parsed by the registry for a DataFrame
    assignment; STICKY without a previous-owner column is refused here (on the driver)."""
    default = StrategySpec.parse(strategy, where="strategy", use=Use.DATAFRAME)
    if by_group is not None and not isinstance(by_group, Mapping):
        raise InvalidInputError(f"strategy_by_group must be a mapping group -> strategy, got {by_group!r}", by_group)
    specs = {
        g: StrategySpec.parse(c, where=f"strategy_by_group[{g!r}]", use=Use.DATAFRAME)
        for g, c in (by_group or {}).items()
    }
    if not previous:
        for where, spec in [("strategy", default), *((f"strategy_by_group[{g!r}]", s) for g, s in specs.items())]:
            if spec.info.needs_previous:
                raise PreviousAssignmentRequiredError(
                    f"{where}: {spec.display_name} needs the previous owners: pass previous='<column>'",
                    spec.display_name,
                )
    return default, specs


def queue_assigner(
    strategy: Any = "AVG",
    *,
    strategy_by_group: Mapping[str, Any] | None = None,
    columns: QueueColumns | None = None,
) -> Callable[[pa.Table, pa.Table], pa.Table]:
    """The function for ``queues.groupBy(g).cogroup(consumers.groupBy(g)).applyInArrow(f, schema)``:
    it assigns every (group, topic) it receives, as every client of the group computes it.
    ``strategy``: a Java-style config for every group (``"AVG"``, ``{"name": "CONSISTENT_HASH",
    "virtualNodeCnt": 5}``...), ``strategy_by_group``: configs of some groups. The output schema
    is the queues' plus ``client_id string`` (:data:`QUEUE_ASSIGNMENT_SCHEMA` for the defaults)."""
    cols = columns or QueueColumns()
    default, specs = parse_strategies(strategy, strategy_by_group, previous=cols.previous is not None)
    plan = _Plan(default, specs, cols)

    def assign(queues: pa.Table, consumers: pa.Table) -> pa.Table:
        return assign_queue_tables(queues, consumers, plan)

    return assign


def _str_column(table: pa.Table, name: str) -> pa.Array:
    col = table.column(name).combine_chunks()
    if col.null_count:
        raise ColumnError(f"column {name!r} holds nulls", name)
    return col


def assign_queue_tables(queues: pa.Table, consumers: pa.Table, plan: _Plan) -> pa.Table:
    """Owner of every queue row of ``queues`` (many groups) among ``consumers``; see
    :func:`queue_assigner`."""
    c = plan.columns
    if queues.num_rows == 0:
        return queues.append_column(c.client_id, pa.nulls(0, pa.string()))
    groups = _str_column(queues, c.group)
    topics = _str_column(queues, c.topic)
    brokers = _str_column(queues, c.broker_name)
    qids = _str_column(queues, c.queue_id).to_numpy(zero_copy_only=False).astype(np.int64)
    ids_by_group: dict[str, list[str]] = {}
    for g, cid in zip(_str_column(consumers, c.group).to_pylist(), _str_column(consumers, c.client_id).to_pylist()):
        ids_by_group.setdefault(g, []).append(cid)
    # Contiguous (group, topic) pairs.
    order = pc.sort_indices(pa.table({"g": groups, "t": topics}), [("g", "ascending"), ("t", "ascending")])
    order_np = order.to_numpy()
    sg = pc.dictionary_encode(groups.take(order)).indices.to_numpy()
    st = pc.dictionary_encode(topics.take(order)).indices.to_numpy()
    starts = np.concatenate([[0], np.flatnonzero((sg[1:] != sg[:-1]) | (st[1:] != st[:-1])) + 1, [len(sg)]])
    g_sorted = groups.take(order)
    t_sorted, b_sorted, q_sorted = topics.take(order), brokers.take(order), qids[order_np]
    prev = None if c.previous is None else queues.column(c.previous).combine_chunks().take(order)
    owner = np.full(len(sg), -1, dtype=np.int64)
    pair_ids: list[list[str]] = []
    batch_pairs: list[int] = []
    for k in range(len(starts) - 1):
        lo, hi = int(starts[k]), int(starts[k + 1])
        g = g_sorted[lo].as_py()
        ids = ids_by_group.get(g, [])
        pair_ids.append(ids)
        spec = plan.by_group.get(g, plan.default)
        if not ids:
            continue
        if spec.info.batchable:
            batch_pairs.append(k)
        else:
            owner[lo:hi] = owners(
                spec.build(),
                t_sorted[lo:hi],
                b_sorted[lo:hi],
                q_sorted[lo:hi],
                ids,
                previous=None if prev is None or not spec.info.needs_previous else prev[lo:hi],
            )
    if batch_pairs:
        rows = np.concatenate([np.arange(starts[k], starts[k + 1]) for k in batch_pairs])
        sizes = np.array([starts[k + 1] - starts[k] for k in batch_pairs], dtype=np.int64)
        bounds = np.concatenate([[0], np.cumsum(sizes)])
        taken = pa.array(rows)
        owner[rows] = owners_by_pair(
            t_sorted.take(taken),
            b_sorted.take(taken),
            q_sorted[rows],
            bounds,
            [plan.by_group.get(g_sorted[int(starts[k])].as_py(), plan.default).build() for k in batch_pairs],
            [pair_ids[k] for k in batch_pairs],
        )
    # Owner positions -> client ids, through one flat list of every pair's ids.
    flat: list[str | None] = [None]
    base = np.zeros(len(pair_ids), dtype=np.int64)
    for k, ids in enumerate(pair_ids):
        base[k] = len(flat)
        flat.extend(ids)
    pair_of_row = np.repeat(np.arange(len(pair_ids)), np.diff(starts))
    pick = np.where(owner >= 0, base[pair_of_row] + owner, 0)
    client = pa.array(flat, pa.string()).take(pa.array(pick))
    # Java order: group (String order), then MessageQueue order.
    in_java = _java_order(g_sorted, t_sorted, b_sorted, q_sorted)
    _no_duplicates(in_java, g_sorted, t_sorted, b_sorted, q_sorted, c)
    out = queues.take(order).append_column(c.client_id, client)
    return out.take(pa.array(in_java))


def _java_order(groups: pa.Array, topics: pa.Array, brokers: pa.Array, qids: np.ndarray) -> np.ndarray:
    by_queue = np.asarray(
        _core.sort_queues_order(str_column(topics, "topics"), str_column(brokers, "brokers"), qids), dtype=np.int64
    )
    g = groups.take(pa.array(by_queue))
    dictionary = pc.dictionary_encode(g)
    names = dictionary.dictionary.to_pylist()
    rank = np.empty(len(names), dtype=np.int64)
    rank[np.asarray(_core.sort_strings_order(names), dtype=np.int64)] = np.arange(len(names))
    codes = rank[dictionary.indices.to_numpy()]
    return by_queue[np.argsort(codes, kind="stable")]


def _no_duplicates(order: np.ndarray, g: pa.Array, t: pa.Array, b: pa.Array, q: np.ndarray, c: QueueColumns) -> None:
    """A queue listed twice in its group is refused, naming it (the clients would see it once).
    In Java order a duplicate sits next to its twin."""
    taken = pa.array(order)
    same = np.ones(len(order) - 1, dtype=bool)
    for col in (g, t, b):
        codes = pc.dictionary_encode(col.take(taken)).indices.to_numpy()
        same &= codes[1:] == codes[:-1]
    qs = q[order]
    same &= qs[1:] == qs[:-1]
    if same.any():
        k = int(order[int(np.argmax(same))])
        raise ColumnError(
            f"duplicated queue in columns {', '.join(map(repr, c.keys))}: group {g[k].as_py()!r}, "
            f"topic {t[k].as_py()!r}, broker {b[k].as_py()!r}, queue id {int(q[k])}",
            c.queue_id,
        )
