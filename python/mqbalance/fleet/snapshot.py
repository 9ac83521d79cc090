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
          "connections": [
            {"clientId": "10.0.0.7@4711#1718000000001", "clientAddr": "10.0.0.7:53122",
             "language": "JAVA", "version": 453, "strategy": "AVG_BY_CIRCLE"}   # per-client override
          ]
        }
      }
    }

A live snapshot (``mqbalance snapshot --namesrv``, :mod:`mqbalance.fleet.live`) adds two optional
top-level lists: ``offsets`` (committed offsets: ``{"group", "topic", "brokerName", "queueId",
"offset"}``) and ``errors`` (what could not be read: ``{"broker", "address", "request", "error"}``,
e.g. a broker that did not answer). Files without them read as before.

Parquet layout (a directory): ``queue_data.parquet`` (topic, broker_name, read_queue_nums,
write_queue_nums, perm), ``connections.parquet`` (group, client_id, client_addr, language, version,
message_model, strategy, virtual_node_cnt, consumer_idcs: list of str, charset, epsilon), ``subscriptions.parquet``
(group, topic); optional ``brokers.parquet`` (topic, cluster, broker_name, broker_id, address),
``offsets.parquet`` (group, topic, broker_name, queue_id, offset) and ``errors.parquet`` (broker_name,
address, request, error).

Strategies are read by the registry, :meth:`mqbalance.allocation.registry.StrategySpec.parse` with
``use=Use.FLEET_AUDIT``: a name of :func:`~mqbalance.allocation.registry.names_for` ``(Use.FLEET_AUDIT)``,
alone or in an object with the parameters its :data:`~mqbalance.allocation.registry.REGISTRY` entry
takes; any other is refused with the registry's reason (a snapshot does not carry a client's
configured queue list, nor a group's previous assignment).

>>> snap = snapshot_from_dict({"topics": {"T": {"queueDatas": [
...     {"brokerName": "b", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6}]}},
...     "groups": {"g": {"subscriptions": ["T"], "connections": [{"clientId": "c1"}, {"clientId": "c1"}]}}})
>>> snap.readable_routes(), snap.consumer_groups()["g"].duplicated_ids
({'T': [('b', 4)]}, ['c1'])
"""

from __future__ import annotations

import enum
import json
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from mqbalance._validate import check_memory
from mqbalance.allocation.registry import REGISTRY, StrategySpec, Use
from mqbalance.exceptions import MQBalanceError, SnapshotError

__all__ = [
    "PAIR_SCHEMA",
    "PERM_READ",
    "ROUTE_TYPE",
    "Connection",
    "ConsumerGroup",
    "MessageModel",
    "Snapshot",
    "SnapshotError",
    "load_snapshot",
    "snapshot_from_dict",
    "write_parquet",
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
}
#: tables a snapshot may lack (files written before them, hand-made snapshots)
OPTIONAL_TABLES = ("brokers", "offsets", "errors")
REQUIRED = {
    "queue_data": tuple(SCHEMAS["queue_data"].names),
    "connections": ("group", "client_id", "strategy"),
    "subscriptions": ("group", "topic"),
    "brokers": (),
    "offsets": ("group", "topic", "broker_name", "queue_id", "offset"),
    "errors": ("error",),
}


@dataclass(frozen=True, slots=True)
class Connection:
    """One consumer process's connection: its client id and the strategy it runs."""

    client_id: str
    strategy: StrategySpec
    client_addr: str | None = None
    language: str | None = None
    version: int | None = None


@dataclass(frozen=True, slots=True)
class ConsumerGroup:
    """A consumer group: message model and connections in snapshot order (build it with
    :meth:`of`, which derives the rest once)."""

    name: str
    message_model: MessageModel
    connections: tuple[Connection, ...]
    #: one id per connection (a duplicated id appears once per process using it)
    client_ids: list[str] = field(default_factory=list, compare=False)
    #: ids used by more than one connection, sorted
    duplicated_ids: list[str] = field(default_factory=list, compare=False)
    #: the distinct strategies of the group's clients, in first-seen order
    strategies: list[StrategySpec] = field(default_factory=list, compare=False)
    #: connections per id
    id_counts: dict[str, int] = field(default_factory=dict, compare=False)

    @classmethod
    def from_columns(
        cls,
        name: str,
        message_model: MessageModel,
        client_ids: list[str],
        spec_codes: np.ndarray,
        specs: Sequence[StrategySpec],
        details: pa.Table | None = None,
    ) -> ConsumerGroup:
        """The same group from columns (ids, a code into ``specs`` per connection, optionally
        ``client_addr, language, version``): no object per connection until one is asked for."""
        counts = Counter(client_ids)
        duplicated = sorted(cid for cid, n in counts.items() if n > 1)
        _, first = np.unique(spec_codes, return_index=True)
        distinct = [specs[int(spec_codes[i])] for i in sorted(first.tolist())]
        view = ConnectionColumns(client_ids, spec_codes, specs, details)
        return cls(name, message_model, view, client_ids, duplicated, distinct, dict(counts))  # type: ignore[arg-type]

    @classmethod
    def of(cls, name: str, message_model: MessageModel, connections: tuple[Connection, ...]) -> ConsumerGroup:
        ids = [c.client_id for c in connections]
        counts = dict(Counter(ids))
        duplicated = sorted(cid for cid, n in counts.items() if n > 1)
        strategies: dict[int, StrategySpec] = {}
        for c in connections:  # specs are shared objects: compare identities first
            strategies.setdefault(id(c.strategy), c.strategy)
        distinct = list(dict.fromkeys(strategies.values()))
        return cls(name, message_model, connections, ids, duplicated, distinct, counts)


class ConnectionColumns(Sequence[Connection]):
    """A group's connections kept as columns; a :class:`Connection` is made when one is read.
    Compares equal to the tuple of the same connections."""

    __slots__ = ("_details", "_ids", "_codes", "_specs")

    def __init__(
        self, ids: list[str], codes: np.ndarray, specs: Sequence[StrategySpec], details: pa.Table | None = None
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
        if self._details is None:
            return Connection(self._ids[i], spec)
        addr, language, version = (self._details.column(k)[i].as_py() for k in ("client_addr", "language", "version"))
        return Connection(self._ids[i], spec, addr, language, version)

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
    _specs: tuple[StrategySpec, ...] = field(repr=False, compare=False, default=())
    #: committed offsets (live snapshots): group, topic, broker_name, queue_id, offset
    offsets: pa.Table = field(default_factory=lambda: SCHEMAS["offsets"].empty_table())
    #: what a live snapshot could not read (a broker that did not answer ...): broker_name, address, request, error
    errors: pa.Table = field(default_factory=lambda: SCHEMAS["errors"].empty_table())

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
        names = set(self.connections.column("group").to_pylist()) | set(self.subscriptions.column("group").to_pylist())
        return sorted(names)

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
        starts = np.flatnonzero(_changes(topics))
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

    >>> snap = snapshot_from_dict({"topics": {}, "groups": {"g": {"subscriptions": [], "connections": [
    ...     {"clientId": "b"}, {"clientId": "a", "strategy": "AVG_BY_CIRCLE"}]}}})
    >>> index = snap.group_index()
    >>> index["g"] == snap.consumer_groups()["g"], index.size("g"), len(index)
    (True, 2, 1)
    """

    def __init__(
        self,
        bounds: dict[str, tuple[int, int, str]],
        client_ids: pa.Array,
        spec_codes: np.ndarray,
        specs: list[StrategySpec],
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
        order = pc.sort_indices(c, sort_keys=[("group", "ascending")])  # stable
        groups = c.column("group").take(order).combine_chunks()
        models = c.column("message_model").take(order).combine_chunks()
        n = len(groups)
        starts = np.flatnonzero(_changes(groups)) if n else np.zeros(0, dtype=np.int64)
        stops = np.append(starts[1:], n)
        at = pa.array(starts)
        bounds = {
            g: (int(a), int(b), m)
            for g, a, b, m in zip(groups.take(at).to_pylist(), starts, stops, models.take(at).to_pylist())
        }
        codes = snapshot._spec_codes[order.to_numpy()] if n else np.zeros(0, dtype=np.int32)
        kept = c.select(["client_addr", "language", "version"]).take(order).combine_chunks() if details else None
        return cls(bounds, c.column("client_id").take(order).combine_chunks(), codes, list(snapshot._specs), kept)

    def __getitem__(self, name: str) -> ConsumerGroup:
        group = self._built.get(name)
        if group is None:
            start, stop, model = self._bounds[name]
            ids = self._ids.slice(start, stop - start).to_pylist()
            details = None if self._details is None else self._details.slice(start, stop - start)
            group = ConsumerGroup.from_columns(
                name, MessageModel(model), ids, self._codes[start:stop], self._specs, details
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
        start, stop, _ = self._bounds[name]
        return stop - start

    def __getstate__(self) -> dict[str, Any]:
        return {"bounds": self._bounds, "ids": self._ids, "codes": self._codes, "specs": self._specs}  # no details

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["bounds"], state["ids"], state["codes"], state["specs"])  # type: ignore[misc]


def _changes(column: pa.Array) -> np.ndarray:
    """``True`` where a value differs from the one before (the first row always starts a run)."""
    n = len(column)
    out = np.ones(n, dtype=bool)
    if n > 1:
        out[1:] = pc.fill_null(pc.not_equal(column.slice(1), column.slice(0, n - 1)), True).to_numpy(
            zero_copy_only=False
        )
    return out


def _spec_codes(specs: Sequence[StrategySpec]) -> tuple[np.ndarray, tuple[StrategySpec, ...]]:
    """One code per row into the distinct specs (shared objects: identities compared first)."""
    code_of: dict[int, int] = {}
    distinct: list[StrategySpec] = []
    codes = np.empty(len(specs), dtype=np.int32)
    for i, spec in enumerate(specs):
        code = code_of.get(id(spec))
        if code is None:
            code = code_of[id(spec)] = len(distinct)
            distinct.append(spec)
        codes[i] = code
    return codes, tuple(distinct)


def _err(where: str, message: str, value: Any = None) -> SnapshotError:
    return SnapshotError(f"{where}: {message}", value)


def _get(obj: Any, key: str, kind: type | tuple[type, ...], where: str, *, optional: bool = False) -> Any:
    if not isinstance(obj, dict):
        shown = repr(obj) if len(repr(obj)) <= 60 else repr(obj)[:57] + "..."
        raise _err(where, f"expected an object, got {type(obj).__name__} {shown}", obj)
    if key not in obj or obj[key] is None:
        if optional:
            return None
        raise _err(where, f"missing field {key!r}", key)
    value = obj[key]
    if (isinstance(value, bool) and kind is not bool) or not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise _err(f"{where}.{key}", f"expected {names}, got {value!r}", value)
    if isinstance(value, str):
        _unicode(value, f"{where}.{key}")
    return value


def _unicode(text: str, where: str) -> str:
    """``text`` if it encodes as UTF-8 (what Arrow and every file format need); a lone surrogate
    (which JSON's ``\\ud800`` escapes can produce) is refused by name."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise _err(where, f"not valid Unicode (a lone surrogate?): {text!r}", text) from None
    return text


#: Memory per readable queue to audit a snapshot on Spark: the driver holds the pairs, routes and
#: groups and a few fact rows per pair, the tasks slices of at most 10^6 queues (measured, Python
#: driver: 2.4 GiB at 3×10^7 queues, 3.4 GiB at 10^8: 36-80 bytes a queue). What a snapshot must
#: fit to load at all (the whole assignment table in memory needs more:
#: :func:`mqbalance.fleet.engine.check_assignable`).
QUEUE_BYTES = 96


def _java_int(value: Any, where: str, *, count: bool) -> Any:
    """``value`` (already an int or None) within Java's ``int`` range, and ``>= 0`` for a count."""
    if value is None:
        return None
    if count and value < 0:
        raise _err(where, f"must be >= 0, got {value}", value)
    if not -(2**31) <= value <= 2**31 - 1:
        raise _err(where, f"must be within Java's int range (-2147483648..2147483647), got {value}", value)
    return value


def _check_queue_budget(source: str, read_queue_nums: list[Any], perms: list[Any]) -> None:
    """Refuse, before anything is built, a snapshot whose readable queues would not fit in memory."""
    check_queue_budget(source, sum(n for n, p in zip(read_queue_nums, perms) if p & PERM_READ and n > 0))


def check_queue_budget(source: str, total: int, per_queue: int = QUEUE_BYTES) -> None:
    """Refuse (:class:`SnapshotError`) ``total`` readable queues of ``source`` when ``per_queue``
    bytes each would not fit in the memory budget (:func:`mqbalance._validate.check_memory`)."""
    try:
        check_memory(f"{source}: readable queues (sum of readQueueNums)", total, total * per_queue)
    except MQBalanceError as e:
        raise SnapshotError(str(e), total) from None


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise SnapshotError(f"duplicate key {key!r}", key)
            seen.add(key)
    return out


def auditable_strategy(config: Any, where: str) -> StrategySpec:
    """The strategy a snapshot names, checked: it exists, its parameters build, it has owners."""
    try:
        spec = StrategySpec.parse(config, where=where, use=Use.FLEET_AUDIT)
        spec.build()
    except MQBalanceError as e:
        message = str(e)
        raise SnapshotError(message if message.startswith(where) else f"{where}: {message}", e.value) from None
    return spec


def _strategy_columns(spec: StrategySpec) -> tuple[str, int | None, list[str] | None, str | None, float | None]:
    """``(strategy, virtual_node_cnt, consumer_idcs, charset, epsilon)`` of the Parquet layout."""
    params = spec.inner or spec
    idcs = None if params.consumer_idcs is None else list(params.consumer_idcs)
    return spec.display_name, params.virtual_node_cnt, idcs, params.charset, params.epsilon


def _spec_from_columns(
    name: Any, vnodes: Any, idcs: Any, charset: Any, where: str, epsilon: Any = None
) -> StrategySpec:
    if not isinstance(name, str) or not name:
        raise _err(where, f"expected a non-empty str, got {name!r}", name)
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


def _table(name: str, columns: Mapping[str, list[Any]]) -> pa.Table:
    return pa.table({c: pa.array(columns[c], type=t) for c, t in zip(SCHEMAS[name].names, SCHEMAS[name].types)})


def snapshot_from_dict(data: Any, source: str = "<snapshot>") -> Snapshot:
    """Validate and normalise a JSON snapshot already parsed into Python objects.

    Validated by columns: each field of every entry is gathered into one list and checked with
    Arrow kernels (types, ranges, duplicates), strategies parsed once per distinct configuration;
    when a column has anything wrong (or unusual), the entry-by-entry check runs instead, which
    names the first bad value and where it is."""
    if not isinstance(source, str):
        raise SnapshotError(f"source must be a str naming where the snapshot came from, got {source!r}", source)
    topics = _get(data, "topics", dict, source)
    queue_data = _columnar_queue_data(topics)
    if queue_data is None or _has_broker_datas(topics):
        qd, br = _queue_rows(topics, source)
        queue_data, brokers = _table("queue_data", qd), _table("brokers", br)
    else:
        brokers = SCHEMAS["brokers"].empty_table()
    readable = pc.and_(
        pc.not_equal(pc.bit_wise_and(queue_data.column("perm"), PERM_READ), 0),
        pc.greater(queue_data.column("read_queue_nums"), 0),
    )
    check_queue_budget(source, pc.sum(pc.if_else(readable, queue_data.column("read_queue_nums"), 0)).as_py() or 0)
    groups = _get(data, "groups", dict, source)
    fast = _columnar_groups(groups)
    if fast is None:
        cn, sb, specs = _group_rows(groups, source)
        connections, subscriptions = _table("connections", cn), _table("subscriptions", sb)
        codes, distinct = _spec_codes(specs)
    else:
        connections, subscriptions, codes, distinct = fast
    of, er = _extra_rows(data, source)
    return Snapshot(
        source,
        queue_data,
        connections,
        subscriptions,
        brokers,
        codes,
        distinct,
        _table("offsets", of),
        _table("errors", er),
    )


def _has_broker_datas(topics: dict[Any, Any]) -> bool:
    return any(type(route) is dict and route.get("brokerDatas") for route in topics.values())


def _queue_rows(topics: dict[Any, Any], source: str) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
    """The queue data and broker rows of ``topics``, checked entry by entry (the first bad value raises)."""
    qd: dict[str, list[Any]] = {c: [] for c in SCHEMAS["queue_data"].names}
    br: dict[str, list[Any]] = {c: [] for c in SCHEMAS["brokers"].names}
    for topic, route in topics.items():
        where = f"{source}: topics[{topic!r}]"
        _unicode(topic, where)
        seen_brokers = set()
        for k, q in enumerate(_get(route, "queueDatas", list, where)):
            w = f"{where}.queueDatas[{k}]"
            broker = _get(q, "brokerName", str, w)
            if broker in seen_brokers:
                raise _err(w, f"broker {broker!r} appears twice in the topic's queue data", broker)
            seen_brokers.add(broker)
            nums = [_get(q, f, int, w) for f in ("readQueueNums", "writeQueueNums", "perm")]
            for f, v in zip(("readQueueNums", "writeQueueNums", "perm"), nums):
                _java_int(v, f"{w}.{f}", count=f != "perm")
            for c, v in zip(qd, (topic, broker, *nums)):
                qd[c].append(v)
        for k, b in enumerate(_get(route, "brokerDatas", list, where, optional=True) or []):
            w = f"{where}.brokerDatas[{k}]"
            name = _get(b, "brokerName", str, w)
            cluster = _get(b, "cluster", str, w, optional=True)
            for bid, addr in (_get(b, "brokerAddrs", dict, w, optional=True) or {}).items():
                wb = f"{w}.brokerAddrs[{bid!r}]"
                if not isinstance(bid, str) or not bid.strip().lstrip("-").isdigit():
                    raise _err(wb, f'the key must be a broker id (an integer, like "0"), got {bid!r}', bid)
                if not isinstance(addr, str):
                    raise _err(wb, f"expected an address str, got {addr!r}", addr)
                _unicode(addr, wb)
                broker_id = _java_int(int(bid), wb, count=False)
                for c, v in zip(br, (topic, cluster, name, broker_id, addr)):
                    br[c].append(v)
    _check_queue_budget(source, qd["read_queue_nums"], qd["perm"])
    return qd, br


def _group_rows(
    groups: dict[Any, Any], source: str
) -> tuple[dict[str, list[Any]], dict[str, list[Any]], list[StrategySpec]]:
    """The connection and subscription rows of ``groups`` and each connection's strategy, checked
    entry by entry (the first bad value raises)."""
    cn: dict[str, list[Any]] = {c: [] for c in SCHEMAS["connections"].names}
    sb: dict[str, list[Any]] = {c: [] for c in SCHEMAS["subscriptions"].names}
    specs: list[StrategySpec] = []
    for group, g in groups.items():
        where = f"{source}: groups[{group!r}]"
        _unicode(group, where)
        model = _get(g, "messageModel", str, where, optional=True) or "CLUSTERING"
        if model not in MessageModel.__members__:
            raise _err(f"{where}.messageModel", f"expected CLUSTERING or BROADCASTING, got {model!r}", model)
        subs = _get(g, "subscriptions", list, where)
        if len(set(map(str, subs))) != len(subs):
            raise _err(f"{where}.subscriptions", "a topic is listed twice", subs)
        for k, t in enumerate(subs):
            if not isinstance(t, str):
                raise _err(f"{where}.subscriptions[{k}]", f"expected str, got {t!r}", t)
            _unicode(t, f"{where}.subscriptions[{k}]")
            sb["group"].append(group)
            sb["topic"].append(t)
        default = g.get("strategy", "AVG")
        group_spec: StrategySpec | None = None
        for k, conn in enumerate(_get(g, "connections", list, where)):
            w = f"{where}.connections[{k}]"
            if isinstance(conn, dict) and "strategy" in conn:
                spec = auditable_strategy(conn["strategy"], f"{w}.strategy")
            else:
                group_spec = group_spec or auditable_strategy(default, f"{w}.strategy")
                spec = group_spec
            client_id = _get(conn, "clientId", str, w)
            if client_id == "":
                raise _err(f"{w}.clientId", "must not be empty", "")
            row = (
                group,
                client_id,
                _get(conn, "clientAddr", str, w, optional=True),
                _get(conn, "language", str, w, optional=True),
                _java_int(_get(conn, "version", int, w, optional=True), f"{w}.version", count=False),
                model,
                *_strategy_columns(spec),
            )
            for c, v in zip(cn, row):
                cn[c].append(v)
            specs.append(spec)
    return cn, sb, specs


def _extra_rows(data: dict[str, Any], source: str) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
    """The optional ``offsets`` and ``errors`` rows of a live snapshot, checked entry by entry."""
    of: dict[str, list[Any]] = {c: [] for c in SCHEMAS["offsets"].names}
    for k, o in enumerate(_get(data, "offsets", list, source, optional=True) or []):
        w = f"{source}: offsets[{k}]"
        row_o = (
            _get(o, "group", str, w),
            _get(o, "topic", str, w),
            _get(o, "brokerName", str, w),
            _get(o, "queueId", int, w),
            _get(o, "offset", int, w),
        )
        for c, v in zip(of, row_o):
            of[c].append(v)
    er: dict[str, list[Any]] = {c: [] for c in SCHEMAS["errors"].names}
    for k, e in enumerate(_get(data, "errors", list, source, optional=True) or []):
        w = f"{source}: errors[{k}]"
        row_e = (
            _get(e, "broker", str, w, optional=True),
            _get(e, "address", str, w, optional=True),
            _get(e, "request", str, w, optional=True),
            _get(e, "error", str, w),
        )
        for c, v in zip(er, row_e):
            er[c].append(v)
    return of, er


#: What the columnar checks catch and hand over to the entry-by-entry ones.
_COLUMN_PROBLEMS = (
    pa.ArrowException,
    OverflowError,
    UnicodeEncodeError,
    TypeError,
    ValueError,
    KeyError,
    AttributeError,
)
_JAVA_INT = (-(2**31), 2**31 - 1)


def _column(values: list[Any], kind: pa.DataType, *, nulls: bool = False) -> pa.Array:
    """``values`` as one Arrow column of ``kind`` (``pa.string()`` or ``pa.int64()``), never coerced:
    a value of another Python type (a bool or float for an int, bytes for a str), a lone surrogate
    or (unless ``nulls``) a ``None`` raises (one of :data:`_COLUMN_PROBLEMS`)."""
    allowed: set[type] = {str if kind == pa.string() else int}
    if nulls:
        allowed.add(type(None))
    if not set(map(type, values)) <= allowed:
        raise TypeError(f"a column of {kind} with other values")
    return pa.array(values, kind)


def _java_ints(array: pa.Array, low: int, high: int) -> None:
    if len(array) > array.null_count:
        bounds = pc.min_max(array)
        if not low <= bounds["min"].as_py() <= bounds["max"].as_py() <= high:
            raise ValueError("out of range")


def _columnar_queue_data(topics: dict[Any, Any]) -> pa.Table | None:
    """The queue data of ``topics`` checked by columns; ``None`` when any entry is wrong or unusual
    (:func:`_queue_rows` then names it)."""
    try:
        per_topic = [route["queueDatas"] for route in topics.values()]
        if not all(type(datas) is list for datas in per_topic):
            return None
        flat = [q for datas in per_topic for q in datas]
        if not all(type(q) is dict for q in flat):
            return None
        counts = np.fromiter(map(len, per_topic), dtype=np.int64, count=len(per_topic))
        names = _column(list(topics), pa.string())
        topic = names.take(pa.array(np.repeat(np.arange(len(per_topic)), counts)))
        broker = _column([q.get("brokerName") for q in flat], pa.string())
        nums = [_column([q.get(f) for q in flat], pa.int64()) for f in ("readQueueNums", "writeQueueNums", "perm")]
        for array, low in zip(nums, (0, 0, _JAVA_INT[0])):
            _java_ints(array, low, _JAVA_INT[1])
        table = pa.Table.from_arrays([topic, broker, *nums], schema=SCHEMAS["queue_data"])
    except _COLUMN_PROBLEMS:
        return None
    return table if _distinct(table, ["topic", "broker_name"]) else None


def _columnar_groups(
    groups: dict[Any, Any],
) -> tuple[pa.Table, pa.Table, np.ndarray, tuple[StrategySpec, ...]] | None:
    """``(connections, subscriptions, strategy codes, specs)`` of ``groups`` checked by columns,
    each distinct strategy configuration parsed once; ``None`` when any entry is wrong or unusual
    (:func:`_group_rows` then names it)."""
    try:
        names = list(groups)
        values = list(groups.values())
        if not all(type(g) is dict for g in values):
            return None
        group_names = _column(names, pa.string())
        raw_models = [g.get("messageModel") for g in values]
        if not all(m is None or type(m) is str for m in raw_models):
            return None
        models = [m or "CLUSTERING" for m in raw_models]
        if not all(m in MessageModel.__members__ for m in models):
            return None
        subs = [g["subscriptions"] for g in values]
        conns = [g["connections"] for g in values]
        if not all(type(x) is list for x in subs) or not all(type(x) is list for x in conns):
            return None
        sub_counts = np.fromiter(map(len, subs), dtype=np.int64, count=len(subs))
        subscriptions = pa.Table.from_arrays(
            [
                group_names.take(pa.array(np.repeat(np.arange(len(names)), sub_counts))),
                _column([t for ts in subs for t in ts], pa.string()),
            ],
            schema=SCHEMAS["subscriptions"],
        )
        if not _distinct(subscriptions, ["group", "topic"]):
            return None
        counts = np.fromiter(map(len, conns), dtype=np.int64, count=len(conns))
        flat = [c for cs in conns for c in cs]
        if not all(type(c) is dict for c in flat):
            return None
        of_row = np.repeat(np.arange(len(names)), counts)
        ids = _column([c.get("clientId") for c in flat], pa.string())
        if len(ids) and pc.any(pc.equal(ids, "")).as_py():
            return None
        addr, language = (
            _column([c.get(f) for c in flat], pa.string(), nulls=True) for f in ("clientAddr", "language")
        )
        version = _column([c.get("version") for c in flat], pa.int64(), nulls=True)
        _java_ints(version, *_JAVA_INT)
        # Strategies: the group's default for connections without their own, one parse per distinct config.
        parsed: dict[str, int] = {}
        specs: list[StrategySpec] = []

        def code(config: Any) -> int:
            key = json.dumps(config, sort_keys=True)
            if key not in parsed:
                spec = StrategySpec.parse(config, use=Use.FLEET_AUDIT)
                spec.build()
                if spec not in specs:
                    specs.append(spec)
                parsed[key] = specs.index(spec)
            return parsed[key]

        # A group with connections has its default parsed (one without: left alone, as entry by entry).
        defaults = np.array(
            [code(g.get("strategy", "AVG")) if n else -1 for g, n in zip(values, counts.tolist())], dtype=np.int32
        )
        codes = defaults[of_row]
        for i, c in enumerate(flat):
            if "strategy" in c:
                codes[i] = code(c["strategy"])
    except (MQBalanceError, *_COLUMN_PROBLEMS):
        return None
    distinct = tuple(specs)
    per_spec: list[tuple[Any, ...]] = list(zip(*(_strategy_columns(spec) for spec in distinct))) or [()] * 5
    at = pa.array(codes)
    at_group = pa.array(of_row)
    columns: dict[str, Any] = {
        "group": group_names.take(at_group),
        "client_id": ids,
        "client_addr": addr,
        "language": language,
        "version": version,
        "message_model": pa.array(models, pa.string()).take(at_group),
    }
    for c, canonical in zip(("strategy", "virtual_node_cnt", "consumer_idcs", "charset", "epsilon"), per_spec):
        columns[c] = pa.array(list(canonical), SCHEMAS["connections"].field(c).type).take(at)
    connections = pa.Table.from_arrays(
        [columns[c] for c in SCHEMAS["connections"].names], schema=SCHEMAS["connections"]
    )
    return connections, subscriptions, codes, distinct


def _read_arrow(path: Path, name: str) -> pa.Table:
    """A snapshot table as stored, its required columns checked."""
    if not path.exists():
        raise _err(str(path), "missing table", str(path))
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as e:
        raise _err(str(path), f"not a readable Parquet file: {_first_line(e)}", str(path)) from None
    for c in REQUIRED[name]:
        if c not in table.column_names:
            raise _err(str(path), f"missing column {c!r}", c)
    return table


def _columns_of(table: pa.Table, name: str) -> dict[str, list[Any]]:
    """The table as Python lists, one per column of the layout (``None`` where a column is absent)."""
    names = set(table.column_names)
    return {c: table.column(c).to_pylist() if c in names else [None] * table.num_rows for c in SCHEMAS[name].names}


_NULL_KEY = "\x00null\x00"


def _columnar_tables(
    source: str, raw: dict[str, pa.Table]
) -> tuple[pa.Table, pa.Table, pa.Table, np.ndarray, tuple[StrategySpec, ...]] | None:
    """The three tables validated and normalised with Arrow kernels, no Python object per row:
    ``(queue_data, connections, subscriptions, strategy codes, specs)``; ``None`` when a row is bad
    or a column has a type this path does not read (the row-by-row path then raises or reads it)."""
    qd, cn, sb = raw["queue_data"], raw["connections"], raw["subscriptions"]

    def strings(table: pa.Table, column: str, *, empty: bool = True) -> bool:
        col = table.column(column)
        if not pa.types.is_string(col.type) or col.null_count:
            return False
        return empty or not pc.any(pc.equal(col, "")).as_py()

    def ints(table: pa.Table, column: str, low: int, high: int) -> bool:
        col = table.column(column)
        if not pa.types.is_integer(col.type) or col.null_count:
            return False
        if not len(col):
            return True
        bounds = pc.min_max(col)
        return bool(low <= bounds["min"].as_py() and bounds["max"].as_py() <= high)

    java = (-(2**31), 2**31 - 1)
    if not (
        strings(qd, "topic")
        and strings(qd, "broker_name")
        and ints(qd, "read_queue_nums", 0, java[1])
        and ints(qd, "write_queue_nums", 0, java[1])
        and ints(qd, "perm", *java)
        and _distinct(qd, ["topic", "broker_name"])
    ):
        return None
    readable = pc.and_(
        pc.not_equal(pc.bit_wise_and(qd.column("perm"), PERM_READ), 0), pc.greater(qd.column("read_queue_nums"), 0)
    )
    check_queue_budget(
        f"{source}/queue_data.parquet", pc.sum(pc.if_else(readable, qd.column("read_queue_nums"), 0)).as_py() or 0
    )
    if not (strings(sb, "group") and strings(sb, "topic")):
        return None
    if not (strings(cn, "group", empty=False) and strings(cn, "client_id", empty=False)):
        return None
    n = cn.num_rows
    columns: dict[str, Any] = {
        c: cn.column(c) if c in cn.column_names else pa.nulls(n, t)
        for c, t in zip(SCHEMAS["connections"].names, SCHEMAS["connections"].types)
    }
    model = columns["message_model"]
    if not (pa.types.is_string(model.type) or pa.types.is_null(model.type)):
        return None
    model = pc.fill_null(model.cast(pa.string()), "CLUSTERING")
    model = pc.if_else(pc.equal(model, ""), "CLUSTERING", model)
    if not pc.all(pc.is_in(model, pa.array(list(MessageModel.__members__)))).as_py():
        return None
    columns["message_model"] = model
    keys = [_key_column(columns[c]) for c in ("strategy", "virtual_node_cnt", "consumer_idcs", "charset", "epsilon")]
    if any(k is None for k in keys):
        return None
    joined = pc.binary_join_element_wise(*keys, "\x1e", null_handling="replace", null_replacement=_NULL_KEY)
    encoded = pc.dictionary_encode(joined.combine_chunks() if isinstance(joined, pa.ChunkedArray) else joined)
    row_key = encoded.indices.to_numpy()
    _, first = np.unique(row_key, return_index=True)
    code_of_spec: dict[StrategySpec, int] = {}
    canonical = np.empty(len(encoded.dictionary), dtype=np.int32)
    for row in sorted(first.tolist()):
        values = [
            columns[c][row].as_py() for c in ("strategy", "virtual_node_cnt", "consumer_idcs", "charset", "epsilon")
        ]
        where = f"{source}/connections.parquet row {row}.strategy"
        spec = _spec_from_columns(values[0], values[1], values[2], values[3], where, values[4])
        canonical[row_key[row]] = code_of_spec.setdefault(spec, len(code_of_spec))
    specs = tuple(code_of_spec)
    codes = canonical[row_key]
    per_spec = list(zip(*(_strategy_columns(spec) for spec in specs)))
    at = pa.array(codes)
    for c, canonical_values in zip(("strategy", "virtual_node_cnt", "consumer_idcs", "charset", "epsilon"), per_spec):
        columns[c] = pa.array(list(canonical_values), SCHEMAS["connections"].field(c).type).take(at)
    try:
        connections = pa.table({c: columns[c] for c in SCHEMAS["connections"].names}).cast(SCHEMAS["connections"])
        queue_data = qd.select(SCHEMAS["queue_data"].names).cast(SCHEMAS["queue_data"])
        subscriptions = sb.select(SCHEMAS["subscriptions"].names).cast(SCHEMAS["subscriptions"])
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if not _distinct(subscriptions, ["group", "topic"]):
        return None
    return queue_data, connections, subscriptions, codes, specs


def _key_column(column: pa.ChunkedArray | pa.Array) -> pa.Array | pa.ChunkedArray | None:
    """A strategy parameter column as strings for keying (``None``: a type this path does not key)."""
    kind = column.type
    if pa.types.is_null(kind):
        return column.cast(pa.string())
    if pa.types.is_string(kind):
        return column
    if pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind):
        prefix = "i" if pa.types.is_integer(kind) else "f" if pa.types.is_floating(kind) else "b"
        return pc.binary_join_element_wise(prefix, column.cast(pa.string()), "")
    if pa.types.is_list(kind) and pa.types.is_string(kind.value_type):
        if pc.list_flatten(column).null_count:
            return None
        return pc.binary_join_element_wise("l", pc.binary_join(column, "\x1f"), "")
    return None


def _distinct(table: pa.Table, keys: list[str]) -> bool:
    """No two rows of ``table`` share ``keys``."""
    if table.num_rows == 0:
        return True
    counts = table.select(keys).group_by(keys, use_threads=False).aggregate([])
    return bool(counts.num_rows == table.num_rows)


def _read_parquet(path: Path, name: str) -> dict[str, list[Any]]:
    return _columns_of(_read_arrow(path, name), name)


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _check_types(where: str, checks: Iterable[tuple[str, Any, type]]) -> None:
    for name, v, kind in checks:
        if not isinstance(v, kind) or isinstance(v, bool):
            raise _err(f"{where}.{name}", f"expected {kind.__name__}, got {v!r}", v)


def _validate_tables(
    source: str, qd: dict[str, list[Any]], cn: dict[str, list[Any]], sb: dict[str, list[Any]]
) -> list[StrategySpec]:
    seen = set()
    for i, (topic, broker, r, w, p) in enumerate(zip(*qd.values())):
        where = f"{source}/queue_data.parquet row {i}"
        _check_types(
            where,
            (
                ("topic", topic, str),
                ("broker_name", broker, str),
                ("read_queue_nums", r, int),
                ("write_queue_nums", w, int),
                ("perm", p, int),
            ),
        )
        if r < 0 or w < 0:
            raise _err(where, f"queue counts must be >= 0, got read={r} write={w}", (r, w))
        _java_int(r, f"{where}.read_queue_nums", count=True)
        _java_int(w, f"{where}.write_queue_nums", count=True)
        _java_int(p, f"{where}.perm", count=False)
        if (topic, broker) in seen:
            raise _err(where, f"duplicate queue data for topic {topic!r} broker {broker!r}", (topic, broker))
        seen.add((topic, broker))
    _check_queue_budget(f"{source}/queue_data.parquet", qd["read_queue_nums"], qd["perm"])
    for i, (group, topic) in enumerate(zip(sb["group"], sb["topic"])):
        _check_types(f"{source}/subscriptions.parquet row {i}", (("group", group, str), ("topic", topic, str)))
    specs = []
    known: dict[tuple[Any, ...], tuple[StrategySpec, tuple[Any, ...]]] = {}
    for i in range(len(cn["group"])):
        for name in ("group", "client_id"):
            if not isinstance(cn[name][i], str) or not cn[name][i]:
                where = f"{source}/connections.parquet row {i}"
                raise _err(f"{where}.{name}", f"expected a non-empty str, got {cn[name][i]!r}", cn[name][i])
        model = cn["message_model"][i] or "CLUSTERING"
        if model not in MessageModel.__members__:
            where = f"{source}/connections.parquet row {i}"
            raise _err(f"{where}.message_model", f"expected CLUSTERING or BROADCASTING, got {model!r}", model)
        cn["message_model"][i] = model
        idcs = cn["consumer_idcs"][i]
        key = (
            cn["strategy"][i],
            cn["virtual_node_cnt"][i],
            tuple(idcs) if isinstance(idcs, list) else idcs,
            cn["charset"][i],
            cn["epsilon"][i],
        )
        if key not in known:  # one parse per distinct configuration
            where = f"{source}/connections.parquet row {i}"
            spec = _spec_from_columns(cn["strategy"][i], key[1], idcs, key[3], f"{where}.strategy", key[4])
            known[key] = (spec, _strategy_columns(spec))
        spec, columns = known[key]
        (
            cn["strategy"][i],
            cn["virtual_node_cnt"][i],
            cn["consumer_idcs"][i],
            cn["charset"][i],
            cn["epsilon"][i],
        ) = columns
        specs.append(spec)
    pairs = list(zip(sb["group"], sb["topic"]))
    if len(set(pairs)) != len(pairs):
        dup = next(p for p, n in Counter(pairs).items() if n > 1)
        raise _err(f"{source}/subscriptions.parquet", f"group {dup[0]!r} subscribes to {dup[1]!r} twice", dup)
    return specs


def load_snapshot(path: str | Path) -> Snapshot:
    """Load a JSON snapshot file or a Parquet snapshot directory."""
    if not isinstance(path, (str, Path)) or "\x00" in str(path):
        raise SnapshotError(f"a snapshot path must be a str or Path (without NUL), got {path!r}", path)
    p = Path(path)
    try:
        os.fsencode(p)
    except UnicodeEncodeError:
        raise SnapshotError(f"a snapshot path that no file system can hold: {path!r}", path) from None
    if p.is_dir():
        raw = {
            name: _read_arrow(p / f"{name}.parquet", name) for name in ("queue_data", "connections", "subscriptions")
        }
        extra = {
            name: _read_parquet(p / f"{name}.parquet", name)
            if (p / f"{name}.parquet").exists()
            else {c: [] for c in SCHEMAS[name].names}
            for name in OPTIONAL_TABLES
        }
        fast = _columnar_tables(str(p), raw)
        if fast is None:  # some row is bad (or of an unusual type): the row-by-row path names it
            qd, cn, sb = (_columns_of(raw[name], name) for name in ("queue_data", "connections", "subscriptions"))
            codes, specs = _spec_codes(_validate_tables(str(p), qd, cn, sb))
            tables = (_table("queue_data", qd), _table("connections", cn), _table("subscriptions", sb))
        else:
            *tables, codes, specs = fast  # type: ignore[assignment]
        return Snapshot(
            str(p),
            *tables,
            _table("brokers", extra["brokers"]),
            codes,
            specs,
            _table("offsets", extra["offsets"]),
            _table("errors", extra["errors"]),
        )
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise _err(str(p), f"cannot read: {e.strerror or e}", str(p)) from None
    except UnicodeDecodeError as e:
        bad = e.object[e.start : e.start + 1]
        message = f"not UTF-8 text (byte {e.start}: {bad!r}); a snapshot is a UTF-8 JSON file or a Parquet directory"
        raise _err(str(p), message, str(p)) from None
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except SnapshotError as e:
        raise _err(str(p), str(e), e.value) from None
    except (ValueError, RecursionError) as e:  # JSONDecodeError, a 5000-digit number, deep nesting
        raise _err(str(p), f"not valid JSON: {_first_line(e)}", str(p)) from None
    return snapshot_from_dict(data, str(p))


def write_parquet(snapshot: Snapshot, directory: str | Path) -> Path:
    """Write a snapshot in the Parquet layout."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    for name, table in snapshot.to_arrow().items():
        pq.write_table(table, d / f"{name}.parquet")
    return d
