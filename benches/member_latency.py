"""A member's rebalance latency after the broker's notification, on a real broker (the Rust port).

    .venv/bin/python benches/member_latency.py [--rounds 10] [--queues 16] [--semantics 5.x]

Member A holds every queue of a topic; ``--rounds`` more members join one by one (1.5 s apart,
beyond the 5.x minimum interval), each shrinking A's share. Each time the broker sends A
``NOTIFY_CONSUMER_IDS_CHANGED``; the figure is the time from its arrival on A's connection to the end
of A's rebalance (consumer list, allocation, offsets of the queues it drops), and from the joiner's
``start()`` call to A holding its new share. (Leaves are not measured: the Rust broker notifies
nobody when a member leaves.) Baseline, measured in the same run: one
``GET_CONSUMER_LIST_BY_GROUP`` round trip (median of 50) — the rebalance is that plus the offset
requests. Writes ``<out>/member_latency.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

from mqbalance import sort_client_ids, sort_queues, strategy  # noqa: E402
from mqbalance.allocation.models import MessageQueue  # noqa: E402
from mqbalance.remoting import BrokerClient  # noqa: E402
from mqbalance.rocketmq import RocketMQMember  # noqa: E402
from rocketmq_cluster import RocketMQCluster  # noqa: E402


def _wait(predicate: object, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.001)
    return False


def run(rounds: int, queues: int, semantics: str) -> dict[str, object]:
    topic, group = "LatencyTopic", "cg-latency"
    with RocketMQCluster(brokers=1) as cluster:
        cluster.create_topic(topic, {"broker-a": queues})  # and wait until the name server routes it
        mqs = [MessageQueue(topic, "broker-a", i) for i in range(queues)]
        a = RocketMQMember(
            cluster.namesrv_addr,
            group,
            [topic],
            consume=lambda mq, m: None,
            client_id="10.5.0.1@1",
            semantics=semantics,
        )
        a.start()
        assert _wait(lambda: len(a.owned()) == queues, 30), "A never took the queues"
        notified_to_done, change_to_share = [], []
        ids = ["10.5.0.1@1"]
        joined: list[RocketMQMember] = []
        for k in range(rounds):
            time.sleep(1.5)
            n = len(a.rebalance_log)
            ids.append(f"10.5.1.{k}@{100 + k}")
            share = set(strategy("AVG").allocate(group, ids[0], sort_queues(mqs), sort_client_ids(ids)))
            t = time.monotonic()
            b = RocketMQMember(
                cluster.namesrv_addr, group, [topic], consume=lambda mq, m: None, client_id=ids[-1], semantics=semantics
            )
            joined.append(b.start())
            assert _wait(lambda share=share: set(a.owned()) == share, 30), f"join {k}: A never held its share"
            change_to_share.append(time.monotonic() - t)
            assert _wait(lambda n=n: len(a.rebalance_log) > n, 5), f"join {k}: A was not notified"
            notified, done = a.rebalance_log[n]
            notified_to_done.append(done - notified)
        for b in joined:
            b.close()
        a.close()
        with BrokerClient(cluster.brokers[0].addr) as bc:
            trips = []
            for _ in range(50):
                t = time.perf_counter()
                bc.consumer_ids(group)
                trips.append(time.perf_counter() - t)
    rt = statistics.median(trips)
    med = statistics.median(notified_to_done)
    return {
        "semantics": semantics,
        "queues": queues,
        "samples": len(notified_to_done),
        "notified_to_rebalanced_ms_median": round(med * 1000, 2),
        "notified_to_rebalanced_ms_max": round(max(notified_to_done) * 1000, 2),
        "change_to_new_share_ms_median": round(statistics.median(change_to_share) * 1000, 1),
        "consumer_list_round_trip_ms_median": round(rt * 1000, 3),
        "ratio_to_one_round_trip": round(med / rt, 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--queues", type=int, default=16)
    ap.add_argument("--semantics", default="5.x", choices=["4.x", "5.x"])
    ap.add_argument("--out", default=str(ROOT / "out"))
    args = ap.parse_args(argv)
    row = run(args.rounds, args.queues, args.semantics)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "member_latency.json").write_text(json.dumps(row, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(row, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
