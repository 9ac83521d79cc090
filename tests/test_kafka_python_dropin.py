"""The kafka-python drop-in, exercised with kafka-python's own protocol classes: metadata is
encoded and decoded through ``ConsumerProtocolSubscription``, members are
``JoinGroupResponseMember``s, the cluster is a ``ClusterMetadata``."""

from __future__ import annotations

import pytest

kafka = pytest.importorskip("kafka")

from kafka.cluster import ClusterMetadata  # noqa: E402
from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData  # noqa: E402
from kafka.protocol.consumer.group import JoinGroupResponse  # noqa: E402
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription  # noqa: E402

from mqbalance.kafka import Subscription, TopicPartition, assignor, check_assignment  # noqa: E402
from mqbalance.kafka import user_data as sticky_user_data  # noqa: E402
from mqbalance.kafka.kafka_python import CooperativeStickyAssignor, RangeAssignor, RoundRobinAssignor, StickyAssignor  # noqa: E402

Member = JoinGroupResponse.JoinGroupResponseMember


def cluster(topics: dict[str, int]) -> ClusterMetadata:
    c = ClusterMetadata()
    c._partitions = {t: dict.fromkeys(range(n)) for t, n in topics.items()}
    return c


def join(assignors: dict[str, object], topics: dict[str, list[str]], instance: dict[str, str] | None = None) -> list:
    """Each member's metadata goes over the wire and is decoded, as the group leader sees it."""
    members = []
    for mid, a in assignors.items():
        wire = a.metadata(set(topics[mid])).encode()
        members.append(
            Member(
                member_id=mid,
                group_instance_id=(instance or {}).get(mid),
                metadata=ConsumerProtocolSubscription.decode(wire),
            )
        )
    return members


def flat(assignment) -> list[TopicPartition]:
    return [TopicPartition(t, p) for t, ps in assignment.assigned_partitions for p in ps]


def test_user_data_is_javas_bare_struct():
    """Java's StickyAssignor writes the schema's fields with no version prefix (decoding tries v1,
    then v0). kafka-python's generated class encodes the same schema; with ``header=False`` its
    bytes must equal ours, and it must read ours back."""
    ours = sticky_user_data.encode([("t1", 3), ("t0", 1), ("t0", 0)], 9)
    theirs = StickyAssignorUserData(
        previous_assignment=[
            StickyAssignorUserData.TopicPartition(topic="t0", partitions=[0, 1]),
            StickyAssignorUserData.TopicPartition(topic="t1", partitions=[3]),
        ],
        generation=9,
    ).encode(header=False)
    assert ours == theirs
    back = StickyAssignorUserData.decode(ours, version=1, header=False)
    assert [(tp.topic, list(tp.partitions)) for tp in back.previous_assignment] == [
        ("t0", [0, 1]),
        ("t1", [3]),
    ] and back.generation == 9
    assert sticky_user_data.decode(theirs) == ([("t0", 0), ("t0", 1), ("t1", 3)], 9)
    v0 = StickyAssignorUserData(
        previous_assignment=[StickyAssignorUserData.TopicPartition(topic="t", partitions=[2])], version=0
    ).encode(header=False)
    assert sticky_user_data.decode(v0) == ([("t", 2)], None)
    assert sticky_user_data.decode(b"\x00\x01garbage") is None and sticky_user_data.decode(b"") is None


@pytest.mark.parametrize("cls", [RangeAssignor, RoundRobinAssignor])
def test_static_members_interleaved_are_not_dropped(cls):
    """kafka-python 3.0.12's own range/roundrobin drop static members interleaved with dynamic
    ones; the drop-in follows Kafka: static members first by instance id, then dynamic by id."""
    a = cls()
    ids = ["d-1", "s-1", "d-2", "s-2"]
    members = join(dict.fromkeys(ids, a), {m: ["t"] for m in ids}, instance={"s-1": "i-b", "s-2": "i-a"})
    result = a.assign(cluster({"t": 4}), members)
    owners = {tp.partition: mid for mid, asg in result.items() for tp in flat(asg)}
    assert owners == {0: "s-2", 1: "s-1", 2: "d-1", 3: "d-2"}


def test_roundrobin_unequal_subscriptions_javadoc_example():
    """The Javadoc example on which kafka-python's RoundRobin raises KeyError."""
    a = RoundRobinAssignor()
    members = join({"C0": a, "C1": a, "C2": a}, {"C0": ["t0"], "C1": ["t0", "t1"], "C2": ["t0", "t1", "t2"]})
    result = {mid: flat(x) for mid, x in a.assign(cluster({"t0": 1, "t1": 2, "t2": 3}), members).items()}
    assert result == {
        "C0": [TopicPartition("t0", 0)],
        "C1": [TopicPartition("t1", 0)],
        "C2": [TopicPartition("t1", 1), TopicPartition("t2", 0), TopicPartition("t2", 1), TopicPartition("t2", 2)],
    }


@pytest.mark.parametrize("cls", [StickyAssignor, CooperativeStickyAssignor])
def test_sticky_rebalance_cycle_through_the_wire(cls):
    """Three members get an assignment, learn it (on_assignment), a fourth joins: the previous
    assignment travels in the metadata and is kept as far as balance allows; the cooperative
    variant never hands a partition over before its owner revoked it, and converges."""
    topics = {"orders": 12, "payments": 6}
    subs = {m: list(topics) for m in ("a", "b", "c", "d")}
    members = {m: cls() for m in ("a", "b", "c")}
    generation = 1
    result = members["a"].assign(cluster(topics), join(members, subs))
    for mid, asg in result.items():
        members[mid].on_assignment(asg, generation)
    before = {mid: set(flat(asg)) for mid, asg in result.items()}
    assert sorted(len(v) for v in before.values()) == [6, 6, 6]

    members["d"] = cls()
    cooperative = cls is CooperativeStickyAssignor
    for _round in range(2 if cooperative else 1):
        generation += 1
        wire = join(members, subs)
        result = members["a"].assign(cluster(topics), wire)
        decoded = {m.member_id: members[m.member_id]._subscription(m) for m in wire}
        report = check_assignment(topics, decoded, {mid: flat(x) for mid, x in result.items()}, cooperative=cooperative)
        assert not report.problems
        if _round == 0:
            assert report.retained == report.max_retainable == 14  # quotas 5,5,4,4 over owners of 6,6,6,0: 5+5+4
        for mid, asg in result.items():
            members[mid].on_assignment(asg, generation)
    final = {mid: set(flat(x)) for mid, x in result.items()}
    assert sorted(len(v) for v in final.values()) == [4, 4, 5, 5]
    assert sum(len(final[m] & before[m]) for m in ("a", "b", "c")) == 14  # d's 4 came from the others


def test_cooperative_metadata_uses_the_v2_fields():
    a = CooperativeStickyAssignor()
    a.on_assignment(type("A", (), {"assigned_partitions": [("t", [0, 2])]})(), 42)
    md = ConsumerProtocolSubscription.decode(a.metadata({"t"}).encode())
    assert md.generation_id == 42
    assert [(tp.topic, list(tp.partitions)) for tp in md.owned_partitions] == [("t", [0, 2])]
    sub = a._subscription(Member(member_id="x", group_instance_id=None, metadata=md))
    assert sub == Subscription(["t"], [TopicPartition("t", 0), TopicPartition("t", 2)], 42)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_assignments_made_like_the_constructor(version: int) -> None:
    """The drop-in makes each ``ConsumerProtocolAssignment`` without kafka-python's generic
    ``__init__``; what it makes equals, prints and encodes like a constructed one."""
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment

    from mqbalance.kafka.kafka_python import _AssignmentMaker

    make = _AssignmentMaker(version)
    assert make.spec is not None  # the fast path is in use with this kafka-python
    parts = [("orders", (0, 3, 9)), ("payments", (2,))]
    made, real = make(parts), ConsumerProtocolAssignment(version, parts, b"")
    assert type(made) is ConsumerProtocolAssignment
    assert made == real and repr(made) == repr(real) and made.encode() == real.encode()
    assert ConsumerProtocolAssignment.decode(made.encode()).assigned_partitions == [
        ("orders", [0, 3, 9]),
        ("payments", [2]),
    ]
    assert make(parts) is not made and make([]).assigned_partitions == []


def _v0(pairs: list[tuple[str, int]]) -> bytes:
    """StickyAssignorUserData v0 (no generation): the v1 bytes without their last int32."""
    return sticky_user_data.encode(pairs, None)[:-4]


@pytest.mark.parametrize(
    "user_data",
    [
        {"a": sticky_user_data.encode([("t", 3), ("t", 4), ("t", 5)], 4), "b": sticky_user_data.encode([("t", 0)], 4)},
        {"a": sticky_user_data.encode([("t", 0), ("t", 1), ("t", 2)], 2), "b": sticky_user_data.encode([("t", 1)], 7)},
        {"a": _v0([("t", 5), ("t", 3), ("t", 4)]), "b": b""},
        {"a": sticky_user_data.encode([("t", 5), ("gone", 0), ("t", -1)], 2), "b": _v0([("t", 5)])},
        {"a": b"\x00\x00\x00\x05junk", "b": sticky_user_data.encode([("t", 1)], 9)[:-1]},  # undecodable, truncated
        {"a": sticky_user_data.encode([("t", 0)], 1) + b"\x00", "b": b"\xff\xff\xff\xff"},  # trailing byte, n < 0
    ],
    ids=["v1", "generations", "v0-and-empty", "unknown-topic-and-negative", "garbage", "trailing"],
)
def test_sticky_user_data_read_like_the_python_decoder(user_data: dict[str, bytes]) -> None:
    """The binding decodes Java's userData itself; what it reads must be what
    ``mqbalance.kafka.user_data.decode`` reads (then the previous owners decide the assignment)."""
    topics = {"t": 6}
    members = [
        Member(
            member_id=mid,
            group_instance_id=None,
            metadata=ConsumerProtocolSubscription.decode(ConsumerProtocolSubscription(0, ["t"], data).encode()),
        )
        for mid, data in user_data.items()
    ]
    got = {mid: flat(x) for mid, x in StickyAssignor().assign(cluster(topics), members).items()}
    subs = {}
    for mid, data in user_data.items():
        owned, generation = sticky_user_data.decode(data) or ([], None)
        subs[mid] = Subscription(["t"], [tp for tp in owned if tp[0] in topics and tp[1] >= 0], generation)
    expected = assignor("sticky").assign(topics, subs)
    assert got == {m: sorted(v) for m, v in expected.items()}
