"""The simulator's partition event: one consumer cut off from its broker while it keeps running
(``{at: 1m, partition: {id: ..., for: 30s}}``), the model the live network-fault test of a RocketMQ
member is compared with (``test_nemesis_rocketmq.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from mqbalance.allocation.models import MessageQueue
from mqbalance.sim import Partition, ScenarioError, Simulation, scenario_from_dict, simulate

EXPIRY_S, SCAN_S, REBALANCE_S, PULL_DELAY_S = 6, 1, 5, 0.5


def base(**over: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "seed": 3,
        "duration": "3m",
        "brokers": ["broker-a"],
        "topics": {"T": {"queues_per_broker": 4, "rate": 80}},
        "group": {"consumers": 2, "throughput": 400, "start_spread": "0s"},
        "client": {"rebalance_interval": f"{REBALANCE_S}s", "heartbeat_interval": "2s", "persist_interval": "1s"},
        "broker": {"channel_expired_timeout": f"{EXPIRY_S}s", "scan_interval": f"{SCAN_S}s"},
    }
    d.update(over)
    return d


def cut(for_: str, who: str = "10.0.0.1@1001", at: str = "1m") -> list[dict[str, Any]]:
    return [{"at": at, "partition": {"id": who, "for": for_}}]


def test_the_event_is_read_and_described() -> None:
    s = scenario_from_dict(base(events=cut("30s")))
    assert s.events == (Partition(60_000, "10.0.0.1@1001", 30_000),)
    assert s.events[0].describe() == "partition 10.0.0.1@1001 from the broker for 30000 ms"


@pytest.mark.parametrize(
    "entry, message",
    [
        ({"at": "1m", "partition": {"id": "10.0.0.1@1001"}}, r"events\[0\]\.partition\.for"),
        ({"at": "1m", "partition": {"id": "10.0.0.1@1001", "for": "0s"}}, r"events\[0\]\.partition\.for"),
        ({"at": "1m", "partition": {"id": "10.0.0.7@7", "for": "5s"}}, r"no consumer '10\.0\.0\.7@7' has started"),
        ({"at": "1m", "partition": {"id": "10.0.0.1@1001", "for": "5s", "why": 1}}, r"events\[0\]\.partition"),
    ],
)
def test_a_bad_partition_event_is_refused_with_its_path(entry: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        scenario_from_dict(base(events=[entry]))


def test_a_partition_longer_than_the_channel_expiry_moves_the_queues_and_duplicates_on_return() -> None:
    calm = simulate(base()).summary
    r = simulate(base(events=cut("30s")))
    s = r.summary
    assert s["lost"] == 0 and s["produced"] == calm["produced"]
    # the cut consumer held 2 of the 4 queues: paused from the cut until the broker expired it
    # (6 s + up to one 1 s scan), the survivor's periodic rebalance (<= 5 s: an expiry notifies
    # nobody) and the 5.x pull delay (0.5 s)
    paused = s["pause_queue_s"] - calm["pause_queue_s"]
    assert 2 * EXPIRY_S <= paused <= 2 * (EXPIRY_S + SCAN_S + REBALANCE_S + PULL_DELAY_S)
    # back after 30 s it pulls its old queues from where it stopped: what the survivor did meanwhile again
    assert s["duplicates"] > 0 and calm["duplicates"] == 0
    assert r.events[1]["duplicates"] == s["duplicates"]
    assert r.events[1]["time_to_stable_ms"] is not None  # the group settles again


def test_during_the_partition_the_survivor_owns_everything_and_the_cut_consumer_pulls_nothing() -> None:
    sim = Simulation(scenario_from_dict(base(events=cut("30s"))))
    sim.run_until(59_000)
    before = sim.ownership()
    assert sorted(ids[0] for ids in before.values()) == ["10.0.0.1@1001"] * 2 + ["10.0.0.2@1002"] * 2
    sim.run_until(60_000 + 1_000 * (EXPIRY_S + SCAN_S + REBALANCE_S + 1))
    assert set(map(tuple, sim.ownership().values())) == {("10.0.0.2@1002",)}
    cut_consumer = sim.consumers[0]
    assert cut_consumer.pc.client_id == "10.0.0.1@1001" and cut_consumer.pc.impl.process_queues  # still holds
    held = {mq: pq.consumed_offset for mq, pq in cut_consumer.pc.impl.process_queues.items()}
    sim.run_until(85_000)
    assert {mq: pq.consumed_offset for mq, pq in cut_consumer.pc.impl.process_queues.items()} == held  # no pull
    sim.run_until(180_000)
    owners = sim.ownership()
    assert sorted(len(v) for v in owners.values()) == [1, 1, 1, 1]
    assert {v[0] for v in owners.values()} == {"10.0.0.1@1001", "10.0.0.2@1002"}  # rejoined
    assert isinstance(next(iter(owners)), MessageQueue)


def test_a_partition_shorter_than_the_expiry_only_pauses_the_cut_consumers_queues() -> None:
    calm = simulate(base()).summary
    s = simulate(base(events=cut("3s"))).summary
    assert s["lost"] == 0 and s["duplicates"] == 0
    assert s["pause_queue_s"] - calm["pause_queue_s"] == pytest.approx(2 * 3, abs=0.01)
    assert s["owned_twice_queue_s"] == 0
