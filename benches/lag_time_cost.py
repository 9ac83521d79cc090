"""Benchmark: the cost of lag seconds (:mod:`mqbalance.fleet.rocketmq.lag_time`) on 1,000 lagging
queues of a real broker (the Rust port, ``tests/support/rocketmq_cluster.py``).

One topic of ``--queues`` queues on ``broker-a``, two messages in each, a group committed at
offset 0 of each (every queue lagging by 2). Measured: the requests and the wall time of one
:meth:`LagClock.update` reading them all (budget = the queue count), of one with the default budget
(256: the rest carried), and of the next update when no committed offset moved (nothing left to
read with the full budget; the next 256 with the default).

    python benches/lag_time_cost.py --queues 1000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))

from mqbalance.fleet.rocketmq.lag_time import LagClock  # noqa: E402
from mqbalance.remoting import BrokerClient, ConsumerData  # noqa: E402
from mqbalance.remoting.client import RemotingClient  # noqa: E402
from rocketmq_cluster import RocketMQCluster  # noqa: E402


def measure(clock: LagClock, offsets: dict, addresses: dict) -> tuple[int, float, int]:
    sent, t0 = RemotingClient.requests_sent, time.perf_counter()
    found, failed = clock.update(offsets, addresses)
    assert not failed, failed
    exact = sum(1 for o in found.values() if o.state == "exact")
    return RemotingClient.requests_sent - sent, time.perf_counter() - t0, exact


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--queues", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    n = args.queues
    with RocketMQCluster() as c:
        c.create_topic("T-cost", {"broker-a": n})
        addr = c.broker("broker-a").addr
        with BrokerClient(addr) as b:
            b.heartbeat("10.0.0.1@cost", [ConsumerData("g-cost", ["T-cost"])])
            for q in range(n):
                b.send("T-cost", q, b"a")
                b.send("T-cost", q, b"b")
            for q in range(n):
                b.update_offset("g-cost", "T-cost", q, 0)
        offsets = {("g-cost", "T-cost", "broker-a", q): (0, 2) for q in range(n)}
        addresses = {"broker-a": addr}
        for budget in (n, 256):
            times, requests = [], []
            for _ in range(args.rounds):
                clock = LagClock(budget=budget, timeout=10.0)
                r, s, exact = measure(clock, offsets, addresses)
                times.append(s)
                requests.append(r)
            again, again_s, _ = measure(clock, offsets, addresses)
            print(
                f"{n} lagging queues, budget {budget}: {statistics.median(requests):.0f} requests, "
                f"{statistics.median(times):.3f} s median ({min(times):.3f}-{max(times):.3f}, {args.rounds} rounds), "
                f"{exact} exact; the next update, no offset moved: {again} requests (the carried ones), "
                f"{again_s * 1000:.1f} ms"
            )


if __name__ == "__main__":
    main()
