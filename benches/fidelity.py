"""Simulator fidelity: one scenario run against the real broker (the Rust port; ``mqbalance rocketmq-consume``
subprocess members) and in the simulator (``mqbalance simulate`` with the per-client-id broker), with
the same figures per event side by side.

    .venv/bin/python benches/fidelity.py [--out out/fidelity] [--scale 1.0]

The scenario: 2 brokers x 4 queues, a producer at 40 msg/s round-robin, members m1..m3 start at
0/1/2 s; m4 joins at 30 s; m2 leaves gracefully at 60 s; a fifth process joins with m1's client id
at 90 s; m3 is killed with ``kill -9`` at 120 s; the run ends at 300 s (``--scale`` shrinks every
time). Java's default timers (heartbeat 30 s, persistence 5 s, periodic rebalance 20 s), 5.x.

Per event window (from the event to the next): messages consumed again (duplicates), queue-seconds
held by nobody (pause) and by two members (owned twice), and the time from the event to the last
ownership change in the window. Writes ``<out>/fidelity.json`` and ``<out>/table.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

from mqbalance.remoting import BrokerClient, NameServer  # noqa: E402
from mqbalance.rocketmq.records import (  # noqa: E402
    check_records,
    duplicates_between,
    load_records,
    ownership_intervals,
    window_figures,
)
from mqbalance.sim import Simulation, scenario_from_dict  # noqa: E402
from rocketmq_cluster import RocketMQCluster  # noqa: E402

TOPIC, GROUP, RATE, PER_BROKER = "FidelityTopic", "cg-fidelity", 40.0, 4
IDS = {f"m{i}": f"10.9.0.{i}@{i}" for i in range(1, 5)}


def timeline(scale: float) -> list[tuple[float, str, str]]:
    """(at s, kind, member) — m5 is the process that reuses m1's id."""
    return [
        (30 * scale, "join", "m4"),
        (60 * scale, "leave", "m2"),
        (90 * scale, "join", "m5"),
        (120 * scale, "kill", "m3"),
    ]


def simulated(scale: float, *, close_on_kill: bool) -> dict[str, Any]:
    s = lambda x: f"{int(x * scale * 1000)}ms"  # noqa: E731
    ids = {**IDS, "m5": IDS["m1"]}
    events: list[dict[str, Any]] = []
    for at, kind, m in timeline(scale):
        if kind == "join":
            events.append({"at": f"{int(at * 1000)}ms", "join": ids[m]})
        elif kind == "leave":
            events.append({"at": f"{int(at * 1000)}ms", "leave": ids[m]})
        else:
            events.append({"at": f"{int(at * 1000)}ms", "crash": ids[m], "close_connection": close_on_kill})
    scenario = scenario_from_dict(
        {
            "name": "fidelity",
            "duration": s(300),
            "sample_interval": "100ms",
            "brokers": ["broker-a", "broker-b"],
            "topics": {TOPIC: {"queues_per_broker": PER_BROKER, "rate": RATE}},
            "group": {
                "name": GROUP,
                "consumers": [
                    {"id": IDS["m1"], "start": 0},
                    {"id": IDS["m2"], "start": "1s"},
                    {"id": IDS["m3"], "start": "2s"},
                ],
                "throughput": 1000,
                "consume_from_where": "FIRST_OFFSET",
            },
            "broker": {"client_ids": "per-client-id", "notify_on_leave": False},
            "events": events,
        }
    )
    sim = Simulation(scenario)
    result = sim.run()
    series = result.series
    dt = scenario.sample_interval_ms / 1000
    bounds = [0.0] + [at for at, _, _ in timeline(scale)] + [300 * scale]
    rows = []
    for k in range(len(bounds) - 1):
        t0, t1 = bounds[k], bounds[k + 1]
        idx = [i for i, t in enumerate(series["t_s"]) if t0 < t <= t1]
        changes = [t / 1000 for t, _ in sim.metrics.changes if t0 * 1000 <= t < t1 * 1000]
        rows.append(
            {
                "duplicates": result.events[k]["duplicates"],
                "pause_queue_s": round(sum(series["owned_nobody"][i] for i in idx) * dt, 1),
                "owned_twice_queue_s": round(sum(series["owned_twice"][i] for i in idx) * dt, 1),
                "first_change_s": round((min(changes) - t0) if changes else 0.0, 2),
                "last_change_s": round((max(changes) - t0) if changes else 0.0, 2),
            }
        )
    return {"windows": rows, "summary": result.summary}


class Producer(threading.Thread):
    def __init__(self, cluster: RocketMQCluster) -> None:
        super().__init__(daemon=True)
        self.cluster, self.stop = cluster, threading.Event()
        self.sent = 0

    def run(self) -> None:
        clients = {b.broker_name: BrokerClient(b.addr) for b in self.cluster.brokers}
        queues = [(b, i) for b in sorted(clients) for i in range(PER_BROKER)]
        start = time.monotonic()
        try:
            while not self.stop.is_set():
                due = start + self.sent / RATE
                ahead = due - time.monotonic()
                if ahead > 0:
                    time.sleep(min(0.01, ahead))
                    continue
                b, q = queues[self.sent % len(queues)]
                try:
                    clients[b].send(TOPIC, q, f"{self.sent}".encode())
                except Exception as e:  # keep producing; a failed send is not a produced message
                    print(f"send failed: {e}", file=sys.stderr)
                    continue
                self.sent += 1
        finally:
            for c in clients.values():
                c.close()


def real(scale: float, out: Path) -> dict[str, Any]:
    rec_dir = out / "records"
    rec_dir.mkdir(parents=True, exist_ok=True)
    for f in rec_dir.glob("*.jsonl"):
        f.unlink()
    with RocketMQCluster(brokers=2) as cluster:
        for b in cluster.brokers:
            with BrokerClient(b.addr) as bc:
                bc.create_topic(TOPIC, read=PER_BROKER, write=PER_BROKER)
        with NameServer(cluster.namesrv_addr) as ns:
            while len(ns.topic_route(TOPIC).queues) < 2:
                time.sleep(0.2)
        procs: dict[str, subprocess.Popen[bytes]] = {}

        def launch(name: str) -> None:
            cid = IDS["m1" if name == "m5" else name]
            cmd = [sys.executable, "-m", "mqbalance.cli", "rocketmq-consume", "--namesrv", cluster.namesrv_addr]
            cmd += ["--group", GROUP, "--topic", TOPIC, "--client-id", cid, "--from", "first"]
            cmd += ["--record", str(rec_dir / f"{name}.jsonl")]
            with open(rec_dir / f"{name}.err", "wb") as err:
                procs[name] = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)

        producer = Producer(cluster)
        t_start = time.monotonic()
        producer.start()
        for i, name in enumerate(("m1", "m2", "m3")):
            time.sleep(max(0.0, t_start + i * scale - time.monotonic()))
            launch(name)
        died: dict[str, float] = {}
        events: list[tuple[float, str]] = []
        listed: list[tuple[float, list[str]]] = []
        for at, kind, name in timeline(scale):
            time.sleep(max(0.0, t_start + at - time.monotonic()))
            events.append((time.monotonic(), f"{kind} {name}"))
            if kind == "join":
                launch(name)
            elif kind == "leave":
                procs[name].send_signal(signal.SIGTERM)
            else:
                procs[name].send_signal(signal.SIGKILL)
                died[name] = time.monotonic()
        end = t_start + 300 * scale
        with BrokerClient(cluster.brokers[0].addr) as bc:
            while time.monotonic() < end:  # the consumer list, for the kill -9 expiry
                listed.append((time.monotonic() - died["m3"], bc.consumer_ids(GROUP)))
                time.sleep(0.5)
        producer.stop.set()
        producer.join()
        time.sleep(3)  # let the survivors drain
        for p in procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs.values():
            p.wait(30)
        ends = {}
        for b in cluster.brokers:
            with BrokerClient(b.addr) as bc:
                for q in range(PER_BROKER):
                    ends[f"{b.broker_name}/{TOPIC}/{q}"] = bc.max_offset(TOPIC, q)
    records = load_records(sorted(rec_dir.glob("*.jsonl")))
    check = check_records(records, ends)
    intervals = ownership_intervals(records, end=end, died=died)
    queues = sorted(ends)
    bounds = [t_start] + [t for t, _ in events] + [end]
    rows = []
    for k in range(len(bounds) - 1):
        f = window_figures(intervals, queues, bounds[k], bounds[k + 1])
        rows.append(
            {
                "duplicates": duplicates_between(records, bounds[k], bounds[k + 1]),
                "pause_queue_s": round(f["pause_queue_s"], 1),
                "owned_twice_queue_s": round(f["owned_twice_queue_s"], 1),
                "first_change_s": round(f["first_change_s"], 2),
                "last_change_s": round(f["last_change_s"], 2),
            }
        )
    killed_id = IDS["m3"]
    gone = next((round(t, 1) for t, ids in listed if killed_id not in ids), None)
    return {
        "windows": rows,
        "check": check.summary(),
        "killed_unlisted_after_s": gone,
        "listed_m1_times": max((ids.count(IDS["m1"]) for _, ids in listed), default=0),
        "produced": producer.sent,
    }


def table(real_run: dict[str, Any], sim: dict[str, Any], scale: float) -> str:
    names = ["start (m1..m3)"] + [f"{kind} {name}" for _, kind, name in timeline(scale)]
    names = [n.replace("join m5", "join m5 (m1's id)").replace("kill m3", "kill -9 m3") for n in names]
    lines = [
        (
            "| window | duplicates real / sim | pause queue-s real / sim | owned twice queue-s real / sim | "
            "to first / last change s: real | sim |"
        ),
        "|---|---|---|---|---|---|",
    ]
    for n, r, s in zip(names, real_run["windows"], sim["windows"]):
        lines.append(
            f"| {n} | {r['duplicates']} / {s['duplicates']} | {r['pause_queue_s']} / {s['pause_queue_s']} | "
            f"{r['owned_twice_queue_s']} / {s['owned_twice_queue_s']} | {r['first_change_s']} / {r['last_change_s']} | "
            f"{s['first_change_s']} / {s['last_change_s']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "out" / "fidelity"))
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every time of the scenario")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    real_run = real(args.scale, out)
    close = real_run["killed_unlisted_after_s"] is not None and real_run["killed_unlisted_after_s"] < 5
    sim = simulated(args.scale, close_on_kill=close)
    data = {"scale": args.scale, "real": real_run, "sim": sim, "sim_kill_closes_connection": close}
    (out / "fidelity.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    md = table(real_run, sim, args.scale)
    (out / "table.md").write_text(md, encoding="utf-8")
    print(md)
    print(
        f"real: {real_run['produced']} produced, check {real_run['check']}; the killed member unlisted after "
        f"{real_run['killed_unlisted_after_s']} s; m1's id listed at most {real_run['listed_m1_times']}x"
    )
    return 0 if real_run["check"]["ok"] else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
