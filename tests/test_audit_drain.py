"""Time to drain in the audit (:mod:`mqbalance.fleet.drain`), both kinds, from two snapshots of the
simulator: a backlog builds while the group is down, the group starts and drains it while
production goes on; two snapshots 60 s apart (the committed and max offsets of every queue, as a
live snapshot reads them) are audited (``--previous``) and the time to drain compared with the one
the simulator then shows: within 20 %, also with uneven shares (16 queues over 5 AVG consumers).
One snapshot alone says ``unknown (one reading)``; the JSON, CSV, Markdown and HTML outputs say it."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from mqbalance.cli import main
from mqbalance.fleet import audit, drains, snapshot_from_dict, write_outputs
from mqbalance.fleet.drain import Drain, pair_drains
from mqbalance.fleet.kafka.snapshot import kafka_snapshot_from_dict
from mqbalance.sim import Simulation, scenario_from_dict

QUEUES, PRODUCE, THROUGHPUT, DOWN_S, GAP_S = 16, 200, 100, 480, 60
GROUP, TOPIC = "g", "T"


def simulation(consumers: int) -> Simulation:
    return Simulation(
        scenario_from_dict(
            {
                "topics": {TOPIC: {"queues_per_broker": QUEUES, "rate": PRODUCE}},
                "brokers": ["broker-a"],
                "duration": 3000,
                "group": {
                    "strategy": "AVG",
                    "consumers": [
                        {"id": f"10.0.0.{i}@{1000 + i}", "throughput": THROUGHPUT, "start": DOWN_S}
                        for i in range(1, consumers + 1)
                    ],
                },
            }
        )
    )


def offsets_at(sim: Simulation, t_s: int) -> list[tuple[int, int]]:
    """Per queue, (committed, max offset) at ``t_s``."""
    sim.run_until(t_s * 1000)
    end = sim.end_state()
    return list(zip(end.resume, end.messages, strict=True))


def rocketmq_snapshot(at_ms: int, offsets: list[tuple[int, int]], consumers: int) -> Any:
    """A live RocketMQ snapshot of the simulated cluster: its offsets and lag-seconds rows (a
    queue without lag has one too, state ``none``, as ``snapshot --namesrv`` writes it)."""
    data = {
        "topics": {
            TOPIC: {
                "brokerDatas": [{"cluster": "c", "brokerName": "broker-a", "brokerAddrs": {"0": "10.0.0.9:10911"}}],
                "queueDatas": [
                    {"brokerName": "broker-a", "readQueueNums": QUEUES, "writeQueueNums": QUEUES, "perm": 6}
                ],
            }
        },
        "groups": {
            GROUP: {
                "subscriptions": [TOPIC],
                "strategy": "AVG",
                "connections": [{"clientId": f"10.0.0.{i}@{1000 + i}"} for i in range(1, consumers + 1)],
            }
        },
        "offsets": [
            {"group": GROUP, "topic": TOPIC, "brokerName": "broker-a", "queueId": q, "offset": c}
            for q, (c, _m) in enumerate(offsets)
        ],
        "lagTimes": [
            {
                "group": GROUP,
                "topic": TOPIC,
                "brokerName": "broker-a",
                "queueId": q,
                "committed": c,
                "maxOffset": m,
                "storeTimestamp": None,
                "state": "unread" if m > c else "none",
                "readAt": at_ms,
            }
            for q, (c, m) in enumerate(offsets)
        ],  # fmt: skip
    }
    return snapshot_from_dict(data, f"sim at {at_ms} ms")


def kafka_data(at_ms: int, offsets: list[tuple[int, int]], consumers: int) -> dict[str, Any]:
    """The same cluster as a Kafka snapshot file (partitions for queues, members holding every
    ``consumers``-th partition)."""
    members = [
        {"memberId": f"m{i}", "clientId": f"c{i}", "subscription": [TOPIC],
         "assignment": {TOPIC: [p for p in range(QUEUES) if p % consumers == i]}}
        for i in range(consumers)
    ]  # fmt: skip
    data = {
        "kind": "kafka",
        "topics": {TOPIC: {"partitions": QUEUES}},
        "groups": {GROUP: {"state": "Stable", "protocol": "range", "members": members}},
        "offsets": [{"group": GROUP, "topic": TOPIC, "partition": p, "offset": c} for p, (c, _m) in enumerate(offsets)],
        "endOffsets": [{"topic": TOPIC, "partition": p, "offset": m} for p, (_c, m) in enumerate(offsets)],
        "readAt": at_ms,
    }
    return data


def kafka_snapshot(at_ms: int, offsets: list[tuple[int, int]], consumers: int) -> Any:
    return kafka_snapshot_from_dict(kafka_data(at_ms, offsets, consumers), f"sim at {at_ms} ms")


def drained_at(sim: Simulation, from_s: int) -> int:
    """The first second (in steps of 5) the simulated group has no lag left."""
    for t in range(from_s, 3000, 5):
        if all(m <= c for c, m in offsets_at(sim, t)):
            return t
    pytest.fail("the group never drained")


@pytest.mark.parametrize("consumers", [4, 5])
@pytest.mark.parametrize("make", [rocketmq_snapshot, kafka_snapshot], ids=["rocketmq", "kafka"])
def test_the_audit_drain_against_the_simulator(make: Any, consumers: int) -> None:
    sim = simulation(consumers)
    t0 = DOWN_S + 120
    before = make(t0 * 1000, offsets_at(sim, t0), consumers)
    t1 = t0 + GAP_S
    now = make(t1 * 1000, offsets_at(sim, t1), consumers)
    true = drained_at(sim, t1) - t1
    row = next(r for r in audit(now, previous=before).rows if (r.group, r.topic) == (GROUP, TOPIC))
    assert row.drain == "draining" and row.drain_s is not None, row
    assert abs(row.drain_s - true) / true <= 0.20, (row.drain_s, true)
    assert row.drain_basis == f"rates over {GAP_S:.1f} s between the snapshots"
    alone = next(r for r in audit(now).rows if (r.group, r.topic) == (GROUP, TOPIC))
    assert (alone.drain, alone.drain_s, alone.drain_basis) == ("unknown", None, "one reading")


def test_states_and_what_they_stand_on() -> None:
    g = ("g", "t")
    idle = {("g", "t", 0): (5_000, 9, 9)}
    assert pair_drains(idle, None)[g] == Drain("idle", 0.0, "no lag")  # no lag needs no rates
    stopped = pair_drains({("g", "t", 0): (5_000, 0, 20)}, {("g", "t", 0): (0, 0, 10)})[g]
    assert (stopped.state, stopped.said()) == ("never", "never")
    # a lagging queue the earlier snapshot did not read: no rates for it, so none for the topic
    late = pair_drains({("g", "t", 0): (5_000, 10, 20), ("g", "t", 1): (5_000, 0, 4)}, {("g", "t", 0): (0, 0, 20)})[g]
    assert late.said() == "unknown (no earlier reading of 1 lagging queue(s))"
    # readings out of order (the "previous" snapshot is the later one): no rates either
    assert pair_drains({("g", "t", 0): (0, 0, 20)}, {("g", "t", 0): (5_000, 10, 20)})[g].state == "unknown"
    # a snapshot without offsets read (a file, an example fleet) says nothing
    assert drains(kafka_snapshot_from_dict({"kind": "kafka", "topics": {}, "groups": {}}, "f")) == {}


@pytest.mark.parametrize("make", [rocketmq_snapshot, kafka_snapshot], ids=["rocketmq", "kafka"])
def test_nothing_lagging_is_idle_in_either_snapshot(make: Any) -> None:
    """A snapshot in which nothing lags still says when its offsets were read: its pairs are
    ``idle`` alone, as the later snapshot and as the earlier one (then the later one's lag has
    rates: its production since)."""
    caught_up = make(10_000, [(50, 50)] * QUEUES, 4)
    later_idle = make(20_000, [(80, 80)] * QUEUES, 4)
    lagging = make(20_000, [(60, 70)] * QUEUES, 4)  # 10/s consumed, 20/s produced: never
    assert drains(caught_up)[(GROUP, TOPIC)] == Drain("idle", 0.0, "no lag")
    assert drains(later_idle, caught_up)[(GROUP, TOPIC)] == Drain("idle", 0.0, "no lag")
    assert drains(lagging, caught_up)[(GROUP, TOPIC)].state == "never"
    assert drains(caught_up, make(0, [(20, 50)] * QUEUES, 4))[(GROUP, TOPIC)].state == "idle"
    row = next(r for r in audit(later_idle, previous=caught_up).rows if (r.group, r.topic) == (GROUP, TOPIC))
    assert (row.drain, row.drain_s, row.lag) == ("idle", 0.0, 0), row


def test_the_outputs_say_it(tmp_path: Path) -> None:
    sim = simulation(5)
    t0 = DOWN_S + 120
    offsets0, offsets1 = offsets_at(sim, t0), offsets_at(sim, t0 + GAP_S)
    before = tmp_path / "before.json"
    after = tmp_path / "after.json"
    before.write_text(json.dumps(kafka_data(t0 * 1000, offsets0, 5)))
    after.write_text(json.dumps(kafka_data((t0 + GAP_S) * 1000, offsets1, 5)))
    out = tmp_path / "audit"
    assert main(["audit", str(after), "--previous", str(before), "--out", str(out), "--quiet"]) == 0
    [drain] = json.loads((out / "findings.json").read_text())["drain"]
    assert drain["drain"] == "draining" and drain["drain_seconds"] > 0 and drain["lag"] > 0, drain
    [lag] = [f for f in json.loads((out / "findings.json").read_text())["findings"] if f["kind"] == "lag"]
    assert f"time to drain: {drain['drain_seconds']:,.1f} s (rates over 60.0 s between the snapshots)" in lag["detail"]
    with (out / "group_topics.csv").open() as f:
        [row] = list(csv.DictReader(f))
    assert (row["drain"], float(row["drain_seconds"])) == ("draining", drain["drain_seconds"])
    assert "## Time to drain" in (out / "report.md").read_text()
    page = (out / "report.html").read_text()
    assert '<section id="drain">' in page and f"{drain['drain_seconds']:,.1f} s" in page
    # one snapshot: the report says what it cannot know
    alone = tmp_path / "alone"
    assert main(["audit", str(after), "--out", str(alone), "--quiet"]) == 0
    [drain] = json.loads((alone / "findings.json").read_text())["drain"]
    assert (drain["drain"], drain["basis"]) == ("unknown", "one reading")
    assert "unknown (one reading)" in (alone / "report.html").read_text()
    assert "time to drain: unknown (one reading)" in (alone / "report.md").read_text()
    paths = write_outputs(audit(kafka_snapshot(0, [(1, 1)] * QUEUES, 5)), tmp_path / "idle")
    assert json.loads(paths["findings_json"].read_text())["drain"] == []  # nothing lags: no section
    assert "Time to drain" not in paths["report_md"].read_text()
