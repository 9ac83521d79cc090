"""End to end on Apache RocketMQ's own Java servers (``rocketmq_java_cluster.py``): Java
``DefaultMQPushConsumer`` processes of the 5.3.3 and 4.9.8 clients and one ``mqbalance
rocketmq-consume`` in one group, the real ``mqbalance watch`` process recording it, then ``mqbalance
history`` on Spark (local). The test plants, with times it records itself: a join, a graceful leave
(SIGTERM: the Java client unregisters), a ``kill -9`` and two Java processes sharing one client id.
The Java broker keeps every connection, so it lists that id twice; both processes compute the index
of the id's first place, so the last place's queues are owned by nobody and the first place's by two
processes. The report must show exactly these: each change as one episode within one tick of when
the broker showed it, the id ``listed twice`` from the second process's join to its leave, and the
queue-seconds owned by nobody and twice during the duplicate — nothing flapping."""

from __future__ import annotations

import datetime as dt
import json
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.csv as pacsv
import pytest

from kafka_cluster import MQBALANCE
from mqbalance.history.causes import internal
from mqbalance.history.ticking import replay
from mqbalance.history.writer import read_ticks
from rocketmq_java_cluster import RocketMQJavaCluster, module_cluster
from server_process import wait_for
from test_history_live import longest_tick_gap, run_history, wait_ticks
from test_java_rocketmq_live import Group

pytestmark = pytest.mark.java

DUP = "10.0.5.9@dup"
WINDOW = dt.timedelta(seconds=2)  # the report's episode window (``run_history``)


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest) -> Iterator[RocketMQJavaCluster]:
    """The Java name server and one broker (``broker-a``: the group's 4 queues)."""
    yield from module_cluster(request)


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def longest_tick(history: Path) -> dt.timedelta:
    """The longest tick the watcher recorded: a tick is stamped with its start, so a change made
    while a tick was reading can carry a time up to one tick before it was made."""
    return dt.timedelta(milliseconds=max(read_ticks(history).column("duration_ms").to_pylist()))


def wait_episode_over(history: Path, group: str, timeout: float = 120.0) -> None:
    """Wait until the watcher has recorded, after the group's last change (a member, its topics,
    one of its queues), more than the episode window plus its longest tick: a change made now is
    an episode of its own, however the machine delays the watcher."""

    def changes() -> list[tuple[dt.datetime, str, str]]:
        seen: list[tuple[dt.datetime, str, str]] = []
        topics: list[Any] = [None]

        def apply(_state: None, name: str, r: Any) -> None:
            if r["group"] != group or r["event"] == "checkpoint":
                return
            if name == "groups":
                now = sorted(t for t in r.get("subscriptions") or [] if not internal(t))
                if now != topics[0]:
                    seen.append((r["ts"], name, str(now)))
                topics[0] = now
            elif name == "members" or name == "ownership" and not internal(r["topic"]):
                seen.append((r["ts"], name, str(r.get("client_id") or (r["topic"], r["queue_id"], r["owner"]))))

        replay(history, None, apply)
        return seen

    deadline = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=timeout)
    while True:
        ticks = read_ticks(history)
        last_tick = ticks.column("ts")[-1].as_py()
        longest = dt.timedelta(milliseconds=max(ticks.column("duration_ms").to_pylist()))
        seen = changes()
        if not seen or last_tick - max(t for t, _, _ in seen) > WINDOW + longest:
            return
        assert dt.datetime.now(dt.UTC) < deadline, f"{group} kept changing for {timeout} s: {seen[-10:]}"
        time.sleep(0.2)


class Planted:
    """When the test made a change (``at``, before acting) and when the broker showed it (``shown``)."""

    def __init__(self, what: str, at: dt.datetime, shown: dt.datetime) -> None:
        self.what, self.at, self.shown = what, at, shown

    def check(self, seen: Any, early: dt.timedelta, late: dt.timedelta) -> None:
        """The watcher's time for it: not before the change (less one tick's reading), and by the
        first tick after the broker showed it."""
        t = dt.datetime.fromisoformat(str(seen))
        assert self.at - early <= t <= self.shown + late, (self.what, t, self.at, self.shown, early, late)


def test_history_reports_join_leave_kill_and_a_duplicated_id_on_the_java_broker(
    cluster: RocketMQJavaCluster, tmp_path: Path
) -> None:
    started = now()
    g = Group(cluster, "g-hist", "T-hist", tmp_path, "AVG")
    history = tmp_path / "history"
    log = (tmp_path / "watch.log").open("ab")
    watch = subprocess.Popen(
        [
            str(MQBALANCE),
            "watch",
            "--namesrv",
            cluster.namesrv_addr,
            "--out",
            str(history),
            "--interval",
            "1s",
            "--offsets-interval",
            "1s",
            "--quiet",
        ],  # fmt: skip
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    planted: dict[str, Planted] = {}

    def plant(what: str, act: Any, until: Any) -> None:
        wait_episode_over(history, g.name)
        at = now()
        act()
        wait_for(f"the broker to show {what}", until, timeout=120)
        planted[what] = Planted(what, at, now())
        wait_ticks(history, 3)  # read by the watcher, as members and owners, at least twice

    try:
        wait_ticks(history, 1)  # the watcher is up: every member joins under its eyes
        g.start("rocketmq5", "10.0.5.1@java5")
        g.start("rocketmq4", "10.0.5.2@java4")
        g.wait_steady("two joined")
        wait_ticks(history, 3)
        joiner: list[Any] = []
        plant(
            "join",
            lambda: joiner.append(g.start("mqbalance", "10.0.5.3@mqb")),
            lambda: "10.0.5.3@mqb" in g.broker_ids(),
        )
        g.wait_steady("a join")
        java4 = next(m for m in g.members if m.client_id == "10.0.5.2@java4")
        plant("graceful leave", java4.server.stop, lambda: "10.0.5.2@java4" not in g.broker_ids())
        g.wait_steady("a graceful leave")
        java5 = next(m for m in g.members if m.client_id == "10.0.5.1@java5")
        plant("kill -9", lambda: java5.server.stop(kill=True), lambda: "10.0.5.1@java5" not in g.broker_ids())
        g.wait_steady("a kill -9")
        wait_episode_over(history, g.name)
        dup1 = g.start("rocketmq5", DUP)
        wait_for("the first dup process listed", lambda: g.broker_ids().count(DUP) == 1, timeout=60)
        wait_ticks(history, 3)
        plant("second dup", lambda: g.start("rocketmq4", DUP), lambda: g.broker_ids().count(DUP) == 2)
        ids = g.broker_ids()
        want = g.expected(ids)  # both dup processes compute the id's first place
        stranded = {g.qname(q) for q in g.queues} - set().union(*want.values())
        assert ids == ["10.0.5.3@mqb", DUP, DUP] and len(stranded) == 1, (ids, want)
        wait_ticks(history, 3)
        plant("dup leaves", dup1.server.stop, lambda: g.broker_ids().count(DUP) == 1)
    finally:
        watch.send_signal(signal.SIGTERM)
        watch.wait(30)
        log.close()
        g.stop_all()
    watched_s = (now() - started).total_seconds()
    out = tmp_path / "report"
    t = now()
    run_history(history, out)
    history_s = (now() - t).total_seconds()
    early, late = longest_tick(history), longest_tick_gap(history)
    print(f"\nwatched {watched_s:.0f} s, history {history_s:.0f} s; longest tick {early}, longest gap {late}")

    episodes = [e for e in pacsv.read_csv(out / "episodes.csv").to_pylist() if e["group"] == g.name]
    dups = pacsv.read_csv(out / "duplicate_ids.csv").to_pylist()
    assert [(d["group"], d["client_id"], d["how"]) for d in dups] == [(g.name, DUP, "listed twice")], dups
    dup_addrs = sorted(a for e in episodes for cid, a in json.loads(e["joined"]) if cid == DUP)
    assert json.loads(dups[0]["addresses"]) == dup_addrs and len(dup_addrs) == 2, (dups, dup_addrs)
    planted["second dup"].check(dups[0]["start"], early, late)
    planted["dup leaves"].check(dups[0]["end"], early, late)

    # exactly what was planted, in order: the first two joins, then the changes the test made
    changes = [(how, cid) for e in episodes for how in ("joined", "left") for cid, _addr in json.loads(e[how])]
    assert changes == [("joined", "10.0.5.1@java5"), ("joined", "10.0.5.2@java4"), ("joined", "10.0.5.3@mqb"),
                       ("left", "10.0.5.2@java4"), ("left", "10.0.5.1@java5"), ("joined", DUP), ("joined", DUP),
                       ("left", DUP)], episodes  # fmt: skip

    def one(what: str, column: str, client_id: str) -> dict[str, Any]:
        found = [e for e in episodes if client_id in str(e[column])]
        found = [e for e in found if planted[what].at - early <= dt.datetime.fromisoformat(str(e["start"]))]
        every = [(e["start"], e["causes"]) for e in episodes]
        assert len(found) == 1, (what, planted[what].at, early, found, every)
        planted[what].check(found[0]["start"], early, late)
        return found[0]

    for what, column, cid in [("join", "joined", "10.0.5.3@mqb"), ("graceful leave", "left", "10.0.5.2@java4"),
                              ("kill -9", "left", "10.0.5.1@java5")]:  # fmt: skip
        e = one(what, column, cid)
        assert (e["unowned_queue_s"], e["double_owned_queue_s"], e["owned_again_s"]) == (0, 0, 0), (what, e)
    second = one("second dup", "joined", DUP)
    leave = one("dup leaves", "left", DUP)
    # during the duplicate (from its episode to the leave's): one queue owned by nobody, one by two
    span = dt.datetime.fromisoformat(str(leave["start"])) - dt.datetime.fromisoformat(str(second["start"]))
    assert second["owned_again_s"] is None, second
    assert second["unowned_queue_s"] == pytest.approx(span.total_seconds() * len(stranded), abs=0.01), second
    assert second["double_owned_queue_s"] == pytest.approx(span.total_seconds() * len(want[DUP]), abs=0.01), second
    assert DUP in str(second["duplicated_ids"]), second
    assert (leave["unowned_queue_s"], leave["double_owned_queue_s"], leave["owned_again_s"]) == (0, 0, 0), leave
    assert not pacsv.read_csv(out / "flapping_clients.csv").num_rows
    summary = json.loads((out / "summary.json").read_text())
    assert summary["flapping_clients"] == 0, summary
