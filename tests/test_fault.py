"""Producer fault tolerance: properties, the simulator against a plain-Python model, errors, threads."""

from __future__ import annotations

import random
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fault_reference as ref
from mqbalance.exceptions import (
    EmptyRouteError,
    InvalidInputError,
    InvalidLatencyError,
    InvalidQueueError,
    InvalidSimulationError,
    LatencyTableError,
    UnknownBrokerError,
)
from mqbalance.fault import BrokerModel, ManualClock, MQFaultStrategy, QueueData, ThreadLocalIndex, TopicPublishInfo
from mqbalance.versions import Semantics

SEMANTICS = ["4.x", "5.x"]
BROKERS = ["broker-a", "broker-b", "broker-c", "broker-d"]


def route(counts: list[int], initial: int = 0) -> TopicPublishInfo:
    qds = [QueueData(b, 6, n) for b, n in zip(BROKERS, counts)]
    return TopicPublishInfo.from_route("T", qds, send_which_queue=ThreadLocalIndex(initial=initial))


@settings(max_examples=80, deadline=None)
@given(
    sem=st.sampled_from(SEMANTICS),
    enabled=st.booleans(),
    counts=st.lists(st.integers(1, 5), min_size=2, max_size=4),
    models=st.lists(
        st.tuples(st.integers(0, 700), st.integers(0, 50), st.sampled_from([0.0, 0.05, 0.3, 1.0])),
        min_size=4,
        max_size=4,
    ),
    seed=st.integers(0, 2**64 - 1),
    initial=st.integers(-(2**31), 2**31 - 1),
    retry=st.integers(0, 3),
)
def test_simulator_matches_plain_python_model(sem, enabled, counts, models, seed, initial, retry):
    tp = route(counts, initial)
    fs = MQFaultStrategy(
        semantics=sem,
        send_latency_fault_enable=enabled,
        clock=ManualClock(1000),
        which_item_worst=ThreadLocalIndex(initial=7),
    )
    named = {b: models[k] for k, b in enumerate(BROKERS[: len(counts)])}
    got = fs.simulate(
        tp,
        {b: BrokerModel(*m) for b, m in named.items()},
        sends=150,
        interval_ms=3,
        retry_times_when_send_failed=retry,
        seed=seed,
    )
    p = ref.Producer(
        sem,
        [(q.broker_name, q.queue_id) for q in tp.message_queues],
        {b: counts[k] for k, b in enumerate(BROKERS[: len(counts)])},
        enabled=enabled,
        counter=initial,
        worst=7,
    )
    brokers, qids, attempts, ok, elapsed = ref.simulate(
        p, named, sends=150, start_ms=1000, interval_ms=3, retry_times=retry, seed=seed
    )
    assert [got.brokers[b] for b in got.broker] == brokers
    assert got.queue_id.tolist() == qids
    assert got.attempts.tolist() == attempts
    assert got.ok.tolist() == ok
    assert got.elapsed_ms.tolist() == elapsed
    assert tp.send_which_queue.raw == initial  # the simulation ran on a copy
    assert fs.fault_items() == {}


@settings(max_examples=100, deadline=None)
@given(
    sem=st.sampled_from(SEMANTICS),
    counts=st.lists(st.integers(1, 4), min_size=2, max_size=4),
    victim=st.integers(0, 3),
    latency=st.integers(0, 20_000),
    isolation=st.booleans(),
    dt=st.integers(0, 700_000),
    initial=st.integers(-(2**31), 2**31 - 1),
)
def test_isolated_broker_is_avoided_until_its_window_ends(sem, counts, victim, latency, isolation, dt, initial):
    tp = route(counts, initial)
    victim_name = BROKERS[victim % len(counts)]
    clock = ManualClock(10_000)
    fs = MQFaultStrategy(semantics=sem, send_latency_fault_enable=True, clock=clock)
    fs.update_fault_item(victim_name, latency, isolation)
    window_end = fs.fault_items()[victim_name].start_timestamp
    assert window_end == 10_000 + fs.compute_not_available_duration(
        (30_000 if sem == "4.x" else 10_000) if isolation else latency
    ) or (sem == "5.x" and window_end == 0)
    clock.advance(dt)
    picks = {fs.select_one_message_queue(tp).broker_name for _ in range(2 * len(tp))}
    if clock() < window_end:
        assert victim_name not in picks  # another broker is always available here
    else:
        assert victim_name in picks  # available again: two laps of round robin reach every queue


@settings(max_examples=200, deadline=None)
@given(sem=st.sampled_from(SEMANTICS), a=st.integers(-5, 100_000), b=st.integers(-5, 100_000))
def test_durations_are_monotone_in_latency(sem, a, b):
    fs = MQFaultStrategy(semantics=sem)
    lo, hi = sorted((a, b))
    assert fs.compute_not_available_duration(lo) <= fs.compute_not_available_duration(hi)


@settings(max_examples=100, deadline=None)
@given(
    updates=st.lists(st.tuples(st.integers(0, 5_000), st.integers(0, 20_000), st.booleans()), min_size=1, max_size=30)
)
def test_5x_windows_only_extend(updates):
    clock = ManualClock(0)
    fs = MQFaultStrategy(semantics="5.x", send_latency_fault_enable=True, clock=clock)
    previous = 0
    for dt, latency, isolation in updates:
        clock.advance(dt)
        fs.update_fault_item("broker-a", latency, isolation)
        now_end = fs.fault_items()["broker-a"].start_timestamp
        assert now_end >= previous
        previous = now_end


def test_4x_windows_can_shorten():
    """The 4.x contrast: a fast send right after a slow one makes the broker available again."""
    clock = ManualClock(0)
    fs = MQFaultStrategy(semantics="4.x", send_latency_fault_enable=True, clock=clock)
    fs.update_fault_item("broker-a", 2_000, False)  # 120 s window
    assert not fs.is_available("broker-a")
    fs.update_fault_item("broker-a", 10, False)
    assert fs.is_available("broker-a")


def test_bad_latencies():
    fs = MQFaultStrategy(semantics="5.x", send_latency_fault_enable=True)
    for bad in (-1, float("nan"), float("inf"), "10", None, True):
        with pytest.raises(InvalidLatencyError):
            fs.update_fault_item("broker-a", bad, False)  # type: ignore[arg-type]
    assert fs.compute_not_available_duration(-1) == 0  # Java answers 0 below every threshold


def test_bad_tables():
    with pytest.raises(LatencyTableError, match="3 entries but not_available_duration has 7"):
        MQFaultStrategy(latency_max=[1, 2, 3], not_available_duration=[0] * 7)
    with pytest.raises(LatencyTableError, match="ascending"):
        MQFaultStrategy(latency_max=[100, 50], not_available_duration=[0, 10])
    with pytest.raises(LatencyTableError):
        MQFaultStrategy(latency_max=[50, 100], not_available_duration=[0, -10])
    with pytest.raises(InvalidInputError):
        MQFaultStrategy(semantics="6.x")
    custom = MQFaultStrategy(latency_max=[10, 20], not_available_duration=[5, 50])
    assert (custom.compute_not_available_duration(15), custom.compute_not_available_duration(25)) == (5, 50)


def test_semantics_vocabulary():
    """One vocabulary (mqbalance.versions.Semantics)."""
    for spelling in ("4.x", Semantics.V4):
        fs = MQFaultStrategy(semantics=spelling)
        assert fs.semantics is Semantics.V4 and fs.semantics == "4.x"
        assert fs.not_available_duration[-1] == 600_000  # the 4.x table
        assert repr(fs) == "MQFaultStrategy(semantics='4.x', send_latency_fault_enable=False)"
    assert MQFaultStrategy().semantics is Semantics.V5
    assert MQFaultStrategy(semantics=Semantics.V5).not_available_duration[-1] == 30_000
    for bad in ("4", "5", "4.X", "4.9.x", "", None):
        with pytest.raises(InvalidInputError):
            MQFaultStrategy(semantics=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        ThreadLocalIndex(semantics="6.x")
    # 4.x seeds abs(nextInt()), 5.x nextInt(): same draws.
    seeds = {s: ThreadLocalIndex(rng=random.Random(5), semantics=s).raw for s in ("4.x", "5.x")}
    assert seeds["4.x"] == abs(seeds["5.x"])


def test_bad_routes():
    with pytest.raises(EmptyRouteError):
        TopicPublishInfo.from_route("T", [QueueData("broker-a", 6, 0)])  # zero write queues
    with pytest.raises(EmptyRouteError):
        TopicPublishInfo.from_route("T", [QueueData("broker-a", 4, 8)])  # read-only
    with pytest.raises(EmptyRouteError):
        TopicPublishInfo.from_route("T", [QueueData("broker-a", 6, 8)], brokers_with_master=[])
    with pytest.raises(EmptyRouteError):
        TopicPublishInfo([])
    with pytest.raises(InvalidQueueError):
        TopicPublishInfo.from_route("T", [QueueData("broker-a", 6, -1)])
    with pytest.raises(InvalidInputError):
        QueueData("broker-a", 6, 1.5)  # type: ignore[arg-type]


def test_bad_simulations():
    tp = route([2, 2])
    fs = MQFaultStrategy(send_latency_fault_enable=True)
    ok = {"broker-a": BrokerModel(5), "broker-b": BrokerModel(5)}
    with pytest.raises(UnknownBrokerError):
        fs.simulate(tp, {**ok, "broker-z": BrokerModel(1)}, sends=1)
    with pytest.raises(InvalidSimulationError, match="broker-b"):
        fs.simulate(tp, {"broker-a": BrokerModel(5)}, sends=1)
    with pytest.raises(InvalidSimulationError):
        fs.simulate(tp, {**ok, "broker-a": BrokerModel(5, 0, 1.5)}, sends=1)
    with pytest.raises(InvalidLatencyError):
        fs.simulate(tp, {**ok, "broker-a": BrokerModel(-5)}, sends=1)
    with pytest.raises(InvalidSimulationError):
        fs.simulate(tp, ok, sends=-1)
    with pytest.raises(InvalidSimulationError):
        fs.simulate(tp, ok, sends=1, retry_times_when_send_failed=1000)


def test_counters_are_per_thread_and_the_table_is_shared():
    """16 threads select and update concurrently: each thread's counter moves only with its own
    selections (Java's ThreadLocalIndex), and every thread's updates land in the one table."""
    tp = route([4, 4, 4], initial=0)
    fs = MQFaultStrategy(semantics="4.x", send_latency_fault_enable=False)
    per_thread = 500
    finals: list[int] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def work(k: int) -> None:
        try:
            for _ in range(per_thread):
                fs.select_one_message_queue(tp)
            with lock:
                finals.append(tp.send_which_queue.raw)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert finals == [per_thread] * 16

    shared = MQFaultStrategy(semantics="5.x", send_latency_fault_enable=True, clock=ManualClock(0))

    def update(k: int) -> None:
        for i in range(200):
            shared.update_fault_item(f"broker-{k}", 1000 + i, False)

    threads = [threading.Thread(target=update, args=(k,)) for k in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    items = shared.fault_items()
    assert sorted(items) == sorted(f"broker-{k}" for k in range(16))
    assert all(v.current_latency == 1199 for v in items.values())


def test_simulation_is_deterministic_and_fast_path_shape():
    tp = route([4, 4, 8])
    fs = MQFaultStrategy(semantics="5.x", send_latency_fault_enable=True, clock=ManualClock(0))
    models = {
        "broker-a": BrokerModel(5, 10, 0.01),
        "broker-b": BrokerModel(600, 100, 0.2),
        "broker-c": BrokerModel(20, 5),
    }
    a = fs.simulate(tp, models, sends=10_000, seed=3)
    b = fs.simulate(tp, models, sends=10_000, seed=3)
    assert np.array_equal(a.broker, b.broker) and np.array_equal(a.elapsed_ms, b.elapsed_ms)
    s = a.summary()
    assert s["sends"] == 10_000 and s["per_broker"]["broker-b"] < s["per_broker"]["broker-c"]
