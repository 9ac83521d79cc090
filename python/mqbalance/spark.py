"""Fleet assignment on Spark: the owner of every readable queue of every (group, topic), computed
inside the executors with the Rust core, exactly as the clients compute it.

``pyspark`` is imported lazily, so ``import mqbalance`` works without it. Local mode is the
default; a cluster is the same code with another master URL (executors need ``mqbalance``
installed).

How it runs: only the (group, topic) pairs travel through Spark, each with its topic's readable
route (READ-permission queue data); ``mapInArrow`` hands batches of pairs to the executors, which
expand them into queues (``0..readQueueNums-1`` per broker) and assign them all in one Rust call
per batch (:func:`mqbalance.bulk.assign_groups`, Java sort + the client's strategy), so no queue
row is ever shuffled. The result is one row per (queue, consuming process); an unowned queue has one row with a
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

from . import bulk, shipping
from .snapshot import Snapshot
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


def local_session(
    master: str | None = None,
    *,
    app_name: str = "mqbalance",
    driver_memory: str = "2g",
    shuffle_partitions: int = 4,
    fast_start: bool = False,
    ship_environment: bool = False,
) -> Any:
    """A SparkSession: ``local[2]`` by default (loopback only, no UI, quiet logs, its own temp
    dir removed by :func:`stop_session`), or the given master URL. ``fast_start`` trades heavy-SQL
    speed for a faster JVM start (tests). ``ship_environment`` (cluster masters only; local
    executors already run this Python) packs this environment and ships it to the executors
    (:mod:`mqbalance.shipping`), for workers without mqbalance."""
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
    shipped = shipping.environment_conf() if ship_environment and not master.startswith("local") else {}
    for key, value in shipped.items():
        builder = builder.config(key, value)
    with shipping.executor_python(shipped):
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


def assign_group_topic(
    specs: GroupSpec,
    group: str,
    topics: Any,
    brokers: Any,
    queue_ids: np.ndarray,
    cache: dict[tuple[Any, ...], AllocateStrategy],
) -> tuple[np.ndarray, list[str]]:
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
        owners = bulk.assign(_strategy(name, vnodes, idcs, cache), topics, brokers, queue_ids, ids)
        for j in members:
            rows = np.flatnonzero(owners == first[ids[j]])
            row_parts.append(rows)
            who.extend([ids[j]] * len(rows))
    return (np.concatenate(row_parts) if row_parts else np.zeros(0, dtype=np.int64)), who


def assign_batch(table: Any, specs: GroupSpec, bounds: np.ndarray) -> Any:
    """Every (group, topic) of a table of queue rows ``(group, topic, broker_name, queue_id)``
    that are contiguous per pair, pair ``p`` being rows ``bounds[p]:bounds[p+1]``
    (:func:`expand_pairs` gives both). Clustering groups whose clients share one strategy (the
    common case) go through one batched Rust call; broadcasting groups, groups with mixed
    strategies and MACHINE_ROOM_NEARBY go pair by pair."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if table.num_rows == 0:
        return _empty_output()
    starts = bounds[:-1]
    pair_groups = table.column("group").take(pa.array(starts)).to_pylist()
    brokers = pc.dictionary_encode(table.column("broker_name").combine_chunks())
    topics_dict = pc.dictionary_encode(table.column("topic").combine_chunks())
    qids = table.column("queue_id").to_numpy().astype(np.int64)
    cache: dict[tuple[Any, ...], AllocateStrategy] = {}
    parts: list[Any] = []
    owned_mask = np.zeros(table.num_rows, dtype=bool)
    base = table.select(["group", "topic", "broker_name", "queue_id"])

    def emit(rows: np.ndarray, consumer: Any) -> None:
        parts.append(base.take(pa.array(rows)).append_column("consumer", consumer))
        owned_mask[rows] = True

    batched, batched_bounds, batched_strategies, batched_ids = [], [0], [], []
    for p, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
        model, conns = specs.get(pair_groups[p], ("CLUSTERING", []))
        variants = {(name, vnodes, idcs) for _, name, vnodes, idcs in conns}
        if model == "CLUSTERING" and len(variants) == 1 and not conns[0][1].startswith("MACHINE_ROOM_NEARBY"):
            batched.append(np.arange(a, b))
            batched_bounds.append(batched_bounds[-1] + (b - a))
            batched_strategies.append(_strategy(conns[0][1], conns[0][2], conns[0][3], cache))
            batched_ids.append([cid for cid, *_ in conns])
            continue
        rows, who = assign_group_topic(
            specs, pair_groups[p], topics_dict.slice(a, b - a), brokers.slice(a, b - a), qids[a:b], cache
        )
        if len(rows):
            emit(rows + a, pa.array(who, type=pa.string()))
    if batched:
        sub = np.concatenate(batched)
        everything = len(sub) == table.num_rows  # no pair fell back: rows stay in place
        idx = None if everything else pa.array(sub)
        t_col = topics_dict if everything else topics_dict.take(idx)
        b_col = brokers if everything else brokers.take(idx)
        owners = bulk.assign_groups(
            t_col, b_col, qids if everything else qids[sub], batched_bounds, batched_strategies, batched_ids
        )
        offsets = np.cumsum([0] + [len(ids) for ids in batched_ids])
        flat_ids = pa.array([cid for ids in batched_ids for cid in ids], type=pa.string())
        seg_of_row = np.repeat(np.arange(len(batched_ids)), np.diff(batched_bounds))
        owned = owners >= 0
        # One consumer per batched row, aligned with the rows (null where nobody consumes).
        positions = np.where(owned, offsets[seg_of_row] + np.maximum(owners, 0), 0)
        consumer = flat_ids.take(pa.array(positions, mask=~owned))
        parts.insert(0, (base if everything else base.take(idx)).append_column("consumer", consumer))
        owned_mask[sub] = True  # their unowned rows are already in, with a null consumer
        # A duplicated id: every further process with it consumes the same queues.
        for s, ids in enumerate(batched_ids):
            if len(set(ids)) == len(ids):
                continue
            first: dict[str, int] = {}
            lo, hi = batched_bounds[s], batched_bounds[s + 1]
            for j, cid in enumerate(ids):
                if first.setdefault(cid, j) != j:
                    rows = sub[lo:hi][owners[lo:hi] == first[cid]]
                    if len(rows):
                        emit(rows, pa.array([cid] * len(rows), type=pa.string()))
    unowned = np.flatnonzero(~owned_mask)
    if len(unowned):
        parts.append(base.take(pa.array(unowned)).append_column("consumer", pa.nulls(len(unowned), type=pa.string())))
    return pa.concat_tables(parts) if parts else _empty_output()


def _empty_output() -> Any:
    import pyarrow as pa

    return pa.table(
        {
            "group": pa.array([], pa.string()),
            "topic": pa.array([], pa.string()),
            "broker_name": pa.array([], pa.string()),
            "queue_id": pa.array([], pa.int32()),
            "consumer": pa.array([], pa.string()),
        }
    )


def expand_pairs(batch: Any) -> tuple[Any, np.ndarray]:
    """``(group, topic, route: list<struct<broker_name, read_queue_nums>>)`` rows → one row per
    readable queue ``(group, topic, broker_name, queue_id)``, contiguous per pair (vectorised),
    and the pair boundaries."""
    import pyarrow as pa
    import pyarrow.compute as pc

    route = batch.column("route")
    if isinstance(route, pa.ChunkedArray):
        route = route.combine_chunks()
    flat = route.flatten()
    nums = flat.field("read_queue_nums").to_numpy(zero_copy_only=False).astype(np.int64)
    parent = pc.list_parent_indices(route).to_numpy()
    total = int(nums.sum())
    entry = np.repeat(np.arange(len(nums)), nums)
    starts = np.cumsum(nums) - nums
    queue_id = (np.arange(total) - starts[entry]).astype(np.int32)
    pair = pa.array(parent[entry])
    per_pair = np.bincount(parent, weights=nums, minlength=batch.num_rows).astype(np.int64)
    bounds = np.concatenate(([0], np.cumsum(per_pair)))
    table = pa.table(
        {
            "group": batch.column("group").take(pair),
            "topic": batch.column("topic").take(pair),
            "broker_name": flat.field("broker_name").take(pa.array(entry)),
            "queue_id": pa.array(queue_id),
        }
    )
    return table, bounds


def assign_fleet(spark: Any, snapshot: Snapshot, *, partitions: int | None = None) -> Any:
    """DataFrame ``(group, topic, broker_name, queue_id, consumer)``: one row per (queue,
    consuming process), ``consumer`` null for a queue nobody consumes.

    Only the (group, topic) pairs travel through Spark, each with its topic's readable route; the
    executors expand them into queues and assign them (:func:`assign_batch`), so no queue row is
    shuffled."""
    import pyarrow as pa

    specs = group_specs(snapshot)
    schema = "group string, topic string, broker_name string, queue_id int, consumer string"
    # The pairs are small (one row per subscription): build them on the driver, with each topic's
    # readable route sorted by broker name, and let Spark only distribute them.
    routes = snapshot.readable_routes()
    pair_group, pair_topic, pair_route = [], [], []
    for g, t in zip(snapshot.subscriptions["group"], snapshot.subscriptions["topic"]):
        if t in routes:
            pair_group.append(g)
            pair_topic.append(t)
            pair_route.append([{"broker_name": b, "read_queue_nums": n} for b, n in routes[t]])
    if not pair_group:
        return spark.createDataFrame([], schema)
    route_type = pa.list_(pa.struct([("broker_name", pa.string()), ("read_queue_nums", pa.int64())]))
    table = pa.table(
        {
            "group": pa.array(pair_group, pa.string()),
            "topic": pa.array(pair_topic, pa.string()),
            "route": pa.array(pair_route, route_type),
        }
    )
    # One partition per core: each Python task's start-up costs more than a bigger batch (measured:
    # 1M queues in 1.34 s with 2 partitions on 2 cores, 2.17 s with 10); Arrow's per-batch record
    # limit keeps each worker's memory bounded whatever the partition size.
    n = partitions or spark.sparkContext.defaultParallelism
    pairs = spark.createDataFrame(table)
    if pairs.rdd.getNumPartitions() < n:
        pairs = pairs.repartition(n)

    def run(batches):
        for batch in batches:
            if batch.num_rows:
                table, bounds = expand_pairs(pa.Table.from_batches([batch]))
                yield from assign_batch(table, specs, bounds).to_batches()

    return pairs.mapInArrow(run, schema)
