"""The rebalance simulator: messages moved in aggregate against the naive per-message
simulator (``tests/support/sim_per_message.py``, same control plane) on the same scenario. Target: one
simulated hour of 10 consumers, 64 queues, 1,000 msg/s in <= 10 s."""

from __future__ import annotations

import dataclasses

import pytest

from mqbalance.sim import Simulation, load_scenario
from sim_per_message import PerMessageSimulation


@pytest.mark.parametrize(("rate", "minutes"), [(1_000, 60), (10_000, 10)])
def test_simulate_vs_per_message(compare, full_size, rate, minutes):
    """1 h at 1,000 msg/s (the issue's target) and 10 min at 10,000 msg/s: the per-message cost
    grows with the rate, the aggregate one does not."""
    scenario = load_scenario("duplicates-on-rebalance")  # 10 consumers, 64 queues, a join, a leave, a crash
    topic = dataclasses.replace(scenario.topics[0], rate=rate)
    scenario = dataclasses.replace(
        scenario,
        topics=(topic,),
        consumers=tuple(dataclasses.replace(c, throughput=rate / 4) for c in scenario.consumers),
    )
    scenario = dataclasses.replace(
        scenario,
        duration_ms=minutes * 60_000 if full_size else 720_000,
        events=tuple(e for e in scenario.events if e.at_ms < (minutes * 60_000 if full_size else 720_000)),
    )

    def check(ours, base):
        a, b = ours.summary, base.summary
        assert a["produced"] == b["produced"] == scenario.duration_ms * rate // 1000
        assert a["lost"] == b["lost"] == 0
        assert abs(a["unique_consumed"] - b["unique_consumed"]) <= 0.001 * b["produced"]
        assert abs(a["duplicates"] - b["duplicates"]) <= 0.25 * max(b["duplicates"], 100)
        assert a["pause_queue_s"] == b["pause_queue_s"] and a["owned_twice_queue_s"] == b["owned_twice_queue_s"]

    compare(
        lambda: Simulation(scenario).run(),
        lambda: PerMessageSimulation(scenario).run(),
        check=check,
        target_s=10.0,
        label="per-message Python simulator",
    )
