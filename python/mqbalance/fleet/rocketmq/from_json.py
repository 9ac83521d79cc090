"""A RocketMQ snapshot from JSON: validated by columns with Arrow kernels, entry by entry when a
column has anything wrong, so the error names the value.

:func:`snapshot_from_dict` takes the JSON already parsed into Python objects;
:func:`snapshot_from_json_bytes` reads a file's text with the Rust reader, the connections
straight into columns (no dict per connection), and gives way to the former whenever the reader
or a column check is unsure, so both give the same snapshot or the same error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import chain, repeat
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mqbalance import _core
from mqbalance._validate import JAVA_INT_MAX, JAVA_INT_MIN
from mqbalance.allocation.registry import StrategyName, StrategySpec
from mqbalance.exceptions import MQBalanceError, SnapshotError
from mqbalance.fleet.rocketmq.checks import (
    COLUMN_PROBLEMS,
    check_java_ints,
    distinct_rows,
    field_error,
    get_field,
    java_int,
    strict_column,
    utf8_text,
)
from mqbalance.fleet.rocketmq.snapshot import (
    PERM_READ,
    SCHEMAS,
    STRATEGY_COLUMNS,
    MessageModel,
    Snapshot,
    SnapshotStrategy,
    check_queue_budget,
    check_read_queue_budget,
    snapshot_strategy,
    strategy_codes,
    strategy_columns,
    table_of,
)

__all__ = ["snapshot_from_dict"]


@dataclass(frozen=True)
class ConnectionColumns:
    """The connections of a JSON snapshot as the Rust reader gave them: per group (document
    order) how many, their fields as Arrow columns, each one's own ``"strategy"`` as an index into
    ``strategy_texts`` (the distinct raw JSON texts; ``-1``: none)."""

    counts: np.ndarray
    client_id: pa.Array
    client_addr: pa.Array
    language: pa.Array
    version: pa.Array
    strategy: np.ndarray
    strategy_texts: list[str]


class _Unsure(Exception):
    """The read columns cannot decide: the caller parses the text the usual way."""


def _string_array(parts: tuple[np.ndarray, np.ndarray, np.ndarray, int]) -> pa.Array:
    offsets, data, bits, nulls = parts
    validity = pa.py_buffer(bits) if nulls else None
    return pa.Array.from_buffers(
        pa.string(), len(offsets) - 1, [validity, pa.py_buffer(offsets), pa.py_buffer(data)], null_count=nulls
    )


def _int_array(parts: tuple[np.ndarray, np.ndarray, int]) -> pa.Array:
    values, bits, nulls = parts
    validity = pa.py_buffer(bits) if nulls else None
    return pa.Array.from_buffers(pa.int64(), len(values), [validity, pa.py_buffer(values)], null_count=nulls)


def snapshot_from_json_bytes(text: bytes, source: str) -> Snapshot | None:
    """The snapshot of a JSON file's bytes, its connections read by Rust straight into columns
    (without the GIL); ``None`` when the reader or a column check is unsure (anything malformed,
    odd or wrong: the caller then parses the text the usual way, which names the problem).

    >>> text = b'{"topics": {"T": {"queueDatas": [{"brokerName": "b", "readQueueNums": 2, '
    >>> text += b'"writeQueueNums": 2, "perm": 6}]}}, "groups": {"g": {"subscriptions": ["T"], '
    >>> text += b'"connections": [{"clientId": "c1"}, {"clientId": "c2"}]}}}'
    >>> snapshot_from_json_bytes(text, "s").connections.column("client_id").to_pylist()
    ['c1', 'c2']
    >>> snapshot_from_json_bytes(b'{"groups": {"g": {"connections": [{"clientId": 7}]}}}', "s") is None
    True
    """
    read = _core.read_snapshot_json(text)
    if read is None:
        return None
    skeleton, counts, client_id, client_addr, language, version, strategy, strategy_texts = read
    try:
        data = json.loads(skeleton)
        connections = ConnectionColumns(
            counts,
            _string_array(client_id),
            _string_array(client_addr),
            _string_array(language),
            _int_array(version),
            strategy,
            strategy_texts,
        )
        return snapshot_from_dict(data, source, connections=connections)
    except (_Unsure, MQBalanceError, *COLUMN_PROBLEMS, RecursionError):
        return None


def snapshot_from_dict(
    data: Any, source: str = "<snapshot>", *, connections: ConnectionColumns | None = None
) -> Snapshot:
    """Validate and normalise a JSON snapshot already parsed into Python objects.

    Validated by columns: each field of every entry is gathered into one list and checked with
    Arrow kernels (types, ranges, duplicates), strategies parsed once per distinct configuration;
    when a column has anything wrong (or unusual), the entry-by-entry check runs instead, which
    names the first bad value and where it is.

    ``connections`` (for :func:`snapshot_from_json_bytes`): the groups' connections as read into
    columns, ``data``'s own ``"connections"`` lists being empty; anything the columns cannot
    decide raises ``_Unsure``."""
    if not isinstance(source, str):
        raise SnapshotError(f"source must be a str naming where the snapshot came from, got {source!r}", source)
    topics = get_field(data, "topics", dict, source)
    queue_data = columnar_queue_data(topics)
    if queue_data is None or _has_broker_datas(topics):
        qd, br = _queue_rows(topics, source)
        queue_data, brokers = table_of("queue_data", qd), table_of("brokers", br)
    else:
        brokers = SCHEMAS["brokers"].empty_table()
    readable = pc.and_(
        pc.not_equal(pc.bit_wise_and(queue_data.column("perm"), PERM_READ), 0),
        pc.greater(queue_data.column("read_queue_nums"), 0),
    )
    check_queue_budget(source, pc.sum(pc.if_else(readable, queue_data.column("read_queue_nums"), 0)).as_py() or 0)
    raw_groups = get_field(data, "groups", dict, source)
    groups = with_group_settings(raw_groups, source)
    if connections is not None and groups is not raw_groups:
        raise _Unsure("machine rooms filled into connection strategies")
    fast = columnar_groups(groups, connections)
    if fast is None and connections is not None:
        raise _Unsure("a group the columns cannot decide")
    if fast is None:
        cn, sb, specs = _group_rows(groups, source)
        connections, subscriptions = table_of("connections", cn), table_of("subscriptions", sb)
        codes, distinct = strategy_codes(specs)
    else:
        connections, subscriptions, codes, distinct = fast
    of, er, lt = (_extra_rows(data, source, table) for table in ("offsets", "errors", "lag_times"))
    return Snapshot(
        source,
        queue_data,
        connections,
        subscriptions,
        brokers,
        codes,
        distinct,
        table_of("offsets", of),
        table_of("errors", er),
        table_of("lag_times", lt),
    )


def with_group_settings(groups: dict[Any, Any], source: str) -> dict[Any, Any]:
    """``groups`` with each group entry's ``"consumeridcs"`` (a list of machine rooms) filled into
    the MACHINE_ROOM strategies of its clients that lack them (the group default and per-connection
    ones; a live snapshot never has them: a client's running info does not report them), so the
    group is computed exactly; an entry without the field is kept as is.

    >>> g = {"subscriptions": ["T"], "connections": [{"clientId": "c", "strategy": "MACHINE_ROOM"}],
    ...      "consumeridcs": ["hz"]}
    >>> with_group_settings({"g": g}, "s")["g"]["connections"]
    [{'clientId': 'c', 'strategy': {'name': 'MACHINE_ROOM', 'consumeridcs': ['hz']}}]
    """
    if not any(type(g) is dict and g.get("consumeridcs") is not None for g in groups.values()):
        return groups
    out = dict(groups)
    for name, g in groups.items():
        if type(g) is not dict or g.get("consumeridcs") is None:
            continue
        where = f"{source}: groups[{name!r}].consumeridcs"
        idcs = get_field(g, "consumeridcs", list, where.removesuffix(".consumeridcs"))
        for k, room in enumerate(idcs):
            if not isinstance(room, str):
                raise field_error(f"{where}[{k}]", f"expected a machine room name (str), got {room!r}", room)
            utf8_text(room, f"{where}[{k}]")

        def fill(config: Any, idcs: list[str] = idcs) -> Any:
            try:
                spec = StrategySpec.parse(config)
            except MQBalanceError:
                return config  # the entry-by-entry check names it
            if spec.name is not StrategyName.MACHINE_ROOM or spec.consumer_idcs is not None:
                return config
            return {**spec.to_config(), "consumeridcs": idcs}

        entry = {k: v for k, v in g.items() if k != "consumeridcs"}
        if "strategy" in g:
            entry["strategy"] = fill(g["strategy"])
        conns = g.get("connections")
        if type(conns) is list:
            entry["connections"] = [
                {**c, "strategy": fill(c["strategy"])} if type(c) is dict and "strategy" in c else c for c in conns
            ]
        out[name] = entry
    return out


def _has_broker_datas(topics: dict[Any, Any]) -> bool:
    return any(type(route) is dict and route.get("brokerDatas") for route in topics.values())


def _queue_rows(topics: dict[Any, Any], source: str) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
    """The queue data and broker rows of ``topics``, checked entry by entry (the first bad value raises)."""
    qd: dict[str, list[Any]] = {c: [] for c in SCHEMAS["queue_data"].names}
    br: dict[str, list[Any]] = {c: [] for c in SCHEMAS["brokers"].names}
    for topic, route in topics.items():
        where = f"{source}: topics[{topic!r}]"
        utf8_text(topic, where)
        seen_brokers = set()
        for k, q in enumerate(get_field(route, "queueDatas", list, where)):
            w = f"{where}.queueDatas[{k}]"
            broker = get_field(q, "brokerName", str, w)
            if broker in seen_brokers:
                raise field_error(w, f"broker {broker!r} appears twice in the topic's queue data", broker)
            seen_brokers.add(broker)
            nums = [get_field(q, f, int, w) for f in ("readQueueNums", "writeQueueNums", "perm")]
            for f, v in zip(("readQueueNums", "writeQueueNums", "perm"), nums):
                java_int(v, f"{w}.{f}", count=f != "perm")
            for c, v in zip(qd, (topic, broker, *nums)):
                qd[c].append(v)
        for k, b in enumerate(get_field(route, "brokerDatas", list, where, optional=True) or []):
            w = f"{where}.brokerDatas[{k}]"
            name = get_field(b, "brokerName", str, w)
            cluster = get_field(b, "cluster", str, w, optional=True)
            for bid, addr in (get_field(b, "brokerAddrs", dict, w, optional=True) or {}).items():
                wb = f"{w}.brokerAddrs[{bid!r}]"
                if not isinstance(bid, str) or not bid.strip().lstrip("-").isdigit():
                    raise field_error(wb, f'the key must be a broker id (an integer, like "0"), got {bid!r}', bid)
                if not isinstance(addr, str):
                    raise field_error(wb, f"expected an address str, got {addr!r}", addr)
                utf8_text(addr, wb)
                broker_id = java_int(int(bid), wb, count=False)
                for c, v in zip(br, (topic, cluster, name, broker_id, addr)):
                    br[c].append(v)
    check_read_queue_budget(source, qd["read_queue_nums"], qd["perm"])
    return qd, br


def _group_rows(
    groups: dict[Any, Any], source: str
) -> tuple[dict[str, list[Any]], dict[str, list[Any]], list[SnapshotStrategy]]:
    """The connection and subscription rows of ``groups`` and each connection's strategy, checked
    entry by entry (the first bad value raises)."""
    cn: dict[str, list[Any]] = {c: [] for c in SCHEMAS["connections"].names}
    sb: dict[str, list[Any]] = {c: [] for c in SCHEMAS["subscriptions"].names}
    specs: list[SnapshotStrategy] = []
    for group, g in groups.items():
        where = f"{source}: groups[{group!r}]"
        utf8_text(group, where)
        model = get_field(g, "messageModel", str, where, optional=True) or "CLUSTERING"
        if model not in MessageModel.__members__:
            raise field_error(f"{where}.messageModel", f"expected CLUSTERING or BROADCASTING, got {model!r}", model)
        subs = get_field(g, "subscriptions", list, where)
        if len(set(map(str, subs))) != len(subs):
            raise field_error(f"{where}.subscriptions", "a topic is listed twice", subs)
        for k, t in enumerate(subs):
            if not isinstance(t, str):
                raise field_error(f"{where}.subscriptions[{k}]", f"expected str, got {t!r}", t)
            utf8_text(t, f"{where}.subscriptions[{k}]")
            sb["group"].append(group)
            sb["topic"].append(t)
        default = g.get("strategy", "AVG")
        group_spec: SnapshotStrategy | None = None
        for k, conn in enumerate(get_field(g, "connections", list, where)):
            w = f"{where}.connections[{k}]"
            if isinstance(conn, dict) and "strategy" in conn:
                spec = snapshot_strategy(conn["strategy"], f"{w}.strategy")
            else:
                group_spec = group_spec or snapshot_strategy(default, f"{w}.strategy")
                spec = group_spec
            client_id = get_field(conn, "clientId", str, w)
            if client_id == "":
                raise field_error(f"{w}.clientId", "must not be empty", "")
            row = (
                group,
                client_id,
                get_field(conn, "clientAddr", str, w, optional=True),
                get_field(conn, "language", str, w, optional=True),
                java_int(get_field(conn, "version", int, w, optional=True), f"{w}.version", count=False),
                model,
                *strategy_columns(spec),
            )
            for c, v in zip(cn, row):
                cn[c].append(v)
            specs.append(spec)
    return cn, sb, specs


#: the optional lists of a live snapshot: per table, its JSON list and each column's
#: ``(key, type, optional)`` in the table's order
_EXTRA_LISTS: dict[str, tuple[str, tuple[tuple[str, type, bool], ...]]] = {
    "offsets": (
        "offsets",
        (("group", str, False), ("topic", str, False), ("brokerName", str, False), ("queueId", int, False),
         ("offset", int, False)),
    ),
    "errors": (
        "errors",
        (("broker", str, True), ("address", str, True), ("request", str, True), ("error", str, False)),
    ),
    "lag_times": (
        "lagTimes",
        (("group", str, False), ("topic", str, False), ("brokerName", str, False), ("queueId", int, False),
         ("committed", int, False), ("maxOffset", int, False), ("storeTimestamp", int, True), ("state", str, False),
         ("readAt", int, False)),
    ),
}  # fmt: skip


def _extra_rows(data: dict[str, Any], source: str, table: str) -> dict[str, list[Any]]:
    """The columns of ``table`` (``offsets``, ``errors`` or ``lag_times``) from a live snapshot's
    optional list (:data:`_EXTRA_LISTS`), checked entry by entry."""
    key, fields = _EXTRA_LISTS[table]
    out: dict[str, list[Any]] = {c: [] for c in SCHEMAS[table].names}
    for k, entry in enumerate(get_field(data, key, list, source, optional=True) or []):
        w = f"{source}: {key}[{k}]"
        for c, (name, kind, optional) in zip(out, fields, strict=True):
            out[c].append(get_field(entry, name, kind, w, optional=optional))
    return out


def columnar_queue_data(topics: dict[Any, Any]) -> pa.Table | None:
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
        names = strict_column(list(topics), pa.string())
        topic = names.take(pa.array(np.repeat(np.arange(len(per_topic)), counts)))
        broker = strict_column([q.get("brokerName") for q in flat], pa.string())
        nums = [
            strict_column([q.get(f) for q in flat], pa.int64()) for f in ("readQueueNums", "writeQueueNums", "perm")
        ]
        for array, low in zip(nums, (0, 0, JAVA_INT_MIN)):
            check_java_ints(array, low, JAVA_INT_MAX)
        table = pa.Table.from_arrays([topic, broker, *nums], schema=SCHEMAS["queue_data"])
    except COLUMN_PROBLEMS:
        return None
    return table if distinct_rows(table, ["topic", "broker_name"]) else None


def columnar_groups(
    groups: dict[Any, Any], read: ConnectionColumns | None = None
) -> tuple[pa.Table, pa.Table, np.ndarray, tuple[SnapshotStrategy, ...]] | None:
    """``(connections, subscriptions, strategy codes, specs)`` of ``groups`` checked by columns,
    each distinct strategy configuration parsed once; ``None`` when any entry is wrong or unusual
    (:func:`_group_rows` then names it). With ``read``, the connections are those columns (the
    groups' own lists are empty)."""
    try:
        names = list(groups)
        values = list(groups.values())
        if not all(type(g) is dict for g in values):
            return None
        group_names = strict_column(names, pa.string())
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
                strict_column([t for ts in subs for t in ts], pa.string()),
            ],
            schema=SCHEMAS["subscriptions"],
        )
        if not distinct_rows(subscriptions, ["group", "topic"]):
            return None
        # Strategies: the group's default for connections without their own, one parse per distinct config.
        parsed: dict[str, int] = {}
        specs: list[SnapshotStrategy] = []

        def code(config: Any) -> int:
            key = json.dumps(config, sort_keys=True)
            if key not in parsed:
                spec = snapshot_strategy(config, "strategy")
                if spec not in specs:
                    specs.append(spec)
                parsed[key] = specs.index(spec)
            return parsed[key]

        if read is None:
            counts = np.fromiter(map(len, conns), dtype=np.int64, count=len(conns))
            # One C-level pass per field (``map`` over ``dict.get``): a million connections are
            # columned without a Python-level loop.
            flat = list(chain.from_iterable(conns))
            if not set(map(type, flat)) <= {dict}:
                return None

            def field(name: str) -> list[Any]:
                return list(map(dict.get, flat, repeat(name)))

            ids = strict_column(field("clientId"), pa.string())
            addr, language = (strict_column(field(f), pa.string(), nulls=True) for f in ("clientAddr", "language"))
            version = strict_column(field("version"), pa.int64(), nulls=True)
        else:
            if any(conns) or len(read.counts) != len(conns):
                return None
            counts = read.counts
            ids, addr, language, version = read.client_id, read.client_addr, read.language, read.version
        if len(ids) and pc.any(pc.equal(ids, "")).as_py():
            return None
        check_java_ints(version, JAVA_INT_MIN, JAVA_INT_MAX)
        of_row = np.repeat(np.arange(len(names)), counts)
        # A group with connections has its default parsed (one without: left alone, as entry by entry).
        defaults = np.array(
            [code(g.get("strategy", "AVG")) if n else -1 for g, n in zip(values, counts.tolist())], dtype=np.int32
        )
        codes = defaults[of_row]
        if read is None:
            if any(map(dict.__contains__, flat, repeat("strategy"))):
                for i, c in enumerate(flat):
                    if "strategy" in c:
                        codes[i] = code(c["strategy"])
        elif read.strategy_texts:
            own = read.strategy >= 0
            per_text = np.array([code(json.loads(t)) for t in read.strategy_texts], dtype=np.int32)
            codes[own] = per_text[read.strategy[own]]
    except (MQBalanceError, *COLUMN_PROBLEMS):
        return None
    distinct = tuple(specs)
    per_spec: list[tuple[Any, ...]] = list(zip(*(strategy_columns(spec) for spec in distinct))) or [()] * len(
        STRATEGY_COLUMNS
    )
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
    for c, canonical in zip(STRATEGY_COLUMNS, per_spec):
        kind = SCHEMAS["connections"].field(c).type
        if all(v is None for v in canonical):  # a parameter no strategy here has: no gather
            columns[c] = pa.nulls(len(codes), kind)
        else:
            columns[c] = pa.array(list(canonical), kind).take(at)
    connections = pa.Table.from_arrays(
        [columns[c] for c in SCHEMAS["connections"].names], schema=SCHEMAS["connections"]
    )
    return connections, subscriptions, codes, distinct
