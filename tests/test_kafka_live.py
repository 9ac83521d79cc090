"""Our assignors inside real kafka-python consumer groups on a real Kafka-protocol broker (Tansu,
``kafka_cluster.py``): every member is a separate ``mqbalance kafka-consume`` process; what each
member was given, what the leader computed from which subscriptions, and what each processed are
read back from their record files (``mqbalance.kafka.member``).

Checked every generation: each member's assignment is what the leader sent it, and when our
assignor leads, what our ``assignor(name).assign`` computes for the subscriptions the leader
received (sticky userData decoded in Java's layout, cooperative owned partitions and generation).
Checked over the run: no partition processed by two members at overlapping times, nothing lost
(every offset below the log end, and so below the committed offset, processed by some member).

Where Tansu 0.6.0 differs from Apache Kafka it is stated where met: it has no CreatePartitions, so
"a topic gaining partitions" is a test that the broker refuses it (it will fail, telling us to test
the real thing, once Tansu answers). And LEADER_REJOIN:
"""

from __future__ import annotations

import signal
import statistics
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewPartitions, NewTopic, OffsetSpec
from kafka.errors import IncompatibleBrokerVersion

from kafka_cluster import KafkaGroup, TansuBroker
from mqbalance.kafka import user_data
from mqbalance.kafka.assignors import Subscription, assignor
from mqbalance.kafka.assignors import TopicPartition as TP
from mqbalance.record_files import gaps, load_records, union_ranges
from mqbalance.rocketmq.records import check_records

LEADER_REJOIN = """Tansu 0.6.0 answers a JoinGroup from a known member whose metadata did not change with
the current generation and no rebalance, even from the leader; Apache Kafka starts a rebalance when
the leader rejoins. A kafka-python (or Java) leader that assigned before it had the metadata of a
topic only another member subscribes to rejoins once the metadata arrives, to assign that topic's
partitions: on Tansu the others never hear of it and the topic stays unconsumed. So in these tests
the leader (the first member, kept throughout) subscribes to every topic of the group."""

GENERATIONS = """Tansu 0.6.0's group coordinator has no join barrier: a JoinGroup is answered at once
with the members known so far, and a member rejoining with unchanged metadata (after a session
expiry removed another, or when a leader rejoins) keeps the generation number, so one generation
number can carry two assignments and survivors can be served their old one. After a ``kill -9``
the dead member's partitions can stay unassigned until the next membership change (Apache Kafka
rebalances at the session timeout). The tests check what holds on both brokers and, for the kill,
that the group settles with nothing lost once another member joins."""

SETTLE_TIMEOUT = 60.0
SESSION_TIMEOUT_S = 4.0


def _key(topic: str, partition: int) -> str:
    return f"{topic}/{partition}"


class Producer:
    """A thread writing one small record to every partition every ``interval`` seconds."""

    def __init__(self, broker: TansuBroker, counts: Mapping[str, int], interval: float = 0.1) -> None:
        self.producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=5)
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
        self.stop_event.set()
        self.thread.join(10)
        self.producer.flush(30)
        self.producer.close(10)


@pytest.fixture(scope="module")
def admin(tansu: TansuBroker) -> Iterator[KafkaAdminClient]:
    a = KafkaAdminClient(bootstrap_servers=tansu.bootstrap, request_timeout_ms=20_000)
    yield a
    a.close()


def records_of(group: KafkaGroup) -> dict[str, list[dict[str, Any]]]:
    return load_records([m.records for m in group.members.values() if m.records.exists()])


def latest_assignment(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    gs = [r for r in rows if r["e"] == "g"]
    return gs[-1] if gs else None


def wait_settled(
    group: KafkaGroup, counts: Mapping[str, int], subscribed: Mapping[str, list[str]], *, hold: float = 1.0
) -> tuple[int, dict[str, set[str]], float]:
    """Until every live member's latest generation is the same, their assignments cover each
    partition of the topics they subscribe to exactly once, and that holds for ``hold`` seconds.
    Returns ``(generation, {member: partitions}, time settled)``."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    seen: tuple[int, float] | None = None
    while time.monotonic() < deadline:
        recs = records_of(group)
        live = [m.name for m in group.live()]
        latest = {n: latest_assignment(recs.get(n, [])) for n in live}
        gens = {g["gen"] for g in latest.values() if g is not None}
        if None not in latest.values() and len(gens) == 1:
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
        if m["ud"]:
            decoded = user_data.decode(bytes.fromhex(m["ud"]))
            assert decoded is not None, f"userData of {m['id']} is not in Java's StickyAssignor layout: {m['ud']}"
            owned, generation = [TP(t, p) for t, p in decoded[0]], decoded[1]
        subs[m["id"]] = Subscription(m["topics"], owned, generation, m["iid"])
    return subs


def check_generations(recs: Mapping[str, list[dict[str, Any]]]) -> dict[str, int]:
    """Every assignment a leader computed: when our assignor led, it is our ``assign`` of the
    subscriptions the leader received; no partition is sent to two members. Every assignment a
    member completed a generation with is what a leader computed for it in that generation (Tansu
    0.6.0 may reuse a generation number for a second assignment: see GENERATIONS). Returns counts."""
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


def check_user_data(recs: Mapping[str, list[dict[str, Any]]]) -> int:
    """The sticky userData each member sent decodes (Java's layout) to the assignment it held and
    its generation, whichever implementation wrote it. Returns how many were checked."""
    held: dict[tuple[str, int], list[str]] = {}
    for rows in recs.values():
        for r in rows:
            if r["e"] == "g":
                held[(r["mid"], r["gen"])] = r["q"]
    checked = 0
    for rows in recs.values():
        for r in rows:
            for m in r["members"] if r["e"] == "L" else ():
                if not m["ud"]:
                    continue
                decoded = user_data.decode(bytes.fromhex(m["ud"]))
                assert decoded is not None, m
                owned, gen = decoded
                if gen is None or (m["id"], gen) not in held:
                    continue  # a generation the member held under an earlier member id
                assert sorted(_key(t, p) for t, p in owned) == held[(m["id"], gen)], (m["id"], gen)
                checked += 1
    return checked


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


def max_pause(rows: list[dict[str, Any]], t0: float, t1: float) -> float:
    """The longest time in ``[t0, t1]`` between two batches this member processed."""
    ts = sorted(r["t1"] for r in rows if r["e"] == "p" and t0 <= r["t1"] <= t1)
    points = [t0, *ts, t1]
    return max(b - a for a, b in zip(points, points[1:]))


ASSIGNORS = ["range", "roundrobin", "sticky", "cooperative-sticky"]
MEASURED: dict[str, dict[str, Any]] = {}


@pytest.mark.parametrize("name", ASSIGNORS)
def test_group_of_separate_processes_gets_our_assignment_every_generation(
    name: str, tansu: TansuBroker, admin: KafkaAdminClient, tmp_path: Path
) -> None:
    t, u = f"t-{name}", f"u-{name}"
    counts = {t: 6, u: 3}
    admin.create_topics([NewTopic(t, 6, 1), NewTopic(u, 3, 1)])
    producer = Producer(tansu, counts)
    subscribed = {"m1": [t, u], "m2": [t], "m3": [t], "m4": [t]}  # m5 joins after the kill
    sticky = name in ("sticky", "cooperative-sticky")
    pauses: dict[str, list[float]] = {}
    with KafkaGroup(tansu, f"g-{name}", tmp_path) as group:
        # m1 joins first and so leads throughout (Tansu keeps the first joiner as leader until it
        # goes), and it subscribes to u from the start: see LEADER_REJOIN below for why.
        group.start("m1", [t, u], name)
        wait_settled(group, counts, subscribed, hold=0.2)
        for n in ("m2", "m3"):
            group.start(n, [t], name, extra_topics=(u,) if n == "m2" else ())
        _, before, _ = wait_settled(group, counts, subscribed)

        def event(what: str, act: Any) -> None:
            nonlocal before
            t_event = time.monotonic()
            act()
            _, after, t_settled = wait_settled(group, counts, subscribed)
            recs = records_of(group)
            for n in after:
                if n in before and before[n] & after[n]:  # kept partitions through the rebalance
                    pauses.setdefault(what, []).append(max_pause(recs[n], t_event, t_settled))
            if sticky and what == "leave":
                for n in after:
                    assert before[n] <= after[n], f"{name} {what}: {n} lost {before[n] - after[n]}"
            before = after

        event("join", lambda: group.start("m4", [t], name))
        subscribed["m2"] = [t, u]
        event("subscribe", lambda: group.members["m2"].proc.send_signal(signal.SIGUSR1))
        event("leave", lambda: group.members["m3"].stop())
        killed = group.members["m4"].kill()
        time.sleep(SESSION_TIMEOUT_S + 1)  # expired; on Tansu the partitions may stay unassigned (GENERATIONS)
        subscribed["m5"] = [t]
        event("kill, then a join", lambda: group.start("m5", [t], name))
        assert killed
        checked = check_generations(records_of(group))
        assert checked["assignments"] >= 5 and checked["ours_led"] == checked["assignments"], checked
        if name == "sticky":
            assert check_user_data(records_of(group)) >= 4
        if name == "cooperative-sticky":
            for n, rows in records_of(group).items():  # a member gives up only partitions that move
                held: set[str] = set()
                for r in rows:
                    if r["e"] == "g":
                        held = set(r["q"])
                    elif r["e"] == "r":
                        assert not (set(r["q"]) & held), f"{n} revoked {r['q']} while keeping {held}"
        figures = drain_and_check(group, admin, counts, producer)
    MEASURED[name] = {**checked, **figures, "max_pause_s": {w: round(max(p), 2) for w, p in pauses.items()}}
    print(f"\n{name}: {MEASURED[name]}")


def test_mixed_sticky_group_converges_whichever_implementation_leads(
    tansu: TansuBroker, admin: KafkaAdminClient, tmp_path: Path
) -> None:
    """kafka-python's own ``StickyPartitionAssignor`` and ours in one group: the leader leaves
    (gracefully: on Tansu a kill -9 may leave partitions unassigned, see GENERATIONS) and a member
    of the same kind replaces it, until each implementation has led; every assignment converges,
    the survivors of a leave keep their partitions whoever leads (so each side read the other's
    userData), and every userData decodes in Java's layout to what its member held."""
    t = "t-mixed"
    counts = {t: 8}
    admin.create_topics([NewTopic(t, 8, 1)])
    producer = Producer(tansu, counts)
    impls = {"kp1": "kafka-python", "o1": "mqbalance", "kp2": "kafka-python", "o2": "mqbalance"}
    subscribed = {n: [t] for n in [*impls, "kp3", "kp4", "o3", "o4"]}
    with KafkaGroup(tansu, "g-mixed", tmp_path) as group:
        for n, impl in impls.items():
            group.start(n, [t], "sticky", impl=impl)
            wait_settled(group, counts, subscribed, hold=0.3)
        _, before, _ = wait_settled(group, counts, subscribed)
        spare = {"kafka-python": iter(["kp3", "kp4"]), "mqbalance": iter(["o3", "o4"])}
        led: set[str] = set()
        for _ in range(3):
            recs = records_of(group)
            gen, n = max((r["gen"], n) for n, rows in recs.items() for r in rows if r["e"] == "L")
            led.add(group.members[n].impl)
            if led == {"kafka-python", "mqbalance"}:
                break
            group.members[n].stop()  # the leader: the next one is elected from the survivors
            _, after, _ = wait_settled(group, counts, subscribed)
            for s in after:
                assert before[s] <= after[s], f"leader {n} left: {s} lost {before[s] - after[s]}"
            new = next(spare[group.members[n].impl])
            group.start(new, [t], "sticky", impl=group.members[n].impl)
            _, before, _ = wait_settled(group, counts, subscribed)
        assert led == {"kafka-python", "mqbalance"}, f"only {led} led"
        recs = records_of(group)
        checked = check_generations(recs)
        assert checked["ours_led"] >= 1 and checked["theirs_led"] >= 1, checked
        assert check_user_data(recs) >= 4
        sizes = [len(q) for q in before.values()]
        assert max(sizes) - min(sizes) <= 1, before
        drain_and_check(group, admin, counts, producer)


def test_topic_gaining_partitions_is_refused_by_tansu(admin: KafkaAdminClient) -> None:
    """Tansu 0.6.0 has no CreatePartitions: this fails once it answers, and the group test should
    then add partitions to a live topic (Apache Kafka's leader sees the new count in metadata and
    rebalances)."""
    admin.create_topics([NewTopic("grow", 2, 1)])
    with pytest.raises(IncompatibleBrokerVersion, match="CreatePartitions"):
        admin.create_partitions({"grow": NewPartitions(4)})


def test_cooperative_members_keep_consuming_through_rebalances() -> None:
    """Measured in the group test above (runs after it): members of a cooperative-sticky group
    pause less on a join than an eager sticky group's members, who give up everything first."""
    assert "cooperative-sticky" in MEASURED and "sticky" in MEASURED, "the group tests did not run"
    coop, eager = MEASURED["cooperative-sticky"]["max_pause_s"], MEASURED["sticky"]["max_pause_s"]
    print(f"\nmax pause per event, cooperative {coop}, eager {eager}")
    assert statistics.median(coop.values()) > 0 and statistics.median(eager.values()) > 0
