"""``mqbalance watch``: the collector against a real name server and broker (the Rust port of
RocketMQ, ``rocketmq_cluster.py``), with real protocol clients heartbeating into a consumer group,
committing offsets and sending messages. What the dataset holds is checked against what the test
did: joins and leaves, the owner of every queue (the Java allocation, computed here independently
with ``mqbalance.allocate``), a duplicated client id, committed and max offsets, an unchanged tick's
cost on disk, a restart that continues the same dataset, and the watcher's own ``kill -9``."""

from __future__ import annotations

import datetime as dt
import json
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from kafka_cluster import MQBALANCE
from mqbalance import MessageQueue, sort_client_ids, sort_queues, strategy
from mqbalance.exceptions import HistoryError
from mqbalance.history.analysis import episodes
from mqbalance.history.collector import Collector, FleetState, _apply, checkpoint, diff, load_state
from mqbalance.history.schema import MARKER_FILE, SCHEMA_VERSION, TABLES, cluster_kind
from mqbalance.history.writer import HistoryWriter, open_history, read_ticks
from mqbalance.remoting import BrokerClient, ConsumerData
from rocketmq_cluster import RocketMQCluster
from server_process import free_port

TOPIC, GROUP = "TopicW", "cg-watch"


def table(root: Path, name: str) -> list[dict[str, Any]]:
    files = sorted((root / name).glob("date=*/hour=*/part-*.parquet"))
    if not files:
        return []
    rows = ds.dataset(files, schema=TABLES[name], format="parquet").to_table().to_pylist()
    return sorted(rows, key=lambda r: r["tick_id"])


class Client:
    """One consumer process as the broker sees it: a connection heartbeating a client id."""

    def __init__(self, addr: str, client_id: str) -> None:
        self.conn = BrokerClient(addr)
        self.client_id = client_id
        self.beat()

    def beat(self) -> None:
        self.conn.heartbeat(self.client_id, [ConsumerData(GROUP, [TOPIC])])

    def close(self) -> None:
        self.conn.close()


@pytest.fixture(scope="module")
def cluster(rocketmq: RocketMQCluster) -> RocketMQCluster:
    rocketmq.create_topic(TOPIC, {"broker-a": 4})
    return rocketmq


def owners_by_java(ids: list[str], broker: str) -> dict[int, str]:
    queues = sort_queues(MessageQueue(TOPIC, broker, i) for i in range(4))
    everyone = sort_client_ids(ids)
    return {mq.queue_id: cid for cid in ids for mq in strategy("AVG").allocate(GROUP, cid, queues, everyone)}


@pytest.fixture
def clients() -> Iterator[list[Client]]:
    """Clients a test made, closed after it even when it fails (else they stay in the group and
    the next test meets them)."""
    made: list[Client] = []
    yield made
    for c in made:
        c.close()


def test_watch_records_joins_leaves_owners_and_offsets(
    cluster: RocketMQCluster, tmp_path: Path, clients: list[Client]
) -> None:
    broker = cluster.brokers[0]
    root = tmp_path / "history"
    c1 = Client(broker.addr, "10.0.0.1@w1")
    clients.append(c1)
    collector = Collector(
        cluster.namesrv_addr, root, interval=1, offsets_interval=0, checkpoint_every=3600, running_info=False
    )
    first = collector.tick()
    assert first.tick_id == 1 and first.state.members.keys() == {
        (GROUP, "10.0.0.1@w1", next(iter(first.state.members))[2])
    }
    c2 = Client(broker.addr, "10.0.0.2@w2")
    clients.append(c2)
    second = collector.tick()
    joins = [r for r in table(root, "members") if r["event"] == "join"]
    assert [(r["tick_id"], r["client_id"]) for r in joins] == [(2, "10.0.0.2@w2")]
    expected = owners_by_java(["10.0.0.1@w1", "10.0.0.2@w2"], broker.broker_name)
    assert {q[3]: o for q, (o, _n) in second.state.ownership.items() if q[0] == GROUP} == expected
    changes = [r for r in table(root, "ownership") if r["event"] == "change" and r["tick_id"] == 2]
    assert {r["queue_id"]: r["owner"] for r in changes} == {q: o for q, o in expected.items() if o == "10.0.0.2@w2"}

    # offsets: a commit and two messages on queue 1
    with BrokerClient(broker.addr) as admin:
        admin.update_offset(GROUP, TOPIC, 1, 0)
        for _ in range(2):
            admin.send(TOPIC, 1, b"x")
        deadline = time.monotonic() + 60  # the broker puts a stored message in its queue asynchronously
        while admin.max_offset(TOPIC, 1) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    third = collector.tick()
    q1 = (GROUP, TOPIC, broker.broker_name, 1)
    assert third.state.offsets[q1] == (0, 2)
    assert [(r["committed"], r["max_offset"]) for r in table(root, "offsets") if r["queue_id"] == 1][-1] == (0, 2)

    # nothing changes: the tick costs one journal line
    quiet = Collector.tick(collector)
    assert quiet.events == 0 and quiet.bytes_written < 1024, quiet

    # c2 goes away: its leave, and its queues back to c1
    c2.close()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        c1.beat()
        got = collector.tick()
        if all(k[1] != "10.0.0.2@w2" for k in got.state.members):
            break
        time.sleep(0.5)
    leaves = [r for r in table(root, "members") if r["event"] == "leave"]
    assert [r["client_id"] for r in leaves] == ["10.0.0.2@w2"]
    assert {q[3]: o for q, (o, _n) in got.state.ownership.items() if q[0] == GROUP} == dict.fromkeys(
        range(4), "10.0.0.1@w1"
    )

    # a restart continues the dataset: same state, next tick id, no event written twice
    last = collector.writer.last_tick
    again = Collector(
        cluster.namesrv_addr, root, interval=1, offsets_interval=3600, checkpoint_every=3600, running_info=False
    )
    assert again.writer.last_tick == last and load_state(root).members == got.state.members
    nxt = again.tick()
    ticks = read_ticks(root).column("tick_id").to_pylist()
    assert nxt.tick_id == last + 1 and ticks == list(range(1, last + 2))
    assert [r for r in table(root, "members") if r["tick_id"] == nxt.tick_id and r["event"] != "checkpoint"] == []
    c1.close()


def test_a_duplicated_client_id_is_two_processes_on_the_queues(
    cluster: RocketMQCluster, tmp_path: Path, clients: list[Client]
) -> None:
    """Two connections heartbeating one id. The Rust broker lists the id once (see INFRA.md), so
    both processes take the same share and the dataset shows what the broker lists."""
    broker = cluster.brokers[0]
    a, b = Client(broker.addr, "10.0.0.9@dup"), Client(broker.addr, "10.0.0.9@dup")
    clients += [a, b]
    collector = Collector(cluster.namesrv_addr, tmp_path / "h", interval=1, offsets_interval=3600, running_info=False)
    got = collector.tick()
    listed = [k for k in got.state.members if k[0] == GROUP]
    processes = {n for q, (_o, n) in got.state.ownership.items() if q[0] == GROUP}
    assert processes == {len(listed)}  # every queue: as many processes as the broker lists for the id
    a.close()
    b.close()


def _new_run_ticks(root: Path, before: set[str], n: int, proc: subprocess.Popen[bytes], timeout: float = 120.0) -> None:
    """Wait until a run of the watcher not in ``before`` has written ``n`` ticks (a loaded machine
    can take seconds just to start the process: no fixed sleep)."""
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, "the watcher exited"
        try:
            runs = read_ticks(root).column("run_id").to_pylist()
        except (HistoryError, OSError, pa.ArrowException):
            runs = []  # not created yet, or a file met while it was folded or renamed
        if len([r for r in runs if r not in before]) >= n:
            return
        assert time.monotonic() < deadline, f"no new run with {n} ticks within {timeout:g} s"
        time.sleep(0.1)


def test_the_watcher_survives_its_own_kill_9(cluster: RocketMQCluster, tmp_path: Path) -> None:
    broker = cluster.brokers[0]
    c = Client(broker.addr, "10.0.0.3@k1")
    root = tmp_path / "h"
    cmd = [str(MQBALANCE), "watch", "--namesrv", cluster.namesrv_addr, "--out", str(root), "--interval", "0.3s",
           "--offsets-interval", "1s", "--no-running-info", "--quiet"]  # fmt: skip
    runs: list[list[str]] = []
    log = (tmp_path / "watch.log").open("ab")
    proc: subprocess.Popen[bytes] | None = None
    try:
        for _ in range(3):
            before = set(runs[-1]) if runs else set()
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
            _new_run_ticks(root, before, 2, proc)
            c.beat()
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
            runs.append(read_ticks(root).column("run_id").to_pylist())
        ticks = read_ticks(root)
        ids = ticks.column("tick_id").to_pylist()
        assert ids == list(range(1, len(ids) + 1)) and len(set(ticks.column("run_id").to_pylist())) == 3
        joins = [r for r in table(root, "members") if r["client_id"] == "10.0.0.3@k1" and r["event"] != "leave"]
        assert joins and joins[0]["event"] == "checkpoint" and all(r["event"] == "checkpoint" for r in joins)
        assert all(r["tick_id"] <= ids[-1] for name in ("members", "ownership", "offsets") for r in table(root, name))
        # a graceful stop folds the journal into Parquet
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
        _new_run_ticks(root, set(runs[-1]), 1, proc)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
        assert (root / "ticks" / "_journal.jsonl").read_text() == ""
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(10)
        log.close()
        c.close()


# --- bad input -------------------------------------------------------------------------------


def test_a_writer_marks_an_older_history_with_its_version(tmp_path: Path) -> None:
    """A version-1 history stays readable; a writer appending to it marks it with the current
    version, since what it writes (``remove`` ownership events) a version-1 reader would misread."""
    old = tmp_path / "old"
    old.mkdir()
    (old / MARKER_FILE).write_text(json.dumps({"format": "mqbalance-history", "schema_version": 1}))
    open_history(old, create=False)
    assert json.loads((old / MARKER_FILE).read_text())["schema_version"] == 1
    open_history(old, create=True)
    assert json.loads((old / MARKER_FILE).read_text()) == {"format": "mqbalance-history", "schema_version": 3}
    assert SCHEMA_VERSION == 3
    assert cluster_kind(old) == "rocketmq"  # written before kinds: RocketMQ's


def test_a_history_holds_one_kind_of_cluster(tmp_path: Path) -> None:
    """A new history is marked with its watcher's kind; a watcher of the other kind refuses it in
    one line, in the API and at the CLI (exit 2)."""
    HistoryWriter(tmp_path / "k", run_id="r", kind="kafka").close()
    HistoryWriter(tmp_path / "r", run_id="r").close()
    assert cluster_kind(tmp_path / "k") == "kafka" and cluster_kind(tmp_path / "r") == "rocketmq"
    with pytest.raises(HistoryError, match="holds a Kafka history; a RocketMQ watcher needs its own directory"):
        HistoryWriter(tmp_path / "k", run_id="r2")
    with pytest.raises(HistoryError, match="holds a RocketMQ history; a Kafka watcher needs its own directory"):
        open_history(tmp_path / "r", create=True, kind="kafka")
    with pytest.raises(HistoryError, match="cluster kind"):
        open_history(tmp_path / "x", create=True, kind="pulsar")
    got = subprocess.run(
        [str(MQBALANCE), "watch", "--namesrv", "127.0.0.1:1", "--out", str(tmp_path / "k")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert got.returncode == 2 and got.stderr.count("\n") == 1 and "holds a Kafka history" in got.stderr, got.stderr


def test_a_directory_that_is_not_a_history_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "data.csv").write_text("x\n")
    newer = tmp_path / "newer"
    newer.mkdir()
    (newer / MARKER_FILE).write_text(json.dumps({"format": "mqbalance-history", "schema_version": SCHEMA_VERSION + 1}))
    for path, words in ((tmp_path / "other", "not a mqbalance history"), (newer, "newer")):
        with pytest.raises(HistoryError, match=words):
            open_history(path, create=True)
        got = subprocess.run(
            [str(MQBALANCE), "watch", "--namesrv", "127.0.0.1:1", "--out", str(path)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert got.returncode == 2 and got.stderr.count("\n") == 1 and words in got.stderr, got.stderr


def test_half_written_files_and_uncommitted_events_are_cleaned_on_open(tmp_path: Path) -> None:
    import datetime as dt

    w = HistoryWriter(tmp_path, run_id="r1")
    t = dt.datetime(2026, 11, 25, 3, tzinfo=dt.UTC)
    tick = {"kind": "membership", "checkpoint": True, "duration_ms": 1, "skipped_before": 0, "clock_jump_ms": 0,
            "groups": 1, "changed_groups": 0, "requests": 1, "errors": 0}  # fmt: skip
    w.commit_tick(
        1, t, {"members": [{"event": "checkpoint", "group": "g", "client_id": "c", "client_addr": "a"}]}, tick
    )
    hour = tmp_path / "members" / "date=2026-11-25" / "hour=03"
    (hour / ".part-000000000002-r1-9.parquet.tmp").write_bytes(b"PAR1 half")
    # events of tick 2 landed, its tick row never did (a crash between the two)
    w._write(
        "members", t, 2, [{"event": "join", "group": "g", "client_id": "d", "client_addr": "b", "ts": t, "tick_id": 2}]
    )
    with open(tmp_path / "ticks" / "_journal.jsonl", "a") as f:
        f.write('{"tick_id": 3, "cut sho')  # a line cut short
    again = HistoryWriter(tmp_path, run_id="r2")
    assert again.last_tick == 1
    assert sorted(p.name for p in hour.iterdir()) == [
        p.name for p in hour.iterdir() if p.name.startswith("part-000000000001")
    ]
    assert [r["client_id"] for r in table(tmp_path, "members")] == ["c"]


def test_a_clock_that_jumps_backwards_is_recorded_never_a_negative_duration(
    cluster: RocketMQCluster, tmp_path: Path
) -> None:
    walls = iter([1_000_000.0, 999_000.0])
    collector = Collector(
        cluster.namesrv_addr, tmp_path / "h", interval=1, running_info=False, wall=lambda: next(walls)
    )
    collector.tick()
    collector.tick()
    rows = read_ticks(tmp_path / "h").to_pylist()
    assert rows[1]["clock_jump_ms"] < -900_000 and all(r["duration_ms"] >= 0 for r in rows)


def test_a_name_server_list_with_one_down_still_reads(cluster: RocketMQCluster, tmp_path: Path) -> None:
    c = Client(cluster.brokers[0].addr, "10.0.0.5@ns")
    collector = Collector(f"127.0.0.1:1;{cluster.namesrv_addr}", tmp_path / "h", interval=1, running_info=False)
    got = collector.tick()
    c.close()
    assert got.tick_id == 1 and got.errors == 0 and any(q[1] == TOPIC for q in got.state.ownership)


def test_diff_of_a_group_that_disappears_and_comes_back() -> None:
    seen = FleetState(groups={"g": ("CLUSTERING", ("T",), "AVG")})
    gone = FleetState()
    assert [e["event"] for e in diff(seen, gone, offsets=False)["groups"]] == ["disappear"]
    assert [e["event"] for e in diff(gone, seen, offsets=False)["groups"]] == ["appear"]
    assert pa.table({"x": [1]}).num_rows == 1


def test_a_queue_no_longer_the_groups_is_removed_not_owned_by_nobody() -> None:
    """Found on the Java broker (``test_java_history_live.py``): a group whose members subscribe
    differently (Java push consumers also to ``%RETRY%group``) has its subscriptions replaced by each
    member's heartbeat, so the retry topic's queue comes and goes tick after tick. A queue that left
    the group was recorded as "owned by nobody" and counted in its episodes' unowned queue-seconds."""
    retry, topic = ("g", "%RETRY%g", "broker-a", 0), ("g", "T", "broker-a", 0)
    both = FleetState(ownership={retry: ("c1", 1), topic: ("c1", 1)})
    one = FleetState(ownership={topic: ("c1", 1)})
    events = diff(both, one, offsets=False)["ownership"]
    assert [(e["event"], e["topic"]) for e in events] == [("remove", "%RETRY%g")]
    t0 = dt.datetime(2026, 11, 25, tzinfo=dt.UTC)
    rows = [{"ts": t0, **e} for e in checkpoint(both)["ownership"]]
    rows += [{"ts": t0 + dt.timedelta(seconds=10), **e} for e in events]
    members = [{"ts": t0 + dt.timedelta(seconds=5), "event": "join", "client_id": "c2", "client_addr": "a"}]
    [episode] = episodes(members, rows, end=t0 + dt.timedelta(seconds=60))
    assert (episode["unowned_queue_s"], episode["owned_again_s"]) == (0, 0)
    # and a restart reads it back as gone
    state = FleetState(ownership=dict(both.ownership))
    for e in events:
        _apply(state, "ownership", e)
    assert state.ownership == one.ownership


def scrape(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def test_the_metrics_endpoint_scraped_over_http(cluster: RocketMQCluster, tmp_path: Path) -> None:
    broker = cluster.brokers[0]
    port = free_port()
    c1 = Client(broker.addr, "10.0.0.1@m1")
    log = (tmp_path / "watch.log").open("ab")
    cmd = [str(MQBALANCE), "watch", "--namesrv", cluster.namesrv_addr, "--out", str(tmp_path / "h"), "--interval",
           "0.3s", "--offsets-interval", "0.3s", "--no-running-info", "--metrics-port", str(port)]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
    members = f'mqbalance_group_members{{group="{GROUP}"}}'
    try:
        deadline = time.monotonic() + 120  # the watcher's start-up alone can take seconds on a busy machine
        got: dict[str, float] = {}
        while time.monotonic() < deadline and got.get(members) != 1.0:
            time.sleep(0.3)
            try:
                got = scrape(port)
            except OSError:
                continue
        assert got.get(members) == 1.0 and got["mqbalance_watch_ticks_total"] >= 1, got
        c2 = Client(broker.addr, "10.0.0.2@m2")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and got.get(members) != 2.0:
            time.sleep(0.3)
            got = scrape(port)
        assert got[members] == 2.0 and got[f'mqbalance_group_rebalances_total{{group="{GROUP}"}}'] >= 1.0, got
        assert got[f'mqbalance_group_unowned_queues{{group="{GROUP}"}}'] == 0.0
        c2.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        log.close()
        c1.close()


def test_a_broker_that_stops_is_a_gap_not_everyone_leaving(tmp_path: Path) -> None:
    """The name server drops a stopped broker from its cluster list at once; the groups it served
    are unread while it is away (gaps, the membership kept), and read again once it is back."""
    with RocketMQCluster(brokers=1) as c:
        broker = c.brokers[0]
        c.create_topic(TOPIC, {"broker-a": 4})
        client = Client(broker.addr, "10.0.0.7@b1")
        collector = Collector(c.namesrv_addr, tmp_path / "h", interval=1, offsets_interval=0, running_info=False)
        before = collector.tick()
        assert [k[1] for k in before.state.members] == ["10.0.0.7@b1"]
        client.close()
        broker.stop()
        away = [collector.tick() for _ in range(3)]
        assert all(t.errors >= 1 and t.state.members == before.state.members for t in away)
        assert [r for r in table(tmp_path / "h", "members") if r["event"] == "leave"] == []
        assert {g["request"] for g in table(tmp_path / "h", "gaps")} >= {"cluster list"}
        c.start_broker(broker.broker_name)
        client = Client(broker.addr, "10.0.0.7@b1")
        deadline = time.monotonic() + 60
        back = collector.tick()
        while time.monotonic() < deadline and back.errors:
            time.sleep(1)
            client.beat()
            back = collector.tick()
        assert back.errors == 0 and [k[1] for k in back.state.members] == ["10.0.0.7@b1"]
        client.close()
