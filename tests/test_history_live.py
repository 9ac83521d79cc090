"""End to end: a real name server and broker (``rocketmq_cluster.py``), real ``mqbalance rocketmq-consume``
processes, the real ``mqbalance watch`` process, then ``mqbalance history`` on Spark (local). The
test plants, with times it records itself: a member restarted again and again (flapping), a member
killed with ``kill -9``, a member whose processing blocks (STALL while lag grows), a group whose
only member is killed (STOP), a group whose committed offset is reset backwards (REWIND), and a
second process started with a client id in use (a duplicated id: the Rust broker keeps one
connection per id, so the two processes take it from each other and the id alternates between
their addresses). The report must show each, within one watch interval plus the broker's own delay
in dropping a dead connection."""

from __future__ import annotations

import datetime as dt
import json
import signal
import subprocess
import threading
import time
from pathlib import Path

import pyarrow.csv as pacsv

from kafka_cluster import MQBALANCE
from mqbalance.exceptions import MQBalanceError, RemotingError
from mqbalance.history.writer import read_ticks
from mqbalance.record_files import load_records
from mqbalance.remoting import BrokerClient
from rocketmq_cluster import RocketMQCluster

TOPIC = "TopicE2E"
INTERVAL = 1.0


def consume(cluster: RocketMQCluster, group: str, client_id: str, log: object, *extra: str) -> subprocess.Popen[bytes]:
    cmd = [str(MQBALANCE), "rocketmq-consume", "--namesrv", cluster.namesrv_addr, "--group", group, "--topic", TOPIC,
           "--client-id", client_id, "--record", "/dev/null", "--from", "first", "--persist-interval-ms", "500",
           "--rebalance-interval-ms", "1000", "--heartbeat-interval-ms", "1000", *extra]  # fmt: skip
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)  # type: ignore[arg-type]


def wait_listed(admin: BrokerClient, group: str, client_id: str, listed: bool, timeout: float = 60.0) -> float:
    """Wait until the broker lists (or no longer lists) ``client_id`` in ``group``; the seconds it took.
    Planting by what the broker reports, not by fixed sleeps, keeps the test true on a loaded machine
    (a ``consume`` process may take seconds to start there)."""
    started = time.monotonic()
    while (client_id in admin.consumer_ids(group)) != listed:
        assert time.monotonic() - started < timeout, f"{client_id} {'never joined' if listed else 'never left'} {group}"
        time.sleep(0.1)
    return time.monotonic() - started


def wait_ticks(history: Path, n: int, timeout: float = 60.0) -> None:
    """Wait until the watcher has recorded ``n`` more ticks: what was planted has been read at least
    ``n - 1`` whole times, however slow the machine."""

    def ticks() -> int:
        try:
            return read_ticks(history).num_rows
        except MQBalanceError:  # the watcher has not made its history yet
            return 0

    target = ticks() + n
    started = time.monotonic()
    while ticks() < target:
        assert time.monotonic() - started < timeout, f"the watcher recorded fewer than {n} ticks in {timeout} s"
        time.sleep(0.1)


def longest_tick_gap(history: Path) -> dt.timedelta:
    """The longest time between two consecutive ticks of the watcher, as it recorded them: how late a
    change can be seen, measured on this run (one ``--interval`` on a quiet machine, more on a busy one)."""
    ts = sorted(read_ticks(history).column("ts").to_pylist())
    return max((b - a for a, b in zip(ts, ts[1:])), default=dt.timedelta(seconds=INTERVAL))


def run_history(history: Path, out: Path) -> None:
    """``mqbalance history HISTORY --out OUT --window 2s``; fails the test with its stderr."""
    got = subprocess.run(
        [str(MQBALANCE), "history", str(history), "--out", str(out), "--window", "2s", "--quiet"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert got.returncode == 0, got.stderr


def test_history_reports_what_was_planted_on_a_live_cluster(rocketmq: RocketMQCluster, tmp_path: Path) -> None:
    broker = rocketmq.brokers[0]
    rocketmq.create_topic(TOPIC, {"broker-a": 2})
    stop_producing = threading.Event()
    sent, refused = [0], []  # STOP needs lag: messages still coming after its member is killed

    def produce() -> None:
        with BrokerClient(broker.addr, timeout=20.0) as p:  # a busy machine: generous
            while not stop_producing.wait(0.05):
                for q in range(2):
                    try:
                        p.send(TOPIC, q, b"m")
                        sent[0] += 1
                    except RemotingError as e:  # a busy broker's flow control, a timeout: send on
                        refused.append(str(e))

    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    log = (tmp_path / "procs.log").open("ab")
    history = tmp_path / "history"
    watch = subprocess.Popen(
        [
            str(MQBALANCE),
            "watch",
            "--namesrv",
            rocketmq.namesrv_addr,
            "--out",
            str(history),
            "--interval",
            "1s",
            "--offsets-interval",
            "1s",
            "--no-running-info",
            "--quiet",
        ],  # fmt: skip
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    procs: list[subprocess.Popen[bytes]] = []
    try:
        procs.append(consume(rocketmq, "cg-live", "live-a", log))
        procs.append(consume(rocketmq, "cg-stall", "stall-s", log, "--work-ms", "600000"))
        procs.append(stopper := consume(rocketmq, "cg-stop", "stop-x", log))
        procs.append(rewinder := consume(rocketmq, "cg-rewind", "rewind-r", log))
        killed = consume(rocketmq, "cg-live", "kill-k", log)
        procs.append(killed)
        procs.append(consume(rocketmq, "cg-dup", "dup-d", log))
        with BrokerClient(broker.addr) as admin:
            members = [("cg-live", "live-a"), ("cg-stall", "stall-s"), ("cg-stop", "stop-x")]
            members += [("cg-rewind", "rewind-r"), ("cg-live", "kill-k"), ("cg-dup", "dup-d")]
            for group, client_id in members:
                wait_listed(admin, group, client_id, True)
        wait_ticks(history, 3)  # the watcher has read them all as members, and their first offsets
        dup_at, dup_mono = dt.datetime.now(dt.UTC), time.monotonic()  # a second process with the same client id
        procs.append(consume(rocketmq, "cg-dup", "dup-d", log, "--record", str(tmp_path / "dup.jsonl")))
        kill_at = dt.datetime.now(dt.UTC)
        killed.send_signal(signal.SIGKILL)
        with BrokerClient(broker.addr) as admin:
            for _ in range(4):  # flapping: listed for two of the watcher's ticks, then gone for three
                flap = consume(rocketmq, "cg-live", "flap-f", log)
                wait_listed(admin, "cg-live", "flap-f", True)
                wait_ticks(history, 2)
                flap.send_signal(signal.SIGTERM)
                flap.wait(20)
                wait_listed(admin, "cg-live", "flap-f", False)
                wait_ticks(history, 3)
        stopper.send_signal(signal.SIGKILL)
        rewinder.send_signal(signal.SIGKILL)
        sent_at_kill = sent[0]
        # Burrow's window is the last 10 readings: all of them after the kills (no consumer left to
        # catch up to lag 0 in one), with the reset a few readings before the end
        wait_ticks(history, 10)
        with BrokerClient(broker.addr) as admin:
            for q in range(2):
                admin.reset_offset("cg-rewind", TOPIC, q, 1)
        wait_ticks(history, 3)
    finally:
        watch.send_signal(signal.SIGTERM)
        watch.wait(30)
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(10)
        stop_producing.set()
        producer.join(30)
        log.close()
    assert sent[0] > sent_at_kill, f"nothing sent after the kills: {refused[-3:]}"
    out = tmp_path / "report"
    run_history(history, out)
    late = longest_tick_gap(history) + dt.timedelta(seconds=2)  # + the broker's delay in dropping a connection
    flapping = pacsv.read_csv(out / "flapping_clients.csv").to_pylist()
    assert [(f["group"], f["client_id"]) for f in flapping] == [("cg-live", "flap-f")] and flapping[0]["cycles"] >= 3
    episodes = pacsv.read_csv(out / "episodes.csv").to_pylist()
    left_k = [e for e in episodes if e["group"] == "cg-live" and "kill-k" in e["left"]]
    assert len(left_k) == 1
    seen = dt.datetime.fromisoformat(str(left_k[0]["start"]))
    assert dt.timedelta(0) <= seen - kill_at <= late, (seen, kill_at, late)
    health = {(h["group"], h["queue_id"]): h["status"] for h in pacsv.read_csv(out / "health.csv").to_pylist()}
    assert {health[("cg-stall", q)] for q in range(2)} == {"STALL"}, health
    assert {health[("cg-stop", q)] for q in range(2)} == {"STOP"}, health
    assert {health[("cg-rewind", q)] for q in range(2)} == {"REWIND"}, health
    dups = pacsv.read_csv(out / "duplicate_ids.csv").to_pylist()
    # one id, duplicated; on a busy machine a tick can see only one of its two connections (one
    # reconnecting), and the duplication is then reported in two stretches: the first one counts
    assert {(d["group"], d["client_id"]) for d in dups} == {("cg-dup", "dup-d")}, dups
    seen = min(dt.datetime.fromisoformat(str(d["start"])) for d in dups)
    # the second process heartbeated before its first rebalance or duplicate record (on a busy
    # machine its start-up alone can take longer than a tick): seen within a tick gap of that
    after_heartbeat = min(r["t"] for r in load_records([tmp_path / "dup.jsonl"])["dup"] if r["e"] in ("a", "rb", "dup"))
    heartbeated = dup_at + dt.timedelta(seconds=after_heartbeat - dup_mono)
    assert dt.timedelta(0) <= seen - dup_at and seen - heartbeated <= late, (seen, dup_at, heartbeated, late)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["flapping_clients"] == 1
