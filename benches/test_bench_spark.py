"""The Spark main job (issue #5), Spark ``local[2]``, warm session, baselines in the same run:

* AVG over ~1M queues / 15,625 groups (8 clients each) against the same assignment written in
  native Spark SQL (window functions) — target: at least as fast;
* CONSISTENT_HASH against a per-group Python UDF (``applyInPandas`` per (group, topic), plain
  Python MD5 ring) — target: ≥ 20× faster;
* the wall time of the whole audit (assign + audit + outputs) at 1M queues.

With ``--benchmark-disable`` (CI) everything runs on a few hundred groups as a correctness test.
"""

from __future__ import annotations

import bisect
import hashlib
import time

import pytest

from mqbalance.fleet import scaled_fleet, snapshot_from_dict, write_outputs
from mqbalance.fleet.rocketmq.snapshot import PERM_READ
from mqbalance.fleet.rocketmq.spark import assign_fleet, audit
from mqbalance.fleet.spark import local_session, stop_session

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark():
    s = local_session(driver_memory="4g")
    yield s
    stop_session(s)


def _noop(df) -> None:
    df.write.format("noop").mode("overwrite").save()


def native_avg(spark, snap):
    """AVG in native Spark SQL: queue rank and client rank by window functions, then the block
    formula. (Binary string order = Java order for these ASCII names; no duplicated ids.)"""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    arrow = snap.to_arrow()
    qd = spark.createDataFrame(arrow["queue_data"])
    queues = qd.where(F.col("perm").bitwiseAND(PERM_READ) != 0).select(
        "topic",
        "broker_name",
        F.explode(F.sequence(F.lit(0), F.col("read_queue_nums").cast("int") - 1)).alias("queue_id"),
    )
    work = spark.createDataFrame(arrow["subscriptions"]).join(queues, "topic")
    pair = Window.partitionBy("group", "topic")
    work = work.withColumn("k", F.row_number().over(pair.orderBy("broker_name", "queue_id")) - 1).withColumn(
        "n", F.count("*").over(pair)
    )
    conns = spark.createDataFrame(arrow["connections"]).select("group", "client_id")
    g = Window.partitionBy("group")
    conns = conns.withColumn("slot", F.row_number().over(g.orderBy("client_id")) - 1).withColumn(
        "c", F.count("*").over(g)
    )
    x = work.join(conns.select("group", "c").distinct(), "group")
    q = F.floor(F.col("n") / F.col("c"))
    mod = F.col("n") % F.col("c")
    slot = (
        F.when(F.col("n") <= F.col("c"), F.col("k"))
        .when(F.col("k") < mod * (q + 1), F.floor(F.col("k") / (q + 1)))
        .otherwise(mod + F.floor((F.col("k") - mod * (q + 1)) / q))
    )
    x = x.withColumn("slot", slot.cast("int"))
    return x.join(
        conns.select("group", "slot", F.col("client_id").alias("consumer")), ["group", "slot"], "left"
    ).select("group", "topic", "broker_name", "queue_id", "consumer")


def test_avg_1m_vs_native_spark_sql(spark, compare, full_size):
    snap = snapshot_from_dict(scaled_fleet(15_625 if full_size else 300), "scaled")
    ours = assign_fleet(spark, snap)
    native = native_avg(spark, snap)
    assert ours.exceptAll(native).count() == 0 and native.exceptAll(ours).count() == 0
    _noop(ours)  # warm
    compare(
        lambda: _noop(assign_fleet(spark, snap)),
        lambda: _noop(native_avg(spark, snap)),
        check=lambda a, b: None,
        baseline_rounds=3,
        label="native Spark SQL (window functions)",
    )


def test_consistent_hash_vs_per_group_python_udf(spark, compare, full_size):
    from pyspark.sql import functions as F

    groups = 15_625 if full_size else 100  # ~1M queues, as the AVG case
    snap = snapshot_from_dict(scaled_fleet(groups, strategy={"name": "CONSISTENT_HASH", "virtualNodeCnt": 10}), "ch")
    clients = {name: group.client_ids for name, group in snap.consumer_groups().items()}
    arrow = snap.to_arrow()
    qd = spark.createDataFrame(arrow["queue_data"])
    queues = qd.select(
        "topic",
        "broker_name",
        F.explode(F.sequence(F.lit(0), F.col("read_queue_nums").cast("int") - 1)).alias("queue_id"),
    )
    work = spark.createDataFrame(arrow["subscriptions"]).join(queues, "topic").cache()
    work.count()
    schema = "group string, topic string, broker_name string, queue_id int, consumer string"

    # Defined here so cloudpickle ships it by value (workers cannot import this module).
    def _python_ch(pdf, clients, vnodes=10):
        """One (group, topic) in plain Python: the RocketMQ ring over the Java-sorted ids."""
        import pandas as pd

        def h(s):
            return int.from_bytes(hashlib.md5(s.encode()).digest()[:4], "big")

        ids = sorted(clients[pdf["group"].iloc[0]])
        ring = {}
        for cid in ids:
            for r in range(vnodes):
                ring[h(f"{cid}-{r}")] = cid
        keys = sorted(ring)
        out = []
        for t, b, q in zip(pdf["topic"], pdf["broker_name"], pdf["queue_id"]):
            i = bisect.bisect_left(keys, h(f"MessageQueue [topic={t}, brokerName={b}, queueId={q}]"))
            out.append(ring[keys[i % len(keys)]])
        return pd.DataFrame(
            {
                "group": pdf["group"],
                "topic": pdf["topic"],
                "broker_name": pdf["broker_name"],
                "queue_id": pdf["queue_id"],
                "consumer": out,
            }
        )

    def udf():
        return work.groupBy("group", "topic").applyInPandas(lambda pdf: _python_ch(pdf, clients), schema)

    assert assign_fleet(spark, snap).exceptAll(udf()).count() == 0
    compare(
        lambda: _noop(assign_fleet(spark, snap)),
        lambda: _noop(udf()),
        check=lambda a, b: None,
        label="per-group Python UDF (applyInPandas)",
    )
    work.unpersist()


def test_whole_audit_wall_time_1m(spark, benchmark, full_size, tmp_path):
    snap = snapshot_from_dict(scaled_fleet(15_625 if full_size else 300), "scaled")

    def run():
        assignments = assign_fleet(spark, snap).cache()
        assignments.count()
        result = audit(snap, assignments)
        write_outputs(result, tmp_path, assignments=assignments, source="scaled")
        assignments.unpersist()
        return result

    start = time.perf_counter()
    result = benchmark.pedantic(run, rounds=1, iterations=1)
    print(f"whole audit ({result.totals.queues_assigned:,} queues): {time.perf_counter() - start:.1f} s")
    assert result.totals.queues_assigned == snap.readable_queue_count() and result.findings == []
