"""The remoting client and the live snapshot against real servers (the Rust port of RocketMQ).

* Live snapshot of 2 brokers with 1,000 topics × 8 queues (on each broker) and 100 consumer
  groups (one client each, subscribed to 10 topics, with committed offsets): the wall time with 8
  requests in flight (the default) against 1 at a time (the baseline: the same reader, same
  cluster, same rounds), and the peak Python memory of one snapshot (tracemalloc).
* Requests per second of one connection to one broker (``QUERY_CONSUMER_OFFSET``): 8 threads
  pipelining on the connection against 1 thread waiting for each answer.

The cluster is built outside the timed region. ``--benchmark-disable`` (CI) runs small sizes
(20 topics, 4 groups) as correctness tests; timing on (``make bench``) uses the full sizes.
"""

from __future__ import annotations

import threading
import tracemalloc
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from mqbalance.fleet.rocketmq.live import live_snapshot
from mqbalance.remoting import BrokerClient, ConsumerData
from rocketmq_cluster import RocketMQCluster

QUEUES = 8


@pytest.fixture(scope="module")
def cluster(request) -> Iterator[tuple[RocketMQCluster, int, int]]:
    full = not request.config.getoption("benchmark_disable")
    topics, groups = (1_000, 100) if full else (20, 4)
    with RocketMQCluster(brokers=2) as c:
        names = [f"BenchTopic{i:04d}" for i in range(topics)]
        admins = [BrokerClient(b.addr, timeout=10.0) for b in c.brokers]
        with ThreadPoolExecutor(8) as pool:
            for admin in admins:
                list(pool.map(lambda t, a=admin: a.create_topic(t, read=QUEUES, write=QUEUES), names))
        members = []
        for g in range(groups):
            subs = [names[(g * 10 + k) % topics] for k in range(10)]
            for admin, b in zip(admins, c.brokers):
                member = BrokerClient(b.addr)
                member.heartbeat(f"10.1.{g // 250}.{g % 250}@{g}", [ConsumerData(f"cg-bench-{g:03d}", subs)])
                members.append(member)
                admin.update_offset(f"cg-bench-{g:03d}", subs[0], 0, 100 + g)
        for a in admins:
            a.close()
        yield c, topics, groups
        for m in members:
            m.close()


def test_live_snapshot_2_brokers(cluster, compare):
    c, topics, groups = cluster

    def check(snap, base):
        routes = snap.readable_routes()
        bench = {t: r for t, r in routes.items() if t.startswith("BenchTopic")}
        assert len(bench) == topics and all(r == [("broker-a", QUEUES), ("broker-b", QUEUES)] for r in bench.values())
        bench_groups = [g for g in snap.consumer_groups() if g.startswith("cg-bench-")]
        assert len(bench_groups) == groups and snap.error_lines() == []
        assert snap.offsets.num_rows >= 2 * groups
        assert base.connections.equals(snap.connections) or base.connections.num_rows == snap.connections.num_rows

    compare(
        lambda: live_snapshot(c.namesrv_addr, workers=8),
        lambda: live_snapshot(c.namesrv_addr, workers=1),
        check=check,
        rounds=3,
        label="1 request in flight",
    )


def test_live_snapshot_peak_memory(cluster, benchmark):
    c, topics, _ = cluster

    def measure() -> tuple[int, int]:
        tracemalloc.start()
        try:
            snap = live_snapshot(c.namesrv_addr)
            return tracemalloc.get_traced_memory()[1], snap.readable_queue_count()
        finally:
            tracemalloc.stop()

    peak, queues = benchmark.pedantic(measure, rounds=1, iterations=1)
    benchmark.extra_info["peak_python_bytes"] = peak
    print(
        f"\nlive snapshot of {topics} topics x {QUEUES} queues x 2 brokers: peak Python memory {peak / 2**20:.1f} MiB"
    )
    assert queues >= topics * QUEUES * 2
    assert peak < 200 * 2**20


def test_requests_per_second_one_broker(cluster, compare, full_size, benchmark):
    c, _, _ = cluster
    n = 8_000 if full_size else 400  # requests per round, both sides
    client = BrokerClient(c.brokers[0].addr)
    group = "cg-bench-000"
    topic = "BenchTopic0000"
    expected = client.query_offset(group, topic, 0)

    def sequential() -> int:
        return sum(client.query_offset(group, topic, 0) == expected for _ in range(n))

    def pipelined() -> int:
        ok = [0] * 8

        def work(k: int) -> None:
            ok[k] = sum(client.query_offset(group, topic, 0) == expected for _ in range(n // 8))

        threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return sum(ok)

    def check(ours, base):
        assert ours == base == n

    try:
        compare(pipelined, sequential, check=check, rounds=3, label="1 thread, one request at a time")
    finally:
        client.close()
    if full_size:
        ours, base = benchmark.extra_info["ours_s"], benchmark.extra_info["baseline_s"]
        print(f"\nrequests/s on one connection: {n / ours:,.0f} pipelined (8 threads), {n / base:,.0f} sequential")
        benchmark.extra_info["requests_per_s"] = n / ours
        benchmark.extra_info["requests_per_s_sequential"] = n / base
