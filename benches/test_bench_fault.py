"""Producer send simulation (`MQFaultStrategy.simulate`): Rust batch simulator against the plain-Python model of the
same loop (``tests/support/fault_reference.py``), same seed, same results. Target: 1M sends ≤ 0.5 s."""

from __future__ import annotations

import pytest

import fault_reference as ref
from mqbalance.fault import BrokerModel, ManualClock, MQFaultStrategy, QueueData, ThreadLocalIndex, TopicPublishInfo

MODELS = {"broker-a": (5, 10, 0.01), "broker-b": (600, 100, 0.2), "broker-c": (20, 5, 0.0)}
COUNTS = {"broker-a": 4, "broker-b": 4, "broker-c": 8}


def _setup(sem: str):
    tp = TopicPublishInfo.from_route(
        "T", [QueueData(b, 6, n) for b, n in COUNTS.items()], send_which_queue=ThreadLocalIndex(initial=0)
    )
    fs = MQFaultStrategy(
        semantics=sem,
        send_latency_fault_enable=True,
        clock=ManualClock(0),
        which_item_worst=ThreadLocalIndex(initial=0),
    )
    return tp, fs, {b: BrokerModel(*m) for b, m in MODELS.items()}


@pytest.mark.parametrize("sem", ["4.x", "5.x"])
def test_simulate_vs_python_model(compare, full_size, sem):
    n = 100_000 if full_size else 2_000
    tp, fs, models = _setup(sem)

    def baseline():
        p = ref.Producer(sem, [(q.broker_name, q.queue_id) for q in tp.message_queues], COUNTS, counter=0, worst=0)
        return ref.simulate(p, MODELS, sends=n, start_ms=0, interval_ms=1, retry_times=2, seed=11)

    def check(ours, base):
        assert [ours.brokers[b] for b in ours.broker] == base[0]
        assert ours.elapsed_ms.tolist() == base[4]

    compare(
        lambda: fs.simulate(tp, models, sends=n, interval_ms=1, seed=11),
        baseline,
        check=check,
        label="plain-Python model",
    )


@pytest.mark.parametrize("sem", ["4.x", "5.x"])
def test_simulate_1m_sends(benchmark, full_size, sem):
    n = 1_000_000 if full_size else 10_000
    tp, fs, models = _setup(sem)
    result = benchmark(lambda: fs.simulate(tp, models, sends=n, interval_ms=1, seed=11))
    assert len(result.ok) == n and result.ok.mean() > 0.99
    if not benchmark.disabled:
        assert benchmark.stats.stats.min <= 0.5
