"""``TopicPartitionList``, what ``assignor(name).assign`` and ``zk_assign`` return per member: a
compact read-only sequence of ``TopicPartition`` that behaves like the list it replaces."""

from __future__ import annotations

import gc
import pickle
from collections.abc import Sequence

import pytest

from mqbalance.exceptions import InvalidInputError
from mqbalance.kafka import TopicPartition, TopicPartitionList, assignor, zk_assign

PAIRS = [("t0", 0), ("t0", 1), ("t1", 0), ("t2", 7)]


def test_sequence_behaviour() -> None:
    tps = TopicPartitionList(PAIRS)
    expected = [TopicPartition(t, p) for t, p in PAIRS]
    assert isinstance(tps, Sequence)
    assert len(tps) == 4 and bool(tps) and not TopicPartitionList([])
    assert list(tps) == expected and tps.tolist() == expected and type(tps.tolist()) is list
    assert [tps[i] for i in range(-4, 4)] == expected + expected
    assert all(type(tp) is TopicPartition for tp in tps)
    assert tps[1].topic == "t0" and tps[1].partition == 1
    assert tps[1:3] == expected[1:3] and tps[::-2] == expected[::-2] and type(tps[1:3]) is TopicPartitionList
    with pytest.raises(IndexError):
        tps[4]
    with pytest.raises(IndexError):
        tps[-5]
    assert ("t1", 0) in tps and TopicPartition("t2", 7) in tps and ("t1", 1) not in tps and "t0" not in tps
    assert tps.by_topic() == {"t0": [0, 1], "t1": [0], "t2": [7]}
    assert repr(tps) == f"TopicPartitionList({expected!r})"
    it = iter(tps)
    assert next(it) == expected[0] and list(it) == expected[1:] and list(it) == []


def test_equality_like_a_list() -> None:
    tps = TopicPartitionList(PAIRS)
    expected = [TopicPartition(t, p) for t, p in PAIRS]
    assert tps == expected and expected == tps and tps == tuple(expected) and tps == PAIRS
    assert tps == TopicPartitionList(PAIRS) and tps != TopicPartitionList(PAIRS[:3])
    assert tps != expected[:3] and tps != expected[::-1] and tps != [*expected[:3], ("t2", 8)]
    assert tps != 4 and tps != "t0" and tps != dict.fromkeys(expected, 0)
    with pytest.raises(TypeError):
        hash(tps)


def test_pickle() -> None:
    tps = TopicPartitionList(PAIRS)
    back = pickle.loads(pickle.dumps(tps))
    assert type(back) is TopicPartitionList and back == tps


def test_a_large_result_is_a_few_objects_per_member() -> None:
    """20k partitions over 10 members: the result adds about one tracked object per member, not
    one per partition (what kept the collector busy with lists of namedtuples)."""
    ppt, subs = {"t": 20_000}, {f"m{i}": ["t"] for i in range(10)}
    a = assignor("range")
    a.assign(ppt, subs)
    gc.collect()
    before = len(gc.get_objects())
    got = a.assign(ppt, subs)
    assert len(gc.get_objects()) - before < 100
    assert sum(len(v) for v in got.values()) == 20_000


@pytest.mark.parametrize("bad", [[("t", -1)], [("t",)], [(0, 1)], ["t0"], [("t", 1.5)]])
def test_bad_items(bad: list[object]) -> None:
    with pytest.raises((InvalidInputError, TypeError)):
        TopicPartitionList(bad)  # type: ignore[arg-type]


def test_assign_returns_lists_equal_to_the_plain_ones() -> None:
    # Kafka's RangeAssignor Javadoc example: C0 gets t0p0, t0p1, t1p0, t1p1; C1 gets t0p2, t1p2.
    subs = {"C0": ["t0", "t1"], "C1": ["t0", "t1"]}
    got = assignor("range").assign({"t0": 3, "t1": 3}, subs)
    plain = assignor("range").assign_lists({"t0": 3, "t1": 3}, subs)
    assert all(type(v) is TopicPartitionList for v in got.values())
    assert all(type(v) is list for v in plain.values())
    assert plain == {
        "C0": [TopicPartition("t0", 0), TopicPartition("t0", 1), TopicPartition("t1", 0), TopicPartition("t1", 1)],
        "C1": [TopicPartition("t0", 2), TopicPartition("t1", 2)],
    }
    assert got == plain
    assert got["C0"].by_topic() == {"t0": [0, 1], "t1": [0, 1]}


def test_zk_assign_returns_topic_partition_lists() -> None:
    got = zk_assign("range", {"t": 5}, {"C1": {"t": 2}, "C2": {"t": 2}})
    assert {k: v.tolist() for k, v in got.items()} == {
        "C1-0": [TopicPartition("t", 0), TopicPartition("t", 1)],
        "C1-1": [TopicPartition("t", 2)],
        "C2-0": [TopicPartition("t", 3)],
        "C2-1": [TopicPartition("t", 4)],
    }


def test_plain_topic_lists_checked_like_subscriptions() -> None:
    with pytest.raises(InvalidInputError, match="topic names must be str"):
        assignor("range").assign({"t": 1}, {"m": ["t", 3]})  # type: ignore[list-item]
    with pytest.raises(InvalidInputError, match="topic names must be str"):
        assignor("range").assign({"t": 1}, {"m": ("t", None)})  # type: ignore[dict-item]
    # Tuples and lists of names give what a Subscription of them gives.
    subs = {"a": ("t", "u", "missing"), "b": ["u"]}
    from mqbalance.kafka import Subscription

    assert assignor("roundrobin").assign({"t": 3, "u": 2}, subs) == assignor("roundrobin").assign(
        {"t": 3, "u": 2}, {m: Subscription(ts) for m, ts in subs.items()}
    )


def test_zk_threads_follow_the_largest_stream_count() -> None:
    # Threads <consumer>-<k> for k below the consumer's largest stream count, consumers in order;
    # the Scala RangeAssignor over each topic's sorted subscribed threads (t: only C1-0; u: five
    # threads, one partition each).
    got = zk_assign("range", {"t": 2, "u": 5}, {"C1": {"t": 1, "u": 3}, "C2": {"u": 2}})
    assert list(got) == ["C1-0", "C1-1", "C1-2", "C2-0", "C2-1"]
    assert {k: [(tp.topic, tp.partition) for tp in v] for k, v in got.items()} == {
        "C1-0": [("t", 0), ("t", 1), ("u", 0)],
        "C1-1": [("u", 1)],
        "C1-2": [("u", 2)],
        "C2-0": [("u", 3)],
        "C2-1": [("u", 4)],
    }
    with pytest.raises(InvalidInputError, match="stream count of 'C2' for 'u'"):
        zk_assign("range", {"u": 5}, {"C1": {"u": 1}, "C2": {"u": True}})
    with pytest.raises(InvalidInputError, match="stream count of 'C2' for 'u'"):
        zk_assign("range", {"u": 5}, {"C1": {"u": 1}, "C2": {"u": -1}})
