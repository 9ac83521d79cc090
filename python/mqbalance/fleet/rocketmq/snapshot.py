"""Fleet snapshots: what operators export from a RocketMQ deployment, validated and typed.

A snapshot is either one JSON file or a directory of Parquet tables (for large fleets). Both load
into the same :class:`Snapshot`: four Arrow tables inside, typed views outside
(:meth:`Snapshot.consumer_groups`, :meth:`Snapshot.readable_routes`). Nothing is dropped silently:
every problem is a :class:`SnapshotError` naming the file and the field.

JSON layout (``TopicRouteData`` per topic as the name server returns it; per group the consumer
connections as ``mqadmin consumerConnection`` shows them)::

    {
      "topics": {
        "TopicOrders": {
          "brokerDatas": [{"cluster": "c1", "brokerName": "broker-a", "brokerAddrs": {"0": "10.0.0.1:10911"}}],
          "queueDatas": [{"brokerName": "broker-a", "readQueueNums": 8, "writeQueueNums": 8, "perm": 6}]
        }
      },
      "groups": {
        "cg-orders": {
          "messageModel": "CLUSTERING",                 # or BROADCASTING
          "subscriptions": ["TopicOrders"],
          "strategy": "AVG",                            # the group's default; a name or
                                                        # {"name": "CONSISTENT_HASH", "virtualNodeCnt": 10}
          "consumeridcs": ["hz"],                       # optional: the rooms of its MACHINE_ROOM clients
                                                        # that lack them (a live snapshot never has them)
          "connections": [
            {"clientId": "10.0.0.7@4711#1718000000001", "clientAddr": "10.0.0.7:53122",
             "language": "JAVA", "version": 453, "strategy": "AVG_BY_CIRCLE"},  # per-client override
            {"clientId": "10.0.0.8@4712#1718000000002", "strategy": {"reported": "RoomAllocator"}}
                                                        # kept as the client reported it, not computed
          ]
        }
      }
    }

A live snapshot (``mqbalance snapshot --namesrv``, :mod:`mqbalance.fleet.rocketmq.live`) adds two optional
top-level lists: ``offsets`` (committed offsets: ``{"group", "topic", "brokerName", "queueId",
"offset"}``) and ``errors`` (what could not be read: ``{"broker", "address", "request", "error"}``,
e.g. a broker that did not answer) — and ``lagTimes`` (lag seconds: ``{"group", "topic",
"brokerName", "queueId", "committed", "maxOffset", "storeTimestamp", "state", "readAt"}`` per
queue whose offsets were read, ``state`` ``"none"`` and no ``storeTimestamp`` for one without lag,
:mod:`mqbalance.fleet.rocketmq.lag_time`). Files without them read as before.

Parquet layout (a directory): ``queue_data.parquet`` (topic, broker_name, read_queue_nums,
write_queue_nums, perm), ``connections.parquet`` (group, client_id, client_addr, language, version,
message_model, strategy, virtual_node_cnt, consumer_idcs: list of str, charset, epsilon,
strategy_reported: bool, optional), ``subscriptions.parquet`` (group, topic); optional
``brokers.parquet`` (topic, cluster, broker_name, broker_id, address),
``offsets.parquet`` (group, topic, broker_name, queue_id, offset), ``errors.parquet`` (broker_name,
address, request, error) and ``lag_times.parquet`` (group, topic, broker_name, queue_id, committed,
max_offset, store_ms, state, read_at_ms).

Strategies are read by the registry, :meth:`mqbalance.allocation.registry.StrategySpec.parse` with
``use=Use.FLEET_AUDIT``: a name of :func:`~mqbalance.allocation.registry.names_for` ``(Use.FLEET_AUDIT)``,
alone or in an object with the parameters its :data:`~mqbalance.allocation.registry.REGISTRY` entry
takes; any other is refused with the registry's reason (a snapshot does not carry a client's
configured queue list, nor a group's previous assignment). A strategy a client reported that a fleet
audit cannot compute is written ``{"reported": name}`` (:class:`ReportedStrategy`): its group is not
computed.

>>> from mqbalance.fleet.rocketmq.from_json import snapshot_from_dict
>>> snap = snapshot_from_dict({"topics": {"T": {"queueDatas": [
...     {"brokerName": "b", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6}]}},
...     "groups": {"g": {"subscriptions": ["T"], "connections": [{"clientId": "c1"}, {"clientId": "c1"}]}}})
>>> snap.readable_routes(), snap.consumer_groups()["g"].duplicated_ids
({'T': [('b', 4)]}, ['c1'])
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mqbalance import _core
from mqbalance._validate import check_memory
from mqbalance.allocation.columns import string_buffers
from mqbalance.allocation.registry import REGISTRY, StrategyName, StrategySpec, Use
from mqbalance.exceptions import MQBalanceError, SnapshotError, UnsupportedStrategyError
from mqbalance.fleet.rocketmq.checks import field_error

__all__ = [
    "Connection",
    "ConsumerGroup",
    "MessageModel",
    "PAIR_SCHEMA",
    "PERM_READ",
    "ROUTE_TYPE",
    "ReportedStrategy",
    "Snapshot",
    "SnapshotStrategy",
]


PERM_READ = 4  # PermName.PERM_READ


#: A topic's readable route: its queue data ``[{broker_name, read_queue_nums}]`` sorted by broker.
ROUTE_TYPE = pa.list_(pa.struct([("broker_name", pa.string()), ("read_queue_nums", pa.int64())]))


#: One row per subscribed (group, topic) with the topic's readable route (:meth:`Snapshot.pair_table`).
PAIR_SCHEMA = pa.schema([("group", pa.string()), ("topic", pa.string()), ("route", ROUTE_TYPE)])


class MessageModel(enum.StrEnum):
    """``MessageModel``: clustering groups share the queues, broadcasting groups each read all."""

    CLUSTERING = "CLUSTERING"
    BROADCASTING = "BROADCASTING"


SCHEMAS = {
    "queue_data": pa.schema(
        [
            ("topic", pa.string()),
            ("broker_name", pa.string()),
            ("read_queue_nums", pa.int64()),
            ("write_queue_nums", pa.int64()),
            ("perm", pa.int64()),
        ]
    ),
    "connections": pa.schema(
        [
            ("group", pa.string()),
            ("client_id", pa.string()),
            ("client_addr", pa.string()),
            ("language", pa.string()),
            ("version", pa.int64()),
            ("message_model", pa.string()),
            ("strategy", pa.string()),
            ("virtual_node_cnt", pa.int64()),
            ("consumer_idcs", pa.list_(pa.string())),
            ("charset", pa.string()),
            ("epsilon", pa.float64()),
            ("strategy_reported", pa.bool_()),
        ]
    ),
    "subscriptions": pa.schema([("group", pa.string()), ("topic", pa.string())]),
    "brokers": pa.schema(
        [
            ("topic", pa.string()),
            ("cluster", pa.string()),
            ("broker_name", pa.string()),
            ("broker_id", pa.int64()),
            ("address", pa.string()),
        ]
    ),
    "offsets": pa.schema(
        [
            ("group", pa.string()),
            ("topic", pa.string()),
            ("broker_name", pa.string()),
            ("queue_id", pa.int64()),
            ("offset", pa.int64()),
        ]
    ),
    "errors": pa.schema(
        [("broker_name", pa.string()), ("address", pa.string()), ("request", pa.string()), ("error", pa.string())]
    ),
    "lag_times": pa.schema(
        [
            ("group", pa.string()),
            ("topic", pa.string()),
            ("broker_name", pa.string()),
            ("queue_id", pa.int64()),
            ("committed", pa.int64()),
            ("max_offset", pa.int64()),
            ("store_ms", pa.int64()),
            ("state", pa.string()),
            ("read_at_ms", pa.int64()),
        ]
    ),
}


#: tables a snapshot may lack (files written before them, hand-made snapshots)
OPTIONAL_TABLES = ("brokers", "offsets", "errors", "lag_times")


REQUIRED = {
    "queue_data": tuple(SCHEMAS["queue_data"].names),
    "connections": ("group", "client_id", "strategy"),
    "subscriptions": ("group", "topic"),
    "brokers": (),
    "offsets": ("group", "topic", "broker_name", "queue_id", "offset"),
    "errors": ("error",),
    "lag_times": ("group", "topic", "broker_name", "queue_id", "committed", "max_offset", "state", "read_at_ms"),
}


@dataclass(frozen=True, slots=True)
class ReportedStrategy:
    """A strategy a client reported that a fleet audit cannot compute, kept as reported: a custom
    ``AllocateMessageQueueStrategy`` class (its simple name), ``CONFIG`` (its queue list is not in the
    running info), ``MACHINE_ROOM_NEARBY`` (the running info names neither its inner strategy nor its
    machine room resolver), or one that needs what a snapshot lacks (``STICKY``). A group with such a
    client is not computed (:attr:`ConsumerGroup.unknown_settings`): never audited as another strategy.
    A JSON snapshot writes it ``{"reported": "<name>"}``; the Parquet layout, the name in ``strategy``
    with ``strategy_reported`` true.

    >>> ReportedStrategy("CONFIG").why  # doctest: +NORMALIZE_WHITESPACE
    "CONFIG's queue list is not in a client's running info (and CONFIG gives every consumer the same fixed list)"
    >>> ReportedStrategy("RoomAwareAllocator").display_name
    'RoomAwareAllocator'
    """

    reported: str

    @property
    def display_name(self) -> str:
        return self.reported

    @property
    def why(self) -> str:
        """Why the snapshot cannot compute it, for people."""
        name = self.reported
        if name.upper().startswith(StrategyName.MACHINE_ROOM_NEARBY.value):
            return (
                "a client's running info names neither MACHINE_ROOM_NEARBY's inner strategy nor its machine room "
                "resolver (the client's own code)"
            )
        if name.upper() == StrategyName.CONFIG.value:
            return (
                "CONFIG's queue list is not in a client's running info (and CONFIG gives every consumer the "
                "same fixed list)"
            )
        try:
            spec = StrategySpec.parse(name)
        except MQBalanceError:
            return "not a strategy mqbalance knows (a custom AllocateMessageQueueStrategy?)"
        return spec.info.refusal(Use.FLEET_AUDIT) or "a fleet audit cannot compute it"

    @property
    def unknown_settings(self) -> str:
        """What the snapshot lacks to compute it (:attr:`StrategySpec.unknown_settings`): all of it."""
        return f"strategy {self.reported} as reported: {self.why}"

    def to_config(self) -> dict[str, Any]:
        """The JSON snapshot's spelling."""
        return {"reported": self.reported}


#: a connection's strategy in a snapshot: one to compute, or one kept as a client reported it
SnapshotStrategy = StrategySpec | ReportedStrategy


@dataclass(frozen=True, slots=True)
class Connection:
    """One consumer process's connection: its client id and the strategy it runs."""

    client_id: str
    strategy: SnapshotStrategy
    client_addr: str | None = None
    language: str | None = None
    version: int | None = None


@dataclass(frozen=True, slots=True)
class ConsumerGroup:
    """A consumer group: message model and connections in snapshot order (build it with
    :meth:`of`, or :meth:`from_columns`, which derive the rest once).

    >>> avg = StrategySpec.parse("AVG")
    >>> g = ConsumerGroup.of("g", MessageModel.CLUSTERING, (Connection("b", avg), Connection("a", avg),
    ...     Connection("b", avg)))
    >>> g.client_ids, g.duplicated_ids, g.distinct_id_count, g.id_counts
    (['b', 'a', 'b'], ['b'], 2, {'b': 2, 'a': 1})
    """

    name: str
    message_model: MessageModel
    connections: Sequence[Connection]
    #: ids used by more than one connection, sorted
    duplicated_ids: list[str] = field(default_factory=list, compare=False)
    #: the distinct strategies of the group's clients, in first-seen order
    strategies: list[SnapshotStrategy] = field(default_factory=list, compare=False)
    #: how many distinct client ids the connections use
    distinct_id_count: int = field(default=0, compare=False)
    #: a group built from columns: the snapshot's client-id column and this group's ``(start,
    #: stop)`` in it (what a fleet batch hands the core without a Python string per id)
    id_column: tuple[pa.Array, int, int] | None = field(default=None, compare=False, repr=False)
    _ids: list[str] | None = field(default=None, compare=False, repr=False)
    _counts: dict[str, int] | None = field(default=None, compare=False, repr=False)

    @property
    def client_ids(self) -> list[str]:
        """One id per connection (a duplicated id appears once per process using it); a group built
        from columns makes the list the first time it is asked for."""
        if self._ids is None:
            assert self.id_column is not None
            column, start, stop = self.id_column
            object.__setattr__(self, "_ids", column.slice(start, stop - start).to_pylist())
        assert self._ids is not None
        return self._ids

    @property
    def id_counts(self) -> dict[str, int]:
        """Connections per id."""
        if self._counts is None:
            ids = self.client_ids
            counts = dict.fromkeys(ids, 1) if not self.duplicated_ids else dict(Counter(ids))
            object.__setattr__(self, "_counts", counts)
        assert self._counts is not None
        return self._counts

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled as its connections (a group built from columns would otherwise carry the
        # snapshot's whole client-id column).
        return (ConsumerGroup.of, (self.name, self.message_model, tuple(self.connections)))

    @property
    def unknown_settings(self) -> list[str]:
        """What the snapshot lacks to compute this group's assignment, one entry per strategy of its
        clients that lacks settings (:attr:`StrategySpec.unknown_settings`); ``[]`` when it is
        computable. A broadcasting group consumes every queue whatever its strategy."""
        if self.message_model is MessageModel.BROADCASTING:
            return []
        return [text for spec in self.strategies if (text := spec.unknown_settings) is not None]

    @classmethod
    def from_columns(
        cls,
        name: str,
        message_model: MessageModel,
        client_ids: tuple[pa.Array, int, int],
        spec_codes: np.ndarray,
        specs: Sequence[SnapshotStrategy],
        details: pa.Table | None = None,
        *,
        distinct: int,
    ) -> ConsumerGroup:
        """The same group from columns (``client_ids``: the id column and the group's ``(start,
        stop)`` in it, a code into ``specs`` per connection, optionally ``client_addr, language,
        version``) and its ``distinct`` id count: no Python object per connection until one is
        asked for."""
        column, start, stop = client_ids
        duplicated: list[str] = []
        ids: list[str] | None = None
        if distinct != stop - start:  # rare: only then are the ids read here
            ids = column.slice(start, stop - start).to_pylist()
            duplicated = sorted(cid for cid, n in Counter(ids).items() if n > 1)
        if len(spec_codes) and not (spec_codes != spec_codes[0]).any():
            strategies = [specs[int(spec_codes[0])]]
        else:
            _, first = np.unique(spec_codes, return_index=True)
            strategies = [specs[int(spec_codes[i])] for i in sorted(first.tolist())]
        view = ConnectionColumns(column.slice(start, stop - start), spec_codes, specs, details)
        return cls(name, message_model, view, duplicated, strategies, distinct, client_ids, ids)

    @classmethod
    def of(cls, name: str, message_model: MessageModel, connections: tuple[Connection, ...]) -> ConsumerGroup:
        ids = [c.client_id for c in connections]
        counts = dict(Counter(ids))
        duplicated = sorted(cid for cid, n in counts.items() if n > 1)
        strategies: dict[int, SnapshotStrategy] = {}
        for c in connections:  # specs are shared objects: compare identities first
            strategies.setdefault(id(c.strategy), c.strategy)
        distinct = list(dict.fromkeys(strategies.values()))
        return cls(name, message_model, connections, duplicated, distinct, len(counts), None, ids, counts)


class ConnectionColumns(Sequence[Connection]):
    """A group's connections kept as columns; a :class:`Connection` is made when one is read.
    Compares equal to the tuple of the same connections."""

    __slots__ = ("_details", "_ids", "_codes", "_specs")

    def __init__(
        self,
        ids: list[str] | pa.Array,
        codes: np.ndarray,
        specs: Sequence[SnapshotStrategy],
        details: pa.Table | None = None,
    ) -> None:
        self._ids, self._codes, self._specs, self._details = ids, codes, specs, details

    def __len__(self) -> int:
        return len(self._ids)

    @overload
    def __getitem__(self, i: int) -> Connection: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[Connection, ...]: ...
    def __getitem__(self, i: int | slice) -> Connection | tuple[Connection, ...]:
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(len(self))))
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        spec = self._specs[int(self._codes[i])]
        if not isinstance(self._ids, list):  # an Arrow slice: made a list once, when first read
            self._ids = self._ids.to_pylist()
        cid = self._ids[i]
        if self._details is None:
            return Connection(cid, spec)
        addr, language, version = (self._details.column(k)[i].as_py() for k in ("client_addr", "language", "version"))
        return Connection(cid, spec, addr, language, version)

    def __iter__(self) -> Iterator[Connection]:
        return (self[i] for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (tuple, ConnectionColumns)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"ConnectionColumns({len(self)} connections)"


@dataclass(frozen=True)
class Snapshot:
    """A validated fleet snapshot: four Arrow tables (the Parquet layout) and typed views of them."""

    source: str
    queue_data: pa.Table
    connections: pa.Table
    subscriptions: pa.Table
    brokers: pa.Table
    #: per connection row: its strategy, as a code into ``_specs``
    _spec_codes: np.ndarray = field(repr=False, compare=False, default_factory=lambda: np.zeros(0, np.int32))
    _specs: tuple[SnapshotStrategy, ...] = field(repr=False, compare=False, default=())
    #: committed offsets (live snapshots): group, topic, broker_name, queue_id, offset
    offsets: pa.Table = field(default_factory=lambda: SCHEMAS["offsets"].empty_table())
    #: what a live snapshot could not read (a broker that did not answer ...): broker_name, address, request, error
    errors: pa.Table = field(default_factory=lambda: SCHEMAS["errors"].empty_table())
    #: lag seconds (live snapshots, :mod:`mqbalance.fleet.rocketmq.lag_time`): per queue read,
    #: committed and max offsets, the store time of the oldest unconsumed message, how it is known
    #: and when it was read
    lag_times: pa.Table = field(default_factory=lambda: SCHEMAS["lag_times"].empty_table())

    def error_lines(self) -> list[str]:
        """The snapshot's recorded read errors, one line each (``[]`` for a complete snapshot)."""
        e = self.errors.to_pydict()
        return [
            f"{b or a or 'name server'}: {r}: {m}" if r else f"{b or a or 'name server'}: {m}"
            for b, a, r, m in zip(e["broker_name"], e["address"], e["request"], e["error"])
        ]

    @property
    def groups(self) -> list[str]:
        """Every group name (with connections or subscriptions), sorted."""
        distinct = (pc.unique(t.column("group")).to_pylist() for t in (self.connections, self.subscriptions))
        return sorted(set().union(*distinct))

    @cached_property
    def _index(self) -> GroupIndex:
        return GroupIndex.from_snapshot(self, details=True)

    def consumer_groups(self) -> GroupIndex:
        """Every group with connections, by name: a read-only mapping that builds a group the first
        time it is looked up (:class:`GroupIndex`)."""
        return self._index

    def group_index(self) -> GroupIndex:
        """The groups as compact columns that build a :class:`ConsumerGroup` on demand: what
        travels to Spark executors (a million connections pickle as a few Arrow buffers)."""
        return GroupIndex.from_snapshot(self)

    def subscription_pairs(self) -> list[tuple[str, str]]:
        """Every subscribed (group, topic), in snapshot order."""
        s = self.subscriptions
        return list(zip(s.column("group").to_pylist(), s.column("topic").to_pylist()))

    def pair_table(self) -> pa.Table:
        """``(group, topic, route)`` (:data:`PAIR_SCHEMA`) for every subscribed topic that has a
        readable queue, in subscription order (:attr:`route_table` joined by topic, no object per
        row): what the assignment engine expands, and what travels to Spark executors."""
        routes = self.route_table
        subs = self.subscriptions
        at = pc.index_in(subs.column("topic"), value_set=routes.column("topic").combine_chunks())
        known = pc.is_valid(at)
        return pa.table(
            [
                subs.column("group").filter(known).combine_chunks(),
                subs.column("topic").filter(known).combine_chunks(),
                routes.column("route").combine_chunks().take(pc.drop_null(at).combine_chunks()),
            ],
            schema=PAIR_SCHEMA,
        )

    @cached_property
    def route_table(self) -> pa.Table:
        """``(topic, route)``, one row per topic with a readable queue, sorted by topic; ``route``
        is its readable queue data ``[{broker_name, read_queue_nums}]`` sorted by broker: what a
        client's subscribe info holds (READ permission, at least one queue). Built with Arrow
        kernels (a 10^8-queue fleet has millions of queue data rows)."""
        q = self.queue_data
        readable = pc.and_(
            pc.not_equal(pc.bit_wise_and(q.column("perm"), PERM_READ), 0), pc.greater(q.column("read_queue_nums"), 0)
        )
        rows = (
            q.filter(readable)
            .select(["topic", "broker_name", "read_queue_nums"])
            .sort_by([("topic", "ascending"), ("broker_name", "ascending")])
            .combine_chunks()
        )
        topics = rows.column("topic").chunk(0) if rows.num_rows else pa.array([], pa.string())
        starts = np.flatnonzero(value_changes(topics))
        offsets = pa.array(np.append(starts, rows.num_rows).astype(np.int32))
        entries = pa.StructArray.from_arrays(
            [
                rows.column("broker_name").combine_chunks() if rows.num_rows else pa.array([], pa.string()),
                rows.column("read_queue_nums").combine_chunks() if rows.num_rows else pa.array([], pa.int64()),
            ],
            names=["broker_name", "read_queue_nums"],
        )
        route = pa.ListArray.from_arrays(offsets, entries).cast(ROUTE_TYPE)
        return pa.table({"topic": topics.take(pa.array(starts)), "route": route})

    def readable_routes(self) -> dict[str, list[tuple[str, int]]]:
        """Per topic, its readable queue data ``(broker_name, read_queue_nums)`` sorted by broker
        (:attr:`route_table` as Python objects)."""
        t = self.route_table
        return {
            topic: [(e["broker_name"], e["read_queue_nums"]) for e in route]
            for topic, route in zip(t.column("topic").to_pylist(), t.column("route").to_pylist())
        }

    def readable_topics(self) -> set[str]:
        """The topics with a readable queue."""
        return set(self.route_table.column("topic").to_pylist())

    def readable_queue_count(self) -> int:
        q = self.queue_data
        readable = pc.and_(
            pc.not_equal(pc.bit_wise_and(q.column("perm"), PERM_READ), 0), pc.greater(q.column("read_queue_nums"), 0)
        )
        return int(pc.sum(pc.if_else(readable, q.column("read_queue_nums"), 0)).as_py() or 0)

    def to_arrow(self) -> dict[str, pa.Table]:
        """The four tables by name (the Parquet layout)."""
        return {name: getattr(self, name) for name in SCHEMAS}


class GroupIndex(Mapping[str, ConsumerGroup]):
    """A read-only mapping group name → :class:`ConsumerGroup`, kept as columns (connections sorted
    by group, snapshot order within a group) and the distinct strategies; a group is built the first
    time it is looked up.

    >>> from mqbalance.fleet.rocketmq.from_json import snapshot_from_dict
    >>> snap = snapshot_from_dict({"topics": {}, "groups": {"g": {"subscriptions": [], "connections": [
    ...     {"clientId": "b"}, {"clientId": "a", "strategy": "AVG_BY_CIRCLE"}]}}})
    >>> index = snap.group_index()
    >>> index["g"] == snap.consumer_groups()["g"], index.size("g"), len(index)
    (True, 2, 1)
    """

    def __init__(
        self,
        bounds: dict[str, tuple[int, int, str, int]],
        client_ids: pa.Array,
        spec_codes: np.ndarray,
        specs: list[SnapshotStrategy],
        details: pa.Table | None = None,
    ) -> None:
        self._bounds, self._ids, self._codes, self._specs = bounds, client_ids, spec_codes, specs
        self._details = details
        self._built: dict[str, ConsumerGroup] = {}

    @classmethod
    def from_snapshot(cls, snapshot: Snapshot, *, details: bool = False) -> GroupIndex:
        """The snapshot's groups; ``details`` keeps each connection's address, language and version
        (what :meth:`Snapshot.consumer_groups` shows; executors do without)."""
        c = snapshot.connections
        groups = c.column("group").combine_chunks()
        n = len(groups)
        starts = np.flatnonzero(value_changes(groups)) if n else np.zeros(0, dtype=np.int64)
        names = groups.take(pa.array(starts)).to_pylist()
        if len(set(names)) == len(names):  # each group's rows already together (a JSON snapshot): no sort
            order = None
        else:
            order = pc.sort_indices(c, sort_keys=[("group", "ascending")])  # stable
            groups = groups.take(order)
            starts = np.flatnonzero(value_changes(groups)) if n else np.zeros(0, dtype=np.int64)
            names = groups.take(pa.array(starts)).to_pylist()
        stops = np.append(starts[1:], n)
        models = (
            c.column("message_model")
            .combine_chunks()
            .take(pa.array(starts if order is None else order.take(pa.array(starts))))
        )

        def ordered(column: Any) -> Any:
            return (column if order is None else column.take(order)).combine_chunks()

        ids = ordered(c.column("client_id"))
        distinct = _core.distinct_ids(
            *string_buffers(ids, "client_ids"), starts.astype(np.int64), stops[: len(starts)].astype(np.int64)
        ).tolist()
        runs = sorted(zip(names, starts.tolist(), stops.tolist(), models.to_pylist(), distinct))
        bounds = {g: (a, b, m, d) for g, a, b, m, d in runs}

        codes = (
            (snapshot._spec_codes if order is None else snapshot._spec_codes[order.to_numpy()])
            if n
            else np.zeros(0, dtype=np.int32)
        )
        kept = ordered(c.select(["client_addr", "language", "version"])) if details else None
        return cls(bounds, ids, codes, list(snapshot._specs), kept)

    def __getitem__(self, name: str) -> ConsumerGroup:
        group = self._built.get(name)
        if group is None:
            start, stop, model, distinct = self._bounds[name]
            details = None if self._details is None else self._details.slice(start, stop - start)
            group = ConsumerGroup.from_columns(
                name,
                MessageModel(model),
                (self._ids, start, stop),
                self._codes[start:stop],
                self._specs,
                details,
                distinct=distinct,
            )
            self._built[name] = group
        return group

    def __contains__(self, name: object) -> bool:
        return name in self._bounds

    def __iter__(self) -> Iterator[str]:
        return iter(self._bounds)

    def __len__(self) -> int:
        return len(self._bounds)

    def size(self, name: str) -> int:
        """Connections of ``name`` (without building it)."""
        start, stop, _, _ = self._bounds[name]
        return stop - start

    def __getstate__(self) -> dict[str, Any]:
        return {"bounds": self._bounds, "ids": self._ids, "codes": self._codes, "specs": self._specs}  # no details

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["bounds"], state["ids"], state["codes"], state["specs"])  # type: ignore[misc]


def value_changes(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """``True`` where a value differs from the one before (the first row always starts a run): the
    fleet's one change detection, for runs of groups, topics and queues in sorted tables."""
    col = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    n = len(col)
    out = np.ones(n, dtype=bool)
    if n > 1:
        out[1:] = pc.fill_null(pc.not_equal(col.slice(1), col.slice(0, n - 1)), True).to_numpy(zero_copy_only=False)
    return out


def strategy_codes(specs: Sequence[SnapshotStrategy]) -> tuple[np.ndarray, tuple[SnapshotStrategy, ...]]:
    """One code per row into the distinct specs (shared objects: identities compared first)."""
    code_of: dict[int, int] = {}
    distinct: list[SnapshotStrategy] = []
    codes = np.empty(len(specs), dtype=np.int32)
    for i, spec in enumerate(specs):
        code = code_of.get(id(spec))
        if code is None:
            code = code_of[id(spec)] = len(distinct)
            distinct.append(spec)
        codes[i] = code
    return codes, tuple(distinct)


#: Memory per readable queue to audit a snapshot on Spark: the driver holds the pairs, routes and
#: groups and a few fact rows per pair, the tasks slices of at most 10^6 queues (measured, Python
#: driver: 2.4 GiB at 3×10^7 queues, 3.4 GiB at 10^8: 36-80 bytes a queue). What a snapshot must
#: fit to load at all (the whole assignment table in memory needs more:
#: :func:`mqbalance.fleet.rocketmq.assignment.check_assignable`).
QUEUE_BYTES = 96


def check_read_queue_budget(source: str, read_queue_nums: list[Any], perms: list[Any]) -> None:
    """Refuse, before anything is built, a snapshot whose readable queues would not fit in memory."""
    check_queue_budget(source, sum(n for n, p in zip(read_queue_nums, perms) if p & PERM_READ and n > 0))


def check_queue_budget(source: str, total: int, per_queue: int = QUEUE_BYTES) -> None:
    """Refuse (:class:`SnapshotError`) ``total`` readable queues of ``source`` when ``per_queue``
    bytes each would not fit in the memory budget (:func:`mqbalance._validate.check_memory`)."""
    try:
        check_memory(f"{source}: readable queues (sum of readQueueNums)", total, total * per_queue)
    except MQBalanceError as e:
        raise SnapshotError(str(e), total) from None


def computable(spec: SnapshotStrategy) -> StrategySpec:
    """``spec`` to compute, or :class:`~mqbalance.exceptions.UnsupportedStrategyError` for a
    :class:`ReportedStrategy` (the assignment engine skips the groups that have one)."""
    if isinstance(spec, ReportedStrategy):
        raise UnsupportedStrategyError(f"{spec.unknown_settings}: not computed", spec.reported)
    return spec


def reported_strategy(name: Any, where: str) -> ReportedStrategy:
    """``name`` as a :class:`ReportedStrategy`, checked: a non-empty str that a fleet audit cannot
    compute as it stands (a computable name is written as the strategy itself)."""
    if not isinstance(name, str) or not name:
        raise field_error(
            f"{where}.reported", f"expected the reported strategy name (a non-empty str), got {name!r}", name
        )
    try:
        auditable_strategy(name, where)
    except SnapshotError:
        return ReportedStrategy(name)
    raise field_error(
        f"{where}.reported",
        f"{name!r} is a strategy a fleet audit computes: give it as the strategy, not as reported",
        name,
    )


def snapshot_strategy(config: Any, where: str) -> SnapshotStrategy:
    """A connection's strategy as a snapshot gives it: ``{"reported": name}`` (:func:`reported_strategy`)
    or a strategy to compute (:func:`auditable_strategy`)."""
    if isinstance(config, ReportedStrategy):
        return config
    if isinstance(config, Mapping) and "reported" in config:
        extra = sorted(set(config) - {"reported"})
        if extra:
            raise field_error(
                where, f"a reported strategy takes no other field, got {', '.join(map(repr, extra))}", extra
            )
        return reported_strategy(config["reported"], where)
    return auditable_strategy(config, where)


def auditable_strategy(config: Any, where: str) -> StrategySpec:
    """The strategy a snapshot names, checked: it exists, its parameters build, it has owners."""
    try:
        spec = StrategySpec.parse(config, where=where, use=Use.FLEET_AUDIT)
        spec.build()
    except MQBalanceError as e:
        message = str(e)
        raise SnapshotError(message if message.startswith(where) else f"{where}: {message}", e.value) from None
    return spec


#: the strategy columns of the Parquet layout's connections table (:func:`strategy_columns`)
STRATEGY_COLUMNS = ("strategy", "virtual_node_cnt", "consumer_idcs", "charset", "epsilon", "strategy_reported")


def strategy_columns(
    spec: SnapshotStrategy,
) -> tuple[str, int | None, list[str] | None, str | None, float | None, bool | None]:
    """``(strategy, virtual_node_cnt, consumer_idcs, charset, epsilon, strategy_reported)`` of the
    Parquet layout (:data:`STRATEGY_COLUMNS`); ``strategy_reported`` is true for a
    :class:`ReportedStrategy`, null otherwise (files written before the column read as null)."""
    if isinstance(spec, ReportedStrategy):
        return spec.reported, None, None, None, None, True
    params = spec.inner or spec
    idcs = None if params.consumer_idcs is None else list(params.consumer_idcs)
    return spec.display_name, params.virtual_node_cnt, idcs, params.charset, params.epsilon, None


def spec_from_columns(
    name: Any, vnodes: Any, idcs: Any, charset: Any, where: str, epsilon: Any = None, reported: Any = None
) -> SnapshotStrategy:
    if not isinstance(name, str) or not name:
        raise field_error(where, f"expected a non-empty str, got {name!r}", name)
    if reported is not None and not isinstance(reported, bool):
        raise field_error(f"{where}_reported", f"expected a bool or null, got {reported!r}", reported)
    if reported:
        return reported_strategy(name, where)
    if isinstance(idcs, str):  # files written before the list column: comma-joined
        idcs = [s for s in idcs.split(",") if s]
    config: dict[str, Any] = {"name": name}
    for key, value in (("virtualNodeCnt", vnodes), ("consumeridcs", idcs), ("charset", charset), ("epsilon", epsilon)):
        if value is not None:
            config[key] = value
    # A column set for another strategy of the fleet is not a parameter of this one.
    try:
        kind = StrategySpec.parse(name, where=where)
    except MQBalanceError as e:
        raise SnapshotError(str(e), e.value) from None
    takes = set(REGISTRY[(kind.inner or kind).name].params)
    return auditable_strategy({k: v for k, v in config.items() if k == "name" or k in takes}, where)


def table_of(name: str, columns: Mapping[str, list[Any]]) -> pa.Table:
    return pa.table({c: pa.array(columns[c], type=t) for c, t in zip(SCHEMAS[name].names, SCHEMAS[name].types)})
