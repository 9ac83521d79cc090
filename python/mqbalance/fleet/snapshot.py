"""Fleet snapshots: what operators export from a RocketMQ deployment, validated and normalised.

A snapshot is either one JSON file or a directory of Parquet tables (for large fleets). Both load
into the same :class:`Snapshot` of four normalised tables. Nothing is dropped silently: every
problem is a :class:`SnapshotError` naming the file and the field.

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

Parquet layout (a directory): ``queue_data.parquet`` (topic, broker_name, read_queue_nums,
write_queue_nums, perm), ``connections.parquet`` (group, client_id, client_addr, language, version,
message_model, strategy, virtual_node_cnt, consumer_idcs), ``subscriptions.parquet`` (group,
topic); optional ``brokers.parquet`` (topic, cluster, broker_name, broker_id, address).

Strategies: ``AVG``, ``AVG_BY_CIRCLE``, ``CONSISTENT_HASH`` (``virtualNodeCnt``),
``MACHINE_ROOM`` (``consumeridcs``), ``MACHINE_ROOM_NEARBY-<inner>`` (rooms by the ``@`` prefix
rule). ``CONFIG`` is refused: a snapshot does not carry the client's configured queue list.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .exceptions import MQBalanceError
from .registry import StrategyName

__all__ = [
    "Snapshot",
    "SnapshotError",
    "load_snapshot",
    "snapshot_from_dict",
    "PERM_READ",
    "PERM_WRITE",
    "STRATEGY_NAMES",
]

PERM_READ = 4
PERM_WRITE = 2
MODELS = ("CLUSTERING", "BROADCASTING")
STRATEGY_NAMES = ("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "MACHINE_ROOM", "MACHINE_ROOM_NEARBY")


class SnapshotError(MQBalanceError, ValueError):
    """A snapshot that cannot be used; the message names the file and the field."""


# Column names of the normalised tables (also the Parquet layout).
QUEUE_DATA = ("topic", "broker_name", "read_queue_nums", "write_queue_nums", "perm")
CONNECTIONS = (
    "group",
    "client_id",
    "client_addr",
    "language",
    "version",
    "message_model",
    "strategy",
    "virtual_node_cnt",
    "consumer_idcs",
)
SUBSCRIPTIONS = ("group", "topic")
BROKERS = ("topic", "cluster", "broker_name", "broker_id", "address")


@dataclass(frozen=True)
class Snapshot:
    """A validated fleet snapshot as four column dicts (``{column: list}``)."""

    source: str
    queue_data: dict[str, list[Any]]
    connections: dict[str, list[Any]]
    subscriptions: dict[str, list[Any]]
    brokers: dict[str, list[Any]]

    @property
    def groups(self) -> list[str]:
        return sorted(set(self.connections["group"]) | set(self.subscriptions["group"]))

    def readable_routes(self) -> dict[str, list[tuple[str, int]]]:
        """Per topic, its readable queue data ``(broker_name, read_queue_nums)`` sorted by broker:
        what a client's subscribe info holds (READ permission, at least one queue)."""
        routes: dict[str, list[tuple[str, int]]] = {}
        q = self.queue_data
        for t, b, n, p in zip(q["topic"], q["broker_name"], q["read_queue_nums"], q["perm"]):
            if p & PERM_READ and n > 0:
                routes.setdefault(t, []).append((b, n))
        return {t: sorted(r) for t, r in routes.items()}

    def readable_queue_count(self) -> int:
        return sum(n for route in self.readable_routes().values() for _, n in route)

    def to_arrow(self) -> dict[str, Any]:
        """The four tables as ``pyarrow.Table`` s (pyarrow needed)."""
        import pyarrow as pa

        return {
            name: pa.table(getattr(self, name)) for name in ("queue_data", "connections", "subscriptions", "brokers")
        }


def _err(where: str, message: str, value: Any = None) -> SnapshotError:
    return SnapshotError(f"{where}: {message}", value)


def _get(
    obj: Any, key: str, kind: type | tuple[type, ...], where: str, *, optional: bool = False, default: Any = None
) -> Any:
    if not isinstance(obj, dict):
        raise _err(where, f"expected an object, got {type(obj).__name__}", obj)
    if key not in obj or obj[key] is None:
        if optional:
            return default
        raise _err(where, f"missing field {key!r}", key)
    value = obj[key]
    if isinstance(value, bool) and kind is not bool or not isinstance(value, kind):
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


def parse_strategy(spec: Any, where: str) -> tuple[str, int | None, list[str] | None]:
    """``(name, virtual_node_cnt, consumer_idcs)`` from ``"AVG"`` or ``{"name": ..., ...}``."""
    if isinstance(spec, str):
        name, vnodes, idcs = spec, None, None
    elif isinstance(spec, dict):
        name = _get(spec, "name", str, where)
        vnodes = _get(spec, "virtualNodeCnt", int, where, optional=True)
        idcs = _get(spec, "consumeridcs", list, where, optional=True)
        if idcs is not None and not all(isinstance(i, str) for i in idcs):
            raise _err(f"{where}.consumeridcs", "expected a list of str", idcs)
        if "inner" in spec:
            inner = _get(spec, "inner", str, where)
            name = f"{name}-{inner}"
    else:
        raise _err(where, f"expected a strategy name or object, got {spec!r}", spec)
    check_strategy(name, vnodes, where)
    return name, vnodes, idcs


def check_strategy(name: str, vnodes: int | None, where: str) -> None:
    base = name.split("-", 1)[0] if name.startswith("MACHINE_ROOM_NEARBY-") else name
    if name == StrategyName.CONFIG:
        raise _err(
            where, "CONFIG cannot be audited: a snapshot does not carry the client's configured queue list", name
        )
    if base not in STRATEGY_NAMES or (
        base == "MACHINE_ROOM_NEARBY" and name.split("-", 1)[1] not in STRATEGY_NAMES[:4]
    ):
        raise _err(
            where,
            f"unknown strategy {name!r}; known: {', '.join(STRATEGY_NAMES[:4])}, MACHINE_ROOM_NEARBY-<one of those>",
            name,
        )
    if vnodes is not None and vnodes < 0:
        raise _err(where, f"virtualNodeCnt must be >= 0, got {vnodes}", vnodes)


def snapshot_from_dict(data: Any, source: str = "<snapshot>") -> Snapshot:
    """Validate and normalise a JSON snapshot already parsed into Python objects."""
    qd: dict[str, list[Any]] = {c: [] for c in QUEUE_DATA}
    br: dict[str, list[Any]] = {c: [] for c in BROKERS}
    cn: dict[str, list[Any]] = {c: [] for c in CONNECTIONS}
    sb: dict[str, list[Any]] = {c: [] for c in SUBSCRIPTIONS}
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
            for c, v in zip(QUEUE_DATA, (topic, broker, *nums)):
                qd[c].append(v)
        for k, b in enumerate(_get(route, "brokerDatas", list, where, optional=True, default=[])):
            w = f"{where}.brokerDatas[{k}]"
            name = _get(b, "brokerName", str, w)
            cluster = _get(b, "cluster", str, w, optional=True)
            for bid, addr in _get(b, "brokerAddrs", dict, w, optional=True, default={}).items():
                for c, v in zip(BROKERS, (topic, cluster, name, int(bid), addr)):
                    br[c].append(v)
    groups = _get(data, "groups", dict, source)
    for group, g in groups.items():
        where = f"{source}: groups[{group!r}]"
        model = _get(g, "messageModel", str, where, optional=True, default="CLUSTERING")
        if model not in MODELS:
            raise _err(f"{where}.messageModel", f"expected CLUSTERING or BROADCASTING, got {model!r}", model)
        subs = _get(g, "subscriptions", list, where)
        if len(set(subs)) != len(subs):
            raise _err(f"{where}.subscriptions", "a topic is listed twice", subs)
        for k, t in enumerate(subs):
            if not isinstance(t, str):
                raise _err(f"{where}.subscriptions[{k}]", f"expected str, got {t!r}", t)
            sb["group"].append(group)
            sb["topic"].append(t)
        default = g.get("strategy", "AVG")
        for k, conn in enumerate(_get(g, "connections", list, where)):
            w = f"{where}.connections[{k}]"
            spec = conn.get("strategy", default) if isinstance(conn, dict) else default
            name, vnodes, idcs = parse_strategy(spec, f"{w}.strategy")
            row = (
                group,
                _get(conn, "clientId", str, w),
                _get(conn, "clientAddr", str, w, optional=True),
                _get(conn, "language", str, w, optional=True),
                _get(conn, "version", int, w, optional=True),
                model,
                name,
                vnodes,
                None if idcs is None else ",".join(idcs),
            )
            if row[1] == "":
                raise _err(f"{w}.clientId", "must not be empty", "")
            for c, v in zip(CONNECTIONS, row):
                cn[c].append(v)
    return Snapshot(source, qd, cn, sb, br)


def _read_parquet(path: Path, columns: Iterable[str], required: Iterable[str]) -> dict[str, list[Any]]:
    import pyarrow.parquet as pq

    if not path.exists():
        raise _err(str(path), "missing table", str(path))
    table = pq.read_table(path)
    names = set(table.column_names)
    for c in required:
        if c not in names:
            raise _err(str(path), f"missing column {c!r}", c)
    return {c: table.column(c).to_pylist() if c in names else [None] * table.num_rows for c in columns}


def _validate_tables(source: str, qd: dict[str, list[Any]], cn: dict[str, list[Any]], sb: dict[str, list[Any]]) -> None:
    seen = set()
    for i, row in enumerate(zip(*(qd[c] for c in QUEUE_DATA))):
        where = f"{source}/queue_data.parquet row {i}"
        topic, broker, r, w, p = row
        for field, v, kind in (
            ("topic", topic, str),
            ("broker_name", broker, str),
            ("read_queue_nums", r, int),
            ("write_queue_nums", w, int),
            ("perm", p, int),
        ):
            if not isinstance(v, kind) or isinstance(v, bool):
                raise _err(f"{where}.{field}", f"expected {kind.__name__}, got {v!r}", v)
        if r < 0 or w < 0:
            raise _err(where, f"queue counts must be >= 0, got read={r} write={w}", (r, w))
        if (topic, broker) in seen:
            raise _err(where, f"duplicate queue data for topic {topic!r} broker {broker!r}", (topic, broker))
        seen.add((topic, broker))
    for i in range(len(cn["group"])):
        where = f"{source}/connections.parquet row {i}"
        for field in ("group", "client_id", "strategy"):
            if not isinstance(cn[field][i], str) or not cn[field][i]:
                raise _err(f"{where}.{field}", f"expected a non-empty str, got {cn[field][i]!r}", cn[field][i])
        model = cn["message_model"][i] or "CLUSTERING"
        if model not in MODELS:
            raise _err(f"{where}.message_model", f"expected CLUSTERING or BROADCASTING, got {model!r}", model)
        cn["message_model"][i] = model
        check_strategy(cn["strategy"][i], cn["virtual_node_cnt"][i], f"{where}.strategy")
    pairs = list(zip(sb["group"], sb["topic"]))
    if len(set(pairs)) != len(pairs):
        dup = next(p for p in pairs if pairs.count(p) > 1)
        raise _err(f"{source}/subscriptions.parquet", f"group {dup[0]!r} subscribes to {dup[1]!r} twice", dup)


def load_snapshot(path: str | Path) -> Snapshot:
    """Load a JSON snapshot file or a Parquet snapshot directory."""
    p = Path(path)
    if p.is_dir():
        qd = _read_parquet(p / "queue_data.parquet", QUEUE_DATA, QUEUE_DATA)
        cn = _read_parquet(p / "connections.parquet", CONNECTIONS, ("group", "client_id", "strategy"))
        sb = _read_parquet(p / "subscriptions.parquet", SUBSCRIPTIONS, SUBSCRIPTIONS)
        br = (
            _read_parquet(p / "brokers.parquet", BROKERS, ())
            if (p / "brokers.parquet").exists()
            else {c: [] for c in BROKERS}
        )
        _validate_tables(str(p), qd, cn, sb)
        return Snapshot(str(p), qd, cn, sb, br)
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
    """Write a snapshot in the Parquet layout (pyarrow needed)."""
    import pyarrow.parquet as pq

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    for name, table in snapshot.to_arrow().items():
        pq.write_table(table, d / f"{name}.parquet")
    return d
