"""Deploys on Apache Kafka itself (``kafka_java``, 4.4.0, both group protocols): the real ``mqbalance
watch --bootstrap`` watches three groups of 4 Java ``KafkaConsumer`` members while a producer keeps
their partitions busy —

* a **rolling restart** of a classic group and of a consumer-protocol group (KIP-848): each member
  stopped gracefully (revoke, commit, leave) and started again, one after the other, as a deploy
  does, the next one once the group is Stable again;
* an **online upgrade** of a classic group to the consumer protocol: its members restarted one by
  one with ``group.protocol=consumer``. The broker (``group.consumer.migration.policy``
  ``bidirectional``, its default, set explicitly by the fixture) converts the group when the first
  consumer-protocol member joins: the classic generation becomes the group epoch, the classic
  members stay (same member ids) until each is restarted.

Then ``mqbalance history``: per group the history's rebalance count equals the broker's (its log:
``Stabilized group G generation N``, ``Group G with generation N is now empty``, ``Bumped group
epoch to N``), every episode names its members and a cause (never ``unknown``), and the upgraded
group has one episode whose cause says ``protocol upgraded: classic -> consumer``. Each step waits
on what the watcher recorded, never a fixed sleep."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow.csv as pacsv
import pytest

from kafka_cluster import MQBALANCE
from kafka_history_watch import (
    WAIT_S,
    member_ids,
    rebalance_counts,
    settled,
    stop_after_two_ticks,
    ticks,
    watch_process,
)
from kafka_java_cluster import JavaMember, KafkaJavaBroker, MixedKafkaGroup
from mqbalance.history.causes import UNSEEN
from server_process import wait_for

pytestmark = pytest.mark.java

TOPIC = "deploy"
PARTITIONS = 8
MEMBERS = 4
CLASSIC, MODERN, UPGRADE = "hc-rolling-classic", "hc-rolling-consumer", "hc-upgrade"
#: per group: the members' name prefix, their protocol before and after the restart, the assignor
PLAN = {
    CLASSIC: ("c", "classic", "classic", "range"),
    MODERN: ("k", "consumer", "consumer", "uniform"),
    UPGRADE: ("u", "classic", "consumer", "range"),
}


def _start(group: MixedKafkaGroup, name: str, protocol: str) -> None:
    assignor = PLAN[group.group][3] if protocol == "classic" else "uniform"
    group.start_java(name, [TOPIC], assignor, protocol=protocol)


def wait_all_settled(history: Path, want: dict[str, tuple[list[str], str, set[str]]]) -> None:
    """Wait until the watcher recorded every group Stable with its client ids, of its group type,
    none of the member ids given (one read of the history per look while any group is not)."""

    def done() -> bool:
        return all(settled(history, g, c, group_type=t, not_ids=ids) for g, (c, t, ids) in want.items())

    wait_for(f"{sorted(want)} Stable with their members", done, timeout=WAIT_S)


def test_rolling_restarts_and_an_online_upgrade_count_the_brokers_rebalances(
    kafka_java: KafkaJavaBroker, tmp_path: Path
) -> None:
    from kafka import KafkaProducer

    kafka_java.create_topic(TOPIC, PARTITIONS)
    history = tmp_path / "history"
    watch = watch_process(kafka_java.bootstrap, history, tmp_path / "watch.log", mqbalance=MQBALANCE)
    stop = threading.Event()
    producer = KafkaProducer(bootstrap_servers=kafka_java.bootstrap, linger_ms=5)

    def produce() -> None:  # busy partitions: the members commit as they go, and on leaving
        while not stop.wait(0.05):
            for p in range(PARTITIONS):
                producer.send(TOPIC, b"m", partition=p)

    feeder = threading.Thread(target=produce, daemon=True)
    groups = {
        g: MixedKafkaGroup(
            kafka_java, g, tmp_path, session_timeout_ms=6000, heartbeat_interval_ms=500, max_poll_interval_ms=30_000
        )  # fmt: skip
        for g in PLAN
    }
    names = {g: [f"{PLAN[g][0]}{i}" for i in range(MEMBERS)] for g in PLAN}
    t0 = time.monotonic()
    watch.start()
    try:
        feeder.start()
        wait_for("the watcher's first tick", lambda: history.exists() and ticks(history) > 0, timeout=WAIT_S,
                 server=watch)  # fmt: skip
        with groups[CLASSIC], groups[MODERN], groups[UPGRADE]:
            for i in range(MEMBERS):
                for g, group in groups.items():
                    _start(group, names[g][i], PLAN[g][1])
            wait_all_settled(history, {g: (names[g], PLAN[g][1], set()) for g in PLAN})
            started = time.monotonic()
            print(f"\n{MEMBERS * len(PLAN)} members Stable in {len(PLAN)} groups after {started - t0:.1f} s")
            # the deploy: member i of every group stopped (it has left when its process ends) and
            # started again at once; the next one when the group is Stable with it (its readiness)
            with ThreadPoolExecutor(len(PLAN)) as pool:
                for i in range(MEMBERS):
                    old = {g: member_ids(history, g, names[g][i]) for g in PLAN}
                    statuses = list(pool.map(JavaMember.stop, [groups[g].members[names[g][i]] for g in PLAN]))
                    assert statuses == [0] * len(PLAN), statuses
                    for g, group in groups.items():
                        _start(group, names[g][i], PLAN[g][2])
                    wait_all_settled(history, {g: (names[g], PLAN[g][2], old[g]) for g in PLAN})
            print(f"{MEMBERS} restarts in each group in {time.monotonic() - started:.1f} s")
            log = stop_after_two_ticks(watch, history, kafka_java.log)
    finally:
        watch.stop()
        stop.set()
        feeder.join(10)
        producer.close(5)
    out = tmp_path / "report"
    counted, broker = rebalance_counts(history, out, log, PLAN, mqbalance=MQBALANCE)
    assert f"[GroupId {UPGRADE}] Converted the classic group to a consumer group" in log, "no online upgrade"
    assert counted == broker
    episodes = [e for e in pacsv.read_csv(out / "episodes.csv").to_pylist() if e["group"] in PLAN]
    for e in episodes:
        causes = json.loads(e["causes"])
        assert causes and "unknown" not in causes, e
        # who joined or left; or a rebalance begun and settled between two ticks whose member change
        # an earlier tick already saw (a classic group lists a joining member while it rebalances)
        assert json.loads(e["joined"]) + json.loads(e["left"]) or causes[0] == UNSEEN[0], e
    for g in PLAN:  # every member left (gracefully) and joined again under its client id
        mine = [e for e in episodes if e["group"] == g]
        left = {m[0] for e in mine for m in json.loads(e["left"])}
        joined = {m[0] for e in mine for m in json.loads(e["joined"])}
        assert left == joined == set(names[g]), (g, left, joined)
        print(f"{g}: {len(mine)} episodes, {sum(e['rebalances'] for e in mine)} rebalances in them")
    upgraded = [e for e in episodes if e["group"] == UPGRADE and "protocol upgraded" in e["causes"]]
    assert len(upgraded) == 1, upgraded
    assert json.loads(upgraded[0]["causes"])[0].startswith("protocol upgraded: classic -> consumer"), upgraded
    assert upgraded[0]["group_type"] == "consumer", upgraded
    print(f"the upgrade: {json.loads(upgraded[0]['causes'])}")
    kinds = {r["group"]: r["group_type"] for r in pacsv.read_csv(out / "groups.csv").to_pylist()}
    assert kinds[UPGRADE] == kinds[MODERN] == "consumer" and kinds[CLASSIC] == "classic", kinds
