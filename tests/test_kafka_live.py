"""Our assignors inside real kafka-python consumer groups on Apache Kafka 4.4.0
(``kafka_java_cluster.py``): every member is a separate ``mqbalance kafka-consume`` process; what
each member was given, what the leader computed from which subscriptions, and what each processed
are read back from their record files (``mqbalance.kafka.member``). Java's consumers join these
groups in ``test_java_kafka_live.py``.

Checked every generation: each member's assignment is the one the leader sent it in that
generation, and when our assignor leads, the leader's output is what our ``assignor(name).assign``
computes for the subscriptions it received (sticky userData decoded in Java's layout, cooperative
owned partitions and generation). Range and roundrobin groups also settle after each change on
exactly our ``assign`` of the live members and the subscriptions the test gave them. Checked over
the run: no partition processed by two members at overlapping times, nothing lost below the
committed offsets (for range and roundrobin, after draining, below the log end).

These tests ran on Tansu 0.6.0 (a Kafka-protocol broker in Rust) too until Apache Kafka's own broker
came into the tests; every difference they found was Tansu's (no join barrier, a generation number
reused for two assignments, no CreatePartitions, members described without their metadata), none
was ours, so Tansu left the test suite (``make bench-kafka-rebalance`` still measures on it).
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic, OffsetSpec
from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData

from kafka_cluster import KafkaGroup
from kafka_java_cluster import KafkaJavaBroker
from mqbalance.kafka import user_data
from mqbalance.kafka.assignors import Subscription, assignor
from mqbalance.kafka.assignors import TopicPartition as TP
from mqbalance.record_files import gaps, load_records, union_ranges
from mqbalance.rocketmq.records import check_records

KAFKA_PYTHON_USER_DATA = """kafka-python 3.0.12's StickyPartitionAssignor writes its userData with a 2-byte
version (0x0001) before Java's fields (previous assignment, generation), and reads only that form:
Java's StickyAssignor (and ours) cannot read its claims, and it cannot read theirs (it logs "Could
not parse member data" and ignores the claim). A mixed group still converges, each leader ignoring
the other kind's claims, as Java's assignor does with userData it cannot parse."""

pytestmark = pytest.mark.java

SETTLE_TIMEOUT = 60.0
SESSION_TIMEOUT_S = 4.0


def _key(topic: str, partition: int) -> str:
    return f"{topic}/{partition}"


class Producer:
    """A thread writing one small record to every partition every ``interval`` seconds."""

    started: list[Producer] = []

    def __init__(self, broker: KafkaJavaBroker, counts: Mapping[str, int], interval: float = 0.1) -> None:
        self.producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=5)
        Producer.started.append(self)
        self.counts, self.interval = dict(counts), interval
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        n = 0
        while not self.stop_event.wait(self.interval):
            for t, count in self.counts.items():
                for p in range(count):
                    self.producer.send(t, str(n).encode(), partition=p)
            n += 1

    def stop(self) -> None:
        if self.stop_event.is_set():
            return
        self.stop_event.set()
        self.thread.join(10)
        self.producer.flush(30)
        self.producer.close(10)


@pytest.fixture(autouse=True)
def _stop_producers() -> Iterator[None]:
    """A test that failed half-way leaves its producer running: stop it while the broker runs (a
    module's broker outlives its tests' teardown)."""
    yield
    while Producer.started:
        Producer.started.pop().stop()


@pytest.fixture(scope="module")
def broker(kafka_java: KafkaJavaBroker) -> KafkaJavaBroker:
    """Apache Kafka 4.4.0 (``kafka_java_cluster``), one per module."""
    return kafka_java


@pytest.fixture(scope="module")
def admin(broker: KafkaJavaBroker) -> Iterator[KafkaAdminClient]:
    a = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=20_000)
    yield a
    a.close()


def records_of(group: KafkaGroup) -> dict[str, list[dict[str, Any]]]:
    return load_records([m.records for m in group.members.values() if m.records.exists()])


def latest_assignment(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    gs = [r for r in rows if r["e"] == "g"]
    return gs[-1] if gs else None


def wait_settled(
    group: KafkaGroup,
    counts: Mapping[str, int],
    subscribed: Mapping[str, list[str]],
    *,
    hold: float = 1.0,
    since: float = 0.0,
) -> tuple[int, dict[str, set[str]], float]:
    """Until every live member's latest generation is the same and was completed after ``since``
    (a ``time.monotonic()``), their assignments cover each partition of the topics they subscribe
    to exactly once, and that holds for ``hold`` seconds. Returns ``(generation, {member:
    partitions}, time settled)``."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    seen: tuple[int, float] | None = None
    while time.monotonic() < deadline:
        recs = records_of(group)
        live = [m.name for m in group.live()]
        latest = {n: latest_assignment(recs.get(n, [])) for n in live}
        gens = {g["gen"] for g in latest.values() if g is not None}
        if None not in latest.values() and len(gens) == 1 and all(g["t"] > since for g in latest.values()):
            owned = {n: set(g["q"]) for n, g in latest.items() if g is not None}
            need = {_key(t, p) for n in live for t in subscribed[n] for p in range(counts[t])}
            flat = [q for qs in owned.values() for q in qs]
            if len(flat) == len(set(flat)) and set(flat) == need:
                gen = gens.pop()
                if seen is None or seen[0] != gen:
                    seen = (gen, time.monotonic())
                elif time.monotonic() - seen[1] >= hold:
                    return gen, owned, seen[1]
            else:
                seen = None
        else:
            seen = None
        time.sleep(0.2)
    raise AssertionError(f"group {group.group} did not settle within {SETTLE_TIMEOUT:g} s: {latest}")


def subscriptions_of(leader_record: Mapping[str, Any]) -> dict[str, Subscription]:
    """The subscriptions the leader received, as our assignors read them."""
    subs = {}
    for m in leader_record["members"]:
        owned: list[TP] = [TP(t, p) for t, p in m["owned"]]
        generation = m["ogen"] if m["ogen"] >= 0 else None
        decoded = user_data.decode(bytes.fromhex(m["ud"])) if m["ud"] else None
        if decoded is not None:  # a claim not in Java's layout is ignored, as Java's assignor does
            owned, generation = [TP(t, p) for t, p in decoded[0]], decoded[1]
        subs[m["id"]] = Subscription(m["topics"], owned, generation, m["iid"])
    return subs


def check_generations(recs: Mapping[str, list[dict[str, Any]]]) -> dict[str, int]:
    """Every assignment a leader computed: when our assignor led, it is our ``assign`` of the
    subscriptions the leader received; no partition is sent to two members. Every assignment a
    member completed a generation with is what a leader computed for it in that generation. Returns
    counts."""
    impl = {n: next(r for r in rows if r["e"] == "start")["impl"] for n, rows in recs.items()}
    name_of = {n: next(r for r in rows if r["e"] == "start")["assignor"] for n, rows in recs.items()}
    leads = sorted(
        ((r["gen"], r["t"], n, r) for n, rows in recs.items() for r in rows if r["e"] == "L"), key=lambda x: x[:2]
    )
    out = {"assignments": len(leads), "ours_led": 0, "theirs_led": 0, "member_assignments": 0}
    sent_by_gen: dict[int, list[dict[str, list[str]]]] = {}
    for gen, _, n, lead in leads:
        sent_by_gen.setdefault(gen, []).append(lead["out"])
        if impl[n] == "mqbalance":
            out["ours_led"] += 1
            ours = assignor(name_of[n]).assign(lead["counts"], subscriptions_of(lead))
            computed = {mid: sorted(_key(tp.topic, tp.partition) for tp in tps) for mid, tps in ours.items()}
            assert lead["out"] == computed, (
                f"generation {gen}: the leader {n} sent {lead['out']}, our assign {computed}"
            )
        else:
            out["theirs_led"] += 1
        sent = [q for qs in lead["out"].values() for q in qs]
        assert len(sent) == len(set(sent)), f"generation {gen}: a partition sent to two members: {lead['out']}"
    for n, rows in recs.items():
        for r in rows:
            if r["e"] == "g":
                options = [o[r["mid"]] for o in sent_by_gen.get(r["gen"], []) if r["mid"] in o]
                assert r["q"] in options, f"{n}, generation {r['gen']}: got {r['q']}, leaders sent {options}"
                out["member_assignments"] += 1
    return out


def check_user_data(recs: Mapping[str, list[dict[str, Any]]]) -> dict[str, int]:
    """The sticky userData each member sent, read as Java's layout: ours decodes to the assignment
    the member held and its generation; kafka-python 3.0.12's does not decode (it writes a 2-byte
    version before Java's fields, see KAFKA_PYTHON_USER_DATA). Returns counts per implementation."""
    impl = {}
    held: dict[tuple[str, int], list[str]] = {}
    for rows in recs.values():
        for r in rows:
            if r["e"] == "g":
                held[(r["mid"], r["gen"])] = r["q"]
                impl[r["mid"]] = next(x for x in rows if x["e"] == "start")["impl"]
    out = {"ours_checked": 0, "theirs_not_java": 0}
    for rows in recs.values():
        for r in rows:
            for m in r["members"] if r["e"] == "L" else ():
                if not m["ud"]:
                    continue
                decoded = user_data.decode(bytes.fromhex(m["ud"]))
                if impl.get(m["id"]) == "kafka-python":
                    assert decoded is None and m["ud"].startswith("0001"), m
                    out["theirs_not_java"] += 1
                    continue
                assert decoded is not None, m
                owned, gen = decoded
                if gen is None or (m["id"], gen) not in held:
                    continue  # a generation the member held under an earlier member id
                assert sorted(_key(t, p) for t, p in owned) == held[(m["id"], gen)], (m["id"], gen)
                out["ours_checked"] += 1
    return out


def check_no_overlap(recs: Mapping[str, list[dict[str, Any]]]) -> int:
    """No partition processed by two members at overlapping times. Returns the hand-overs seen."""
    by_q: dict[str, list[tuple[float, float, str]]] = {}
    for n, rows in recs.items():
        for r in rows:
            if r["e"] == "p":
                by_q.setdefault(r["q"], []).append((r["t0"], r["t1"], n))
    handovers = 0
    for q, spans in by_q.items():
        spans.sort()
        for (_, a1, an), (b0, _, bn) in zip(spans, spans[1:]):
            if an != bn:
                handovers += 1
                assert a1 <= b0, f"{q}: {an} processed until {a1:.3f}, {bn} from {b0:.3f}"
    return handovers


def drain_and_check(
    group: KafkaGroup, admin: KafkaAdminClient, counts: Mapping[str, int], producer: Producer
) -> dict[str, Any]:
    """Stop producing; wait until the group committed every partition's log end; stop the members;
    check the record files against the broker's log ends and the committed offsets."""
    producer.stop()
    tps = [TopicPartition(t, p) for t, n in counts.items() for p in range(n)]
    ends = {
        _key(tp.topic, tp.partition): o.offset
        for tp, o in admin.list_partition_offsets(dict.fromkeys(tps, OffsetSpec.LATEST)).items()
    }
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while True:
        committed = {
            _key(tp.topic, tp.partition): om.offset
            for tp, om in admin.list_group_offsets({group.group: None})[group.group].items()
        }
        if all(committed.get(q, -1) >= end for q, end in ends.items()):
            break
        assert time.monotonic() < deadline, f"not drained: committed {committed}, ends {ends}"
        time.sleep(0.3)
    for m in group.live():
        assert m.stop() == 0
    recs = records_of(group)
    found = check_records(recs, ends)
    assert found.ok, f"lost: {found.lost}"
    spans: dict[str, list[tuple[int, int]]] = {}
    for rows in recs.values():
        for r in rows:
            if r["e"] == "p":
                spans.setdefault(r["q"], []).append((r["a"], r["b"]))
    for q, o in committed.items():
        assert gaps(union_ranges(spans.get(q, [])), o) == [], f"{q}: committed {o} above offsets nobody processed"
    return {"handovers": check_no_overlap(recs), "messages": found.unique, "duplicates": found.duplicates}


def member_pause(rows: list[dict[str, Any]]) -> float:
    """The longest time between two batches a member processed while it was a member (from its
    first assignment to its leave): the pause a rebalance cost it (eager members give everything up
    first; cooperative ones keep what they retain)."""
    start = next((r["t"] for r in rows if r["e"] == "a"), None)
    end = next((r["t"] for r in rows if r["e"] == "leave"), None)
    if start is None or end is None:
        return 0.0
    return max_pause(rows, start, end)


def max_pause(rows: list[dict[str, Any]], t0: float, t1: float) -> float:
    """The longest time in ``[t0, t1]`` between two batches this member processed."""
    ts = sorted(r["t1"] for r in rows if r["e"] == "p" and t0 <= r["t1"] <= t1)
    points = [t0, *ts, t1]
    return max(b - a for a, b in zip(points, points[1:]))


MEASURED: dict[str, dict[str, Any]] = {}


def expected(
    name: str,
    recs: Mapping[str, list[dict[str, Any]]],
    settled: Mapping[str, set[str]],
    subscribed: Mapping[str, list[str]],
    counts: Mapping[str, int],
) -> dict[str, set[str]]:
    """What our ``assignor(name).assign`` gives the settled members (by the member ids they hold)
    for the subscriptions the test gave them: the end-to-end check, independent of the leader's
    records."""
    mids = {n: latest_assignment(recs[n])["mid"] for n in settled}  # type: ignore[index]
    ours = assignor(name).assign(dict(counts), {mids[n]: subscribed[n] for n in settled})
    return {n: {_key(tp.topic, tp.partition) for tp in ours[mids[n]]} for n in settled}


@pytest.mark.parametrize("name", ["range", "roundrobin"])
def test_group_of_separate_processes_gets_our_assignment_every_generation(
    name: str, broker: KafkaJavaBroker, admin: KafkaAdminClient, tmp_path: Path
) -> None:
    t, u = f"t-{name}", f"u-{name}"
    counts = {t: 6, u: 3}
    admin.create_topics([NewTopic(t, 6, 1), NewTopic(u, 3, 1)])
    producer = Producer(broker, counts)
    subscribed = {"m1": [t, u], "m2": [t], "m3": [t], "m4": [t]}  # m5 joins after the kill
    pauses: dict[str, list[float]] = {}
    with KafkaGroup(broker, f"g-{name}", tmp_path) as group:
        # m1 joins first and so leads throughout (the coordinator keeps a leader while it is a
        # member), and it subscribes to u from the start: m2 adds u to its subscription later.
        group.start("m1", [t, u], name)
        wait_settled(group, counts, subscribed, hold=0.2)
        for n in ("m2", "m3"):
            group.start(n, [t], name, extra_topics=(u,) if n == "m2" else ())
        _, before, _ = wait_settled(group, counts, subscribed)
        assert before == expected(name, records_of(group), before, subscribed, counts)

        def event(what: str, act: Any) -> None:
            nonlocal before
            t_event = time.monotonic()
            act()
            _, after, t_settled = wait_settled(group, counts, subscribed, since=t_event)
            recs = records_of(group)
            assert after == expected(name, recs, after, subscribed, counts), what
            for n in after:
                if n in before and before[n] & after[n]:  # kept partitions through the rebalance
                    pauses.setdefault(what, []).append(max_pause(recs[n], t_event, t_settled))
            before = after

        event("join", lambda: group.start("m4", [t], name))
        subscribed["m2"] = [t, u]
        event("subscribe", lambda: group.members["m2"].proc.send_signal(signal.SIGUSR1))
        event("leave", lambda: group.members["m3"].stop())
        killed = group.members["m4"].kill()
        time.sleep(SESSION_TIMEOUT_S + 1)  # its session expires: the broker rebalances without it
        subscribed["m5"] = [t]
        event("kill, then a join", lambda: group.start("m5", [t], name))
        assert killed
        checked = check_generations(records_of(group))
        assert checked["assignments"] >= 5 and checked["ours_led"] == checked["assignments"], checked
        figures = drain_and_check(group, admin, counts, producer)
    MEASURED[name] = {**checked, **figures, "max_pause_s": {w: round(max(p), 2) for w, p in pauses.items()}}
    print(f"\n{name}: {MEASURED[name]}")


def committed_offsets(admin: KafkaAdminClient, group: str) -> dict[str, int]:
    return {
        _key(tp.topic, tp.partition): om.offset for tp, om in admin.list_group_offsets({group: None})[group].items()
    }


def check_below_committed(recs: Mapping[str, list[dict[str, Any]]], committed: Mapping[str, int]) -> int:
    """Every offset below a partition's committed offset was processed by some member."""
    spans: dict[str, list[tuple[int, int]]] = {}
    for rows in recs.values():
        for r in rows:
            if r["e"] == "p":
                spans.setdefault(r["q"], []).append((r["a"], r["b"]))
    for q, o in committed.items():
        assert gaps(union_ranges(spans.get(q, [])), o) == [], f"{q}: committed {o} above offsets nobody processed"
    return sum(committed.values())


@pytest.mark.parametrize("kind", ["sticky", "cooperative-sticky", "mixed-sticky"])
def test_sticky_family_in_real_groups(
    kind: str, broker: KafkaJavaBroker, admin: KafkaAdminClient, tmp_path: Path
) -> None:
    """Sticky groups through a join, leaves (the leader's among them) and a ``kill -9``, checking
    what every rebalance must keep: each assignment our assignor
    computed as leader is our ``assign`` of what it received; each member's assignment is one a
    leader sent it; our userData decodes in Java's layout to what its member held, kafka-python's
    does not (KAFKA_PYTHON_USER_DATA); a cooperative member never revokes a partition it keeps; no
    partition consumed by two members at overlapping times; nothing lost below the committed
    offsets. ``mixed-sticky``: members with kafka-python's own ``StickyPartitionAssignor`` and
    ours, each kind leading in turn."""
    t = f"t-{kind}"
    admin.create_topics([NewTopic(t, 8, 1)])
    producer = Producer(broker, {t: 8})
    name = "sticky" if kind == "mixed-sticky" else kind
    impls = {"a1": "kafka-python", "b1": "mqbalance", "a2": "kafka-python"} if kind == "mixed-sticky" else {}
    impls = impls or {"a1": "mqbalance", "b1": "mqbalance", "a2": "mqbalance"}
    with KafkaGroup(broker, f"g-{kind}", tmp_path) as group:
        everyone = {n: [t] for n in ("a1", "b1", "a2", "b2", "c1", "c2", "d1")}

        def settle(since: float) -> None:
            wait_settled(group, {t: 8}, everyone, hold=0.5, since=since)

        for n, impl in impls.items():  # a1 first: it leads until it leaves
            group.start(n, [t], name, impl=impl)
            if n == "a1":
                wait_settled(group, {t: 8}, {"a1": [t]}, hold=0.2)
        settle(0.0)
        t0 = time.monotonic()
        group.start("b2", [t], name)  # a join
        settle(t0)
        # the first member (kafka-python's in the mixed group) led; now every member of its kind
        # leaves, so one of the other kind leads, and two of the first kind join under it
        first = group.members["a1"].impl
        t0 = time.monotonic()
        for m in [m for m in group.live() if m.impl == first][:2]:
            assert m.stop() == 0
        settle(t0)
        t0 = time.monotonic()
        for n in ("c1", "c2"):
            group.start(n, [t], name, impl=first)
        settle(t0)
        t0 = group.members["b2"].kill()  # kill -9: the broker rebalances at its session timeout
        settle(t0)
        t0 = time.monotonic()
        group.start("d1", [t], name)
        settle(t0)
        producer.stop()
        for m in group.live():
            assert m.stop() == 0
        recs = records_of(group)
        checked = check_generations(recs)
        assert checked["ours_led"] >= 1, checked
        if kind == "mixed-sticky":
            assert checked["theirs_led"] >= 1, checked
        if name == "sticky":
            found = check_user_data(recs)
            assert found["ours_checked"] >= 3, found
            assert (found["theirs_not_java"] > 0) == (kind == "mixed-sticky"), found
            checked.update(found)
        else:
            for n, rows in recs.items():  # a member gives up only partitions that move
                held: set[str] = set()
                for r in rows:
                    if r["e"] == "leave":
                        break
                    if r["e"] == "g":
                        held = set(r["q"])
                    elif r["e"] == "r":
                        assert not (set(r["q"]) & held), f"{n} revoked {r['q']} while keeping {held}"
        handovers = check_no_overlap(recs)
        below = check_below_committed(recs, committed_offsets(admin, group.group))
    gens = {r["gen"] for rows in recs.values() for r in rows if r["e"] == "g"}
    pauses = {n: round(member_pause(rows), 2) for n, rows in recs.items()}
    MEASURED[kind] = {**checked, "generations": len(gens), "handovers": handovers, "committed": below}
    MEASURED[kind]["max_pause_s"] = pauses
    print(f"\n{kind}: {MEASURED[kind]}")


def test_kafka_python_sticky_user_data_is_not_javas_layout() -> None:
    """KAFKA_PYTHON_USER_DATA, checked both ways (fails once kafka-python writes Java's layout)."""
    theirs = StickyAssignorUserData([("t", [3, 4])], 3).encode()
    ours = user_data.encode([("t", 3), ("t", 4)], 3)
    assert theirs == bytes.fromhex("0001") + ours
    assert user_data.decode(theirs) is None
    with pytest.raises(ValueError):
        StickyAssignorUserData.decode(ours)
