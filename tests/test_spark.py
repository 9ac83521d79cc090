"""The main job on real Spark (local mode): the executors' assignment equals the in-process
engine's, the Spark audit finds what the in-process audit finds plus churn, the CLI end to end."""

from __future__ import annotations

from collections import defaultdict

import pytest

from mqbalance.cli import main
from mqbalance.fleet import (
    FindingKind,
    assign_snapshot,
    audit_snapshot,
    example_fleet,
    example_pair,
    snapshot_from_dict,
)
from mqbalance.fleet.rocketmq.spark import assign_fleet, audit
from mqbalance.fleet.spark import local_session, stop_session
from test_fleet import STRATEGIES, _reported_fleet, _rooms_fleet, consumers_by_queue

pytestmark = pytest.mark.spark


@pytest.fixture(scope="session")
def spark():
    session = local_session(fast_start=True, driver_memory="1g")
    yield session
    stop_session(session)


def test_executors_assign_like_the_engine(spark):
    brokers = ["hz@broker-a", "sh@broker-b", "broker-d"]
    topics = {
        "T": {"queueDatas": [{"brokerName": b, "readQueueNums": 5, "writeQueueNums": 5, "perm": 6} for b in brokers]}
    }
    clients = ["hz@10.0.0.1@1", "sh@10.0.0.2@1", "10.0.0.5@DEFAULT", "10.0.0.5@DEFAULT"]
    groups = {
        f"cg-{i}": {"subscriptions": ["T"], "strategy": spec, "connections": [{"clientId": c} for c in clients]}
        for i, (spec, _, _) in enumerate(STRATEGIES)
    }
    groups["bc"] = {"messageModel": "BROADCASTING", "subscriptions": ["T"], "connections": [{"clientId": "x"}]}
    for snap in (
        snapshot_from_dict({"topics": topics, "groups": groups}, "t"),
        snapshot_from_dict(example_fleet(5), "e"),
    ):
        assert consumers_by_queue(assign_fleet(spark, snap)) == consumers_by_queue(assign_snapshot(snap))


def test_spark_audit_equals_the_in_process_audit_and_finds_churn(spark):
    previous, current = example_pair(7)
    snap, prev = snapshot_from_dict(current, "current"), snapshot_from_dict(previous, "previous")
    result = audit(snap, assign_fleet(spark, snap), previous=assign_fleet(spark, prev))
    local = audit_snapshot(snap)
    assert [f for f in result.findings if f.kind is not FindingKind.CHURN] == local.findings
    assert [r.to_dict() | {"churn": None} for r in result.rows] == [r.to_dict() for r in local.rows]
    churned = defaultdict(int)
    for f in result.findings:
        if f.kind is FindingKind.CHURN:
            churned[f.group] += f.count
    assert churned  # a member left, one joined, a topic grew
    assert result.totals.churned_queues == sum(churned.values())


def test_cli_audit_end_to_end(tmp_path, capsys):
    out = tmp_path / "audit"
    code = main(["audit", "--out", str(out), "--fail-on", "unowned,duplicate-client-id"])
    text = capsys.readouterr()
    assert code == 3 and "failing on: unowned, duplicate-client-id" in text.err
    assert "unowned_queues" in text.out and "Report:" in text.out
    assert "What if every group switched" in text.out and "  STICKY " in text.out
    for name in (
        "report.md",
        "report.html",
        "findings.json",
        "findings.csv",
        "group_topics.csv",
        "worst_groups.png",
        "churn.png",
        "what_if.csv",  # on by default for a fleet this small
    ):
        assert (out / name).exists(), name
    assert '<section id="what-if">' in (out / "report.html").read_text()
    assert any(p.suffix == ".parquet" for p in (out / "assignments").iterdir())
    assert main(["audit", "--out", str(out), "--fail-on", "nonsense"]) == 2


def test_cli_leaves_a_running_session_alone(spark, tmp_path):
    assert main(["audit", "--out", str(tmp_path / "a")]) == 0
    assert spark.range(3).count() == 3  # the fixture's session still works


def test_one_pass_audit_equals_the_in_process_audit(spark):
    from mqbalance.fleet.rocketmq.spark import audit_fleet

    snap = snapshot_from_dict(example_fleet(9), "example")
    local = audit_snapshot(snap, what_if="AVG,CONSISTENT_HASH_BOUNDED,STICKY")
    assert local.what_if
    for partitions in (None, 3):
        result = audit_fleet(spark, snap, partitions=partitions, what_if="AVG,CONSISTENT_HASH_BOUNDED,STICKY")
        assert result.findings == local.findings and result.rows == local.rows and result.totals == local.totals
        assert result.what_if == local.what_if  # computed in the executors, in the same pass


def test_a_group_with_unknown_strategy_settings_is_not_computed_on_spark_either(spark):
    from mqbalance.fleet.rocketmq.spark import audit_fleet

    snap = snapshot_from_dict(_rooms_fleet(), "live")
    local = audit_snapshot(snap)
    assert local.count(FindingKind.SETTINGS_UNKNOWN) == 1
    result = audit_fleet(spark, snap, partitions=2)
    assert result.findings == local.findings and result.rows == local.rows and result.totals == local.totals


@pytest.mark.parametrize("name", ["RoomAllocator", "CONFIG", "MACHINE_ROOM_NEARBY"])
def test_a_strategy_kept_as_reported_is_unknown_on_spark_too_never_avg(spark, name):
    """The executors go through ``assign_batch_rows`` too: the group has no row there either."""
    from mqbalance.fleet.rocketmq.spark import audit_fleet

    snap = snapshot_from_dict(_reported_fleet(name), "live")
    local = audit_snapshot(snap)
    assert local.count(FindingKind.STRATEGY_UNKNOWN) == 1
    result = audit_fleet(spark, snap, partitions=2)
    assert result.findings == local.findings and result.rows == local.rows and result.totals == local.totals
    assert not [r for r in assign_fleet(spark, snap).collect() if r["group"] == "custom"]


def test_the_audit_writes_the_assignment_rows_from_its_tasks(spark, tmp_path):
    """``assignments_dir``: every task writes the rows it assigned; together they are the
    engine's assignment, and nothing of an earlier run is left."""
    import pyarrow.parquet as pq

    from mqbalance.fleet.rocketmq.spark import audit_fleet

    snap = snapshot_from_dict(example_fleet(9), "example")
    target = tmp_path / "assignments"
    target.mkdir()
    (target / "part-09999.parquet").write_text("from an earlier run")
    result = audit_fleet(spark, snap, partitions=3, assignments_dir=target)
    assert result.findings == audit_snapshot(snap).findings
    assert sorted(p.name for p in target.iterdir()) == ["_SUCCESS"] + [f"part-{i:05d}.parquet" for i in range(3)]
    written = pq.read_table(target)
    assert written.num_rows == assign_snapshot(snap).num_rows
    assert consumers_by_queue(written) == consumers_by_queue(assign_snapshot(snap))
    empty = snapshot_from_dict({"topics": {}, "groups": {}}, "empty")
    audit_fleet(spark, empty, assignments_dir=target)
    assert pq.read_table(target).num_rows == 0 and (target / "_SUCCESS").exists()


def test_cli_audit_refuses_bad_settings_before_starting(tmp_path, capsys):
    assert main(["audit", "--out", str(tmp_path), "--conf", "spark.sql.shuffle.partitions"]) == 2
    assert "--conf: expected KEY=VALUE" in capsys.readouterr().err


def test_one_pass_churn_equals_the_joined_churn_and_the_in_process_one(spark):
    from mqbalance.fleet.rocketmq.spark import audit_fleet

    previous, current = example_pair(7)
    snap, prev = snapshot_from_dict(current, "current"), snapshot_from_dict(previous, "previous")
    joined = audit_fleet(spark, snap, previous=(assign_fleet(spark, snap), assign_fleet(spark, prev)))
    local = audit_snapshot(snap, previous=prev)
    for partitions in (None, 3):
        one_pass = audit_fleet(spark, snap, partitions=partitions, previous=prev)
        assert one_pass.rows == joined.rows == local.rows  # PairRow.churn included
        assert one_pass.findings == joined.findings == local.findings
    assert local.totals.churned_queues > 0


def test_work_is_spread_by_group_and_every_pair_of_a_group_shares_a_task():
    """A task counts a group's busy processes, so a group's pairs must never be split; groups go
    to the least loaded partition by estimated work (queues × consumers)."""
    from mqbalance.fleet.rocketmq import assignment
    from mqbalance.fleet.rocketmq.spark import _work_partitions

    snap = snapshot_from_dict(example_fleet(9), "example")
    pairs = snap.pair_table()
    table = _work_partitions(pairs, snap.group_index(), 4)
    part_of: dict[str, set[int]] = defaultdict(set)
    work = [0] * 4
    for g, p, q in zip(
        table.column("group").to_pylist(), table.column("part").to_pylist(), assignment.pair_queue_counts(pairs)
    ):
        part_of[g].add(p)
        work[p] += int(q) * max(1, snap.group_index().size(g))
    assert all(len(parts) == 1 for parts in part_of.values()) and len(part_of) > 4
    assert sorted({p for parts in part_of.values() for p in parts}) == [0, 1, 2, 3]
    heaviest = max(
        sum(
            int(q) * snap.group_index().size(g)
            for g2, q in zip(pairs["group"].to_pylist(), assignment.pair_queue_counts(pairs))
            if g2 == g
        )
        for g in part_of
    )
    assert max(work) - min(work) <= heaviest  # greedy: no partition exceeds another by more than one group


def test_too_little_driver_memory_is_one_line_and_leaves_no_temp_dir(tmp_path):
    """Spark refuses a driver below its minimum: the user reads one line naming the setting to
    raise (exit code 2, no Java stack), and the session's temp dir is gone."""
    import os
    import subprocess
    import sys

    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp)}
    done = subprocess.run(
        [sys.executable, "-m", "mqbalance.cli", "audit", "--out", str(tmp_path / "a"), "--driver-memory", "300m"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if "error" in line.lower()]
    assert errors == ["mqbalance: error: Spark needs at least 450m of driver memory: raise --driver-memory"]
    assert "at org.apache" not in done.stderr and "Traceback" not in done.stderr
    assert not [p for p in temp.iterdir() if p.name.startswith("mqbalance-spark-")]


def test_the_python_workers_keep_arrows_freed_memory(spark):
    """The session's Python workers run with Arrow's allocator keeping freed memory for the next
    call (``WORKER_ALLOCATOR_ENV``), which must reach the worker processes themselves."""
    from mqbalance.fleet.spark import WORKER_ALLOCATOR_ENV

    name, value = WORKER_ALLOCATOR_ENV

    def seen(batches):
        import os

        import pyarrow as pa

        for _ in batches:
            yield pa.RecordBatch.from_pydict({"v": [os.environ.get(name, "<unset>")]})

    assert {r.v for r in spark.range(4).mapInArrow(seen, "v string").collect()} == {value}
