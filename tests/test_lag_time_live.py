"""Lag in seconds on real RocketMQ brokers (the Rust port and Apache RocketMQ 5.3.3's Java broker):
a producer that records its own send times, a group whose committed offsets the test sets (a
consumer stopped part-way, one replaying from the earliest offset, one caught up), the watcher's
collector reading them. Every age is checked against the true age from the producer's records:
within 1 s + 5 %. The topic then stays idle: the age grows with the real time, uncapped, without a
single new read; a consumer that moves on is read again; a budget of one read per tick reads the
most-lagging queue first and carries or leaves the rest, marked."""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kafka_cluster import MQBALANCE
from mqbalance.fleet import audit_snapshot
from mqbalance.fleet.rocketmq.files import load_snapshot, write_parquet
from mqbalance.fleet.rocketmq.lag_time import CARRIED, EXACT, UNREAD, LagClock, read_lag_times
from mqbalance.fleet.rocketmq.live import read_cluster
from mqbalance.history.analysis import health
from mqbalance.history.collector import Collector
from mqbalance.history.metrics import WatchMetrics
from mqbalance.history.schema import TABLES
from mqbalance.remoting import BrokerClient, ConsumerData
from rocketmq_cluster import RocketMQCluster


@pytest.fixture(scope="module")
def cluster(rocketmq_both: RocketMQCluster) -> RocketMQCluster:
    """One name server and ``broker-a``: the Rust port, or Apache RocketMQ's Java servers."""
    return rocketmq_both


def within(measured: float, true: float) -> bool:
    return abs(measured - true) <= 1.0 + 0.05 * true


class Planted:
    """A topic of 4 queues on ``broker-a`` and a group: queue 1 gets 3 messages (the oldest), then
    queue 0 gets 6, 0.4 s apart, queue 3 one; each send's time recorded before it is sent. The
    group is set at offset 1 of queue 0 (stopped part-way), 0 of queue 1 (a replay from the
    earliest), 1 of queue 3 (caught up); queue 2 is empty."""

    def __init__(self, cluster: RocketMQCluster) -> None:
        tag = uuid.uuid4().hex[:6]
        self.topic, self.group = f"T-lag-{tag}", f"g-lag-{tag}"
        cluster.create_topic(self.topic, {"broker-a": 4})
        self.conn = BrokerClient(cluster.broker("broker-a").addr, timeout=20.0)  # a busy machine: generous
        self.conn.heartbeat(f"10.0.9.1@{tag}", [ConsumerData(self.group, [self.topic])])
        self.sent: dict[tuple[int, int], float] = {}
        for q, n in ((1, 3), (0, 6), (3, 1)):
            for _ in range(n):
                before = time.time()
                r = self.conn.send(self.topic, q, b"x")
                self.sent[(q, r.queue_offset)] = before
                time.sleep(0.4)
        self.commit({0: 1, 1: 0, 3: 1})

    def commit(self, offsets: dict[int, int]) -> None:
        for q, offset in offsets.items():
            self.conn.update_offset(self.group, self.topic, q, offset)

    def key(self, q: int) -> tuple[str, str, str, int]:
        return (self.group, self.topic, "broker-a", q)

    def close(self) -> None:
        self.conn.close()


def ages(collector: Collector, p: Planted, at: float) -> dict[int, float | None]:
    out: dict[int, float | None] = {}
    for q in range(4):
        store, _how = collector.state.oldest.get(p.key(q), (None, None))
        out[q] = None if store is None else at - store / 1000
    return out


def tick_until_committed(collector: Collector, p: Planted, want: dict[int, int]) -> None:
    """Tick until the watcher reads the committed offsets the test set (a broker may persist them
    a moment later); generous deadline."""
    deadline = time.monotonic() + 30
    while True:
        collector.last_offsets = None  # every tick an offsets tick
        collector.tick()
        got = {q: collector.state.offsets.get(p.key(q), (None, None))[0] for q in want}
        if got == want:
            return
        assert time.monotonic() < deadline, (got, want)
        time.sleep(0.2)


def scrape(metrics: WatchMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(metrics.exposition().decode()):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_lag_seconds_exact_idle_uncapped_and_read_again_when_the_consumer_moves(
    cluster: RocketMQCluster, tmp_path: Path
) -> None:
    p = Planted(cluster)
    metrics = WatchMetrics()
    collector = Collector(
        cluster.namesrv_addr, tmp_path / "h", interval=0.2, offsets_interval=0.2, timeout=5.0, metrics=metrics
    )
    try:
        tick_until_committed(collector, p, {0: 1, 1: 0, 3: 1})
        first = time.time()
        got = ages(collector, p, first)
        assert within(got[0], first - p.sent[(0, 1)]), (got, p.sent)  # type: ignore[arg-type]
        assert within(got[1], first - p.sent[(1, 0)]), (got, p.sent)  # the replay: the data's real age
        assert got[2] is None and got[3] is None  # no lag: no reading (age 0)
        assert {collector.state.oldest[p.key(q)][1] for q in (0, 1)} == {EXACT}
        # idle: the age grows with the real time, no new read
        time.sleep(3.0)
        collector.last_offsets = None
        collector.tick()
        assert collector.lag_clock.reads == 0
        later = time.time()
        again = ages(collector, p, later)
        assert within(again[1], later - p.sent[(1, 0)]) and again[1] >= got[1] + (later - first) - 0.001  # type: ignore[operator]
        family = scrape(metrics)
        worst = family[("mqbalance_group_lag_seconds", (("group", p.group), ("topic", p.topic)))]
        assert within(worst, time.time() - p.sent[(1, 0)]), (worst, p.sent)  # the gauge ages until scraped
        # the consumer moves on: read again at its new offset
        p.commit({0: 4})
        tick_until_committed(collector, p, {0: 4})
        now = time.time()
        assert within(ages(collector, p, now)[0], now - p.sent[(0, 4)])  # type: ignore[arg-type]
        # the dataset's offsets rows, and history's health from them
        rows = ds.dataset(
            sorted((tmp_path / "h" / "offsets").glob("date=*/hour=*/*.parquet")), schema=TABLES["offsets"]
        ).to_table()
        mine = [r for r in rows.to_pylist() if r["group"] == p.group]
        last = max(mine, key=lambda r: r["tick_id"])["ts"]
        q0 = [r for r in mine if r["queue_id"] == 0 and r["committed"] == 4]
        assert q0 and q0[-1]["lag_time"] == EXACT
        readings = sorted({r["ts"] for r in mine})
        h = {x["queue_id"]: x for x in health(mine, readings, {(p.topic, "broker-a", q): 1 for q in range(4)})}
        at = last.timestamp()
        assert within(h[1]["time_lag_s"], at - p.sent[(1, 0)]) and h[1]["lag_time"] == EXACT, h[1]
        assert h[3]["time_lag_s"] == 0.0 and h[3]["lag"] == 0 and h[3]["lag_time"] is None  # caught up
    finally:
        collector.close()
        p.close()


def test_a_traffic_spike_leaves_lag_seconds_at_the_true_age(cluster: RocketMQCluster, tmp_path: Path) -> None:
    """A consumed topic: a trickle of messages, each committed as it arrives (a consumer keeping
    pace), then a spike of 1,600 messages sent as fast as one connection sends, in chunks, while the
    committed offset stays at the spike's first message, then moves half-way through it. A lag over
    a rate estimate jumps by the spike's size over the trickle's rate (minutes here; the 75 hours of
    kafka-lag-exporter#175); the exact age stays the age of the message at the committed offset, at
    every tick of the spike — within 1 s + 5 % of the producer's own send times."""
    tag = uuid.uuid4().hex[:6]
    topic, group = f"T-spike-{tag}", f"g-spike-{tag}"
    cluster.create_topic(topic, {"broker-a": 1})
    conn = BrokerClient(cluster.broker("broker-a").addr, timeout=20.0)
    conn.heartbeat(f"10.0.9.2@{tag}", [ConsumerData(group, [topic])])
    metrics = WatchMetrics()
    collector = Collector(
        cluster.namesrv_addr, tmp_path / "h", interval=0.2, offsets_interval=0.2, timeout=5.0, metrics=metrics
    )
    key = (group, topic, "broker-a", 0)
    sent: dict[int, float] = {}

    def send() -> int:
        before = time.time()
        offset = conn.send(topic, 0, b"x" * 64).queue_offset
        sent[offset] = before
        return offset

    def check(committed: int) -> float:
        """Tick until the watcher reads ``committed``; its age against the true one (returned)."""
        tick_until_committed_at(collector, key, committed)
        now = time.time()
        store, how = collector.state.oldest[key]
        assert store is not None and how == EXACT, collector.state.oldest[key]
        age, true = now - store / 1000, now - sent[committed]
        assert within(age, true), (age, true, committed)
        worst = scrape(metrics)[("mqbalance_group_lag_seconds", (("group", group), ("topic", topic)))]
        assert within(worst, time.time() - sent[committed]), (worst, committed)  # the gauge ages until scraped
        return age

    try:
        for _ in range(8):  # the trickle, consumed as it comes
            conn.update_offset(group, topic, 0, send() + 1)
            time.sleep(0.3)
        first = send()  # the spike's first message: the oldest unconsumed one from here on
        ages = [check(first)]
        for _chunk in range(8):
            for _ in range(200):
                send()
            ages.append(check(first))  # the lag grows by 200 a chunk; the age only with the real time
        half = first + 800
        conn.update_offset(group, topic, 0, half)  # the consumer half-way through the spike
        ages.append(check(half))
        spike_s = sent[max(sent)] - sent[first]
        assert collector.state.offsets[key] == (half, max(sent) + 1)
        assert max(ages) <= spike_s + 1.0 + 0.05 * spike_s, (ages, spike_s)  # never beyond the spike's own age
        print(json.dumps({"spike_s": round(spike_s, 2), "ages": [round(a, 2) for a in ages]}))
    finally:
        collector.close()
        if sent:  # caught up: the module's other tests (a read budget of one) see no lag of ours
            conn.update_offset(group, topic, 0, max(sent) + 1)
        conn.close()


def tick_until_committed_at(collector: Collector, key: tuple[str, str, str, int], committed: int) -> None:
    deadline = time.monotonic() + 30
    while True:
        collector.last_offsets = None  # every tick an offsets tick
        collector.tick()
        got = collector.state.offsets.get(key, (None, None))[0]
        if got == committed and collector.state.oldest.get(key, (None, None))[0] is not None:
            return
        assert time.monotonic() < deadline, (got, committed)
        time.sleep(0.2)


def test_a_budget_reads_the_most_lagging_first_and_carries_the_rest(cluster: RocketMQCluster, tmp_path: Path) -> None:
    p = Planted(cluster)
    collector = Collector(
        cluster.namesrv_addr, tmp_path / "h", interval=0.2, offsets_interval=0.2, timeout=5.0, lag_time_budget=1
    )
    try:
        tick_until_committed(collector, p, {0: 1, 1: 0, 3: 1})
        states: dict[int, Any] = {q: collector.state.oldest.get(p.key(q), (None, None))[1] for q in (0, 1)}
        assert states == {0: EXACT, 1: UNREAD} and collector.lag_clock.reads == 1  # queue 0: 5 behind, queue 1: 3
        deadline = time.monotonic() + 30
        while collector.state.oldest[p.key(1)][1] != EXACT:  # the next ticks read queue 1, one read each
            assert time.monotonic() < deadline, collector.state.oldest
            collector.last_offsets = None
            collector.tick()
            assert collector.lag_clock.reads <= 1 and collector.state.oldest[p.key(0)][1] == EXACT
        p.commit({0: 3, 1: 2})  # queue 0: 3 behind (read), queue 1: 1 behind (carried)
        tick_until_committed(collector, p, {0: 3, 1: 2})
        now = time.time()
        got = ages(collector, p, now)
        assert collector.state.oldest[p.key(0)][1] == EXACT and within(got[0], now - p.sent[(0, 3)])  # type: ignore[arg-type]
        assert collector.state.oldest[p.key(1)][1] == CARRIED
        assert got[1] is not None and got[1] >= now - p.sent[(1, 2)] - 1.0  # carried: an upper bound
    finally:
        collector.close()
        p.close()


def wait_committed(cluster: RocketMQCluster, group: str, want: dict[int, int]) -> None:
    """Until the broker answers ``group``'s committed offsets as the test set them (a broker may
    persist them a moment later)."""
    deadline = time.monotonic() + 30
    while True:
        with BrokerClient(cluster.broker("broker-a").addr, timeout=20.0) as b:
            got = {q: c for (_t, _b, q), (_m, c) in b.consume_stats(group).items()}
        if {q: got.get(q) for q in want} == want:
            return
        assert time.monotonic() < deadline, got
        time.sleep(0.2)


def test_snapshot_and_audit_carry_lag_seconds(cluster: RocketMQCluster, tmp_path: Path) -> None:
    """``mqbalance snapshot --namesrv`` reads lag seconds (``lagTimes``), the Parquet layout keeps
    them, and the audit reports the worst queue's age per group and topic in its row and its lag
    finding."""
    p = Planted(cluster)
    try:
        wait_committed(cluster, p.group, {0: 1, 1: 0, 3: 1})
        path = tmp_path / "fleet.json"
        out = subprocess.run(
            [str(MQBALANCE), "snapshot", "--namesrv", cluster.namesrv_addr, "-o", str(path), "--quiet",
             "--no-running-info"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        rows = {r["queueId"]: r for r in json.loads(path.read_text())["lagTimes"] if r["group"] == p.group}
        assert {q for q, r in rows.items() if r["state"] != "none"} == {0, 1}  # the lagging queues
        # the caught-up queue has its row too, without a store time: when nothing lags, a snapshot
        # still says when its offsets were read (an audit's pair then drains: idle)
        assert rows[3]["state"] == "none" and rows[3]["storeTimestamp"] is None, rows[3]
        for q, offset in ((0, 1), (1, 0)):
            age = (rows[q]["readAt"] - rows[q]["storeTimestamp"]) / 1000
            assert rows[q]["state"] == EXACT and within(age, rows[q]["readAt"] / 1000 - p.sent[(q, offset)]), rows[q]
        parquet = write_parquet(load_snapshot(path), tmp_path / "fleet.parquet")
        for snap in (load_snapshot(path), load_snapshot(parquet)):
            result = audit_snapshot(snap)
            row = next(r for r in result.rows if r.group == p.group and r.topic == p.topic)
            worst = rows[1]["readAt"] / 1000 - p.sent[(1, 0)]  # the replayed queue's first message
            assert row.lag == 5 + 3 and row.lag_s is not None and within(row.lag_s, worst), row
            assert row.lag_timestamp == "store time"
            lag = [f for f in result.findings if f.group == p.group and f.kind.value == "lag"]
            assert lag and "s old (store time)" in lag[0].detail, lag
    finally:
        p.close()


def test_a_rows_offsets_and_its_read_time_are_one_moment(cluster: RocketMQCluster, monkeypatch: Any) -> None:
    """A ``lagTimes`` row's committed and max offsets come from one ``GET_CONSUME_STATS`` answer and
    its ``readAt`` is when: a commit made after the snapshot's offsets were read is the row's
    committed offset, and ``readAt`` comes before the store-time reads that follow (held up here by
    1 s, as a loaded machine or a thousand lagging queues would). Time to drain divides offsets moved
    by time passed: a time stamped after those reads made a drain look slower than it was."""
    p = Planted(cluster)
    try:
        wait_committed(cluster, p.group, {0: 1, 1: 0, 3: 1})
        data = read_cluster(cluster.namesrv_addr, running_info=False)
        assert {(o["queueId"], o["offset"]) for o in data["offsets"] if o["group"] == p.group} >= {(0, 1)}
        p.commit({0: 2})  # after the snapshot's read
        wait_committed(cluster, p.group, {0: 2})
        update, held = LagClock.update, []

        def held_up(self: LagClock, *args: Any, **kwargs: Any) -> Any:
            held.append(time.time())
            time.sleep(1.0)
            return update(self, *args, **kwargs)

        monkeypatch.setattr(LagClock, "update", held_up)
        asked = time.time()
        rows = {r["queueId"]: r for r in read_lag_times(data) if r["group"] == p.group}
        assert rows[0]["committed"] == 2 and rows[0]["maxOffset"] == 6, rows[0]
        assert held and all(asked * 1000 - 1 <= r["readAt"] <= held[0] * 1000 + 1 for r in rows.values()), (
            asked,
            held,
            rows,
        )
    finally:
        p.close()


def test_a_watch_ticks_committed_and_max_offsets_are_one_moment(
    cluster: RocketMQCluster, tmp_path: Path, monkeypatch: Any
) -> None:
    """The watcher's committed offset of a queue comes from the same ``GET_CONSUME_STATS`` answer
    as its max offset, not from the tick's earlier read of the offset tables: a commit made between
    the two reads is the tick's committed offset (a lag read at two moments counts the messages
    sent in between, and a drain looks slower than it is)."""
    p = Planted(cluster)
    collector = Collector(cluster.namesrv_addr, tmp_path / "h", interval=0.2, offsets_interval=0.2, timeout=5.0)
    try:
        tick_until_committed(collector, p, {0: 1, 1: 0, 3: 1})
        read, tables = collector.reader.read, []

        def then_commit(*args: Any, **kwargs: Any) -> Any:
            data = read(*args, **kwargs)
            tables.extend(o["offset"] for o in data.get("offsets", []) if o["group"] == p.group and o["queueId"] == 0)
            p.commit({0: 2})  # after the tick's read of the offset tables
            wait_committed(cluster, p.group, {0: 2})
            return data

        monkeypatch.setattr(collector.reader, "read", then_commit)
        collector.last_offsets = None
        collector.tick()
        assert tables == [1]  # the offset table said 1: the tick read the commit after it
        assert collector.state.offsets[p.key(0)] == (2, 6), collector.state.offsets
        assert collector.state.offsets[p.key(1)] == (0, 3) and collector.state.offsets[p.key(3)] == (1, 1)
    finally:
        collector.close()
        p.close()


def test_a_snapshot_reads_many_groups_offsets_on_one_connection_per_broker(
    cluster: RocketMQCluster, monkeypatch: Any
) -> None:
    """``read_lag_times`` asks for every group's offsets on one connection per broker, pipelined,
    not one connection per group (with thousands of groups, connecting was most of the time): 70
    groups (more than one pipelined chunk), each row the offsets the test committed for its group,
    the broker's max offset, and a ``readAt`` within the call."""
    tag = uuid.uuid4().hex[:6]
    topic, groups = f"T-many-{tag}", [f"g-many-{tag}-{k:02d}" for k in range(70)]
    cluster.create_topic(topic, {"broker-a": 2})
    with BrokerClient(cluster.broker("broker-a").addr, timeout=20.0) as conn:
        conn.heartbeat(f"10.0.9.2@{tag}", [ConsumerData(g, [topic]) for g in groups])
        for q, n in ((0, 5), (1, 3)):
            for _ in range(n):
                conn.send(topic, q, b"x")
        committed = {(g, q): (k + q) % n for k, g in enumerate(groups) for q, n in ((0, 5), (1, 3))}
        for (g, q), offset in committed.items():
            conn.update_offset(g, topic, q, offset)
    deadline = time.monotonic() + 30
    while True:  # the broker's offset table may show a commit a moment later
        data = read_cluster(cluster.namesrv_addr, running_info=False)
        seen = {(o["group"], o["queueId"]): o["offset"] for o in data["offsets"] if o["topic"] == topic}
        if seen == committed:
            break
        assert time.monotonic() < deadline, (len(seen), len(committed))
        time.sleep(0.2)
    from mqbalance.fleet.rocketmq import lag_time

    opened: list[str] = []

    class Counted(BrokerClient):
        def __init__(self, addr: str, *args: Any, **kwargs: Any) -> None:
            opened.append(addr)
            super().__init__(addr, *args, **kwargs)

    monkeypatch.setattr(lag_time, "BrokerClient", Counted)
    asked = time.time()
    rows = [r for r in read_lag_times(data, budget=0) if r["topic"] == topic]
    done = time.time()
    assert opened == [cluster.broker("broker-a").addr], opened  # budget 0: no store-time reads either
    assert {(r["group"], r["queueId"]): (r["committed"], r["maxOffset"]) for r in rows} == {
        (g, q): (offset, 5 if q == 0 else 3) for (g, q), offset in committed.items()
    }
    assert all(asked * 1000 - 1 <= r["readAt"] <= done * 1000 + 1 for r in rows), (asked, done)
    assert not data.get("errors"), data.get("errors")


@pytest.mark.parametrize("bad", [0, -3, True, 2.5, "64"])
def test_a_bad_chunk_or_budget_is_refused_naming_it(bad: Any) -> None:
    from mqbalance.exceptions import InvalidInputError
    from mqbalance.fleet.rocketmq.lag_time import read_consume_stats

    with pytest.raises(InvalidInputError, match=f"got {bad!r}"):
        read_consume_stats([("g", "broker-a")], {"broker-a": "127.0.0.1:1"}, chunk=bad)
    if bad != 0:  # a budget of 0 reads nothing: allowed
        with pytest.raises(InvalidInputError, match=f"got {bad!r}"):
            LagClock(budget=bad)
