"""Time to drain on a real RocketMQ broker (the Rust port and Apache RocketMQ 5.3.3's Java
broker): two ``mqbalance rocketmq-consume`` members slowed with ``--work-ms`` hold two queues each
of a 4-queue topic; the test sends a burst much faster than they consume, stops, and lets them
catch up while the real ``mqbalance watch`` process serves ``mqbalance_group_drain_seconds``. Every
estimate it serves once its window holds no production is compared with the drain observed (the
first moment every committed offset reached its queue's max offset, polled by the test): the
median absolute error must be ≤ 20 % (issue 35), plus how far the consumers' own speed moved
meanwhile (an estimate from the last seconds' speed cannot foresee a busy machine slowing or
speeding the consumers after them; the test measures that from its own polls, see
:func:`speed_drift`; 0 to 5 % on a quiet machine). So must ``mqbalance scale --history``'s
prediction at the current count, from the rate per consumer it measures in the history. The
audit's time to drain between two live snapshots (``audit --previous``) must be within 20 % of the
drain observed by a consumer paced by the wall clock.

``--work-ms`` is per *pulled batch* (up to 32 messages), and one member pulls its queues in turn:
a member holding 2 queues consumes about ``32 / (2 * work_ms)`` messages per second per queue —
``--work-ms 400`` is 40/s per queue, 160/s for the topic. A producer slower than that never
builds a lag (every reading finds committed = max offset): the burst must outpace it."""

from __future__ import annotations

import csv
import datetime as dt
import json
import os
import socket
import statistics
import subprocess
import threading
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kafka_cluster import MQBALANCE
from mqbalance.fleet import drains, load_any_snapshot
from mqbalance.history.analysis import ms
from mqbalance.history.writer import read_ticks
from mqbalance.record_files import held_queues, load_records
from mqbalance.remoting import BrokerClient, ConsumerData
from mqbalance.scaling import advise, measured_load
from paced_thread import PacedThread
from rocketmq_cluster import RocketMQCluster, send_through_busy

QUEUES, WORK_MS, LAG = 4, 400, 1200  # the burst goes on until every queue is LAG behind
OFFSETS_INTERVAL = 2.0
DRAIN_WINDOW = 5  # the watcher's readings per drain estimate (WatchMetrics' default)
WINDOW_S = (DRAIN_WINDOW - 1) * OFFSETS_INTERVAL  # the same window for `mqbalance scale --history`


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def scrape(port: int, group: str) -> dict[str, float]:
    """The group's lag and drain gauges from the watcher's endpoint (absent ones left out)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.labels.get("group") == group and s.name in ("mqbalance_group_lag", "mqbalance_group_drain_seconds"):
                out[s.name] = s.value
    return out


def predict(history: Path, group: str) -> tuple[float, float | None, float]:
    """``mqbalance.scaling`` on the history so far: (the last offsets reading's time, the drain
    predicted at the current count, the measured rate per consumer)."""
    ticks = [t for t in read_ticks(history).to_pylist() if t["kind"] in ("offsets", "both")]
    end = ms(ticks[-1]["ts"])
    load = measured_load(history, group, window_s=WINDOW_S, until_ms=end)
    return end / 1000, advise(load).current.drain_s, load.consume_rate


def speed_drift(polls: list[tuple[float, int]], ends: list[float]) -> float:
    """How far the consumers' own speed moved while the estimates were made: over the windows of
    ``WINDOW_S`` ending at ``ends`` (those estimates are made from), the fastest speed over the
    slowest, less 1, from the test's own polls of the committed offsets ``(time, committed over
    every queue)``. An estimate from one window's speed is off by as much when the speed moves
    after it (the drain observed is lag / the speed after). 0 to 0.05 on a quiet machine; a busy
    one slows and speeds the consumers. Windows reaching back before the first commit the broker
    showed are left out (the Java broker shows the first commits late, all at once)."""

    def committed_at(t: float) -> int:
        return max((c for s, c in polls if s <= t), default=polls[0][1])

    first = min((s for s, c in polls if c > 0), default=polls[-1][0])
    speeds = [(committed_at(t) - committed_at(t - WINDOW_S)) / WINDOW_S for t in ends if t - WINDOW_S >= first]
    return max(speeds) / min(speeds) - 1 if speeds and min(speeds) > 0 else 0.0


def assigned(records: Path) -> set[str]:
    """The queues a member holds by its record file."""
    return set().union(*(held_queues(rows) for rows in load_records([records]).values()))


@pytest.fixture(scope="module")
def rocketmq(rocketmq_both: RocketMQCluster) -> RocketMQCluster:
    """One name server and ``broker-a``: the Rust port, or Apache RocketMQ's Java servers."""
    return rocketmq_both


def test_drain_estimate_against_the_drain_observed(rocketmq: RocketMQCluster, tmp_path: Path) -> None:
    tag = uuid.uuid4().hex[:6]
    topic, group = f"T-drain-{tag}", f"g-drain-{tag}"
    rocketmq.create_topic(topic, {"broker-a": QUEUES})
    broker = rocketmq.broker("broker-a")
    port = free_port()
    log = (tmp_path / "procs.log").open("ab")
    watch = subprocess.Popen(
        [str(MQBALANCE), "watch", "--namesrv", rocketmq.namesrv_addr, "--out", str(tmp_path / "h"),
         "--interval", "1s", "--offsets-interval", f"{OFFSETS_INTERVAL:g}s", "--no-running-info",
         "--metrics-port", str(port), "--quiet"],
        stdout=subprocess.DEVNULL, stderr=log,
    )  # fmt: skip
    members = []
    records = [tmp_path / f"m{i}.jsonl" for i in range(2)]
    for i, rec in enumerate(records):
        cmd = [str(MQBALANCE), "rocketmq-consume", "--namesrv", rocketmq.namesrv_addr, "--group", group,
               "--topic", topic, "--client-id", f"drain-{i}", "--record", str(rec), "--from", "first",
               "--work-ms", str(WORK_MS), "--persist-interval-ms", "500", "--rebalance-interval-ms", "1000",
               "--heartbeat-interval-ms", "1000"]  # fmt: skip
        members.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log))
    samples: list[tuple[float, dict[str, float]]] = []  # (time first seen, the watcher's gauges)
    scraping = threading.Event()

    def scraper() -> None:
        last: dict[str, float] | None = None
        while not scraping.wait(0.2):
            try:
                got = scrape(port, group)
            except OSError:
                continue  # not serving yet
            if got != last:
                samples.append((time.time(), got))
                last = got

    thread = threading.Thread(target=scraper, daemon=True)
    try:
        # each member holds 2 queues (rebalanced), as the broker and their records say
        deadline = time.monotonic() + 90
        while not all(rec.exists() and len(assigned(rec)) == QUEUES // 2 for rec in records):
            assert time.monotonic() < deadline, [sorted(assigned(r)) if r.exists() else None for r in records]
            assert all(m.poll() is None for m in members), log.name
            time.sleep(0.2)
        thread.start()
        # the burst: one message per queue in turn, as fast as one connection sends, until every
        # queue is LAG behind (as the broker reports it; a busy machine sends slower, for longer:
        # the burst goes on while the least lag keeps reaching new highs; commits come in steps)
        with BrokerClient(broker.addr, timeout=20.0) as producer:  # a busy machine: generous
            started = time.time()
            tops = [0] * QUEUES
            highest, highest_at = -1, started
            while True:
                for _ in range(50):
                    for q in range(QUEUES):
                        tops[q] = send_through_busy(producer, topic, q, b"m" * 64).queue_offset + 1
                committed = {q: c for (_t, _b, q), (_m, c) in producer.consume_stats(group).items()}
                behind = [tops[q] - max(0, committed.get(q, 0)) for q in range(QUEUES)]
                if min(behind) >= LAG:
                    break
                if min(behind) > highest:
                    highest, highest_at = min(behind), time.time()
                assert time.time() - highest_at < 30, f"the burst does not outpace the consumers: {behind} behind"
            stopped = time.time()
        # the drain observed: the first moment every committed offset reached its queue's max offset
        queue_drained: dict[int, float] = {}
        polls: list[tuple[float, int]] = []  # (time, committed over every queue): the consumers' own speed
        measured: list[tuple[float, float | None, float]] = []  # (reading, predicted drain, rate per consumer)
        cli: subprocess.Popen[str] | None = None
        with BrokerClient(broker.addr, timeout=20.0) as admin:
            deadline = time.monotonic() + max(120, 3 * (stopped - started))  # slower on a busy machine
            while True:
                stats = admin.consume_stats(group)
                committed = {q: c for (_t, _b, q), (_m, c) in stats.items()}
                now = time.time()
                polls.append((now, sum(max(0, committed.get(q, 0)) for q in range(QUEUES))))
                for q in range(QUEUES):
                    if committed.get(q, -1) >= tops[q]:
                        queue_drained.setdefault(q, now)
                if len(queue_drained) == QUEUES:
                    drained = max(queue_drained.values())
                    break
                assert time.monotonic() < deadline, (committed, tops)
                assert all(m.poll() is None for m in members), log.name
                # the rate per consumer is measured over consumers lagging on every queue: once a
                # queue has drained, its consumer no longer is (and with one drained queue each,
                # none is: `measured_load` then asks for the rate). The history's readings were taken
                # before this poll (bar one in the milliseconds since, unlikely): no queue drained.
                if (
                    not queue_drained
                    and now >= stopped + (DRAIN_WINDOW + 1) * OFFSETS_INTERVAL
                    and (not measured or now >= measured[-1][0] + 2 * OFFSETS_INTERVAL)
                ):
                    measured.append(predict(tmp_path / "h", group))
                    if cli is None:  # the same from the command line, while it drains
                        cli = subprocess.Popen(
                            [str(MQBALANCE), "scale", "--history", str(tmp_path / "h"), "--group", group,
                             "--window", f"{WINDOW_S:g}s", "--to", dt.datetime.fromtimestamp(now, dt.UTC).isoformat(),
                             "--json"],  # the window as of now, however late the command reads
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: os.nice(19),  # its start-up must not slow the consumers
                        )  # fmt: skip
                time.sleep(0.1)
        time.sleep(2 * OFFSETS_INTERVAL)  # the watcher's idle reading
        assert cli is not None
        out, err = cli.communicate(timeout=120)
        assert cli.returncode == 0, err
        advice = json.loads(out)
        after = subprocess.run(  # drained: no consumer lags, so no rate to measure: a clear error
            [str(MQBALANCE), "scale", "--history", str(tmp_path / "h"), "--group", group, "--window", "4s"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert after.returncode == 2 and "lagged and consumed" in after.stderr, after.stderr
    finally:
        scraping.set()
        if thread.is_alive():
            thread.join(10)
        for p in [*members, watch]:
            if p.poll() is None:
                p.terminate()
        for p in [*members, watch]:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)
        log.close()
    # estimates whose window lies after the burst: (DRAIN_WINDOW + 1) readings after it stopped
    clean = stopped + (DRAIN_WINDOW + 1) * OFFSETS_INTERVAL
    pairs = [
        (g["mqbalance_group_drain_seconds"], drained - at, at)
        for at, g in samples
        if clean <= at < drained - OFFSETS_INTERVAL and "mqbalance_group_drain_seconds" in g
    ]
    errors = [abs(est - true) / true for est, true, _at in pairs]
    report: dict[str, Any] = {
        "burst_s": round(stopped - started, 2),
        "sent": sum(tops),
        "drain_s": round(drained - stopped, 2),
        "pairs": [(round(e, 2), round(t, 2)) for e, t, _at in pairs],
        "speed_per_2s": [  # committed per second over each 20 polls (about 2 s) of the drain
            round((c1 - c0) / (t1 - t0), 1) for (t0, c0), (t1, c1) in zip(polls[::20], polls[20::20], strict=False)
        ],
        "queues_drained_s": {q: round(t - stopped, 2) for q, t in sorted(queue_drained.items())},
        "median_error": statistics.median(errors) if errors else None,
    }
    # `mqbalance scale --history`: the drain it predicts at the current count from the measured
    # per-consumer rate and lag, against the drain observed after the reading it measured up to
    scale = [(p, drained - at, at) for at, p, _r in measured if p is not None and drained - at >= OFFSETS_INTERVAL]
    report["scale"] = [(round(p, 2), round(t, 2)) for p, t, _at in scale]
    report["scale_rate"] = [round(r, 1) for _a, _p, r in measured]
    report["scale_median_error"] = statistics.median(abs(p - t) / t for p, t, _at in scale) if scale else None
    # the issue's 20 %, plus how far the consumers' own speed moved while the estimates were made
    report["speed_drift"] = drift = speed_drift(polls, [at for *_x, at in pairs + scale])
    bound = 0.20 + drift
    print(json.dumps(report))
    assert advice["current"]["consumers"] == 2 and advice["current"]["max_share"] == QUEUES // 2, advice
    assert scale and report["scale_median_error"] <= bound, report
    assert len(pairs) >= 3, (report, samples)
    assert statistics.median(errors) <= bound, report
    # the watcher saw the backlog and then its end: idle (0) after the drain
    assert max(g.get("mqbalance_group_lag", 0) for _a, g in samples) > 0, samples
    assert samples[-1][1].get("mqbalance_group_drain_seconds") == 0.0, samples[-3:]


class Paced(PacedThread):
    """The test's own consumer and producer on a 4-queue topic, paced by the wall clock: group
    ``drains`` commits ``CONSUME`` messages a second on every queue (never past its max offset),
    queue 0 gets ``PRODUCE`` more a second; group ``stopped`` never commits (production goes on:
    it never drains); group ``caught_up`` holds an idle topic at its end. The moment ``drains``
    commits its last queue's max offset is recorded (the drain observed)."""

    CONSUME, PRODUCE, BURST = 20.0, 5.0, (300, 300, 300, 100)

    def __init__(self, cluster: RocketMQCluster) -> None:
        super().__init__(period=0.05)
        tag = uuid.uuid4().hex[:6]
        self.topic, self.idle_topic = f"T-audit-{tag}", f"T-idle-{tag}"
        self.drains, self.stopped, self.caught_up = f"g-drains-{tag}", f"g-stopped-{tag}", f"g-idle-{tag}"
        cluster.create_topic(self.topic, {"broker-a": QUEUES})
        cluster.create_topic(self.idle_topic, {"broker-a": 1})
        self.conn = BrokerClient(cluster.broker("broker-a").addr, timeout=20.0)  # a busy machine: generous
        self.conn.heartbeat(
            f"10.0.9.2@{tag}",
            [ConsumerData(self.drains, [self.topic]), ConsumerData(self.stopped, [self.topic]),
             ConsumerData(self.caught_up, [self.idle_topic])],
        )  # fmt: skip
        self.top = [0] * QUEUES
        for q, n in enumerate(self.BURST):
            for _ in range(n):
                self.top[q] = self.conn.send(self.topic, q, b"m" * 64).queue_offset + 1
        for _ in range(2):
            self.conn.send(self.idle_topic, 0, b"i")
        self.conn.update_offset(self.caught_up, self.idle_topic, 0, 2)
        for q in range(QUEUES):
            self.conn.update_offset(self.stopped, self.topic, q, 0)
            self.conn.update_offset(self.drains, self.topic, q, 0)
        self.drained: float | None = None
        self.started, self.base, self.committed = time.time(), list(self.top), [0] * QUEUES
        self.start()

    def step(self) -> bool:
        elapsed = time.time() - self.started
        while self.base[0] + int(self.PRODUCE * elapsed) > self.top[0]:
            self.top[0] = self.conn.send(self.topic, 0, b"m" * 64).queue_offset + 1
        for q in range(QUEUES):
            target = min(self.top[q], int(self.CONSUME * elapsed))
            if target > self.committed[q]:
                self.conn.update_offset(self.drains, self.topic, q, target)
                self.committed[q] = target
        if all(self.committed[q] >= self.top[q] for q in range(QUEUES)):
            self.drained = time.time()
        return self.drained is None

    def close(self) -> None:
        self.halt()
        self.conn.close()


def test_audit_time_to_drain_from_two_live_snapshots(rocketmq: RocketMQCluster, tmp_path: Path) -> None:
    """Two ``mqbalance snapshot --namesrv`` a few seconds apart while a group drains, then ``mqbalance
    audit LATER --previous EARLIER``: the group's time to drain within 20 % of the drain observed
    after the later read; a stopped group ``never``; a caught-up one ``idle``; the later snapshot
    alone ``unknown (one reading)``."""
    p = Paced(rocketmq)
    paths = [tmp_path / "before.json", tmp_path / "after.json"]
    try:
        for i, path in enumerate(paths):
            if i:
                time.sleep(3.0)  # rates over a few seconds
            done = subprocess.run(
                [str(MQBALANCE), "snapshot", "--namesrv", rocketmq.namesrv_addr, "-o", str(path), "--quiet",
                 "--no-running-info"],
                capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
        deadline = time.monotonic() + 120
        while p.drained is None and p.error is None:
            assert time.monotonic() < deadline, (p.top, p.error)
            time.sleep(0.1)
    finally:
        p.close()
    assert p.error is None and p.drained is not None, p.error
    read_at = max(r["readAt"] for r in json.loads(paths[1].read_text())["lagTimes"]) / 1000
    true = p.drained - read_at
    out = tmp_path / "audit"
    done = subprocess.run(
        [str(MQBALANCE), "audit", str(paths[1]), "--previous", str(paths[0]), "--out", str(out), "--quiet",
         "--what-if", "none", "--no-assignments"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    with (out / "group_topics.csv").open() as f:
        rows = {r["group"]: r for r in csv.DictReader(f)}
    got = rows[p.drains]
    print(json.dumps({"drain_s": got["drain_seconds"], "observed_s": round(true, 2), "basis": got["drain_basis"]}))
    assert got["drain"] == "draining", got
    assert abs(float(got["drain_seconds"]) - true) / true <= 0.20, (got, true)
    assert rows[p.stopped]["drain"] == "never" and rows[p.caught_up]["drain"] == "idle", rows
    ours = (p.drains, p.stopped, p.caught_up)
    said = {
        (d["group"], d["drain"]) for d in json.loads((out / "findings.json").read_text())["drain"] if d["group"] in ours
    }
    assert said == {(p.drains, "draining"), (p.stopped, "never")}, said
    page = (out / "report.html").read_text()
    assert '<section id="drain">' in page and f"{float(got['drain_seconds']):,.1f} s" in page
    alone = drains(load_any_snapshot(paths[1]))
    assert alone[(p.drains, p.topic)].said() == "unknown (one reading)", alone
    assert alone[(p.caught_up, p.idle_topic)].state == "idle", alone
