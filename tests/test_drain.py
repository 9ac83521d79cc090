"""Time to drain (:mod:`mqbalance.history.drain`) checked in the simulator: a backlog builds while
the group is down, the group starts and drains it while production goes on; every 10 s (an offsets
interval) each queue's committed and max offsets are read, and the estimate from the last minute's
readings is compared with the drain time the simulator then shows. The median absolute error must
be at most 20 %, also when the shares are uneven (16 queues over 5 AVG consumers)."""

from __future__ import annotations

import statistics
from collections import deque

import pytest

from mqbalance.history.drain import DRAINING, IDLE, NEVER, UNKNOWN, group_drain, time_to_drain
from mqbalance.sim import Simulation, scenario_from_dict

DOWN_S, QUEUES, PRODUCE, THROUGHPUT, READ_EVERY_S = 480, 16, 200, 100, 10


def test_states() -> None:
    assert time_to_drain([]) == (UNKNOWN, None)
    assert time_to_drain([(0, 0, 10)]) == (UNKNOWN, None)  # lag, no rates yet
    assert time_to_drain([(0, 0, 10), (1_000, 0, 10)]) == (NEVER, None)  # stopped
    assert time_to_drain([(0, 5, 5)]) == (IDLE, 0.0)
    assert group_drain([(DRAINING, 5.0), (UNKNOWN, None)]) == (UNKNOWN, None)
    assert group_drain([]) == (IDLE, 0.0)


@pytest.mark.parametrize(("strategy", "consumers"), [("AVG", 4), ("AVG", 5), ("AVG", 6), ("CONSISTENT_HASH", 8)])
def test_drain_estimate_against_the_simulator(strategy: str, consumers: int) -> None:
    sim = Simulation(
        scenario_from_dict(
            {
                "topics": {"T": {"queues_per_broker": QUEUES, "rate": PRODUCE}},
                "brokers": ["broker-a"],
                "duration": 3000,
                "group": {
                    "strategy": strategy,
                    "consumers": [
                        {"id": f"10.0.0.{i}@{1000 + i}", "throughput": THROUGHPUT, "start": DOWN_S}
                        for i in range(1, consumers + 1)
                    ],
                },
            }
        )
    )
    windows = [deque[tuple[int, int, int]](maxlen=60 // READ_EVERY_S + 1) for _ in range(QUEUES)]
    estimates: list[tuple[int, float]] = []
    first_lag = None
    for t in range(DOWN_S, 3000, READ_EVERY_S):
        sim.run_until(t * 1000)
        end = sim.end_state()
        lag = sum(m - r for m, r in zip(end.messages, end.resume, strict=True))
        first_lag = first_lag or lag
        for q in range(QUEUES):
            windows[q].append((t * 1000, end.resume[q], end.messages[q]))
        if lag <= first_lag / 100:
            drained = t
            break
        state, seconds = group_drain(time_to_drain(w) for w in windows)
        if t >= DOWN_S + 60:
            assert state == DRAINING and seconds is not None
            estimates.append((t, seconds))
    else:
        pytest.fail("the group never drained")
    errors = [abs(s - (drained - t)) / (drained - t) for t, s in estimates if drained - t >= 2 * READ_EVERY_S]
    assert len(errors) >= 10 and statistics.median(errors) <= 0.20, (drained - DOWN_S, errors)
