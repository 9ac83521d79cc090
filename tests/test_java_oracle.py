"""Java's answer on every generated case: Hypothesis draws RocketMQ allocation and ordering cases and
Kafka assignment cases in bulk, the harness's oracle JVMs (``java_oracle``) answer them with Apache
RocketMQ's (5.3.3 and 4.9.8) and Apache Kafka's (4.4.0) own classes, and mqbalance must agree:

* exact, errors included: the six RocketMQ strategies (both client generations), ``Collections.sort``
  of queues and client ids, Kafka's client ``range`` and ``roundrobin``, the broker's ``range``, and
  the broker's ``uniform`` for heterogeneous groups;
* the broker's ``uniform`` for homogeneous groups, exact for the jar's release: Kafka 4.1 changed
  who gets the extra partitions (``server_assign(..., kafka_version=)``; the smallest case, and
  4.0's answer, in :func:`test_uniform_since_kafka_4_1_moves_the_extra_partitions`);
* ``sticky`` / ``cooperative-sticky``: Java breaks ties through ``HashMap`` order, so the outputs are
  compared by the vectors' required properties (validity, balance, stickiness bounds), and exactly
  where the answer is unique (one member; or identical subscriptions where every assignable
  partition can stay with its valid owner).

Each test draws a batch of cases per Hypothesis example and sends the batch in one round trip:
10,000 RocketMQ allocation cases (5,000 per client generation), 2,000 orderings, 4,000 client
range/roundrobin, 3,000 sticky/cooperative-sticky, 4,000 broker-side and about 600 ZooKeeper-era
cases (Kafka 0.10.2.2's Scala assignors on a real ZooKeeper inside the oracle JVM) per run.
"""

from __future__ import annotations

import base64
import itertools
import random
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kafka_server_reference
from java_oracle import JavaOracle
from mqbalance import sort_client_ids, sort_queues
from mqbalance.exceptions import MQBalanceError
from mqbalance.kafka import TopicPartition, assignor, check_assignment, server_assign, server_assign_columns, zk_assign
from vector_cases import assignment_sets, check_allocate_case, expected_sets, kafka_subscriptions, mq

pytestmark = pytest.mark.java

#: deterministic across runs (CI), no example database, no per-example deadline (a batch is one JVM round trip)
CI = settings(
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

seeds = st.integers(min_value=0, max_value=2**32 - 1)


def _disagreements(cases: list[dict[str, Any]], check: Callable[[dict[str, Any]], None]) -> None:
    """Run ``check`` on every case; fail naming the first few cases where it fails."""
    failed = []
    for case in cases:
        try:
            check(case)
        except (AssertionError, MQBalanceError, pytest.fail.Exception) as e:  # type: ignore[attr-defined]
            failed.append(f"{case.get('id')}: {type(e).__name__}: {str(e)[:400]}\n  case: {str(case)[:800]}")
    assert not failed, f"{len(failed)} of {len(cases)} cases disagree with Java:\n" + "\n".join(failed[:5])


def _ask(oracle: JavaOracle, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    replies = oracle.ask(requests)
    bad = [r for r in replies if "badRequest" in r]
    assert not bad, f"the oracle refused requests: {bad[:3]}"
    return replies


def _compare(oracle: JavaOracle, cases: list[dict[str, Any]], check: Callable[[dict[str, Any]], None]) -> None:
    """Ask ``oracle`` every case, then ``check`` each case merged with Java's reply (its ``id`` kept)."""
    replies = _ask(oracle, cases)
    _disagreements([{**c, **r, "id": c.get("id", r.get("id"))} for c, r in zip(cases, replies)], check)


# --- RocketMQ ---

ROOMS = ["hz", "sh", "bj", ""]
TEXT = ["a", "b", "TopicTest", "é", "中", "\U0001f600", "\uff61", "\ue000", "z~", "A"]


def _room_name(rng: random.Random, base: str) -> str:
    r = rng.random()
    if r < 0.7:
        return f"{rng.choice(ROOMS[:3])}@{base}"
    if r < 0.85:
        return f"{rng.choice(ROOMS)}@{base}@x"
    return base


def _strategy(rng: random.Random, nested: bool = False) -> tuple[str, dict[str, Any]]:
    name = rng.choice(
        ["AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "CONSISTENT_HASH", "MACHINE_ROOM", "MACHINE_ROOM_NEARBY", "CONFIG"]
    )
    if nested and name in ("MACHINE_ROOM_NEARBY", "CONFIG"):
        name = "AVG"
    if name == "CONSISTENT_HASH":
        return name, ({} if rng.random() < 0.2 else {"virtualNodeCnt": rng.choice([0, 1, 2, 3, 5, 10, 16, 33, -1])})
    if name == "MACHINE_ROOM":
        return name, ({} if rng.random() < 0.1 else {"consumeridcs": rng.sample(ROOMS, rng.randint(0, 3))})
    if name == "MACHINE_ROOM_NEARBY":
        inner, params = _strategy(rng, nested=True)
        if inner == "CONSISTENT_HASH" and params.get("virtualNodeCnt") == -1:
            params = {}
        return name, {"fallback": {"strategy": inner, **params}}
    return name, {}


def rocketmq_case(seed: int) -> dict[str, Any]:
    """One allocation case: any strategy, queues and ids as a client passes them (sorted or not,
    duplicates, empty or null lists), every member's call plus non-member and empty-id probes."""
    rng = random.Random(seed)
    name, params = _strategy(rng)
    brokers = [_room_name(rng, f"broker-{rng.choice(TEXT)}{i}") for i in range(rng.randint(1, 4))]
    topics = [f"T{rng.choice(TEXT)}" for _ in range(rng.randint(1, 2))]
    queues = [
        {"topic": rng.choice(topics), "brokerName": rng.choice(brokers), "queueId": rng.randint(0, 12)}
        for _ in range(rng.choice([0, 1, 2, 3, 5, 8, 13, 20, 40]))
    ]
    ids = [_room_name(rng, f"10.0.0.{rng.randint(1, 30)}@{rng.choice(TEXT)}") for _ in range(rng.randint(0, 9))]
    if rng.random() < 0.7:  # what RebalanceImpl passes: Java-sorted lists
        queues = [
            {"topic": q.topic, "brokerName": q.broker_name, "queueId": q.queue_id} for q in sort_queues(map(mq, queues))
        ]
        ids = sort_client_ids(ids)
    mq_all: list[dict[str, Any]] | None = queues if queues or rng.random() < 0.5 else None
    cid_all: list[str] | None = ids if ids or rng.random() < 0.5 else None
    if name == "CONFIG" and rng.random() < 0.8:
        params = {"messageQueueList": queues[: rng.randint(0, len(queues))]}
    probes = [{"currentCID": c} for c in rng.sample([None, "", "10.9.9.9@nobody", "hz@stranger"], rng.randint(0, 2))]
    return {
        "op": "allocate",
        "id": f"rocketmq-{seed}",
        "strategy": name,
        "params": params,
        "consumerGroup": "cg",
        "mqAll": mq_all,
        "cidAll": cid_all,
        "probes": probes,
    }


def _allocate_against(oracle: JavaOracle, batch_seeds: list[int]) -> None:
    cases = [rocketmq_case(s) for s in batch_seeds]
    _compare(oracle, cases, check_allocate_case)


# 25 examples x 200 cases, per RocketMQ generation
ROCKETMQ_BATCH = 200


@settings(CI, max_examples=25)
@given(st.lists(seeds, min_size=ROCKETMQ_BATCH, max_size=ROCKETMQ_BATCH))
def test_rocketmq5_allocation_equals_java(oracle_rocketmq5: JavaOracle, batch: list[int]) -> None:
    _allocate_against(oracle_rocketmq5, batch)


@settings(CI, max_examples=25)
@given(st.lists(seeds, min_size=ROCKETMQ_BATCH, max_size=ROCKETMQ_BATCH))
def test_rocketmq4_allocation_equals_java(oracle_rocketmq4: JavaOracle, batch: list[int]) -> None:
    _allocate_against(oracle_rocketmq4, batch)


ORDER_CHARS = ["a", "B", "~", "é", "ÿ", "中", "\ue000", "\uff61", "\uffff", "\U00010000", "\U0001f600"]


def sort_case(seed: int) -> dict[str, Any]:
    """Queues and ids mixing BMP characters above the surrogates with supplementary ones, where
    Java's UTF-16 order and code-point order disagree; queue ids up to 100,000."""
    rng = random.Random(seed)

    def text() -> str:
        return "".join(rng.choice(ORDER_CHARS) for _ in range(rng.randint(0, 4)))

    queues = [
        {"topic": text(), "brokerName": text(), "queueId": rng.randint(0, 100_000)} for _ in range(rng.randint(0, 12))
    ]
    return {"op": "sort", "mqs": queues, "cids": [text() for _ in range(rng.randint(0, 12))]}


def _sorted_like_java(case: dict[str, Any]) -> None:
    assert sort_client_ids(case["cids"]) == case["cidsSorted"]
    assert sort_queues([mq(q) for q in case["mqs"]]) == [mq(q) for q in case["mqsSorted"]]


@settings(CI, max_examples=10)
@given(st.lists(seeds, min_size=200, max_size=200))
def test_java_ordering_of_queues_and_ids(oracle_rocketmq5: JavaOracle, batch: list[int]) -> None:
    cases = [sort_case(s) for s in batch]
    _compare(oracle_rocketmq5, cases, _sorted_like_java)


# --- Kafka, client side ---

MEMBER_IDS = ["c-1", "c-2", "consumer-3-ab", "Z", "é", "\U0001f600x", "\uff61y", "m10", "m9"]


def kafka_client_case(seed: int, name: str) -> dict[str, Any]:
    """A classic-protocol group: topics (some absent from the metadata), members with identical or
    different subscriptions, some static; for the sticky pair a prior assignment (possibly stale or
    double-claimed) as owned partitions with generations."""
    rng = random.Random(seed)
    topics = {f"t{i}": rng.randint(0, 9) for i in range(rng.randint(1, 4))}
    names = [*topics, "gone"] if rng.random() < 0.2 else list(topics)
    identical = rng.random() < 0.5
    common = rng.sample(names, rng.randint(1, len(names)))
    members = []
    for m in rng.sample(MEMBER_IDS, rng.randint(1, 6)):
        subscribed = common if identical else rng.sample(names, rng.randint(1, len(names)))
        members.append(
            {
                "member_id": m,
                "group_instance_id": f"i-{rng.choice(MEMBER_IDS)}{m}" if rng.random() < 0.3 else None,
                "topics": list(subscribed),
                "owned": None,
                "generation": None,
            }
        )
    if name in ("sticky", "cooperative-sticky") and rng.random() < 0.8:
        generation = rng.randint(1, 9)
        for t, count in topics.items():
            for p in range(count):
                if rng.random() < 0.8:
                    owner = rng.choice(members)
                    owner["owned"] = owner["owned"] or {}
                    owner["owned"].setdefault(t, []).append(p)
        for member in members:
            if member["owned"] is not None:
                stale = rng.random() < 0.15
                member["generation"] = generation - (1 if stale else 0)
    return {"op": "assign", "id": f"{name}-{seed}", "assignor": name, "topics": topics, "members": members}


def _exact_client(case: dict[str, Any]) -> None:
    got = assignor(case["assignor"]).assign(case["topics"], kafka_subscriptions(case))
    assert assignment_sets(got) == expected_sets(case["expected"])


@pytest.mark.parametrize("name", ["range", "roundrobin"])
@settings(CI, max_examples=10)
@given(batch=st.lists(seeds, min_size=200, max_size=200))
def test_kafka_range_and_roundrobin_equal_java(oracle_kafka: JavaOracle, batch: list[int], name: str) -> None:
    cases = [kafka_client_case(s, name) for s in batch]
    _compare(oracle_kafka, cases, _exact_client)


def _sticky_properties(case: dict[str, Any]) -> None:
    cooperative = case["assignor"] == "cooperative-sticky"
    subs = kafka_subscriptions(case)
    ours = assignor(case["assignor"]).assign(case["topics"], subs)
    if "expected" not in case:
        # Kafka 4.4.0 throws on a few heterogeneous groups with stale claims (a NullPointerException
        # inside AbstractStickyAssignor; e.g. seed 1252 of kafka_client_case); we must still be valid.
        assert case["exception"] == "NullPointerException", case
        report = check_assignment(case["topics"], subs, ours, cooperative=cooperative)
        assert not report.problems, report.problems[:3]
        return
    java = {m: [TopicPartition(t, p) for t, ps in per.items() for p in ps] for m, per in case["expected"].items()}
    assert set(ours) == set(java) == set(subs)
    mine = check_assignment(case["topics"], subs, ours, cooperative=cooperative)
    theirs = check_assignment(case["topics"], subs, java, cooperative=cooperative)
    assert not mine.problems, mine.problems[:3]
    if not cooperative:
        assert mine.balanced or not theirs.balanced, "Java balanced it, we did not"
    if mine.max_retainable is not None and not theirs.problems:
        assert mine.retained >= min(theirs.retained, mine.max_retainable), (mine.retained, theirs.retained)
        if not cooperative:
            assert sorted(mine.counts.values()) == sorted(theirs.counts.values())
    assignable = sum(n for t, n in case["topics"].items() if any(t in s.topics for s in subs.values()))
    unique = len(subs) == 1 or (mine.max_retainable == assignable and theirs.retained == assignable)
    if unique and not theirs.problems:
        assert assignment_sets(ours) == assignment_sets(java), "the answer is unique here"


@pytest.mark.parametrize("name", ["sticky", "cooperative-sticky"])
@settings(CI, max_examples=10)
@given(batch=st.lists(seeds, min_size=150, max_size=150))
def test_kafka_sticky_pair_matches_java_properties(oracle_kafka: JavaOracle, batch: list[int], name: str) -> None:
    cases = [kafka_client_case(s, name) for s in batch]
    _compare(oracle_kafka, cases, _sticky_properties)


# --- Kafka, the ZooKeeper-era consumer (0.10.2.2) ---

#: characters ZooKeeper accepts in a path (it refuses surrogates, U+E000..U+F8FF and U+FFF0..U+FFFF,
#: so no id that ZooKeeper registers can make UTF-16 and code-point order disagree)
ZK_CHARS = ["a", "b", "Z", "0", "9", "-", "_", "é", "中", "\uff61", "~"]


def _java_hash(s: str) -> int:
    h = 0
    for unit in s.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h


def zk_case(seed: int, name: str) -> dict[str, Any]:
    """A ZooKeeper-era group: consumers registered with stream counts per topic (some topics absent
    from /brokers/topics), as ``ZookeeperConsumerConnector`` writes them."""
    rng = random.Random(seed)
    topics = {f"t{i}": rng.randint(0, 8) for i in range(rng.randint(1, 3))}
    names = [*topics, "absent"] if rng.random() < 0.2 else list(topics)
    identical = rng.random() < 0.5
    common = {t: rng.randint(1, 3) for t in rng.sample(names, rng.randint(1, len(names)))}
    consumers = []
    for _ in range(rng.randint(1, 4)):
        host = "".join(rng.choice(ZK_CHARS) for _ in range(rng.randint(1, 4)))
        cid = f"g1_{host}-1480000{rng.randint(100000, 999999)}-{rng.randbytes(4).hex()}"
        sub = common if identical else {t: rng.randint(1, 3) for t in rng.sample(names, rng.randint(1, len(names)))}
        consumers.append({"consumer_id": cid, "subscription": dict(sub)})
    return {
        "op": "zk_assign",
        "id": f"{name}-{seed}",
        "assignor": name,
        "group": "g1",
        "topics": topics,
        "consumers": consumers,
    }


def _zk_exact(case: dict[str, Any]) -> None:
    assert "expected_owners" in case, case
    consumers = {c["consumer_id"]: c["subscription"] for c in case["consumers"]}
    got = zk_assign(case["assignor"].removeprefix("zk-"), case["topics"], consumers)
    owners: dict[str, dict[str, str]] = {}
    for thread, tps in got.items():
        for tp in tps:
            owners.setdefault(tp.topic, {})[str(tp.partition)] = thread
    assert owners == {t: o for t, o in case["expected_owners"].items() if o}


def _portable(case: dict[str, Any]) -> bool:
    """Not a roundrobin case whose partitions share a Java hash code (their order is not portable)."""
    hashes = [_java_hash(f"[{t},{p}]") for t, n in case["topics"].items() for p in range(n)]
    return case["assignor"] != "zk-roundrobin" or len(set(hashes)) == len(hashes)


@pytest.mark.parametrize("name", ["zk-range", "zk-roundrobin"])
@settings(CI, max_examples=5)
@given(batch=st.lists(seeds, min_size=60, max_size=60))
def test_zookeeper_era_assignors_equal_java(oracle_kafka_zk: JavaOracle, batch: list[int], name: str) -> None:
    cases = [c for c in (zk_case(s, name) for s in batch) if _portable(c)]
    _compare(oracle_kafka_zk, cases, _zk_exact)


def test_zookeeper_refuses_ids_that_make_utf16_order_matter(oracle_kafka_zk: JavaOracle) -> None:
    """A supplementary character (a surrogate pair in Java) cannot be in a consumer id that ZooKeeper
    registers, so the ``utf16-order-matters`` cases of ``zk_*.jsonl`` cannot happen on a real one."""
    case = zk_case(1, "zk-range")
    case["consumers"][0]["consumer_id"] = "g1_\U0001f600-1480000000000-00000000"
    (reply,) = _ask(oracle_kafka_zk, [case])
    assert reply["exception"] == "ZooKeeper refused the registration: IllegalArgumentException"
    assert "Invalid path string" in reply["error"]


# --- Kafka, broker side (KIP-848) ---


def _topic_id(rng: random.Random) -> str:
    return base64.urlsafe_b64encode(rng.randbytes(16)).decode().rstrip("=")


def kafka_server_case(seed: int, name: str) -> dict[str, Any]:
    """A consumer-protocol group as the coordinator hands it to its assignor: members in order with
    subscriptions (homogeneous or not; sometimes a topic missing from the metadata), instance ids and
    a current assignment from an earlier round (members gone, partitions added)."""
    rng = random.Random(seed)
    ids = [_topic_id(rng) for _ in range(rng.randint(1, 6))]
    topics = {t: rng.randint(1, 12) for t in ids}
    subscribable = [*ids, _topic_id(rng)] if rng.random() < 0.05 else ids
    homogeneous = rng.random() < 0.6
    common = rng.sample(subscribable, rng.randint(1, len(subscribable)))
    members = []
    for k in range(rng.randint(1, 7)):
        subscribed = common if homogeneous else rng.sample(subscribable, rng.randint(0, len(subscribable)))
        members.append(
            {
                "member_id": f"m{k}-{rng.choice(MEMBER_IDS)}",
                "instance_id": f"i{k}{rng.choice(MEMBER_IDS)}" if rng.random() < 0.3 else None,
                "rack": None,
                "subscribed_topic_ids": list(subscribed),
                "current_assignment": [],
            }
        )
    if rng.random() < 0.7:
        owners: dict[str, dict[str, list[int]]] = {m["member_id"]: {} for m in members}
        for t, count in topics.items():
            for p in range(count - (rng.randint(0, 2) if rng.random() < 0.3 else 0)):
                if rng.random() < 0.85:
                    owners[rng.choice(members)["member_id"]].setdefault(t, []).append(p)
        for m in members:
            current = [[t, rng.sample(ps, len(ps))] for t, ps in owners[m["member_id"]].items()]
            rng.shuffle(current)
            m["current_assignment"] = current
    return {
        "op": "server_assign",
        "id": f"server-{name}-{seed}",
        "assignor": name,
        "topics": topics,
        "members": members,
    }


#: The release of the oracle's Kafka jars (tests/java/pom.xml), as server_assign takes it.
ORACLE_KAFKA = "4.4"


def _server_exact(case: dict[str, Any]) -> None:
    if "error" in case:
        assert case["exception"] == "PartitionAssignorException", case["exception"]
        with pytest.raises(MQBalanceError) as info:
            server_assign(case["assignor"], case["members"], case["topics"], kafka_version=ORACLE_KAFKA)
        assert info.value.java_message == case["error"]  # type: ignore[attr-defined]
        return
    assert (
        server_assign(case["assignor"], case["members"], case["topics"], kafka_version=ORACLE_KAFKA) == case["expected"]
    )
    assert _server_columns(case) == case["expected"]


def _server_columns(case: dict[str, Any]) -> dict[str, dict[str, list[int]]]:
    """The columnar entry point's answer (one subscription row per member), as the dict API's."""
    tids, members = list(case["topics"]), case["members"]
    pos = {t: k for k, t in enumerate(tids)}
    rows = [[(pos[t], p) for t, ps in m["current_assignment"] for p in ps] for m in members]
    subs = [[pos[t] for t in m["subscribed_topic_ids"]] for m in members]
    owners = server_assign_columns(
        case["assignor"],
        tids,
        [case["topics"][t] for t in tids],
        [m["member_id"] for m in members],
        [0, *itertools.accumulate(len(s) for s in subs)],
        [t for s in subs for t in s],
        instance_ids=[m["instance_id"] for m in members],
        current_offsets=[0, *itertools.accumulate(len(r) for r in rows)],
        current_topics=[t for r in rows for t, _ in r],
        current_partitions=[p for r in rows for _, p in r],
        kafka_version=ORACLE_KAFKA,
    ).tolist()
    out: dict[str, dict[str, list[int]]] = {m["member_id"]: {} for m in members}
    k = 0
    for t in tids:
        for p in range(case["topics"][t]):
            if owners[k] >= 0:
                out[members[owners[k]]["member_id"]].setdefault(t, []).append(p)
            k += 1
    return out


def test_the_oracle_runs_the_release_compared_with(oracle_kafka: JavaOracle) -> None:
    (reply,) = oracle_kafka.ask([{"op": "version"}])
    assert reply["version"].startswith(ORACLE_KAFKA + "."), reply


@pytest.mark.parametrize("name", ["uniform", "range"])
@settings(CI, max_examples=10)
@given(batch=st.lists(seeds, min_size=200, max_size=200))
def test_kafka_server_assignors_equal_java(oracle_kafka: JavaOracle, batch: list[int], name: str) -> None:
    cases = [kafka_server_case(s, name) for s in batch]
    _compare(oracle_kafka, cases, _server_exact)


def test_uniform_since_kafka_4_1_moves_the_extra_partitions(oracle_kafka: JavaOracle) -> None:
    """The release difference on its smallest case: 2 partitions, 5 fresh members. Kafka 4.0 (and
    trunk 2024-10, the vectors) gives them to the first two members; from 4.1 a member left under
    its quota gives its extra up while more members remain than extras, so the last two get them
    (checked against the 4.0.0 to 4.4.0 jars when the rule was added; the oracle runs 4.4)."""
    topic = "6B-bDL9Oevao1Ck0M-eYoA"
    members = [{"member_id": f"m{k}", "subscribed_topic_ids": [topic]} for k in range(5)]
    (java,) = _ask(
        oracle_kafka, [{"op": "server_assign", "assignor": "uniform", "topics": {topic: 2}, "members": members}]
    )
    last_two = {"m0": {}, "m1": {}, "m2": {}, "m3": {topic: [0]}, "m4": {topic: [1]}}
    assert java["expected"] == last_two
    assert server_assign("uniform", members, {topic: 2}, kafka_version=ORACLE_KAFKA) == last_two
    assert server_assign("uniform", members, {topic: 2}, kafka_version="4.0") == {
        "m0": {topic: [0]},
        "m1": {topic: [1]},
        "m2": {},
        "m3": {},
        "m4": {},
    }
    assert kafka_server_reference.uniform(members, {topic: 2}, kafka_4_1=True) == last_two


def test_bad_requests_get_an_error_and_the_oracle_keeps_serving(
    oracle_kafka: JavaOracle, oracle_rocketmq5: JavaOracle
) -> None:
    replies = oracle_rocketmq5.ask(
        [
            {"op": "allocate", "strategy": "NOPE", "mqAll": [], "cidAll": []},
            {"op": "allocate", "strategy": "AVG"},
            {"op": "teleport"},
            {"op": "sort", "mqs": [], "cids": ["b", "a"]},
        ]
    )
    assert [r.get("badRequest", "").split(" (")[0] for r in replies[:3]] == [
        "unknown strategy 'NOPE'",
        "missing field 'mqAll'",
        "unknown op 'teleport'",
    ]
    assert replies[3]["cidsSorted"] == ["a", "b"]
    malformed, not_an_object, missing = oracle_kafka.ask_raw(
        [b"{not json", b"[1]", b'{"op": "assign", "assignor": "range"}']
    )
    assert malformed["badRequest"].startswith("malformed JSON line")
    assert not_an_object["badRequest"] == "a request must be a JSON object"
    assert missing["badRequest"] == "missing field 'topics'"
    (after,) = oracle_kafka.ask([{"op": "assign", "assignor": "nope", "topics": {}, "members": []}])
    assert "unknown assignor 'nope'" in after["badRequest"]
