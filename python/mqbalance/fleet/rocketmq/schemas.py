"""The Arrow schemas of the RocketMQ fleet engine's tables: the assignment (one row per queue and
consuming process), the facts per (group, topic) that :mod:`mqbalance.fleet.rocketmq.audit` reads,
and the what-if rows.
"""

from __future__ import annotations

import pyarrow as pa

__all__ = [
    "ASSIGNMENT_SCHEMA",
    "BUSY_SCHEMA",
    "FACT_SCHEMA",
    "GROUP_BUSY_SCHEMA",
    "LOAD_SCHEMA",
    "PAIR_FACT_COLUMNS",
    "PAIR_FACT_SCHEMA",
    "WHAT_IF_SCHEMA",
]


ASSIGNMENT_SCHEMA = pa.schema(
    [
        ("group", pa.string()),
        ("topic", pa.string()),
        ("broker_name", pa.string()),
        ("queue_id", pa.int32()),
        ("consumer", pa.string()),
    ]
)


#: Above this many (pair, broker, queue id) combinations the per-queue key does not fit an int64.
PACKED_KEY_LIMIT = 2**62


FACT_SCHEMA = pa.schema(
    [
        ("group", pa.string()),
        ("topic", pa.string()),
        ("consumer", pa.string()),
        ("queues", pa.int64()),
        ("unowned", pa.int64()),
        ("double_owned", pa.int64()),
        ("count", pa.int64()),
        ("strategy", pa.string()),
        ("moved", pa.int64()),
        ("max_load", pa.int64()),
        ("idle", pa.int64()),
        ("processes", pa.int64()),
        ("load_total", pa.int64()),
        ("min_load", pa.int64()),
        ("load", pa.int64()),
    ]
)


#: The pair columns of :func:`load_facts` (what :func:`mqbalance.fleet.rocketmq.audit.summarise` reads) ...
PAIR_FACT_COLUMNS = (
    *("group", "topic", "queues", "unowned", "double_owned"),
    *("processes", "idle", "load_total", "min_load", "max_load"),
)


#: ... and their types.
PAIR_FACT_SCHEMA = pa.schema([FACT_SCHEMA.field(c) for c in PAIR_FACT_COLUMNS])


LOAD_SCHEMA = pa.schema([("group", pa.string()), ("topic", pa.string()), ("load", pa.int64()), ("count", pa.int64())])


BUSY_SCHEMA = pa.schema([("group", pa.string()), ("consumer", pa.string())])


GROUP_BUSY_SCHEMA = pa.schema([("group", pa.string()), ("processes", pa.int64())])


WHAT_IF_SCHEMA = pa.schema(
    [
        ("group", pa.string()),
        ("topic", pa.string()),
        ("strategy", pa.string()),
        ("queues", pa.int64()),
        ("moved", pa.int64()),
        ("max_load", pa.int64()),
        ("idle", pa.int64()),
    ]
)
