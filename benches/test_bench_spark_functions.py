"""``mqbalance.spark.assign_queues`` against native Spark SQL in the same run (``local[2]``, warm
session, inputs generated and cached by Spark outside the timed region, both sides written to the
``noop`` sink): AVG against window functions (target at 10^7 rows: ≥ 3× faster), CONSISTENT_HASH
against a ring written in SQL. Equal results are asserted first (row multisets). With
``--benchmark-disable`` (``make test``) this runs on 4,000 queue rows as a correctness test;
timed (``make bench``) on 10^6. The 10^7-row comparison is ``benches/spark_functions_scale.py``
(results in ``benches/spark_functions_results/``, with the floors measured in the same run)."""

from __future__ import annotations

import pytest

from mqbalance.fleet.spark import session
from spark_functions_bench import (
    CONSISTENT_HASH,
    fingerprint,
    floor_arrow,
    floor_shuffle,
    inputs,
    native_avg,
    native_consistent_hash,
    noop,
    ours,
)

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark():
    with session(fast_start=True, driver_memory="2g") as s:
        yield s


@pytest.fixture(scope="module")
def frames(spark, request):
    timed = not request.config.getoption("benchmark_disable", False)
    q, c = inputs(spark, 10_000 if timed else 40)
    yield q, c
    q.unpersist()
    c.unpersist()


def test_the_floors_carry_every_queue_row_unowned(frames):
    """The floors the scale bench measures ours against (the same shuffle with an identity in
    Python; the Arrow round trip alone) move every queue row and compute nothing."""
    q, c = frames
    rows = q.count()
    for floor in (floor_shuffle(q, c), floor_arrow(q)):
        assert floor.columns == ["group", "topic", "broker_name", "queue_id", "client_id"]
        assert fingerprint(floor)[:2] == (rows, 0)
    # The floor with the owners' bytes: every queue row back once, owned.
    assert fingerprint(floor_shuffle(q, c, "c" * 20))[:2] == (rows, rows)


@pytest.mark.parametrize(
    "strategy, native, label",
    [
        ("AVG", native_avg, "native Spark SQL AVG (window functions)"),
        (CONSISTENT_HASH, native_consistent_hash, "native Spark SQL hash ring (windows over the ring)"),
    ],
    ids=["AVG", "CONSISTENT_HASH"],
)
def test_assign_queues_vs_native_spark_sql(frames, compare, strategy, native, label):
    q, c = frames
    assert ours(q, c, strategy).exceptAll(native(q, c)).count() == 0
    assert fingerprint(ours(q, c, strategy)) == fingerprint(native(q, c))

    compare(
        lambda: noop(ours(q, c, strategy)),
        lambda: noop(native(q, c)),
        check=lambda a, b: None,
        rounds=3,
        label=label,
    )
