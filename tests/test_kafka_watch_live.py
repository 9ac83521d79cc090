"""``mqbalance watch --bootstrap`` on the real Apache Kafka broker (``kafka_java``: 4.4.0, KRaft,
both group protocols), its members real Java ``KafkaConsumer`` processes. The watcher runs as a
subprocess; what it wrote is read back with Arrow and checked against the broker's own account (its
group coordinator's log: ``Stabilized group G generation N``, ``[GroupId G] Bumped group epoch to
N``) and the members' own (each records its member id, generation or epoch, and the partitions it
was given):

* a classic group scaled up twice (one member static: its ``group.instance.id`` recorded), one
  member leaving gracefully and one killed (``kill -9``: its session expires): joins and leaves by
  member id, the generation rows ending at the broker's last generation (the history's rebalance
  count is the broker's), the owner of every partition as the members report it; a
  consumer-protocol group (KIP-848): group epoch, member epochs, assignment;
* a restart of the watcher: a checkpoint equal to the state before, and no false event after it;
* an unchanged tick writes its tick row only (under 1 KB);
* the broker stopped: ``gaps`` rows, membership and ownership carried (nobody "left");
* the metrics: generation, state and members per group.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest

from kafka_cluster import MQBALANCE
from kafka_java_cluster import JavaMember, KafkaJavaBroker, MixedKafkaGroup
from mqbalance.history.kafka_collector import KafkaState, load_kafka_state
from mqbalance.history.schema import MARKER_FILE, TABLES, cluster_kind
from mqbalance.history.writer import read_ticks
from server_process import ServerProcess, free_port, wait_for

pytestmark = pytest.mark.java

TOPIC, PARTITIONS = "tw", 6
CLASSIC, MODERN = "gw-classic", "gw-consumer"
WAIT = 120.0  # generous: two shared cores, JVMs everywhere


def table(root: Path, name: str) -> list[dict[str, Any]]:
    files = sorted((root / name).glob("date=*/hour=*/part-*.parquet"))
    if not files:
        return []
    rows = ds.dataset(files, schema=TABLES[name], format="parquet").to_table().to_pylist()
    return sorted(rows, key=lambda r: r["tick_id"])


def records(m: JavaMember) -> list[dict[str, Any]]:
    out = []
    try:
        lines = m.records.read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            break  # a torn last line
    return out


def last_given(m: JavaMember) -> dict[str, Any] | None:
    """The member's last ``g`` record: its member id, generation (classic) or member epoch, partitions."""
    given = [r for r in records(m) if r["e"] == "g"]
    return given[-1] if given else None


def member_ids(m: JavaMember) -> set[str]:
    return {r["mid"] for r in records(m) if r["e"] == "g" and r.get("mid")}


def broker_generations(broker: KafkaJavaBroker, group: str) -> list[int]:
    """The classic generations the coordinator stabilized, from its log."""
    text = broker.log.read_text(errors="replace")
    return [int(n) for n in re.findall(rf"Stabilized group {re.escape(group)} generation (\d+)", text)]


def broker_epochs(broker: KafkaJavaBroker, group: str) -> list[int]:
    text = broker.log.read_text(errors="replace")
    return [int(n) for n in re.findall(rf"\[GroupId {re.escape(group)}\] Bumped group epoch to (\d+)", text)]


class Watcher:
    """``mqbalance watch --bootstrap`` as a subprocess (SIGTERM stops it cleanly)."""

    def __init__(self, broker: KafkaJavaBroker, out: Path, log: Path, metrics_port: int) -> None:
        argv = [str(MQBALANCE), "watch", "--bootstrap", broker.bootstrap, "--out", str(out)]
        argv += ["--interval", "0.5s", "--offsets-interval", "1s", "--metrics-port", str(metrics_port)]
        self.out, self.port = out, metrics_port
        self.server = ServerProcess("mqbalance watch --bootstrap", argv, log=log)

    def start(self) -> Watcher:
        self.server.start()
        wait_for("the watcher's first tick", self._ticked, timeout=WAIT, server=self.server)
        return self

    def _ticked(self) -> bool:
        return (self.out / MARKER_FILE).exists() and read_ticks(self.out).num_rows > 0

    def ticks(self) -> list[dict[str, Any]]:
        return read_ticks(self.out).to_pylist()

    def wait_ticks(self, n: int) -> int:
        """Wait for ``n`` more ticks; the last tick id."""
        start = self.ticks()[-1]["tick_id"]
        wait_for(f"{n} more ticks", lambda: self.ticks()[-1]["tick_id"] >= start + n, timeout=WAIT, server=self.server)
        last: int = self.ticks()[-1]["tick_id"]
        return last

    def metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10) as r:
            text: str = r.read().decode()
            return text

    def stop(self) -> None:
        assert self.server.stop(timeout=30) == 0, self.server.log_tail()


def owners(state: KafkaState, group: str) -> dict[int, str | None]:
    return {q[3]: o for q, (o, _n) in state.ownership.items() if q[0] == group and q[1] == TOPIC}


def agrees(out: Path, group: str, members: list[JavaMember], *, classic: bool) -> bool:
    """The members have settled — every partition owned, each by one of them, as they report it —
    and the watched state of ``group`` says the same: every partition's owner, the members (and,
    classic, the generation). A transient report (a member that has revoked and not yet been given
    its new partitions) is not settled: the wait goes on."""
    given = [last_given(m) for m in members]
    if any(g is None for g in given):
        return False
    expected: dict[int, str | None] = dict.fromkeys(range(PARTITIONS))
    for g in given:
        assert g is not None
        for key in g["q"]:
            topic, p = key.split("/")
            if topic == TOPIC:
                expected[int(p)] = g["mid"]
    if None in expected.values():
        return False
    state = load_kafka_state(out)
    view = state.groups.get(group)
    if view is None or owners(state, group) != expected:
        return False
    mids = {(group, g["mid"]) for g in given if g is not None}
    if {k for k in state.members if k[0] == group} != mids:
        return False
    return not classic or view.generation == max(g["gen"] for g in given if g is not None)


@pytest.fixture(scope="module")
def produced(kafka_java: KafkaJavaBroker) -> KafkaJavaBroker:
    from kafka import KafkaProducer

    kafka_java.create_topic(TOPIC, PARTITIONS)
    producer = KafkaProducer(bootstrap_servers=kafka_java.bootstrap)
    for i in range(60):
        producer.send(TOPIC, value=b"x", partition=i % PARTITIONS)
    producer.flush()
    producer.close()
    return kafka_java


def test_watch_requires_one_cluster_and_its_own_directory(produced: KafkaJavaBroker, tmp_path: Path) -> None:
    """``--namesrv`` or ``--bootstrap``, exactly one; a RocketMQ history is refused by a Kafka
    watcher (exit 2, one line)."""
    from mqbalance.history.writer import HistoryWriter

    HistoryWriter(tmp_path / "rocketmq", run_id="r").close()
    for args, words in (
        ([], "one of them"),
        (["--namesrv", "127.0.0.1:9876", "--bootstrap", produced.bootstrap], "one of them"),
        (["--bootstrap", produced.bootstrap, "--no-running-info"], "goes with --namesrv"),
        (["--bootstrap", produced.bootstrap], "holds a RocketMQ history; a Kafka watcher needs its own directory"),
        (["--bootstrap", "127.0.0.1:1"], "no Kafka broker answered"),
    ):
        got = subprocess.run(
            [str(MQBALANCE), "watch", *args, "--out", str(tmp_path / "rocketmq")],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert got.returncode == 2 and got.stderr.count("\n") == 1 and words in got.stderr, (args, got.stderr)


def test_watch_a_classic_and_a_consumer_protocol_group(produced: KafkaJavaBroker, tmp_path: Path) -> None:
    broker = produced
    out = tmp_path / "history"
    t0 = time.monotonic()
    watcher = Watcher(broker, out, tmp_path / "watch-1.log", free_port())
    second: Watcher | None = None
    with MixedKafkaGroup(broker, CLASSIC, tmp_path) as classic, MixedKafkaGroup(broker, MODERN, tmp_path) as modern:
        try:
            watcher.start()
            # classic: scale up twice, a graceful leave, a kill -9 (session expiry)
            j1 = classic.start_java("j1", [TOPIC], "range")
            n1 = modern.start_java("n1", [TOPIC], "uniform", protocol="consumer")
            wait_for("j1 alone", lambda: agrees(out, CLASSIC, [j1], classic=True), timeout=WAIT)
            j2 = classic.start_java("j2", [TOPIC], "range", instance_id="j2-static")  # a static member
            wait_for("j1 and j2", lambda: agrees(out, CLASSIC, [j1, j2], classic=True), timeout=WAIT)
            j3 = classic.start_java("j3", [TOPIC], "range")
            wait_for("j1, j2 and j3", lambda: agrees(out, CLASSIC, [j1, j2, j3], classic=True), timeout=WAIT)
            assert j3.stop() == 0
            wait_for("j3 gone gracefully", lambda: agrees(out, CLASSIC, [j1, j2], classic=True), timeout=WAIT)
            j1.kill()
            wait_for("j1's session expired", lambda: agrees(out, CLASSIC, [j2], classic=True), timeout=WAIT)
            # the consumer protocol: two members, one leaves
            n2 = modern.start_java("n2", [TOPIC], "uniform", protocol="consumer")
            wait_for("n1 and n2", lambda: agrees(out, MODERN, [n1, n2], classic=False), timeout=WAIT)
            assert n2.stop() == 0
            wait_for("n1 alone", lambda: agrees(out, MODERN, [n1], classic=False), timeout=WAIT)
            scenario_s = time.monotonic() - t0

            # what the broker says, against what the history says
            state = load_kafka_state(out)
            groups = table(out, "groups")
            gens = [r["generation"] for r in groups if r["group"] == CLASSIC and r["generation"] is not None]
            assert gens == sorted(gens) and gens, gens
            told = broker_generations(broker, CLASSIC)
            g2 = last_given(j2)
            assert g2 is not None and gens[-1] == told[-1] == g2["gen"], (gens, told, g2)
            assert set(gens) <= {0, *told}, (gens, told)  # only the broker's numbers
            epochs = [r["generation"] for r in groups if r["group"] == MODERN and r["generation"] is not None]
            assert epochs == sorted(epochs) and epochs[-1] == broker_epochs(broker, MODERN)[-1], epochs
            assert state.groups[MODERN].group_type == "consumer" and state.groups[MODERN].assignment_epoch is not None
            assert state.groups[CLASSIC].state == "Stable" and state.groups[CLASSIC].strategy == "range"
            members = table(out, "members")
            joined = {(r["group"], r["member_id"]) for r in members if r["event"] == "join"}
            left = {(r["group"], r["member_id"]) for r in members if r["event"] == "leave"}
            ids = {m: member_ids(m) for m in (j1, j2, j3, n1, n2)}
            assert joined == {(CLASSIC, i) for m in (j1, j2, j3) for i in ids[m]} | {
                (MODERN, i) for m in (n1, n2) for i in ids[m]
            }, joined
            assert left == {(CLASSIC, i) for m in (j1, j3) for i in ids[m]} | {(MODERN, i) for i in ids[n2]}, left
            assert {r["client_id"] for r in members if r["group"] == CLASSIC} == {"j1", "j2", "j3"}
            epoch_rows = [r for r in members if r["group"] == MODERN and r["member_epoch"] is not None]
            statics = {r["member_id"]: r["instance_id"] for r in members if r["instance_id"] is not None}
            assert statics == dict.fromkeys(ids[j2], "j2-static"), statics
            n1_epochs = [r["member_epoch"] for r in epoch_rows if r["member_id"] in ids[n1]]
            (n1_id,) = ids[n1]
            assert n1_epochs == sorted(n1_epochs) and n1_epochs[-1] == state.members[(MODERN, n1_id)].member_epoch
            targets = {q: t for q, t in state.targets.items() if q[0] == MODERN}
            assert targets and all(t == state.ownership[q][0] for q, t in targets.items())  # settled
            assert all(r["target_owner"] is None for r in table(out, "ownership") if r["group"] == CLASSIC)
            committed = {q: c for q, (c, _e) in state.offsets.items() if q[0] == CLASSIC}
            assert committed and all(c == 10 for c in committed.values()), committed  # all 60 records consumed
            assert cluster_kind(out) == "kafka"

            # the metrics
            text = watcher.metrics()
            assert f'mqbalance_group_generation{{group="{CLASSIC}"}} {float(gens[-1])}' in text
            assert f'mqbalance_group_state{{group="{CLASSIC}",state="Stable"}} 1.0' in text
            assert f'mqbalance_group_members{{group="{CLASSIC}"}} 1.0' in text
            assert f'mqbalance_group_assignment_epoch{{group="{MODERN}"}}' in text

            # an unchanged tick: its tick row only
            last = watcher.wait_ticks(4)
            quiet = [t for t in watcher.ticks() if t["tick_id"] > last - 4 and not t["checkpoint"]]
            assert quiet
            written = {f.name[5:17] for name in TABLES if name != "ticks" for f in (out / name).rglob("part-*")}
            busy = [
                (name, r)
                for name in ("groups", "members", "ownership", "offsets", "gaps")
                for r in table(out, name)
                if r["tick_id"] in {t["tick_id"] for t in quiet}
            ]
            assert not {f"{t['tick_id']:012d}" for t in quiet} & written, busy
            plain = {t["tick_id"] for t in watcher.ticks() if not t["checkpoint"]}
            said = re.finditer(r"tick (\d+): 0 change\(s\), ([\d,]+) bytes", watcher.server.log.read_text())
            sizes = [int(m.group(2).replace(",", "")) for m in said if int(m.group(1)) in plain]
            assert sizes and max(sizes) < 1024, sizes
            requests = sorted(t["requests"] for t in quiet)

            # a restart: the checkpoint equals the state before it, and nothing else is written
            watcher.stop()
            before = load_kafka_state(out)
            second = Watcher(broker, out, tmp_path / "watch-2.log", free_port())
            second.start()
            second.wait_ticks(4)
            runs = [t["run_id"] for t in second.ticks()]
            first_new = next(t for t in second.ticks() if t["run_id"] == runs[-1])
            assert first_new["checkpoint"]
            assert load_kafka_state(out) == before
            events = [
                r
                for name in ("groups", "members", "ownership", "offsets")
                for r in table(out, name)
                if r["tick_id"] > first_new["tick_id"]
            ]
            assert events == [], events

            # the broker stops: gaps, and nobody leaves
            stopped_at = second.ticks()[-1]["tick_id"]
            broker.stop_serving(timeout=30)
            wait_for(
                "two ticks with gaps",
                lambda: sum(1 for t in second.ticks() if t["tick_id"] > stopped_at and t["errors"]) >= 2,
                timeout=WAIT,
                server=second.server,
            )
            gaps = [r for r in table(out, "gaps") if r["tick_id"] > stopped_at]
            assert gaps and {r["request"] for r in gaps} >= {"ListGroups"}, gaps
            assert all(r["address"] == broker.bootstrap and r["error"] for r in gaps)
            later = [
                r for name in ("groups", "members", "ownership") for r in table(out, name) if r["tick_id"] > stopped_at
            ]
            assert later == [], later
            assert load_kafka_state(out).members == before.members
            # stopped while a tick waits on the unreachable broker (up to the 30 s request timeout):
            # the read is given up at once, nothing of that tick written
            last = second.ticks()[-1]["tick_id"]
            time.sleep(2.0)  # past the next slot (0.5 s): the next tick's read is under way, for 30 s
            second.stop()
            log = second.server.log_tail()
            assert f"stopped while reading tick {last + 1}: nothing written for it" in log, log
            assert second.ticks()[-1]["tick_id"] == last
        finally:
            for w in (watcher, second):
                if w is not None and w.server.alive():
                    w.server.stop(kill=True)
    print(
        f"\nwatch --bootstrap: scenario {scenario_s:.0f} s; classic generations {gens} (broker {told}); "
        f"consumer epochs {epochs}; unchanged tick {max(sizes)} bytes, {requests[len(requests) // 2]} requests"
    )
