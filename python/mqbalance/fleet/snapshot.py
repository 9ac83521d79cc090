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

Strategies are read by :meth:`mqbalance.registry.StrategySpec.parse` (``AVG``, ``AVG_BY_CIRCLE``,
``CONSISTENT_HASH`` with ``virtualNodeCnt``/``charset``, ``MACHINE_ROOM`` with ``consumeridcs``,
``MACHINE_ROOM_NEARBY-<inner>`` with rooms by the ``@`` prefix rule). ``CONFIG`` is refused: a
snapshot does not carry the client's configured queue list.

>>> snap = snapshot_from_dict({"topics": {"T": {"queueDatas": [
...     {"brokerName": "b", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6}]}},
...     "groups": {"g": {"subscriptions": ["T"], "connections": [{"clientId": "c1"}, {"clientId": "c1"}]}}})
>>> snap.readable_routes(), snap.consumer_groups()["g"].duplicated_ids
({'T': [('b', 4)]}, ['c1'])
"""

from __future__ import annotations

import enum
import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mqbalance.exceptions import MQBalanceError
from mqbalance.registry import REGISTRY, StrategySpec

__all__ = [
    "PERM_READ",
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


class SnapshotError(MQBalanceError, ValueError):
    """A snapshot that cannot be used; the message names the file and the field."""


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
    def of(cls, name: str, message_model: MessageModel, connections: tuple[Connection, ...]) -> ConsumerGroup:
        ids = [c.client_id for c in connections]
        counts = dict(Counter(ids))
        duplicated = sorted(cid for cid, n in counts.items() if n > 1)
        strategies: dict[int, StrategySpec] = {}
        for c in connections:  # specs are shared objects: compare identities first
            strategies.setdefault(id(c.strategy), c.strategy)
        distinct = list(dict.fromkeys(strategies.values()))
        return cls(name, message_model, connections, ids, duplicated, distinct, counts)


@dataclass(frozen=True)
class Snapshot:
    """A validated fleet snapshot: four Arrow tables (the Parquet layout) and typed views of them."""

    source: str
    queue_data: pa.Table
    connections: pa.Table
    subscriptions: pa.Table
    brokers: pa.Table
    _strategies: tuple[StrategySpec, ...] = field(repr=False, default=())
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
    def _groups(self) -> dict[str, ConsumerGroup]:
        c = self.connections.to_pydict()
        rows: dict[str, list[Connection]] = {}
        models: dict[str, MessageModel] = {}
        for i, g in enumerate(c["group"]):
            models.setdefault(g, MessageModel(c["message_model"][i]))
            rows.setdefault(g, []).append(
                Connection(
                    c["client_id"][i], self._strategies[i], c["client_addr"][i], c["language"][i], c["version"][i]
                )
            )
        return {g: ConsumerGroup.of(g, models[g], tuple(conns)) for g, conns in rows.items()}

    def consumer_groups(self) -> dict[str, ConsumerGroup]:
        """Every group with connections, by name."""
        return self._groups

    def group_index(self) -> GroupIndex:
        """The groups as compact columns that build a :class:`ConsumerGroup` on demand: what
        travels to Spark executors (a million connections pickle as a few Arrow buffers)."""
        return GroupIndex.from_snapshot(self)

    def subscription_pairs(self) -> list[tuple[str, str]]:
        """Every subscribed (group, topic), in snapshot order."""
        s = self.subscriptions
        return list(zip(s.column("group").to_pylist(), s.column("topic").to_pylist()))

    @cached_property
    def _routes(self) -> dict[str, list[tuple[str, int]]]:
        routes: dict[str, list[tuple[str, int]]] = {}
        q = self.queue_data.to_pydict()
        for t, b, n, p in zip(q["topic"], q["broker_name"], q["read_queue_nums"], q["perm"]):
            if p & PERM_READ and n > 0:
                routes.setdefault(t, []).append((b, n))
        return {t: sorted(r) for t, r in routes.items()}

    def readable_routes(self) -> dict[str, list[tuple[str, int]]]:
        """Per topic, its readable queue data ``(broker_name, read_queue_nums)`` sorted by broker:
        what a client's subscribe info holds (READ permission, at least one queue)."""
        return self._routes

    def readable_queue_count(self) -> int:
        return sum(n for route in self._routes.values() for _, n in route)

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
    ) -> None:
        self._bounds, self._ids, self._codes, self._specs = bounds, client_ids, spec_codes, specs
        self._built: dict[str, ConsumerGroup] = {}

    @classmethod
    def from_snapshot(cls, snapshot: Snapshot) -> GroupIndex:
        c = snapshot.connections
        order = pc.sort_indices(c, sort_keys=[("group", "ascending")]).to_numpy()  # stable
        groups = c.column("group").take(order).to_pylist()
        models = c.column("message_model").take(order).to_pylist()
        code_of: dict[int, int] = {}
        specs: list[StrategySpec] = []
        codes = np.empty(len(order), dtype=np.int32)
        per_row = snapshot._strategies
        for k, i in enumerate(order.tolist()):
            spec = per_row[i]
            code = code_of.get(id(spec))
            if code is None:
                code = code_of[id(spec)] = len(specs)
                specs.append(spec)
            codes[k] = code
        bounds: dict[str, tuple[int, int, str]] = {}
        for k, g in enumerate(groups):
            start = bounds[g][0] if g in bounds else k
            bounds[g] = (start, k + 1, models[k])
        return cls(bounds, c.column("client_id").take(order).combine_chunks(), codes, specs)

    def __getitem__(self, name: str) -> ConsumerGroup:
        group = self._built.get(name)
        if group is None:
            start, stop, model = self._bounds[name]
            ids = self._ids.slice(start, stop - start).to_pylist()
            specs = [self._specs[k] for k in self._codes[start:stop].tolist()]
            conns = tuple(Connection(cid, spec) for cid, spec in zip(ids, specs))
            group = self._built[name] = ConsumerGroup.of(name, MessageModel(model), conns)
        return group

    def __iter__(self) -> Iterator[str]:
        return iter(self._bounds)

    def __len__(self) -> int:
        return len(self._bounds)

    def size(self, name: str) -> int:
        """Connections of ``name`` (without building it)."""
        start, stop, _ = self._bounds[name]
        return stop - start

    def __getstate__(self) -> dict[str, Any]:
        return {"bounds": self._bounds, "ids": self._ids, "codes": self._codes, "specs": self._specs}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["bounds"], state["ids"], state["codes"], state["specs"])  # type: ignore[misc]


def _err(where: str, message: str, value: Any = None) -> SnapshotError:
    return SnapshotError(f"{where}: {message}", value)


def _get(obj: Any, key: str, kind: type | tuple[type, ...], where: str, *, optional: bool = False) -> Any:
    if not isinstance(obj, dict):
        raise _err(where, f"expected an object, got {type(obj).__name__}", obj)
    if key not in obj or obj[key] is None:
        if optional:
            return None
        raise _err(where, f"missing field {key!r}", key)
    value = obj[key]
    if (isinstance(value, bool) and kind is not bool) or not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise _err(f"{where}.{key}", f"expected {names}, got {value!r}", value)
    return value


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise SnapshotError(f"duplicate key {key!r}", key)
        out[key] = value
    return out


def auditable_strategy(config: Any, where: str) -> StrategySpec:
    """The strategy a snapshot names, checked: it exists, its parameters build, it has owners."""
    try:
        spec = StrategySpec.parse(config, where=where)
        if not REGISTRY[spec.name].has_owners:
            raise _err(
                where,
                "CONFIG cannot be audited: a snapshot does not carry the client's configured queue list",
                "CONFIG",
            )
        if REGISTRY[spec.name].needs_previous:
            raise _err(
                where,
                f"{spec.name.value} cannot be audited: it is computed by one party from the group's previous "
                "assignment, which a snapshot does not carry (clients run per-client strategies)",
                spec.name.value,
            )
        spec.build()
    except SnapshotError:
        raise
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
    """Validate and normalise a JSON snapshot already parsed into Python objects."""
    qd: dict[str, list[Any]] = {c: [] for c in SCHEMAS["queue_data"].names}
    br: dict[str, list[Any]] = {c: [] for c in SCHEMAS["brokers"].names}
    cn: dict[str, list[Any]] = {c: [] for c in SCHEMAS["connections"].names}
    sb: dict[str, list[Any]] = {c: [] for c in SCHEMAS["subscriptions"].names}
    specs: list[StrategySpec] = []
    topics = _get(data, "topics", dict, source)
    for topic, route in topics.items():
        where = f"{source}: topics[{topic!r}]"
        seen_brokers = set()
        for k, q in enumerate(_get(route, "queueDatas", list, where)):
            w = f"{where}.queueDatas[{k}]"
            broker = _get(q, "brokerName", str, w)
            if broker in seen_brokers:
                raise _err(w, f"broker {broker!r} appears twice in the topic's queue data", broker)
            seen_brokers.add(broker)
            nums = [_get(q, f, int, w) for f in ("readQueueNums", "writeQueueNums", "perm")]
            for f, v in zip(("readQueueNums", "writeQueueNums"), nums):
                if v < 0:
                    raise _err(f"{w}.{f}", f"must be >= 0, got {v}", v)
            for c, v in zip(qd, (topic, broker, *nums)):
                qd[c].append(v)
        for k, b in enumerate(_get(route, "brokerDatas", list, where, optional=True) or []):
            w = f"{where}.brokerDatas[{k}]"
            name = _get(b, "brokerName", str, w)
            cluster = _get(b, "cluster", str, w, optional=True)
            for bid, addr in (_get(b, "brokerAddrs", dict, w, optional=True) or {}).items():
                for c, v in zip(br, (topic, cluster, name, int(bid), addr)):
                    br[c].append(v)
    groups = _get(data, "groups", dict, source)
    for group, g in groups.items():
        where = f"{source}: groups[{group!r}]"
        model = _get(g, "messageModel", str, where, optional=True) or "CLUSTERING"
        if model not in MessageModel.__members__:
            raise _err(f"{where}.messageModel", f"expected CLUSTERING or BROADCASTING, got {model!r}", model)
        subs = _get(g, "subscriptions", list, where)
        if len(set(map(str, subs))) != len(subs):
            raise _err(f"{where}.subscriptions", "a topic is listed twice", subs)
        for k, t in enumerate(subs):
            if not isinstance(t, str):
                raise _err(f"{where}.subscriptions[{k}]", f"expected str, got {t!r}", t)
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
                _get(conn, "version", int, w, optional=True),
                model,
                *_strategy_columns(spec),
            )
            for c, v in zip(cn, row):
                cn[c].append(v)
            specs.append(spec)
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
    return Snapshot(
        source,
        _table("queue_data", qd),
        _table("connections", cn),
        _table("subscriptions", sb),
        _table("brokers", br),
        tuple(specs),
        _table("offsets", of),
        _table("errors", er),
    )


def _read_parquet(path: Path, name: str) -> dict[str, list[Any]]:
    import pyarrow.parquet as pq

    if not path.exists():
        raise _err(str(path), "missing table", str(path))
    table = pq.read_table(path)
    names = set(table.column_names)
    for c in REQUIRED[name]:
        if c not in names:
            raise _err(str(path), f"missing column {c!r}", c)
    return {c: table.column(c).to_pylist() if c in names else [None] * table.num_rows for c in SCHEMAS[name].names}


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
        if (topic, broker) in seen:
            raise _err(where, f"duplicate queue data for topic {topic!r} broker {broker!r}", (topic, broker))
        seen.add((topic, broker))
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
    p = Path(path)
    if p.is_dir():
        qd = _read_parquet(p / "queue_data.parquet", "queue_data")
        cn = _read_parquet(p / "connections.parquet", "connections")
        sb = _read_parquet(p / "subscriptions.parquet", "subscriptions")
        extra = {
            name: _read_parquet(p / f"{name}.parquet", name)
            if (p / f"{name}.parquet").exists()
            else {c: [] for c in SCHEMAS[name].names}
            for name in OPTIONAL_TABLES
        }
        specs = _validate_tables(str(p), qd, cn, sb)
        tables = (
            _table("queue_data", qd),
            _table("connections", cn),
            _table("subscriptions", sb),
            _table("brokers", extra["brokers"]),
        )
        return Snapshot(
            str(p), *tables, tuple(specs), _table("offsets", extra["offsets"]), _table("errors", extra["errors"])
        )
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise _err(str(p), f"cannot read: {e.strerror}", str(p)) from e
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as e:
        raise _err(str(p), f"not valid JSON: {e}", str(p)) from e
    except SnapshotError as e:
        raise _err(str(p), str(e), e.value) from e
    return snapshot_from_dict(data, str(p))


def write_parquet(snapshot: Snapshot, directory: str | Path) -> Path:
    """Write a snapshot in the Parquet layout."""
    import pyarrow.parquet as pq

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    for name, table in snapshot.to_arrow().items():
        pq.write_table(table, d / f"{name}.parquet")
    return d
