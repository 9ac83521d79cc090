"""``mqbalance.spark`` in local mode: the DataFrame functions give exactly what the in-process path
gives (``bulk.owners`` per (group, topic), ``mqbalance.kafka.assignor``) on generated fleets; the
building blocks work in a cogrouped ``applyInArrow`` of one's own; bad columns are refused on the
driver, naming the column. The same comparison runs on a standalone cluster
(``test_spark_functions_cluster.py``) and over Spark Connect (``test_spark_connect.py``)."""

from __future__ import annotations

import random
import warnings

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqbalance.exceptions import (
    ColumnError,
    InvalidInputError,
    PreviousAssignmentRequiredError,
    PreviousAssignmentWarning,
    UnknownStrategyError,
    UnsupportedStrategyError,
)
from mqbalance.fleet.spark import session
from mqbalance.spark import (
    PARTITION_ASSIGNMENT_SCHEMA,
    QUEUE_ASSIGNMENT_SCHEMA,
    assign_partitions,
    assign_queues,
    partition_assigner,
    queue_assigner,
)
from spark_functions_cases import (
    CONSUMER_DDL,
    MEMBER_DDL,
    PARTITION_DDL,
    QUEUE_DDL,
    STRATEGIES,
    check_queue_rows,
    expected_partition_owners,
    expected_queue_owners,
    java_group_order,
    partition_case,
    queue_case,
    run_all,
)

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark():
    with session(fast_start=True, driver_memory="1g") as s:
        yield s


def _queue_tables(queues, consumers):
    names = ["group", "topic", "broker_name", "queue_id", "previous"]
    q = pa.table(
        {
            n: pa.array([r[k] for r in queues], pa.int32() if n == "queue_id" else pa.string())
            for k, n in enumerate(names)
        }
    )
    c = pa.table({"group": [g for g, _ in consumers], "client_id": [x for _, x in consumers]})
    return q, c


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), default=st.sampled_from(STRATEGIES))
def test_the_arrow_building_block_equals_bulk_owners(seed, default):
    """Without Spark: one call over many groups, each with its strategy, equals ``bulk.owners`` per pair,
    and the groups come out in Java String order."""
    from mqbalance.spark import QueueColumns

    queues, consumers, by_group = queue_case(seed, groups=9)
    q, c = _queue_tables(queues, consumers)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PreviousAssignmentWarning)
        out = queue_assigner(default, strategy_by_group=by_group, columns=QueueColumns(previous="previous"))(q, c)
    rows = out.to_pylist()
    check_queue_rows(rows, expected_queue_owners(queues, consumers, by_group, default))
    groups = list(dict.fromkeys(r["group"] for r in rows))
    assert groups == java_group_order(groups)
    assert out.schema.field("queue_id").type == pa.int32()  # the queues' own columns, as given


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), default=st.sampled_from(STRATEGIES), batch=st.integers(1, 50))
def test_the_partition_building_block_equals_bulk_owners(seed, default, batch):
    """Without Spark: queue and consumer rows mixed in one stream of batches (any batch size), as
    ``assign_queues`` feeds a partition, give what ``bulk.owners`` gives per pair."""
    from mqbalance.spark import QueueColumns, queue_partition_assigner

    queues, consumers, by_group = queue_case(seed, groups=9)
    q, c = _queue_tables(queues, consumers)
    q = q.append_column("client_id", pa.nulls(q.num_rows, pa.string())).append_column(
        "flag", pa.array([False] * q.num_rows)
    )
    c = pa.table(
        {
            name: c.column(name) if name in c.column_names else pa.nulls(c.num_rows, q.schema.field(name).type)
            for name in q.column_names
        }
    ).set_column(q.num_columns - 1, "flag", pa.array([True] * c.num_rows))
    mixed = pa.concat_tables([q, c]).take(
        pa.array(random.Random(seed).sample(range(q.num_rows + c.num_rows), k=q.num_rows + c.num_rows))
    )
    run = queue_partition_assigner(
        default, strategy_by_group=by_group, columns=QueueColumns(previous="previous"), consumer_flag="flag"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PreviousAssignmentWarning)
        out = pa.Table.from_batches(list(run(iter(mixed.to_batches(max_chunksize=batch)))))
    assert out.column_names == ["group", "topic", "broker_name", "queue_id", "previous", "client_id"]
    check_queue_rows(out.to_pylist(), expected_queue_owners(queues, consumers, by_group, default))
    assert list(run(iter([]))) == []
    with pytest.raises(InvalidInputError, match="consumer_flag"):
        queue_partition_assigner("AVG", consumer_flag="")


def test_local_mode_equals_the_in_process_path(spark):
    assert run_all(spark) > 400


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), buckets=st.integers(1, 7))
def test_any_bucketing_gives_the_same_owners(spark, seed, buckets):
    queues, consumers, by_group = queue_case(seed, groups=10)
    q, c = spark.createDataFrame(queues, QUEUE_DDL), spark.createDataFrame(consumers, CONSUMER_DDL)
    got = assign_queues(q, c, strategy_by_group=by_group, previous="previous", buckets=buckets).collect()
    check_queue_rows([r.asDict() for r in got], expected_queue_owners(queues, consumers, by_group))


def test_the_building_blocks_in_an_applyinarrow_of_ones_own(spark):
    queues, consumers, _ = queue_case(3)
    q = spark.createDataFrame([r[:4] for r in queues], "group string, topic string, broker_name string, queue_id int")
    c = spark.createDataFrame(consumers, CONSUMER_DDL)
    strategy = {"name": "CONSISTENT_HASH", "virtualNodeCnt": 7}
    mine = (
        q.groupBy("group").cogroup(c.groupBy("group")).applyInArrow(queue_assigner(strategy), QUEUE_ASSIGNMENT_SCHEMA)
    )
    expected = expected_queue_owners(queues, consumers, {}, strategy)
    check_queue_rows([r.asDict() for r in mine.collect()], expected)
    partitions, members = partition_case(4)
    p = spark.createDataFrame([r[:3] for r in partitions], "group string, topic string, partition int")
    m = spark.createDataFrame(members, MEMBER_DDL)
    kafka = (
        p.groupBy("group")
        .cogroup(m.groupBy("group"))
        .applyInArrow(partition_assigner("roundrobin"), PARTITION_ASSIGNMENT_SCHEMA)
    )
    got = {(r["group"], r["topic"], r["partition"]): r["member_id"] for r in kafka.collect()}
    assert got == expected_partition_owners(partitions, members, "roundrobin", with_previous=False)


@pytest.fixture(scope="module")
def frames(spark):
    queues, consumers, _ = queue_case(1, groups=3)
    return spark.createDataFrame(queues, QUEUE_DDL), spark.createDataFrame(consumers, CONSUMER_DDL)


@pytest.mark.parametrize(
    "change, error, column, message",
    [
        (lambda q, c: (q.drop("broker_name"), c), ColumnError, "broker_name", "queues has no column 'broker_name'"),
        (
            lambda q, c: (q.withColumn("queue_id", q.queue_id.cast("string")), c),
            ColumnError,
            "queue_id",
            "expected integer",
        ),
        (lambda q, c: (q, c.withColumnRenamed("client_id", "id")), ColumnError, "client_id", "consumers has no column"),
        (lambda q, c: (q, c.withColumn("group", c.group.cast("binary"))), ColumnError, "group", "expected string"),
        (lambda q, c: (q.withColumnRenamed("previous", "client_id"), c), ColumnError, "client_id", "already has"),
    ],
)
def test_bad_columns_are_refused_on_the_driver_naming_the_column(frames, change, error, column, message):
    q, c = change(*frames)
    with pytest.raises(error, match=message) as caught:
        assign_queues(q, c, "AVG")
    assert caught.value.value == column


@pytest.mark.parametrize(
    "strategy, error",
    [
        ("NOPE", UnknownStrategyError),
        ({"name": "CONFIG", "messageQueueList": []}, UnsupportedStrategyError),
        ("range", UnsupportedStrategyError),
        ("STICKY", PreviousAssignmentRequiredError),
        ({"name": "CONSISTENT_HASH", "virtualNodeCnt": "x"}, ValueError),
    ],
)
def test_bad_strategies_are_refused_on_the_driver(frames, strategy, error):
    with pytest.raises(error):
        assign_queues(*frames, strategy)
    with pytest.raises(error):
        assign_queues(*frames, "AVG", strategy_by_group={"cg-1": strategy})


def test_nulls_and_duplicated_queues_fail_the_job_naming_the_column(spark):
    c = spark.createDataFrame([("g", "c1")], CONSUMER_DDL)
    ddl = "group string, topic string, broker_name string, queue_id int"
    nulls = spark.createDataFrame([("g", "T", None, 0)], ddl)
    with pytest.raises(Exception, match="column 'broker_name' holds nulls"):
        assign_queues(nulls, c).collect()
    dup = spark.createDataFrame([("g", "T", "b", 0), ("g", "T", "b", 0)], ddl)
    with pytest.raises(Exception, match="duplicated queue .* group 'g', topic 'T', broker 'b', queue id 0"):
        assign_queues(dup, c).collect()


def test_kafka_bad_input_is_refused_on_the_driver(spark):
    partitions, members = partition_case(2)
    p, m = spark.createDataFrame(partitions, PARTITION_DDL), spark.createDataFrame(members, MEMBER_DDL)
    with pytest.raises(UnknownStrategyError):
        assign_partitions(p, m, "uniform")
    with pytest.raises(ColumnError, match="members has no column 'member_id'") as caught:
        assign_partitions(p, m.drop("member_id"), "range")
    assert caught.value.value == "member_id"


def test_the_guide_example_runs(spark):
    """The Spark functions guide's example (docs/guide/spark.md), as written (its getOrCreate finds
    this session); tests/test_docs.py runs it too, in a fresh interpreter."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "guide" / "spark.md").read_text(encoding="utf-8")
    block = re.search(r"```python\n(.*?)```", text, re.S)
    assert block is not None
    exec(compile(block.group(1), "docs/guide/spark.md", "exec"), {})


def _tasks_of(spark, job_group: str, action) -> int:
    """The tasks Spark ran for ``action()``: every stage of the jobs started under ``job_group``."""
    sc = spark.sparkContext
    sc.setJobGroup(job_group, job_group)
    try:
        action()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    tracker = sc.statusTracker()
    jobs = [tracker.getJobInfo(j) for j in tracker.getJobIdsForGroup(job_group)]
    stages = [tracker.getStageInfo(s) for job in jobs for s in job.stageIds]
    return sum(stage.numTasks for stage in stages if stage)


@pytest.mark.parametrize(
    ("adaptive", "partitions", "buckets", "most_tasks"),
    [("true", 200, None, 12), ("false", 20, None, 90), ("true", 200, 3, 12)],
)
def test_a_few_rows_run_in_a_few_tasks_unless_told_otherwise(spark, adaptive, partitions, buckets, most_tasks):
    """With Spark's defaults (200 shuffle partitions, adaptive execution on), the shuffle by group is
    coalesced to the data's size: a 4-row fleet is a few tasks, not 800. With AQE off, every shuffle
    partition runs: 4 × the shuffle partitions (20 here: with 200, 800 tasks of Python took ~40 CPU s);
    an explicit ``buckets`` is that many partitions."""
    before = {k: spark.conf.get(k) for k in ("spark.sql.shuffle.partitions", "spark.sql.adaptive.enabled")}
    spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    spark.conf.set("spark.sql.adaptive.enabled", adaptive)
    try:
        q = spark.createDataFrame([("cg", "t", "broker-a", i) for i in range(4)], QUEUE_DDL.rsplit(",", 1)[0])
        c = spark.createDataFrame([("cg", "c1"), ("cg", "c2")], CONSUMER_DDL)
        rows: list = []
        tasks = _tasks_of(
            spark, f"few-rows-{adaptive}-{buckets}", lambda: rows.extend(assign_queues(q, c, buckets=buckets).collect())
        )
        assert [r.client_id for r in rows] == ["c1", "c1", "c2", "c2"]
        assert tasks <= most_tasks, tasks
        if adaptive == "false":
            assert tasks >= 4 * partitions, tasks  # every shuffle partition ran
    finally:
        for k, v in before.items():
            spark.conf.set(k, v)
