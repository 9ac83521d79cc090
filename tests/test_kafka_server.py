"""Broker-side (KIP-848) `uniform` and `range`: every golden vector exact (Kafka's own Java classes),
the columnar entry point equal to the dict one, the invariants under random groups, bad input."""

from __future__ import annotations

import base64
import random
from collections import Counter
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kafka_server_reference
from mqbalance.exceptions import InvalidInputError, PartitionAssignorError, UnknownStrategyError
from mqbalance.kafka import ServerMember, server_assign, server_assign_columns
from vector_cases import load_vectors

CASES = load_vectors("kafka/server_uniform.jsonl.gz") + load_vectors("kafka/server_range.jsonl.gz")
#: The vectors' Kafka rules: trunk of 2024-10, which the 4.0.0 jars compute too (their README).
VECTORS_RELEASE = "4.0"


def test_vectors_exact() -> None:
    wrong = []
    for case in CASES:
        if "error" in case:
            with pytest.raises(PartitionAssignorError) as err:
                server_assign(case["assignor"], case["members"], case["topics"], kafka_version=VECTORS_RELEASE)
            assert err.value.java_message == case["error"]
            continue
        got = server_assign(case["assignor"], case["members"], case["topics"], kafka_version=VECTORS_RELEASE)
        if got != case["expected"]:
            wrong.append(case["id"])
    assert len(CASES) == 694
    assert sum("tree-bin" in c["tags"] for c in CASES) == 80  # Java HashMap tree bins, both assignors
    assert wrong == []


def _columns(case: dict[str, Any]) -> dict[str, Any]:
    topic_ids = list(case["topics"])
    for m in case["members"]:  # ids without metadata cannot be columns; those cases are skipped
        assert all(t in case["topics"] for t in m["subscribed_topic_ids"])
    pos = {t: k for k, t in enumerate(topic_ids)}
    members = case["members"]
    sub_off = np.cumsum([0] + [len(m["subscribed_topic_ids"]) for m in members])
    subs = [pos[t] for m in members for t in m["subscribed_topic_ids"]]
    rows = [[(pos.get(t, -1), p) for t, ps in m["current_assignment"] for p in ps if t in pos] for m in members]
    return {
        "topic_ids": topic_ids,
        "partition_counts": [case["topics"][t] for t in topic_ids],
        "member_ids": [m["member_id"] for m in members],
        "subscription_offsets": sub_off,
        "subscription_topics": subs,
        "instance_ids": [m["instance_id"] for m in members],
        "current_offsets": np.cumsum([0] + [len(r) for r in rows]),
        "current_topics": [t for r in rows for t, _ in r],
        "current_partitions": [p for r in rows for _, p in r],
    }


def _from_owners(case: dict[str, Any], owners: np.ndarray) -> dict[str, dict[str, list[int]]]:
    out: dict[str, dict[str, list[int]]] = {m["member_id"]: {} for m in case["members"]}
    ids = [m["member_id"] for m in case["members"]]
    k = 0
    for t, n in case["topics"].items():
        for p in range(n):
            if owners[k] >= 0:
                out[ids[owners[k]]].setdefault(t, []).append(p)
            k += 1
    return out


def test_columns_equal_dict_api_on_the_vectors() -> None:
    checked = 0
    for case in CASES:
        stale = any(t not in case["topics"] for m in case["members"] for t, _ in m["current_assignment"])
        if "error" in case or stale:
            continue
        owners = server_assign_columns(case["assignor"], **_columns(case), kafka_version=VECTORS_RELEASE)
        assert owners.dtype == np.int32
        assert _from_owners(case, owners) == case["expected"], case["id"]
        checked += 1
    assert checked > 500


def _uuid(rng: random.Random) -> str:
    return base64.urlsafe_b64encode(rng.getrandbits(128).to_bytes(16, "big")).decode().rstrip("=")


@st.composite
def groups(draw: st.DrawFn) -> tuple[list[dict[str, Any]], dict[str, int], bool]:
    rng = random.Random(draw(st.integers(0, 2**32)))
    topics = {_uuid(rng): draw(st.integers(0, 12)) for _ in range(draw(st.integers(1, 6)))}
    tids = list(topics)
    homogeneous = draw(st.booleans())
    n = draw(st.integers(1, 9))
    members = []
    owned: set[tuple[str, int]] = set()
    for i in range(n):
        subs = tids[:] if homogeneous else rng.sample(tids, rng.randint(0, len(tids)))
        rng.shuffle(subs)
        cur: dict[str, list[int]] = {}
        for t in tids:
            for p in range(topics[t]):
                if (t, p) not in owned and rng.random() < 0.3:
                    owned.add((t, p))
                    cur.setdefault(t, []).append(p)
        members.append(
            {
                "member_id": f"m{rng.randrange(100)}-{i}",
                "instance_id": rng.choice([None, f"i{rng.randrange(9)}-{i}"]),
                "subscribed_topic_ids": subs,
                "current_assignment": [[t, ps] for t, ps in cur.items()],
            }
        )
    return members, topics, homogeneous


@settings(max_examples=150, deadline=None)
@given(groups(), st.sampled_from(["uniform", "range"]))
def test_every_subscribed_partition_once_to_a_subscriber(g: Any, name: str) -> None:
    members, topics, homogeneous = g
    got = server_assign(name, members, topics)
    assert list(got) == [m["member_id"] for m in members]
    subs = {m["member_id"]: set(m["subscribed_topic_ids"]) for m in members}
    seen = Counter((t, p) for m, per in got.items() for t, ps in per.items() for p in ps)
    wanted = {(t, p) for t, n in topics.items() if any(t in s for s in subs.values()) for p in range(n)}
    assert set(seen) == wanted and all(c == 1 for c in seen.values())
    for m, per in got.items():
        assert set(per) <= subs[m]
        assert all(ps == sorted(ps) and ps for ps in per.values())
    assert server_assign(name, members, topics) == got  # deterministic
    sizes = [sum(len(ps) for ps in per.values()) for per in got.values()]
    if name == "uniform" and homogeneous:
        assert max(sizes) - min(sizes) <= 1
    if name == "range":
        for t in topics:  # per topic, subscribers' shares differ by at most one
            shares = [len(got[m].get(t, [])) for m in got if t in subs[m]]
            assert not shares or max(shares) - min(shares) <= 1
        # range ignores the coordinator's member order and the current assignment
        fresh = [{**m, "current_assignment": []} for m in reversed(members)]
        assert server_assign(name, fresh, topics) == {m: got[m] for m in reversed(got)}


def test_uniform_depends_on_member_order_and_given_partition_order() -> None:
    """Documented order dependence: the coordinator's member order decides who gets the extra
    partition, and an over-quota member keeps its first partitions in the order given."""
    t = "AAAAAAAAAAAAAAAAAAAAAQ"
    a, b = {"member_id": "a", "subscribed_topic_ids": [t]}, {"member_id": "b", "subscribed_topic_ids": [t]}
    # Kafka 4.1 on: the extra goes to the last member; 4.0: to the first
    assert server_assign("uniform", [a, b], {t: 3}) == {"a": {t: [0]}, "b": {t: [1, 2]}}
    assert server_assign("uniform", [b, a], {t: 3}) == {"b": {t: [0]}, "a": {t: [1, 2]}}
    assert server_assign("uniform", [a, b], {t: 3}, kafka_version="4.0") == {"a": {t: [0, 1]}, "b": {t: [2]}}
    assert server_assign("uniform", [b, a], {t: 3}, kafka_version="4.0.2") == {"b": {t: [0, 1]}, "a": {t: [2]}}
    owner = {**a, "current_assignment": [[t, [3, 0, 2, 1]]]}
    assert server_assign("uniform", [owner, b], {t: 4})["a"] == {t: [0, 3]}
    owner = {**a, "current_assignment": [[t, [1, 2, 0, 3]]]}
    assert server_assign("uniform", [owner, b], {t: 4})["a"] == {t: [1, 2]}


@pytest.mark.parametrize("bad", ["4", "four", "4.x", "4.1.0.1", "", " 4.1", "4..1"])
def test_kafka_version_must_be_a_release(bad: str) -> None:
    t = "AAAAAAAAAAAAAAAAAAAAAQ"
    with pytest.raises(InvalidInputError, match="kafka_version") as err:
        server_assign("uniform", [{"member_id": "a", "subscribed_topic_ids": [t]}], {t: 1}, kafka_version=bad)
    assert err.value.value == bad
    with pytest.raises(InvalidInputError, match="kafka_version"):
        server_assign_columns("uniform", [t], [1], ["a"], [0, 1], [0], kafka_version=bad)


def test_typed_members_and_missing_topic_messages() -> None:
    t, gone = "AAAAAAAAAAAAAAAAAAAAAQ", "AAAAAAAAAAAAAAAAAAAAAg"
    typed = [ServerMember("x", [t], [(t, [0])]), ServerMember("y", [t], instance_id="s")]
    assert server_assign("range", typed, {t: 2}) == {"x": {t: [1]}, "y": {t: [0]}}
    with pytest.raises(PartitionAssignorError, match=f"Members are subscribed to topic {gone} which doesn't exist"):
        server_assign("uniform", [ServerMember("x", [t, gone])], {t: 2})
    with pytest.raises(PartitionAssignorError, match="^Member is subscribed to a non-existent topic$"):
        server_assign("range", [ServerMember("x", [gone])], {t: 2})


T = "AAAAAAAAAAAAAAAAAAAAAQ"


@pytest.mark.parametrize(
    ("members", "topics", "match"),
    [
        ([{"member_id": "a", "subscribed_topic_ids": [T]}] * 2, {T: 1}, 'duplicate member id "a"'),
        (
            [
                {"member_id": "a", "subscribed_topic_ids": [T], "current_assignment": [[T, [0]]]},
                {"member_id": "b", "subscribed_topic_ids": [T], "current_assignment": [[T, [0]]]},
            ],
            {T: 1},
            "owned twice",
        ),
        ([{"member_id": "a", "subscribed_topic_ids": [T]}], {T: -1}, "partition count -1 is negative"),
        ([{"member_id": "a", "subscribed_topic_ids": ["not-a-uuid"]}], {T: 1}, 'malformed topic id "not-a-uuid"'),
        ([{"member_id": "a", "subscribed_topic_ids": [T]}], {"AAAAAAAAAAAAAAAAAAAAAB": 1}, "malformed topic id"),
        ([{"member_id": "a", "subscribed_topic_ids": [T, T]}], {T: 1}, "lists topic .* twice"),
        (
            [{"member_id": "a", "subscribed_topic_ids": [T], "current_assignment": [[T, [5]]]}],
            {T: 2},
            "the topic has 2 partitions",
        ),
        (
            [{"member_id": "a", "subscribed_topic_ids": [T], "current_assignment": [[T, [-1]]]}],
            {T: 2},
            "negative partition -1",
        ),
        ([{"subscribed_topic_ids": [T]}], {T: 2}, "no member_id"),
        ([{"member_id": "a", "subscribed_topic_ids": [T]}], {T: 2**31 - 1}, "partitions in total"),
        ("not members", {T: 2}, "members must be a sequence"),
    ],
)
def test_bad_input_is_one_typed_error(members: Any, topics: Any, match: str) -> None:
    # `range` does not read the current assignment, so only `uniform` checks it.
    reads_current = not isinstance(members, str) and any(m.get("current_assignment") for m in members)
    for name in ("uniform",) if reads_current else ("uniform", "range"):
        with pytest.raises(InvalidInputError, match=match):
            server_assign(name, members, topics)


def test_range_does_not_read_the_current_assignment() -> None:
    twice = [
        {"member_id": "a", "subscribed_topic_ids": [T], "current_assignment": [[T, [0, 9]]]},
        {"member_id": "b", "subscribed_topic_ids": [T], "current_assignment": [[T, [0]]]},
    ]
    assert server_assign("range", twice, {T: 2}) == {"a": {T: [0]}, "b": {T: [1]}}


def test_unknown_name_and_bad_columns() -> None:
    with pytest.raises(UnknownStrategyError):
        server_assign("sticky", [], {})
    with pytest.raises(InvalidInputError, match="offsets"):
        server_assign_columns("uniform", [T], [3], ["a"], [0, 2], [0])
    with pytest.raises(InvalidInputError, match="out of range"):
        server_assign_columns("uniform", [T], [3], ["a"], [0, 1], [4])


def test_tree_bins_depend_on_uuid_order() -> None:
    """Eleven ids with hashCode 0 end in one tree bin (16 -> 32 -> 64 slots, then a tree) ordered
    by Uuid.compareTo, root first: the order decides which topic the extra partition comes from."""
    same = [
        base64.urlsafe_b64encode(bytes(8) + (k << 32 | k).to_bytes(8, "big")).decode().rstrip("=") for k in range(11)
    ]
    topics = dict.fromkeys(same, 1)
    got = server_assign("uniform", [{"member_id": "a", "subscribed_topic_ids": same}], topics)
    assert got == {"a": {t: [0] for t in same}}
    two = [{"member_id": m, "subscribed_topic_ids": same} for m in ("a", "b")]
    got = server_assign("uniform", two, topics)
    assert sorted(len(v) for v in got.values()) == [5, 6]


def test_pure_python_transcription_agrees_with_the_vectors() -> None:
    """The benchmark's baseline (tests/support/kafka_server_reference.py) is itself exact where it applies."""
    checked = 0
    for case in CASES:
        subs = [frozenset(m["subscribed_topic_ids"]) for m in case["members"]]
        homogeneous = len(set(subs)) <= 1
        tree_bin = "tree-bin" in case["tags"] or case["id"] == "server-uniform-0042"  # not transcribed
        if "error" in case or (case["assignor"] == "uniform" and (not homogeneous or tree_bin)):
            continue
        f = kafka_server_reference.uniform if case["assignor"] == "uniform" else kafka_server_reference.range_
        assert f(case["members"], case["topics"]) == case["expected"], case["id"]
        checked += 1
    assert checked > 400


FAULTS = [None, "owned twice", "twice in one member", "out of range", "negative", "unknown topic", "same id", "split"]


@st.composite
def homogeneous_groups(draw: st.DrawFn) -> tuple[list[dict[str, Any]], dict[str, int], str | None, bool]:
    """A homogeneous group whose current assignment is a settled one (members then join or leave)
    or random, shuffled per member, then spoiled by one fault (or none)."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    topics = {_uuid(rng): draw(st.integers(0, 12)) for _ in range(draw(st.integers(1, 6)))}
    tids = list(topics)
    subs = rng.sample(tids, rng.randint(0, len(tids)))  # one list; the others are dropped topics
    n = draw(st.integers(1, 9))
    ids = [f"m{i}" for i in range(n)]
    if draw(st.booleans()):  # settled by uniform, some members leave, some join
        before = rng.sample(ids, rng.randint(1, n)) + [f"gone{i}" for i in range(rng.randint(0, 2))]
        settled = server_assign("uniform", [{"member_id": m, "subscribed_topic_ids": tids} for m in before], topics)
        owned = {m: list(settled.get(m, {}).items()) for m in ids}
    else:
        owned = {m: [] for m in ids}
        for t in tids:
            for p in range(topics[t]):
                if rng.random() < 0.7:
                    owned[rng.choice(ids)].append((t, [p]))
    members = []
    for m in ids:
        per: dict[str, list[int]] = {}
        for t, ps in owned[m]:
            per.setdefault(t, []).extend(ps)
        cur = [[t, rng.sample(ps, len(ps))] for t, ps in per.items()]
        rng.shuffle(cur)
        members.append({"member_id": m, "subscribed_topic_ids": subs, "current_assignment": cur})
    fault = draw(st.sampled_from(FAULTS))
    victim = members[rng.randrange(n)]
    cur = victim["current_assignment"]
    everything = [(t, p) for m in members for t, ps in m["current_assignment"] for p in ps]

    def add(t: str, p: int) -> None:
        same = [c for c in cur if c[0] == t]
        same[0][1].append(p) if same else cur.append([t, [p]])

    if fault == "owned twice" and everything:
        add(*rng.choice(everything))
    elif fault == "twice in one member" and cur and cur[0][1]:
        cur[0][1].append(cur[0][1][0])
    elif fault in ("out of range", "negative"):
        t = rng.choice(tids)
        add(t, topics[t] + rng.randrange(3) if fault == "out of range" else -1)
    elif fault == "same id" and n > 1:
        victim["member_id"] = members[(members.index(victim) + 1) % n]["member_id"]
    elif fault not in ("split", "unknown topic"):
        fault = None  # nothing to spoil
    return members, topics, fault, draw(st.booleans())


def _group_columns(members: list[dict[str, Any]], topics: dict[str, int], fault: str | None) -> dict[str, Any]:
    """The columns of a group whose members share one subscription list; with ``split``, the
    first member owning two topics lists its rows of them interleaved (the same assignment)."""
    tids = list(topics)
    pos = {t: k for k, t in enumerate(tids)}
    rows = [[(pos[t], p) for t, ps in m["current_assignment"] for p in ps] for m in members]
    if fault == "unknown topic":
        rows[0].append((len(tids), 0))
    if fault == "split":
        for r in rows:
            if len({t for t, _ in r}) > 1:
                first = r[0][0]
                mine, others = [x for x in r if x[0] == first], [x for x in r if x[0] != first]
                r[:] = [mine[0], others[0], *mine[1:], *others[1:]]
                break
    return {
        "topic_ids": tids,
        "partition_counts": [topics[t] for t in tids],
        "member_ids": [m["member_id"] for m in members],
        "subscription_offsets": [0, len(members[0]["subscribed_topic_ids"])],
        "subscription_topics": [pos[t] for t in members[0]["subscribed_topic_ids"]],
        "member_subscription": [0] * len(members),
        "current_offsets": np.cumsum([0] + [len(r) for r in rows]),
        "current_topics": [t for r in rows for t, _ in r],
        "current_partitions": [p for r in rows for _, p in r],
    }


@settings(max_examples=400, deadline=None)
@given(homogeneous_groups())
def test_columns_equal_dict_api_on_homogeneous_uniform_groups(g: Any) -> None:
    """``server_assign_columns`` takes a fast path for homogeneous ``uniform`` groups with a valid
    current assignment, and so does the dict API when the members share one subscription list;
    the columns give what the dict API gives, the dict API what the pure-Python transcription
    gives, and both the same typed error for a spoiled current assignment (same message: the
    core's general path)."""
    members, topics, fault, newest = g
    version = "4.1" if newest else "4.0"
    cols = _group_columns(members, topics, fault)
    case = {"members": members, "topics": topics}
    if fault == "unknown topic":  # no such column position; the dict API keeps stale topics
        with pytest.raises(InvalidInputError, match=r"current topic \d+ out of range"):
            server_assign_columns("uniform", **cols, kafka_version=version)
        return
    refused: str | None = None
    try:
        want: Any = server_assign("uniform", members, topics, kafka_version=version)
    except InvalidInputError as err:
        refused = str(err)
    if refused is not None:
        with pytest.raises(InvalidInputError) as got:
            server_assign_columns("uniform", **cols, kafka_version=version)
        assert str(got.value) == refused or fault == "negative", (str(got.value), refused)
        return
    assert fault in (None, "split")
    # the dict API takes a fast path of its own here (members sharing one list): the pure-Python
    # transcription of Java's builder checks it
    assert want == kafka_server_reference.uniform(members, topics, kafka_4_1=newest)
    owners = server_assign_columns("uniform", **cols, kafka_version=version)
    assert _from_owners(case, owners) == want
    # each member's own subscription row (the same topics): the same answer
    own = {**cols, "member_subscription": None}
    own["subscription_offsets"] = np.arange(len(members) + 1) * len(cols["subscription_topics"])
    own["subscription_topics"] = cols["subscription_topics"] * len(members)
    assert server_assign_columns("uniform", **own, kafka_version=version).tolist() == owners.tolist()


class _OwnHash(str):
    """A member id whose hash disagrees with its text's (equal ids, different hashes)."""

    def __hash__(self) -> int:
        return id(self)


@pytest.mark.parametrize("ids", [["a", "a"], [_OwnHash("a"), _OwnHash("a")]], ids=["str", "subclass"])
def test_columns_find_duplicate_member_ids_whatever_their_hash(ids: list[str]) -> None:
    with pytest.raises(InvalidInputError, match='duplicate member id "a"'):
        server_assign_columns("uniform", [T], [2], ids, [0, 1], [0], member_subscription=[0, 0])
