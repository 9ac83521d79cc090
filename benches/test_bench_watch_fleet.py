"""The small version of ``benches/watch_fleet.py`` (``make test``): a generated fleet on the Rust
port (2 brokers × 100 topics × 4 queues, 40 groups of two members), the watcher's ticks measured
as the benchmark measures them, checked for what they must say — nothing written but the tick's
row when nothing changed, every changed group's events when 10 % changed, a route request per
broker rather than per topic, and owners equal to a fresh watcher's — not for speed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketmq_cluster import RocketMQCluster
from watch_fleet import Fleet, measure

pytestmark = pytest.mark.java


def test_watch_ticks_on_a_small_generated_fleet(tmp_path: Path) -> None:
    with RocketMQCluster(brokers=2) as cluster:
        fleet = Fleet(cluster, topics=100, queues=4, groups=40, clients=4, say=lambda _m: None)
        try:
            fleet.build()
            got = measure(fleet, tmp_path / "h", repeats=2, say=lambda _m: None)
        finally:
            fleet.close()
    assert got["same_as_fresh"]
    unchanged, changed = got["rows"]["unchanged"], got["rows"]["10 % of groups changed"]
    assert all(r["events"] == 0 and r["bytes"] < 1024 for r in unchanged)
    # 4 of the 40 groups gain a member: a join and the owners of its 8 queues each
    assert all(r["events"] >= 4 * 2 for r in changed)
    # per tick: a few per broker, one or two per group — fewer than one per topic (200 with the retry topics)
    assert all(r["requests"] < 8 + 6 * 2 + 2 * 40 + 2 * 16 for r in unchanged + changed)
    assert got["first"]["events"] > 0
