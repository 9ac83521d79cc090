"""Fleet assignment on Spark: the owner of every readable queue of every (group, topic), computed
inside the executors with the Rust core, exactly as the clients compute it.

``pyspark`` is imported lazily, so ``import mqbalance`` works without it. Local mode is the
default; a cluster is the same code with another master URL (executors need ``mqbalance``
installed).

How it runs: readable queues (READ-permission queue data × ``0..readQueueNums-1``) are joined
with the subscriptions in native Spark; rows are hash-bucketed by (group, topic) and each bucket
goes through one ``applyInArrow`` call, which walks its groups and calls
:func:`mqbalance.bulk.assign` (Java sort + the client's strategy) for each — many groups per Python
call. The result is one row per (queue, consuming process); an unowned queue has one row with a
null consumer. Each connection uses its *own* strategy (a misconfigured group is reproduced as it
behaves); BROADCASTING groups consume every queue on every connection.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from .snapshot import PERM_READ, Snapshot
from .strategies import AllocateStrategy, strategy

__all__ = ["local_session", "stop_session", "session", "assign_fleet", "ASSIGNMENT_COLUMNS", "GroupSpec"]

ASSIGNMENT_COLUMNS = ("group", "topic", "broker_name", "queue_id", "consumer")

# group -> (message model, [(client_id, strategy name, virtual_node_cnt, consumer_idcs), ...])
GroupSpec = dict[str, tuple[str, list[tuple[str, str, Any, Any]]]]

_LOG4J = """status = warn
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = STDERR
appender.console.type = Console
appender.console.name = STDERR
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.spark.name = org.apache.spark
logger.spark.level = error
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = error
"""


def local_session(master: str | None = None, *, app_name: str = "mqbalance", driver_memory: str = "2g", shuffle_partitions: int = 4, fast_start: bool = False) -> Any:
    """A SparkSession: ``local[2]`` by default (loopback only, no UI, quiet logs, its own temp
    dir removed by :func:`stop_session`), or the given master URL. ``fast_start`` trades heavy-SQL
    speed for a faster JVM start (tests)."""
    master = master or "local[2]"
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    tmp = tempfile.mkdtemp(prefix="mqbalance-spark-")
    log4j = os.path.join(tmp, "log4j2.properties")
    with open(log4j, "w") as f:
        f.write(_LOG4J)
    java_opts = f"-Dlog4j2.configurationFile=file:{log4j} -Djava.io.tmpdir={tmp}"
    if fast_start:
        java_opts += " -XX:TieredStopAtLevel=1"
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.driver.memory", driver_memory)
        .config("spark.driver.extraJavaOptions", java_opts)
        .config("spark.executor.extraJavaOptions", java_opts)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
    )
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark._mqbalance_tmp = tmp  # removed by stop_session
    return spark


def stop_session(spark: Any) -> None:
    """Stop a session and remove the temp dir :func:`local_session` gave it."""
    tmp = getattr(spark, "_mqbalance_tmp", None)
    spark.stop()
    if tmp:
        shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def session(master: str | None = None, **options: Any) -> Iterator[Any]:
    """The active SparkSession if there is one (left running), else a new :func:`local_session`
    (stopped on exit)."""
    from pyspark.sql import SparkSession

    existing = SparkSession.getActiveSession()
    spark = existing or local_session(master, **options)
    try:
        yield spark
    finally:
        if existing is None:
            stop_session(spark)


def group_specs(snapshot: Snapshot) -> GroupSpec:
    """Every group's message model and connections (in snapshot order) with their strategies."""
    out: dict[str, tuple[str, list[tuple[str, str, Any, Any]]]] = {}
    c = snapshot.connections
    for i, g in enumerate(c["group"]):
        model, conns = out.setdefault(g, (c["message_model"][i], []))
        conns.append((c["client_id"][i], c["strategy"][i], c["virtual_node_cnt"][i], c["consumer_idcs"][i]))
    return out


def _strategy(name: str, vnodes: Any, idcs: Any, cache: dict[tuple[Any, ...], AllocateStrategy]) -> AllocateStrategy:
    key = (name, vnodes, idcs)
    if key not in cache:
        params: dict[str, Any] = {}
        base = name
        if name.startswith("MACHINE_ROOM_NEARBY-"):
            base, inner = name.split("-", 1)
            params["inner"] = _strategy(inner, vnodes, idcs, cache)
        elif name == "CONSISTENT_HASH" and vnodes is not None:
            params["virtual_node_cnt"] = int(vnodes)
        elif name == "MACHINE_ROOM":
            params["consumer_idcs"] = None if idcs is None else [s for s in str(idcs).split(",") if s]
        cache[key] = strategy(base, **params)
    return cache[key]


def assign_group_topic(specs: GroupSpec, group: str, topics: Any, brokers: Any, queue_ids: np.ndarray, cache: dict[tuple[Any, ...], AllocateStrategy]) -> tuple[np.ndarray, list[str]]:
    """Rows and consumers of one (group, topic): ``(row indices, consumer ids)`` pairs flattened
    (a row appears once per consuming process)."""
    model, conns = specs.get(group, ("CLUSTERING", []))
    n = len(queue_ids)
    if not conns:
        return np.zeros(0, dtype=np.int64), []
    if model == "BROADCASTING":
        rows = np.tile(np.arange(n, dtype=np.int64), len(conns))
        return rows, [cid for cid, *_ in conns for _ in range(n)]
    ids = [cid for cid, *_ in conns]
    first = {}
    for j, cid in enumerate(ids):
        first.setdefault(cid, j)
    variants: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for j, (_, name, vnodes, idcs) in enumerate(conns):
        variants[(name, vnodes, idcs)].append(j)
    row_parts, who = [], []
    for (name, vnodes, idcs), members in variants.items():
        owners = bulk_assign(_strategy(name, vnodes, idcs, cache), topics, brokers, queue_ids, ids)
        for j in members:
            rows = np.flatnonzero(owners == first[ids[j]])
            row_parts.append(rows)
            who.extend([ids[j]] * len(rows))
    return (np.concatenate(row_parts) if row_parts else np.zeros(0, dtype=np.int64)), who


def bulk_assign(s: AllocateStrategy, topics: Any, brokers: Any, queue_ids: np.ndarray, ids: list[str]) -> np.ndarray:
    from .bulk import assign

    return assign(s, topics, brokers, queue_ids, ids)


def assign_batch(table: Any, specs: GroupSpec) -> Any:
    """One ``applyInArrow`` call: every (group, topic) of a bucket."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if table.num_rows == 0:
        return _empty_output()
    table = table.sort_by([("group", "ascending"), ("topic", "ascending")])
    groups = table.column("group").to_numpy(zero_copy_only=False)
    topics_np = table.column("topic").to_numpy(zero_copy_only=False)
    brokers = pc.dictionary_encode(table.column("broker_name").combine_chunks())
    topics_dict = pc.dictionary_encode(table.column("topic").combine_chunks())
    qids = table.column("queue_id").to_numpy().astype(np.int64)
    change = np.flatnonzero((groups[1:] != groups[:-1]) | (topics_np[1:] != topics_np[:-1])) + 1
    bounds = np.concatenate(([0], change, [len(groups)]))
    cache: dict[tuple[Any, ...], AllocateStrategy] = {}
    take_parts, consumers = [], []
    owned_mask = np.zeros(len(groups), dtype=bool)
    for a, b in zip(bounds[:-1], bounds[1:]):
        rows, who = assign_group_topic(specs, groups[a], topics_dict.slice(a, b - a), brokers.slice(a, b - a), qids[a:b], cache)
        take_parts.append(rows + a)
        consumers.extend(who)
        owned_mask[rows + a] = True
    unowned = np.flatnonzero(~owned_mask)
    take = np.concatenate([*take_parts, unowned]).astype(np.int64)
    out = table.select(["group", "topic", "broker_name", "queue_id"]).take(pa.array(take))
    consumer = pa.array(consumers + [None] * len(unowned), type=pa.string())
    return out.append_column("consumer", consumer)


def _empty_output() -> Any:
    import pyarrow as pa

    return pa.table({"group": pa.array([], pa.string()), "topic": pa.array([], pa.string()), "broker_name": pa.array([], pa.string()), "queue_id": pa.array([], pa.int32()), "consumer": pa.array([], pa.string())})


def readable_queues(spark: Any, snapshot: Snapshot) -> Any:
    """``(topic, broker_name, queue_id)`` of every readable queue (native Spark)."""
    from pyspark.sql import functions as F

    qd = spark.createDataFrame(snapshot.to_arrow()["queue_data"]) if snapshot.queue_data["topic"] else None
    if qd is None:
        return spark.createDataFrame([], "topic string, broker_name string, queue_id int")
    return (
        qd.where((F.col("perm").bitwiseAND(PERM_READ) != 0) & (F.col("read_queue_nums") > 0))
        .select("topic", "broker_name", F.explode(F.sequence(F.lit(0), F.col("read_queue_nums").cast("int") - 1)).alias("queue_id"))
    )


def assign_fleet(spark: Any, snapshot: Snapshot, *, buckets: int | None = None) -> Any:
    """DataFrame ``(group, topic, broker_name, queue_id, consumer)``: one row per (queue,
    consuming process), ``consumer`` null for a queue nobody consumes."""
    from pyspark.sql import functions as F

    specs = group_specs(snapshot)
    queues = readable_queues(spark, snapshot)
    subs = spark.createDataFrame(snapshot.to_arrow()["subscriptions"]) if snapshot.subscriptions["group"] else spark.createDataFrame([], "group string, topic string")
    work = subs.join(queues, "topic").select("group", "topic", "broker_name", F.col("queue_id").cast("int").alias("queue_id"))
    n_buckets = buckets or max(4, min(256, snapshot.readable_queue_count() // 20_000 + 4))
    work = work.withColumn("bucket", F.abs(F.hash("group", "topic")) % n_buckets)
    schema = "group string, topic string, broker_name string, queue_id int, consumer string"

    def run(table):
        return assign_batch(table, specs)

    return work.groupBy("bucket").applyInArrow(run, schema)
