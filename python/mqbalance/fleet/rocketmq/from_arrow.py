"""A RocketMQ snapshot's Parquet tables validated and normalised: with Arrow kernels when every
row is good, row by row (naming the first bad one) when not.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mqbalance._validate import JAVA_INT_MAX, JAVA_INT_MIN
from mqbalance.fleet.rocketmq.checks import check_types, distinct_rows, field_error, java_int, key_column
from mqbalance.fleet.rocketmq.snapshot import (
    PERM_READ,
    SCHEMAS,
    STRATEGY_COLUMNS,
    MessageModel,
    SnapshotStrategy,
    check_queue_budget,
    check_read_queue_budget,
    spec_from_columns,
    strategy_columns,
)


def columns_of(table: pa.Table, name: str) -> dict[str, list[Any]]:
    """The table as Python lists, one per column of the layout (``None`` where a column is absent)."""
    names = set(table.column_names)
    return {c: table.column(c).to_pylist() if c in names else [None] * table.num_rows for c in SCHEMAS[name].names}


_NULL_KEY = "\x00null\x00"


def columnar_tables(
    source: str, raw: dict[str, pa.Table]
) -> tuple[pa.Table, pa.Table, pa.Table, np.ndarray, tuple[SnapshotStrategy, ...]] | None:
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

    java = (JAVA_INT_MIN, JAVA_INT_MAX)
    if not (
        strings(qd, "topic")
        and strings(qd, "broker_name")
        and ints(qd, "read_queue_nums", 0, java[1])
        and ints(qd, "write_queue_nums", 0, java[1])
        and ints(qd, "perm", *java)
        and distinct_rows(qd, ["topic", "broker_name"])
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
    keys = [key_column(columns[c]) for c in STRATEGY_COLUMNS]
    if any(k is None for k in keys):
        return None
    joined = pc.binary_join_element_wise(*keys, "\x1e", null_handling="replace", null_replacement=_NULL_KEY)
    encoded = pc.dictionary_encode(joined.combine_chunks() if isinstance(joined, pa.ChunkedArray) else joined)
    row_key = encoded.indices.to_numpy()
    _, first = np.unique(row_key, return_index=True)
    code_of_spec: dict[SnapshotStrategy, int] = {}
    canonical = np.empty(len(encoded.dictionary), dtype=np.int32)
    for row in sorted(first.tolist()):
        values = [columns[c][row].as_py() for c in STRATEGY_COLUMNS]
        where = f"{source}/connections.parquet row {row}.strategy"
        spec = spec_from_columns(values[0], values[1], values[2], values[3], where, values[4], values[5])
        canonical[row_key[row]] = code_of_spec.setdefault(spec, len(code_of_spec))
    specs = tuple(code_of_spec)
    codes = canonical[row_key]
    per_spec = list(zip(*(strategy_columns(spec) for spec in specs)))
    at = pa.array(codes)
    for c, canonical_values in zip(STRATEGY_COLUMNS, per_spec):
        columns[c] = pa.array(list(canonical_values), SCHEMAS["connections"].field(c).type).take(at)
    try:
        connections = pa.table({c: columns[c] for c in SCHEMAS["connections"].names}).cast(SCHEMAS["connections"])
        queue_data = qd.select(SCHEMAS["queue_data"].names).cast(SCHEMAS["queue_data"])
        subscriptions = sb.select(SCHEMAS["subscriptions"].names).cast(SCHEMAS["subscriptions"])
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if not distinct_rows(subscriptions, ["group", "topic"]):
        return None
    return queue_data, connections, subscriptions, codes, specs


def validate_tables(
    source: str, qd: dict[str, list[Any]], cn: dict[str, list[Any]], sb: dict[str, list[Any]]
) -> list[SnapshotStrategy]:
    seen = set()
    for i, (topic, broker, r, w, p) in enumerate(zip(*qd.values())):
        where = f"{source}/queue_data.parquet row {i}"
        check_types(
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
            raise field_error(where, f"queue counts must be >= 0, got read={r} write={w}", (r, w))
        java_int(r, f"{where}.read_queue_nums", count=True)
        java_int(w, f"{where}.write_queue_nums", count=True)
        java_int(p, f"{where}.perm", count=False)
        if (topic, broker) in seen:
            raise field_error(where, f"duplicate queue data for topic {topic!r} broker {broker!r}", (topic, broker))
        seen.add((topic, broker))
    check_read_queue_budget(f"{source}/queue_data.parquet", qd["read_queue_nums"], qd["perm"])
    for i, (group, topic) in enumerate(zip(sb["group"], sb["topic"])):
        check_types(f"{source}/subscriptions.parquet row {i}", (("group", group, str), ("topic", topic, str)))
    specs = []
    known: dict[tuple[Any, ...], tuple[SnapshotStrategy, tuple[Any, ...]]] = {}
    for i in range(len(cn["group"])):
        for name in ("group", "client_id"):
            if not isinstance(cn[name][i], str) or not cn[name][i]:
                where = f"{source}/connections.parquet row {i}"
                raise field_error(f"{where}.{name}", f"expected a non-empty str, got {cn[name][i]!r}", cn[name][i])
        model = cn["message_model"][i] or "CLUSTERING"
        if model not in MessageModel.__members__:
            where = f"{source}/connections.parquet row {i}"
            raise field_error(f"{where}.message_model", f"expected CLUSTERING or BROADCASTING, got {model!r}", model)
        cn["message_model"][i] = model
        idcs = cn["consumer_idcs"][i]
        key = (
            cn["strategy"][i],
            cn["virtual_node_cnt"][i],
            tuple(idcs) if isinstance(idcs, list) else idcs,
            cn["charset"][i],
            cn["epsilon"][i],
            cn["strategy_reported"][i],
        )
        if key not in known:  # one parse per distinct configuration
            where = f"{source}/connections.parquet row {i}"
            spec = spec_from_columns(cn["strategy"][i], key[1], idcs, key[3], f"{where}.strategy", key[4], key[5])
            known[key] = (spec, strategy_columns(spec))
        spec, columns = known[key]
        (
            cn["strategy"][i],
            cn["virtual_node_cnt"][i],
            cn["consumer_idcs"][i],
            cn["charset"][i],
            cn["epsilon"][i],
            cn["strategy_reported"][i],
        ) = columns
        specs.append(spec)
    pairs = list(zip(sb["group"], sb["topic"]))
    if len(set(pairs)) != len(pairs):
        dup = next(p for p, n in Counter(pairs).items() if n > 1)
        raise field_error(f"{source}/subscriptions.parquet", f"group {dup[0]!r} subscribes to {dup[1]!r} twice", dup)
    return specs
