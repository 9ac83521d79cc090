"""End to end on Apache Kafka itself (``kafka_java``: one KRaft broker, both group protocols): the
real ``mqbalance watch --bootstrap`` process watches a classic group and a consumer-protocol group
of Java ``KafkaConsumer`` members (``MixedKafkaGroup.start_java``) through scripted churn — scale
up, ``kill -9`` (the session expires), a graceful scale-down, a static member restarted inside its
session timeout and one restarted after it — while a producer keeps the partitions busy; then
``mqbalance history``. The history's rebalance count per group must equal the broker's own, read
from its log (``org.apache.kafka.coordinator.group`` at INFO: ``Stabilized group G generation N``,
``Group G with generation N is now empty``, ``Bumped group epoch to N``), and every episode must
name its members and a cause (none ``unknown``). Each step waits on what the watcher recorded, never a fixed sleep."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pyarrow.csv as pacsv
import pytest

from kafka_cluster import MQBALANCE
from kafka_history_watch import WAIT_S, rebalance_counts, recorded, settled, stop_after_two_ticks, wait_settled
from kafka_history_watch import ticks as _ticks
from kafka_java_cluster import KafkaJavaBroker, MixedKafkaGroup
from mqbalance.history.causes import UNSEEN
from server_process import ServerProcess, wait_for

pytestmark = pytest.mark.java

TOPIC = "churn"
CLASSIC, MODERN = "hk-classic", "hk-consumer"


def test_history_counts_the_brokers_rebalances_and_names_every_episode(
    kafka_java: KafkaJavaBroker, tmp_path: Path
) -> None:
    from kafka import KafkaProducer

    kafka_java.create_topic(TOPIC, 4)
    history = tmp_path / "history"
    watch = ServerProcess(
        "mqbalance watch --bootstrap",
        [
            str(MQBALANCE),
            "watch",
            "--bootstrap",
            kafka_java.bootstrap,
            "--out",
            str(history),
            "--interval",
            "1s",
            "--offsets-interval",
            "1s",
            "--quiet",
        ],  # fmt: skip
        log=tmp_path / "watch.log",
    )
    stop = threading.Event()
    producer = KafkaProducer(bootstrap_servers=kafka_java.bootstrap, linger_ms=5)

    def produce() -> None:  # the partitions stay busy: a member that stops committing falls behind
        while not stop.wait(0.02):
            for p in range(4):
                producer.send(TOPIC, b"m", partition=p)

    feeder = threading.Thread(target=produce, daemon=True)
    dynamic = MixedKafkaGroup(kafka_java, CLASSIC, tmp_path, session_timeout_ms=6000, heartbeat_interval_ms=500,
                              max_poll_interval_ms=30_000)  # fmt: skip
    # a static member with a long session: restarted within it, the broker keeps its place
    patient = MixedKafkaGroup(kafka_java, CLASSIC, tmp_path, session_timeout_ms=45_000, heartbeat_interval_ms=500,
                              max_poll_interval_ms=30_000)  # fmt: skip
    modern = MixedKafkaGroup(kafka_java, MODERN, tmp_path)
    watch.start()
    try:
        feeder.start()
        wait_for("the watcher's first tick", lambda: history.exists() and _ticks(history) > 0, timeout=WAIT_S,
                 server=watch)  # fmt: skip
        with dynamic, patient, modern:
            dynamic.start_java("j1", [TOPIC], "range")  # the first member: the classic group's leader
            wait_settled(history, CLASSIC, {"j1"})
            dynamic.start_java("j2", [TOPIC], "range")
            patient.start_java("s-in", [TOPIC], "range", instance_id="static-in")
            dynamic.start_java("s-out", [TOPIC], "range", instance_id="static-out")
            modern.start_java("k1", [TOPIC], "uniform", protocol="consumer")
            modern.start_java("k2", [TOPIC], "uniform", protocol="consumer")
            wait_settled(history, CLASSIC, {"j1", "j2", "s-in", "s-out"})
            wait_settled(history, MODERN, {"k1", "k2"})
            # scale up
            dynamic.start_java("j3", [TOPIC], "range")
            modern.start_java("k3", [TOPIC], "uniform", protocol="consumer")
            wait_settled(history, CLASSIC, {"j1", "j2", "j3", "s-in", "s-out"})
            wait_settled(history, MODERN, {"k1", "k2", "k3"})
            # kill -9: the broker removes them when their sessions expire
            dynamic.members["j2"].kill()
            modern.members["k2"].kill()
            wait_settled(history, CLASSIC, {"j1", "j3", "s-in", "s-out"})
            wait_settled(history, MODERN, {"k1", "k3"})
            # scale down, gracefully
            assert dynamic.members["j3"].stop() == 0 and modern.members["k3"].stop() == 0
            wait_settled(history, CLASSIC, {"j1", "s-in", "s-out"})
            wait_settled(history, MODERN, {"k1"})
            # static member restarted inside its session timeout: a new member id in its place
            old = {m for m, r in recorded(history, CLASSIC)[1].items() if r["client_id"] == "s-in"}
            patient.members["s-in"].kill()
            patient.start_java("s-in", [TOPIC], "range", instance_id="static-in")

            def replaced() -> bool:
                return settled(history, CLASSIC, {"j1", "s-in", "s-out"}) and not old & set(
                    recorded(history, CLASSIC)[1]
                )

            wait_for("static-in under a new member id", replaced, timeout=WAIT_S)
            # static member restarted after its session timeout: it left, then joins again
            dynamic.members["s-out"].kill()
            wait_settled(history, CLASSIC, {"j1", "s-in"})
            dynamic.start_java("s-out", [TOPIC], "range", instance_id="static-out")
            wait_settled(history, CLASSIC, {"j1", "s-in", "s-out"})
            log = stop_after_two_ticks(watch, history, kafka_java.log)
    finally:
        watch.stop()
        stop.set()
        feeder.join(10)
        producer.close(5)
    out = tmp_path / "report"
    counted, broker = rebalance_counts(history, out, log, (CLASSIC, MODERN), mqbalance=MQBALANCE)
    assert counted == broker
    episodes = pacsv.read_csv(out / "episodes.csv").to_pylist()
    assert episodes
    for e in episodes:
        causes = json.loads(e["causes"])
        named = json.loads(e["joined"]) + json.loads(e["left"])
        assert causes and "unknown" not in causes, e
        if causes[0] == UNSEEN[0]:
            # a generation with no member change: a member's JoinGroup with the membership unchanged
            # (a rejoin after its metadata changed, a leader's rejoin), begun and settled between two
            # ticks — the broker's log has its reason, its group description does not; the episode
            # says so and names what the watcher saw (a static replacement before it, the members
            # whose partitions moved). Back-to-back rebalances whose Stable fell between two ticks
            # are two episodes, each with its joins (they were one with every join, then one of these)
            assert not named and all(c.startswith(UNSEEN) for c in causes), e
            print(f"generation with no member change seen: {causes}")
            continue
        assert named or any(c.startswith("fenced:") for c in causes), e
    fenced = pacsv.read_csv(out / "fenced.csv").to_pylist()
    inside = [f for f in fenced if f["instance_id"] == "static-in"]
    assert len(inside) == 1, fenced
    print(f"static-in restarted inside its session timeout: {inside[0]['rebalances']} rebalances")
    if inside[0]["rebalances"] == 0:  # no generation with it: not an episode, nor a cause of one
        assert not any("fenced: instance static-in" in e["causes"] for e in episodes)

    def listed(e: dict[str, Any], column: str, index: int) -> list[Any]:
        """An episode's members who joined or left, each one's client id (0) or instance id (3): a
        consumer-protocol member id is random, so no substring of the column says who it is."""
        return [m[index] for m in json.loads(e[column])]

    outside = [
        e for e in episodes if e["group"] == CLASSIC and "static-out" in listed(e, "joined", 3) + listed(e, "left", 3)
    ]
    assert len(outside) >= 3, outside  # joined, left (session expired), joined again
    killed = [e for e in episodes if "j2" in listed(e, "left", 0)]
    assert len(killed) == 1, killed
    print(f"j2 killed: {json.loads(killed[0]['causes'])}")
