"""Java consumers and ours in one group, on Apache Kafka 4.4.0 itself (``kafka_java_cluster.py``).

Classic protocol: Java ``KafkaConsumer`` processes (``io.mqbalance.harness.kafka.KafkaMember``,
Java's own range / roundrobin / sticky / cooperative-sticky behind a wrapper that records what it
computed) and ``mqbalance kafka-consume`` processes (our drop-in assignors) in ONE group. Whoever
leads, every assignment a leader computed is what our ``assignor(name).assign`` computes from the
subscriptions the leader received (sticky userData and owned partitions read as Java reads them),
and every member holds what its leader sent it in that generation. Each side leads at least once:
the leader is the first member to join and keeps leading while it stays; when it leaves, the first
member to rejoin leads. Who led is read from the record files: only the member the broker named
leader in its JoinGroup response runs ``assign`` (DescribeGroups has no leader field, so the
broker cannot be asked afterwards).

Consumer protocol (KIP-848): Java consumers with ``group.protocol=consumer`` and the broker's
``uniform`` or ``range``; after each join, leave and partition increase, the target assignment the
broker reports (ConsumerGroupDescribe, through Java's Admin client: kafka-python 3.0.12 does not
speak it) equals ``server_assign`` on the same members, subscriptions and topic ids. COORDINATOR_INPUTS
says which inputs cannot be read from the broker and how they are pinned.
"""

from __future__ import annotations

import itertools
import signal
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from kafka_java_cluster import GroupWatch, KafkaJavaBroker, MixedKafkaGroup
from mqbalance.kafka import server_assign, user_data
from mqbalance.kafka.assignors import Subscription, assignor, check_assignment
from mqbalance.kafka.assignors import TopicPartition as TP
from test_kafka_live import Producer, drain_and_check, records_of, wait_settled

pytestmark = pytest.mark.java

KAFKA_PYTHON_REJOIN_STALL = """Seen on Apache Kafka 4.4.0 with kafka-python 3.0.12 (not on Tansu, which does not
rebalance on these rejoins), and the cause, read in its debug log and ``join_group_async``: a
``poll(timeout_ms)`` waits for a join only as long as its own timeout and leaves a join under way to
the next call, which resumes it only while the member still asks to rejoin; a rejoin that asked
because the metadata changed (a topic entered its view: its own subscription changed, or as leader
it learned the partitions of a topic) stops asking once the leader has computed the assignment. So a
member polling every 100 ms whose join straddled a poll's end got its JoinGroup and SyncGroup answers
and never read the second: no generation completed, heartbeats stayed off, and the broker evicted it
(measured: 1 in 40 first joins on a topic just created, most subscription changes).
``mqbalance kafka-consume`` asks again while a join is under way and awaits a rejoin whole
(``python/mqbalance/kafka/member.py``); a kafka-python application should poll with a timeout above
its rebalance time while it rejoins. The mixed groups below still let a Java member lead first and
give every kafka-python member that may lead every topic of the group, as written before the cause
was known; ``test_kafka_python_member_changing_its_subscription_rejoins`` is the regression test."""

COORDINATOR_INPUTS = """What the group coordinator feeds its assignor (Kafka 4.4's TargetAssignmentBuilder),
and where the test takes each from:

* the members, in the iteration order of a ``java.util.HashMap<String, ...>`` of member ids (16
  buckets up to 12 members; bucket = ``(h ^ h >>> 16) & 15`` of ``String.hashCode``): computed from the
  ids the broker reports. Ids sharing a bucket come in insertion order (the group's own member map,
  then the member being added), which the broker does not show: for those, and only those, the test
  accepts any order, and counts how often that happened;
* each member's subscribed topic ids: ConsumerGroupDescribe carries them but Java's Admin client does
  not expose them; the test gave every member its subscription, and uses that;
* each member's current assignment: its previous *target* assignment, read from the broker's
  description before the event (partitions of a topic come in a ``HashSet<Integer>`` of 16 or more
  buckets: ascending for the small topics used here);
* topic ids and partition counts: from the broker (DescribeTopics);
* racks: none (no ``client.rack``; neither assignor reads racks in 4.4);
* instance ids: none (dynamic members)."""

#: the broker's release, as ``server_assign`` takes it (tests/java/pom.xml pins the jars)
BROKER_RELEASE = "4.4"

SETTLE_TIMEOUT = 90.0


@pytest.fixture(autouse=True)
def _stop_producers(kafka_java: KafkaJavaBroker) -> Iterator[None]:
    """A test that failed half-way leaves its producer running: stop it while the broker runs."""
    yield
    while Producer.started:
        Producer.started.pop().stop()


def _key(topic: str, partition: int) -> str:
    return f"{topic}/{partition}"


def _tp(key: str) -> TP:
    topic, _, partition = key.rpartition("/")
    return TP(topic, int(partition))


def subscriptions_as_java_reads_them(name: str, lead: Mapping[str, Any]) -> dict[str, Subscription]:
    """The subscriptions a leader received, as Java's assignor ``name`` reads them: the eager sticky
    assignor takes the previous assignment and generation from userData in its layout when there is
    one, else the subscription's owned partitions and generation; cooperative-sticky takes the owned
    partitions, and the generation from the subscription (or its 4-byte userData when the
    subscription has none)."""
    subs = {}
    for m in lead["members"]:
        owned = [TP(t, p) for t, p in m["owned"]]
        generation = m["ogen"] if m["ogen"] >= 0 else None
        ud = bytes.fromhex(m["ud"])
        if name == "sticky" and ud:
            decoded = user_data.decode(ud)
            if decoded is not None:
                owned, generation = [TP(t, p) for t, p in decoded[0]], decoded[1]
        elif name == "cooperative-sticky" and generation is None and len(ud) == 4:
            generation = int.from_bytes(ud, "big", signed=True)
        subs[m["id"]] = Subscription(m["topics"], owned, generation, m["iid"])
    return subs


def check_every_generation(name: str, recs: Mapping[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Every assignment a leader computed, Java's or ours, from the subscriptions it received:

    * range and roundrobin: exactly our ``assign`` (both are Java-exact);
    * sticky and cooperative-sticky: ours leading, exactly our ``assign`` (our drop-in read the Java
      members' claims as Java does); Java leading, Kafka's invariants (``check_assignment``: valid,
      complete and balanced, or for cooperative-sticky safe, and for sticky every retainable
      partition retained when the subscriptions are identical), and how often it is also exactly
      ours is counted (our sticky
      promises Kafka's invariants with its own tie-breaks, not Java's choice among valid answers).

    Every member's assignment is what its leader sent it in that generation. Returns counts: who
    led how often, how often a leader read the other side's claims (owned partitions / sticky
    userData), and for sticky kinds how often Java's answer was exactly ours."""
    impl = {n: next(r for r in rows if r["e"] == "start")["impl"] for n, rows in recs.items()}
    side_of_member: dict[str, str] = {}
    for n, rows in recs.items():
        for r in rows:
            if r["e"] == "g":
                side_of_member[r["mid"]] = impl[n]
    out: dict[str, Any] = {"java_led": 0, "ours_led": 0, "java_read_our_claims": 0, "ours_read_java_claims": 0}
    out |= {"member_generations": 0, "java_equals_ours": 0, "java_differs": []}
    sent: dict[int, dict[str, list[str]]] = {}
    for n, rows in recs.items():
        for lead in (r for r in rows if r["e"] == "L"):
            side = "java" if impl[n] == "java" else "ours"
            out[f"{side}_led"] += 1
            subs = subscriptions_as_java_reads_them(name, lead)
            ours = assignor(name).assign(lead["counts"], subs)
            computed = {mid: sorted(_key(tp.topic, tp.partition) for tp in tps) for mid, tps in ours.items()}
            where = f"generation {lead['gen']}: {n} ({impl[n]}) sent {lead['out']}; ours {computed}"
            if side == "ours" or name in ("range", "roundrobin"):
                assert lead["out"] == computed, where
            else:
                given = {mid: [_tp(q) for q in qs] for mid, qs in lead["out"].items()}
                report = check_assignment(lead["counts"], subs, given, cooperative=name == "cooperative-sticky")
                # cooperative round 1 leaves the partitions that move unassigned: valid and safe, not balanced
                assert not report.problems and (report.balanced or name == "cooperative-sticky"), f"{where}: {report}"
                if report.max_retainable is not None and name == "sticky":
                    assert report.retained == report.max_retainable, f"{where}: {report}"
                if lead["out"] == computed:
                    out["java_equals_ours"] += 1
                else:
                    out["java_differs"].append(lead["gen"])
            other = "mqbalance" if side == "java" else "java"
            if any(side_of_member.get(mid) == other and s.owned_partitions for mid, s in subs.items()):
                out["java_read_our_claims" if side == "java" else "ours_read_java_claims"] += 1
            assert lead["gen"] not in sent, f"two leaders in generation {lead['gen']}"
            sent[lead["gen"]] = lead["out"]
    for n, rows in recs.items():
        for r in (r for r in rows if r["e"] == "g"):
            assert r["gen"] in sent, f"{n} completed generation {r['gen']}, which no leader recorded"
            assert r["q"] == sent[r["gen"]][r["mid"]], f"{n}, generation {r['gen']}: got {r['q']}"
            out["member_generations"] += 1
    return out


MEASURED: dict[str, dict[str, Any]] = {}


@pytest.mark.parametrize("name", ["range", "roundrobin", "sticky", "cooperative-sticky"])
def test_java_and_our_consumers_share_a_classic_group(name: str, kafka_java: KafkaJavaBroker, tmp_path: Path) -> None:
    """j1 (Java) joins first and leads while our p1, p2 and Java's j2 join; then both Java members
    leave, so one of ours leads while Java's j3 joins and, holding partitions, is joined by our p3
    (check_every_generation). Range and roundrobin: each settled state is also our ``assign`` of the
    live members. Then nothing is lost below the log end and no partition is processed by two
    members at overlapping times."""
    t, u = f"c-{name}", f"d-{name}"
    counts = {t: 10, u: 3}
    kafka_java.create_topic(t, 10)
    kafka_java.create_topic(u, 3)
    producer = Producer(kafka_java, counts)  # type: ignore[arg-type]  # only its bootstrap is read
    subscribed: dict[str, list[str]] = {}
    t_start = time.monotonic()
    with MixedKafkaGroup(kafka_java, f"classic-{name}", tmp_path) as group:

        def join(n: str, topics: list[str]) -> None:
            subscribed[n] = topics
            if n.startswith("j"):
                group.start_java(n, topics, name)
            else:
                group.start(n, topics, name)

        def settle() -> dict[str, set[str]]:
            _, owned, _ = wait_settled(group, counts, {n: subscribed[n] for n in subscribed}, hold=1.0)
            if name in ("range", "roundrobin"):  # history-free: the settled state is our assign of the members
                recs = records_of(group)
                mids = {n: next(r for r in reversed(recs[n]) if r["e"] == "g")["mid"] for n in owned}
                ours = assignor(name).assign(dict(counts), {mids[n]: subscribed[n] for n in owned})
                assert owned == {n: {_key(tp.topic, tp.partition) for tp in ours[mids[n]]} for n in owned}
            return owned

        # A kafka-python leader must subscribe to every topic of the group (KAFKA_PYTHON_REJOIN_STALL), so
        # only Java's j2 and our p3 subscribe to t alone.
        join("j1", [t, u])
        settle()
        join("p1", [t, u])
        settle()
        join("j2", [t])
        join("p2", [t, u])
        settle()
        for n in ("j1", "j2"):  # Java's side leaves: ours leads from here on
            assert group.members[n].stop() == 0
            del subscribed[n]
            settle()
        join("j3", [t, u])
        settle()
        join("p3", [t])
        settle()
        checked = check_every_generation(name, records_of(group))
        assert checked["java_led"] >= 2 and checked["ours_led"] >= 2, checked
        if name in ("sticky", "cooperative-sticky"):  # claims read both ways
            assert checked["java_read_our_claims"] >= 1 and checked["ours_read_java_claims"] >= 1, checked
        figures = drain_and_check(group, kafka_java.admin(), counts, producer)
    MEASURED[name] = {**checked, **figures, "seconds": round(time.monotonic() - t_start, 1)}
    print(f"\n{name}: {MEASURED[name]}")


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units), as a signed 32-bit int.

    >>> java_string_hash("a"), java_string_hash("hello")
    (97, 99162322)
    """
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def hash_map_orders(keys: Sequence[str]) -> list[list[str]]:
    """Every iteration order a ``java.util.HashMap<String, ?>`` of ``keys`` (up to 12: 16 buckets)
    can have: buckets ascending; keys sharing a bucket in insertion order, which is not known here,
    so every order of those.

    >>> hash_map_orders(["b", "a"])
    [['a', 'b']]
    """
    assert len(keys) <= 12, "more than 12 keys resize the table: not modelled"
    buckets: dict[int, list[str]] = {}
    for k in keys:
        h = java_string_hash(k) & 0xFFFFFFFF
        buckets.setdefault((h ^ (h >> 16)) & 15, []).append(k)
    groups = [buckets[b] for b in sorted(buckets)]
    return [
        [k for group in choice for k in group]
        for choice in itertools.product(*(itertools.permutations(g) for g in groups))
    ]


def wait_stable(watch: GroupWatch, members: int, after_epoch: int) -> dict[str, Any]:
    """The broker's description once the group is Stable with ``members`` members, at a group
    epoch above ``after_epoch`` whose target assignment is computed, held for a second."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    seen: tuple[int, float] | None = None
    d: dict[str, Any] | None = None
    while time.monotonic() < deadline:
        d = watch.latest()
        ok = (
            d is not None
            and "error" not in d
            and d["state"].upper() == "STABLE"
            and len(d["members"]) == members
            and d["group_epoch"] > after_epoch
            and d["target_epoch"] == d["group_epoch"]
            and all(m["epoch"] == d["group_epoch"] or m["epoch"] == d["target_epoch"] for m in d["members"])
        )
        if ok:
            assert d is not None
            if seen is None or seen[0] != d["group_epoch"]:
                seen = (d["group_epoch"], time.monotonic())
            elif time.monotonic() - seen[1] >= 1.0:
                return d
        else:
            seen = None
        time.sleep(0.2)
    raise AssertionError(f"the group did not become stable with {members} members above epoch {after_epoch}: {d}")


@pytest.mark.parametrize("remote", ["uniform", "range"])
def test_consumer_protocol_target_assignment_is_server_assign(
    remote: str, kafka_java: KafkaJavaBroker, tmp_path: Path
) -> None:
    """Java consumers (``group.protocol=consumer``, ``group.remote.assignor``) join one by one, a
    topic gains partitions, one leaves: after each event the broker's target assignment is
    ``server_assign(remote, ..., kafka_version=BROKER_RELEASE)`` of the members, subscriptions and
    topic ids (COORDINATOR_INPUTS). The partition counts never divide evenly among the members, so
    who gets the extra partitions (which Kafka 4.1 changed) is checked at every step."""
    t = f"k-{remote}"
    kafka_java.create_topic(t, 7)
    group_id = f"kip848-{remote}"
    events: list[dict[str, Any]] = []
    with (
        MixedKafkaGroup(kafka_java, group_id, tmp_path) as group,
        GroupWatch(kafka_java, group_id, tmp_path, [t]) as watch,
    ):
        previous: dict[str, Any] = {"group_epoch": 0, "members": []}

        def check(what: str, act: Any) -> None:
            nonlocal previous
            t0 = time.monotonic()
            act()
            live = len(group.live())
            d = wait_stable(watch, live, previous["group_epoch"])
            topic_ids = {name: v["id"] for name, v in d["topics"].items()}
            counts = {v["id"]: v["partitions"] for v in d["topics"].values()}
            before = {m["id"]: m.get("target", {}) for m in previous["members"]}
            by_id = {m["id"]: m for m in d["members"]}
            target = {
                mid: {topic_ids[tn]: ps for tn, ps in m.get("target", {}).items() if ps} for mid, m in by_id.items()
            }

            def ours(order: Sequence[str]) -> dict[str, dict[str, list[int]]]:
                members = [
                    {
                        "member_id": mid,
                        "subscribed_topic_ids": [topic_ids[t]],
                        "current_assignment": [[topic_ids[tn], ps] for tn, ps in before.get(mid, {}).items() if ps],
                    }
                    for mid in order
                ]
                return {
                    mid: {tid: ps for tid, ps in a.items() if ps}
                    for mid, a in server_assign(remote, members, counts, kafka_version=BROKER_RELEASE).items()
                }

            orders = hash_map_orders(list(by_id))
            assert any(ours(order) == target for order in orders), (
                f"{what}: the broker's target {target} is server_assign({remote!r}) in none of the "
                f"{len(orders)} member orders a HashMap of these ids can have; previous target {before}"
            )
            # how discriminating the check was: of all orders of these members, how many give the broker's answer
            every = list(itertools.permutations(by_id))
            agreeing = sum(ours(o) == target for o in every)
            events.append(
                {
                    "event": what,
                    "group_epoch": d["group_epoch"],
                    "epochs_advanced": d["group_epoch"] - previous["group_epoch"],
                    "orders_tried": len(orders),
                    "orders_agreeing": f"{agreeing}/{len(every)}",
                    "seconds": round(time.monotonic() - t0, 1),
                }
            )
            previous = d

        for n in ("c1", "c2", "c3"):
            check(f"join {n}", lambda n=n: group.start_java(n, [t], remote, protocol="consumer"))
        check("partitions 7 -> 13", lambda: kafka_java.add_partitions(t, 13))
        check("join c4", lambda: group.start_java("c4", [t], remote, protocol="consumer"))
        check("leave c2", lambda: group.members["c2"].stop())
        for m in group.live():
            assert m.stop() == 0
    MEASURED[f"consumer-{remote}"] = {"events": events}
    print(f"\nconsumer protocol, {remote}: {events}")


def test_kafka_python_member_changing_its_subscription_rejoins(kafka_java: KafkaJavaBroker, tmp_path: Path) -> None:
    """KAFKA_PYTHON_REJOIN_STALL, the regression test: our member p2 adds a topic to its
    subscription (SIGUSR1); the broker rebalances and p2 completes the new generation with both
    topics (it stalled out of the group before ``kafka-consume`` awaited its rejoin whole): j1 (range,
    leading) and p2 then hold every partition once, as range splits them."""
    t, u = "stall-t", "stall-u"
    kafka_java.create_topic(t, 4)
    kafka_java.create_topic(u, 2)
    counts = {t: 4, u: 2}
    with MixedKafkaGroup(kafka_java, "stall", tmp_path) as group:
        group.start_java("j1", [t, u], "range")
        wait_settled(group, counts, {"j1": [t, u]}, hold=0.2)
        group.start("p2", [t], "range", extra_topics=(u,))
        wait_settled(group, counts, {"j1": [t, u], "p2": [t]})
        changed = time.monotonic()
        group.members["p2"].proc.send_signal(signal.SIGUSR1)
        # settled with p2 holding a part of u: it completed a generation with its new subscription
        _, owned, _ = wait_settled(group, counts, {"j1": [t, u], "p2": [t, u]}, since=changed)
        assert group.members["p2"].alive()
        assert owned["p2"] & {f"{u}/0", f"{u}/1"}, owned  # range gives each member one partition of u
