"""Assignment as DataFrame functions: the user's DataFrames in, a DataFrame out, computed in the
executors with the Rust core over Arrow batches (queue and consumer rows shuffled together by group
once, then a ``mapInArrow``: many groups per Python call, nothing collected to the driver). Works on a classic
session and over Spark Connect alike. The columns are checked on the driver before any job.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mqbalance.exceptions import ColumnError, InvalidInputError
from mqbalance.spark.arrow import QueueColumns, parse_strategies, queue_partition_assigner
from mqbalance.spark.kafka import PartitionColumns, partition_assigner

__all__ = ["assign_partitions", "assign_queues"]

_STRING = ("StringType",)
_INTEGER = ("IntegerType", "LongType", "ShortType", "ByteType")


def _check(df: Any, what: str, wanted: Mapping[str, tuple[str, ...]]) -> None:
    """Each column present with one of the wanted types, else :class:`ColumnError` naming it."""
    fields = {f.name: f for f in df.schema.fields}
    for name, types in wanted.items():
        f = fields.get(name)
        if f is None:
            raise ColumnError(f"{what} has no column {name!r} (columns: {', '.join(fields)})", name)
        kind = type(f.dataType).__name__
        if kind not in types:
            expected = "string" if types == _STRING else "integer"
            raise ColumnError(f"{what}.{name}: expected {expected}, got {f.dataType.simpleString()}", name)


def _buckets(spark: Any, buckets: int | None) -> int:
    if buckets is not None:
        if isinstance(buckets, bool) or not isinstance(buckets, int) or buckets < 1:
            raise InvalidInputError(f"buckets must be a positive int, got {buckets!r}", buckets)
        return buckets
    return 4 * int(spark.conf.get("spark.sql.shuffle.partitions"))


def _shuffle_partitions(spark: Any, buckets: int | None) -> int | None:
    """The partitions of :func:`assign_queues`' shuffle: ``buckets`` when given; else ``None`` (Spark's
    own count, which adaptive query execution coalesces to the data's size: a few rows run in a few
    tasks, not hundreds) when AQE is on, and 4 × ``spark.sql.shuffle.partitions`` when it is off."""
    if buckets is None and str(spark.conf.get("spark.sql.adaptive.enabled", "true")).lower() == "true":
        return None
    return _buckets(spark, buckets)


def _ddl(df: Any, extra: str) -> str:
    return ", ".join([f"`{f.name}` {f.dataType.simpleString()}" for f in df.schema.fields] + [f"`{extra}` string"])


def assign_queues(
    queues: Any,
    consumers: Any,
    strategy: Any = "AVG",
    *,
    strategy_by_group: Mapping[str, Any] | None = None,
    previous: str | None = None,
    group: str = "group",
    topic: str = "topic",
    broker_name: str = "broker_name",
    queue_id: str = "queue_id",
    client_id: str = "client_id",
    buckets: int | None = None,
) -> Any:
    """The owner of every queue, as every client of its group computes it.

    ``queues``: a DataFrame with ``group, topic, broker_name, queue_id`` (other names through the
    keyword options; more columns are kept), ``consumers``: ``group, client_id`` (one row per
    connection). ``strategy``: a Java-style config for every group (``"AVG"``,
    ``{"name": "CONSISTENT_HASH", "virtualNodeCnt": 5}``, ``"MACHINE_ROOM_NEARBY-AVG"``...),
    ``strategy_by_group``: a mapping group -> config for some groups. ``previous``: a column of
    ``queues`` with the previous owner (STICKY needs it). Returns the queues' columns plus
    ``client_id`` (null where nobody owns the queue), sorted the Java way within each batch of
    groups. ``buckets``: Python calls per job, the partitions of the one shuffle by group (each call
    holds its partition's rows in memory). By default Spark chooses: its shuffle partitions,
    coalesced to the data's size by adaptive query execution (4 × ``spark.sql.shuffle.partitions``
    when AQE is off).

    >>> from mqbalance.spark import assign_queues  # doctest: +SKIP
    >>> assign_queues(spark.createDataFrame(rows, "group string, topic string, broker_name string, queue_id int"),
    ...               spark.createDataFrame([("g", "c1"), ("g", "c2")], "group string, client_id string"),
    ...               "AVG").show()  # doctest: +SKIP
    """
    cols = QueueColumns(group, topic, broker_name, queue_id, client_id, previous)
    parse_strategies(strategy, strategy_by_group, previous=previous is not None)  # refuses before any job
    wanted = {group: _STRING, topic: _STRING, broker_name: _STRING, queue_id: _INTEGER}
    if previous is not None:
        wanted[previous] = _STRING
    _check(queues, "queues", wanted)
    _check(consumers, "consumers", {group: _STRING, client_id: _STRING})
    if client_id in queues.columns:
        raise ColumnError(f"queues already has a column {client_id!r} (the output's owner column)", client_id)
    n = _shuffle_partitions(queues.sparkSession, buckets)
    flag = _fresh_name("is_consumer", queues.columns)
    func = queue_partition_assigner(strategy, strategy_by_group=strategy_by_group, columns=cols, consumer_flag=flag)
    return together_by_group(queues, consumers, cols, n, flag).mapInArrow(func, _ddl(queues, client_id))


def together_by_group(queues: Any, consumers: Any, cols: QueueColumns, partitions: int | None, flag: str) -> Any:
    """The one shuffle of :func:`assign_queues`: queue rows (owner column null, ``flag`` false) and
    consumer rows (only ``group`` and ``client_id`` set, ``flag`` true) in one DataFrame,
    hash-partitioned by group into ``partitions`` (``None``: Spark's count; every row of a group in
    one partition). Spark
    does not sort: the executors order each partition themselves (they need the Java order)."""
    from pyspark.sql import functions as F

    fields = {f.name: f.dataType for f in queues.schema.fields}
    queue_rows = queues.select(
        *(F.col(f"`{x}`") for x in fields),
        F.lit(None).cast("string").alias(cols.client_id),
        F.lit(False).alias(flag),
    )
    consumer_rows = consumers.select(
        *(F.col(f"`{x}`") if x == cols.group else F.lit(None).cast(t).alias(x) for x, t in fields.items()),
        F.col(f"`{cols.client_id}`"),
        F.lit(True).alias(flag),
    )
    rows = queue_rows.unionByName(consumer_rows)
    if partitions is None:
        return rows.repartition(F.col(f"`{cols.group}`"))
    return rows.repartition(partitions, F.col(f"`{cols.group}`"))


def _fresh_name(base: str, taken: list[str]) -> str:
    name = base
    while name in taken:
        name = "_" + name
    return name


def assign_partitions(
    partitions: Any,
    members: Any,
    assignor: str = "range",
    *,
    previous: str | None = None,
    group: str = "group",
    topic: str = "topic",
    partition: str = "partition",
    member_id: str = "member_id",
    buckets: int | None = None,
) -> Any:
    """Kafka's classic assignors (``range``, ``roundrobin``, ``sticky``, ``cooperative-sticky``)
    over DataFrames: ``partitions`` with ``group, topic, partition`` (every topic's partitions
    0..n-1; ``previous``: a column with the member that owned it, for the sticky assignors),
    ``members`` with ``group, member_id, topic`` (one row per subscribed topic). Returns the
    partitions' columns plus ``member_id`` (null where no member subscribes), as
    :func:`mqbalance.kafka.assignor` computes it."""
    from pyspark.sql import functions as F

    cols = PartitionColumns(group, topic, partition, member_id, previous)
    func = partition_assigner(assignor, columns=cols)  # refuses an unknown assignor before any job
    wanted = {group: _STRING, topic: _STRING, partition: _INTEGER}
    if previous is not None:
        wanted[previous] = _STRING
    _check(partitions, "partitions", wanted)
    _check(members, "members", {group: _STRING, member_id: _STRING, topic: _STRING})
    if member_id in partitions.columns:
        raise ColumnError(f"partitions already has a column {member_id!r} (the output's owner column)", member_id)
    n = _buckets(partitions.sparkSession, buckets)
    bucket = F.pmod(F.hash(F.col(group)), F.lit(n))
    return (
        partitions.groupBy(bucket)
        .cogroup(members.select(group, member_id, topic).groupBy(bucket))
        .applyInArrow(func, _ddl(partitions, member_id))
    )
