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

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mqbalance import _core
from mqbalance.allocation.bulk import owners, owners_by_pair_in_column
from mqbalance.allocation.registry import StrategySpec, Use
from mqbalance.exceptions import ColumnError, InvalidInputError, PreviousAssignmentRequiredError

__all__ = [
    "QUEUE_ASSIGNMENT_SCHEMA",
    "QueueColumns",
    "assign_queue_tables",
    "queue_assigner",
    "queue_partition_assigner",
]

#: Rows per Arrow batch handed back to Spark by :func:`queue_partition_assigner` and the fleet audit
#: (Spark's ``arrow.maxRecordsPerBatch`` default).
ROWS_PER_BATCH = 10_000

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


def queue_partition_assigner(
    strategy: Any = "AVG",
    *,
    strategy_by_group: Mapping[str, Any] | None = None,
    columns: QueueColumns | None = None,
    consumer_flag: str = "is_consumer",
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The function for a ``mapInArrow`` over queue rows and consumer rows together, partitioned
    by group (every row of a group in one partition): what :func:`mqbalance.spark.assign_queues`
    runs. Rows where the boolean column ``consumer_flag`` is true are consumers (their
    ``group`` and ``client_id``), the others queues (their ``client_id`` is ignored). Yields the
    queues' columns plus the owner in ``client_id``, as :func:`queue_assigner` does. A
    ``consumer_flag`` that is not a non-empty str: :class:`~mqbalance.exceptions.InvalidInputError`.

    >>> import pyarrow as pa
    >>> rows = pa.table({"group": ["g"] * 3, "topic": ["T", "T", None], "broker_name": ["b", "b", None],
    ...                  "queue_id": [1, 0, None], "client_id": [None, None, "c1"],
    ...                  "is_consumer": [False, False, True]})
    >>> out = pa.Table.from_batches(queue_partition_assigner("AVG")(iter(rows.to_batches())))
    >>> out.column("queue_id").to_pylist(), out.column("client_id").to_pylist()
    ([0, 1], ['c1', 'c1'])
    """
    if not isinstance(consumer_flag, str) or not consumer_flag:
        raise InvalidInputError(
            f"consumer_flag must be a column name (a non-empty str), got {consumer_flag!r}", consumer_flag
        )
    cols = columns or QueueColumns()
    default, specs = parse_strategies(strategy, strategy_by_group, previous=cols.previous is not None)
    plan = _Plan(default, specs, cols)

    def assign(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        got = list(batches)
        if not got:
            return
        rows = pa.Table.from_batches(got)
        del got
        flag = rows.column(consumer_flag).combine_chunks()
        if flag.null_count:
            raise ColumnError(f"column {consumer_flag!r} holds nulls", consumer_flag)
        is_consumer = flag.to_numpy(zero_copy_only=False)
        consumers = rows.select([cols.group, cols.client_id]).take(pa.array(np.flatnonzero(is_consumer)))
        queues = rows.drop_columns([cols.client_id, consumer_flag])
        # back in batches of Spark's default size (zero-copy slices): the JVM reads each as it
        # arrives, where one batch of the whole partition would have to arrive first
        yield from _assign(queues, np.flatnonzero(~is_consumer), consumers, plan).to_batches(ROWS_PER_BATCH)

    return assign


def _str_column(table: pa.Table, name: str, rows: np.ndarray | None = None) -> pa.Array:
    """A column as one array, refused if it holds a null (among ``rows`` when given)."""
    col = table.column(name).combine_chunks()
    if col.null_count and (rows is None or col.is_null().to_numpy(zero_copy_only=False)[rows].any()):
        raise ColumnError(f"column {name!r} holds nulls", name)
    return col


def _ranks(dictionary: pa.Array) -> np.ndarray:
    """Java String rank of every entry of a dictionary of distinct strings."""
    names = dictionary.to_pylist()
    rank = np.empty(len(names), dtype=np.int64)
    rank[np.asarray(_core.sort_strings_order(names), dtype=np.int64)] = np.arange(len(names))
    return rank


def _codes(column: pa.Array, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, pa.Array, np.ndarray]:
    """At ``rows``: each value's Java String rank among the column's distinct values, and its code
    in the column's dictionary; plus the dictionary and its ranks (hashing, then sorting only the
    distinct values). Other rows may be null."""
    encoded = pc.dictionary_encode(column)
    indices = encoded.indices
    codes = (pc.fill_null(indices, 0) if indices.null_count else indices).to_numpy()[rows]
    rank = _ranks(encoded.dictionary)
    return rank[codes], codes, encoded.dictionary, rank


def _dictionary_column(codes: np.ndarray, dictionary: pa.Array) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.array(codes), dictionary)


def _java_order(
    g: np.ndarray, t: np.ndarray, b: np.ndarray, q: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The stable permutation putting rows in (group, ``MessageQueue``) Java order, from the rank
    columns, and in that order: each row's group rank, a (group, topic) pair number that changes
    exactly where the pair does, the queue ids, and whether each row equals the one before. One
    integer sort when the ranks pack into 63 bits (the sorted columns then unpacked from the
    sorted keys, read in order), else a lexicographic sort.

    >>> order, gs, pair, qs, same = _java_order(*(np.array(x) for x in ([0, 1, 0], [0, 0, 0], [0, 0, 0], [4, 3, 4])))
    >>> order.tolist(), gs.tolist(), pair.tolist(), qs.tolist(), same.tolist()  # rows 0 and 2 are one queue
    ([0, 2, 1], [0, 0, 1], [0, 0, 1], [4, 4, 3], [True, False])
    """
    widths = [int(x.max()) + 1 if len(x) else 1 for x in (g, t, b)]
    q_lo = int(q.min())
    q_span = int(q.max()) - q_lo + 1
    total = widths[0] * widths[1] * widths[2] * q_span
    if total < 2**63:
        key = (((g * widths[1] + t) * widths[2] + b) * q_span + (q - q_lo)).astype(np.uint64)
        order = _core.key_order(key).astype(np.int64)  # a radix sort
        keys = key[order].astype(np.int64)
        pair = keys // (widths[2] * q_span)
        return order, pair // widths[1], pair, keys % q_span + q_lo, keys[1:] == keys[:-1]
    order = np.lexsort((q, b, t, g))
    gs, ts, bs, qs = g[order], t[order], b[order], q[order]
    new_pair = (gs[1:] != gs[:-1]) | (ts[1:] != ts[:-1])
    pair = np.concatenate([[0], np.cumsum(new_pair)])
    return order, gs, pair, qs, ~new_pair & (bs[1:] == bs[:-1]) & (qs[1:] == qs[:-1])


def assign_queue_tables(queues: pa.Table, consumers: pa.Table, plan: _Plan) -> pa.Table:
    """Owner of every queue row of ``queues`` (many groups) among ``consumers``; see
    :func:`queue_assigner`."""
    return _assign(queues, np.arange(queues.num_rows), consumers, plan)


def _assign(table: pa.Table, rows: np.ndarray, consumers: pa.Table, plan: _Plan) -> pa.Table:
    """:func:`assign_queue_tables` over the queue rows at positions ``rows`` of ``table`` (its
    other rows ignored): the queues are copied once, into the output."""
    c = plan.columns
    if len(rows) == 0:
        return table.take(pa.array(rows, pa.int64())).append_column(c.client_id, pa.nulls(0, pa.string()))
    groups = _str_column(table, c.group, rows)
    topics = _str_column(table, c.topic, rows)
    brokers = _str_column(table, c.broker_name, rows)
    qcol = _str_column(table, c.queue_id, rows)
    qids = (pc.fill_null(qcol, 0) if qcol.null_count else qcol).to_numpy(zero_copy_only=False)[rows].astype(np.int64)
    g_rank, g_codes, g_names, g_name_rank = _codes(groups, rows)
    t_rank, t_codes, t_dict, _ = _codes(topics, rows)
    b_rank, b_codes, b_dict, _ = _codes(brokers, rows)
    # Java order (group, then MessageQueue order): the output order, and (group, topic) pairs contiguous.
    order, gs, pair, qs, same = _java_order(g_rank, t_rank, b_rank, qids)
    new_pair = pair[1:] != pair[:-1]
    if same.any():
        at = int(order[int(np.argmax(same))])
        k = int(rows[at])
        raise ColumnError(
            f"duplicated queue in columns {', '.join(map(repr, c.keys))}: group {groups[k].as_py()!r}, "
            f"topic {topics[k].as_py()!r}, broker {brokers[k].as_py()!r}, queue id {int(qids[at])}",
            c.queue_id,
        )
    starts = np.concatenate([[0], np.flatnonzero(new_pair) + 1, [len(order)]])
    # Each pair's group, as a position in the queues' group dictionary.
    by_rank = np.empty(len(g_name_rank), dtype=np.int64)
    by_rank[g_name_rank] = np.arange(len(g_name_rank))
    pair_group = by_rank[gs[starts[:-1]]]
    group_names: list[str] = g_names.to_pylist()
    # Consumers by group position, each group's ids a range of one Arrow column, in their own
    # order (the strategies sort ids themselves): no Python string per consumer.
    ids, id_start, id_stop = _ids_by_group(consumers, c, g_names)
    pair_start, pair_stop = id_start[pair_group], id_stop[pair_group]
    taken = pa.array(rows[order])
    t_sorted, b_sorted = _dictionary_column(t_codes[order], t_dict), _dictionary_column(b_codes[order], b_dict)
    prev = None if c.previous is None else table.column(c.previous).combine_chunks().take(taken)
    owner = np.full(len(order), -1, dtype=np.int64)
    specs = (
        [plan.default] * len(pair_group)
        if not plan.by_group
        else [plan.by_group.get(group_names[k], plan.default) for k in pair_group.tolist()]
    )
    built: dict[int, Any] = {}
    batch_pairs: list[int] = []
    for k, spec in enumerate(specs):
        if pair_start[k] == pair_stop[k]:  # nobody consumes the group here
            continue
        if spec.info.batchable:
            batch_pairs.append(k)
            continue
        lo, hi = int(starts[k]), int(starts[k + 1])
        mine = owners(
            spec.build(),
            t_sorted[lo:hi],
            b_sorted[lo:hi],
            qs[lo:hi],
            ids.slice(int(pair_start[k]), int(pair_stop[k] - pair_start[k])).to_pylist(),
            previous=None if prev is None or not spec.info.needs_previous else prev[lo:hi],
        )
        owner[lo:hi] = np.where(mine >= 0, mine + pair_start[k], -1)
    if batch_pairs:
        chosen = np.asarray(batch_pairs, dtype=np.int64)
        sizes = starts[chosen + 1] - starts[chosen]
        every = len(chosen) == len(pair_group)
        picked = (
            np.arange(len(order))
            if every
            else np.repeat(starts[chosen] - np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes)
            + np.arange(int(sizes.sum()))
        )
        bounds = np.concatenate([[0], np.cumsum(sizes)])
        strategies = []
        for k in batch_pairs:
            spec = specs[k]
            if id(spec) not in built:
                built[id(spec)] = spec.build()
            strategies.append(built[id(spec)])
        owner[picked] = owners_by_pair_in_column(
            t_sorted if every else t_sorted.take(pa.array(picked)),
            b_sorted if every else b_sorted.take(pa.array(picked)),
            qs if every else qs[picked],
            bounds,
            strategies,
            ids,
            pair_start[chosen],
            pair_stop[chosen],
        )
    # Owner positions in the id column -> client ids (null where nobody consumes).
    client = ids.take(pa.array(np.maximum(owner, 0), mask=owner < 0))
    # The output in Java order: the key strings decoded from their small dictionaries (a take
    # from the whole column, at random rows, costs several times more), other columns taken.
    decoded = {c.group: _dictionary_column(g_codes[order], g_names), c.topic: t_sorted, c.broker_name: b_sorted}
    columns = [
        decoded[name].dictionary_decode() if name in decoded else table.column(name).combine_chunks().take(taken)
        for name in table.column_names
    ]
    return pa.Table.from_arrays(columns, schema=table.schema).append_column(c.client_id, client)


def _ids_by_group(consumers: pa.Table, c: QueueColumns, names: pa.Array) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """The client ids of the consumers whose group is in ``names``, grouped by that position (each
    group's ids in their own order), and group ``k``'s range ``start[k]:stop[k]`` in them."""
    at = pc.index_in(_str_column(consumers, c.group), value_set=names)
    client_ids = _str_column(consumers, c.client_id)
    known = np.flatnonzero(at.is_valid().to_numpy(zero_copy_only=False))  # a group with queues here
    group = pc.fill_null(at, 0).to_numpy(zero_copy_only=False)[known].astype(np.int64)
    by_group = known[np.argsort(group, kind="stable")]
    counts = np.bincount(group, minlength=len(names))
    stop = np.cumsum(counts)
    return client_ids.take(pa.array(by_group, pa.int64())), stop - counts, stop
