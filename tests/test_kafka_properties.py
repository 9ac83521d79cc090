"""Kafka assignors: hypothesis properties on random groups, convergence, errors."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqbalance.exceptions import InvalidInputError, UnknownStrategyError
from mqbalance.kafka import (
    ASSIGNORS,
    Subscription,
    TopicPartition,
    assign_columns,
    assignor,
    check_assignment,
    zk_assign,
)

TOPICS = ["a", "b", "c", "d", "e"]


@st.composite
def groups(draw):
    ppt = {
        t: draw(st.integers(0, 12))
        for t in draw(st.lists(st.sampled_from(TOPICS), min_size=1, max_size=5, unique=True))
    }
    n = draw(st.integers(1, 8))
    subs = {}
    for i in range(n):
        topics = draw(st.lists(st.sampled_from(TOPICS + ["gone"]), min_size=1, max_size=4, unique=True))
        owned = draw(st.lists(st.tuples(st.sampled_from(TOPICS), st.integers(0, 14)), max_size=10, unique=True))
        gen = draw(st.none() | st.integers(0, 3))
        subs[f"m{i}"] = Subscription(topics, [TopicPartition(*o) for o in owned], gen)
    return ppt, subs


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(g=groups(), cooperative=st.booleans())
def test_sticky_is_valid_and_balanced_on_random_groups(g, cooperative):
    """Heterogeneous subscriptions, missing topics, stale and conflicting claims, new members."""
    ppt, subs = g
    name = "cooperative-sticky" if cooperative else "sticky"
    got = assignor(name).assign(ppt, subs)
    report = check_assignment(ppt, subs, got, cooperative=cooperative)
    assert not report.problems, report.problems
    if not cooperative:
        assert report.balanced
        if report.max_retainable is not None:
            assert report.retained == report.max_retainable


@settings(max_examples=150, deadline=None)
@given(g=groups())
def test_repeated_rebalances_converge_without_ping_pong(g):
    """Feed each result back as the owned partitions of the next generation: the cooperative
    protocol completes within two rounds, and then nothing moves any more."""
    ppt, subs = g
    assignment = assignor("cooperative-sticky").assign(ppt, subs)
    history = []
    for generation in range(10, 14):
        subs = {m: Subscription(s.topics, assignment[m], generation) for m, s in subs.items()}
        assignment = assignor("cooperative-sticky").assign(ppt, subs)
        history.append({m: tuple(v) for m, v in assignment.items()})
    assert history[-1] == history[-2] == history[-3]
    eager = assignor("sticky").assign(ppt, subs)
    assert check_assignment(ppt, subs, assignment).ok  # the cooperative fixpoint is a complete, balanced assignment
    assert {m: set(v) for m, v in eager.items()} == {m: set(v) for m, v in assignment.items()}


@settings(max_examples=100, deadline=None)
@given(g=groups(), name=st.sampled_from(["range", "roundrobin", "sticky", "cooperative-sticky"]))
def test_columnar_and_object_apis_agree(g, name):
    ppt, subs = g
    objects = assignor(name).assign(ppt, subs)
    ids = list(subs)
    owned = [
        (ids.index(m), tp.topic, tp.partition) for m, s in subs.items() for tp in s.owned_partitions if tp.topic in ppt
    ]
    cols = assign_columns(
        name,
        ppt,
        ids,
        [list(s.topics) for s in subs.values()],
        owned=tuple(zip(*owned)) if owned else None,
        generations=[s.generation for s in subs.values()],
    )
    from_cols = {m: set() for m in ids}
    for m, t, p in zip(cols.member.tolist(), cols.topic.tolist(), cols.partition.tolist()):
        from_cols[ids[m]].add(TopicPartition(cols.topics[t], p))
    assert from_cols == {m: set(v) for m, v in objects.items()}


def test_permuting_members_changes_nothing_for_range_and_roundrobin():
    subs = {f"c{i}": Subscription(["a", "b"] if i % 2 else ["a"]) for i in range(7)}
    ppt = {"a": 10, "b": 5}
    for name in ("range", "roundrobin"):
        forward = assignor(name).assign(ppt, subs)
        backward = assignor(name).assign(ppt, dict(reversed(list(subs.items()))))
        assert forward == backward


def test_errors():
    with pytest.raises(UnknownStrategyError):
        assignor("uniform")
    with pytest.raises(UnknownStrategyError):
        zk_assign("sticky", {}, {})
    with pytest.raises(InvalidInputError):
        assignor("range").assign({"t": -1}, {"m": ["t"]})
    with pytest.raises(InvalidInputError):
        assignor("range").assign({"t": 1.5}, {"m": ["t"]})  # type: ignore[dict-item]
    with pytest.raises(InvalidInputError):
        assignor("range").assign({"t": 1}, {"m": "t"})
    with pytest.raises(InvalidInputError):
        Subscription(["t"], generation="7")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        zk_assign("range", {"t": 1}, {"c": {"t": -2}})
    with pytest.raises(InvalidInputError):
        assign_columns("range", {"t": 1}, ["a", "b"], [["t"]])
    # Unknown topics and out-of-range owned partitions are skipped, as Kafka's client does.
    got = assignor("sticky").assign(
        {"t": 2}, {"m": Subscription(["t", "nope"], [TopicPartition("t", 9), TopicPartition("nope", 0)], 1)}
    )
    assert got == {"m": [TopicPartition("t", 0), TopicPartition("t", 1)]}
    assert assignor("range").assign({"t": 3}, {}) == {}


def test_assignor_names_ignore_case():
    subs = {"a": ["t"], "b": ["t"]}
    for name in ASSIGNORS:
        for spelling in (name.upper(), name.title(), name):
            a = assignor(spelling)
            assert a.name == name and repr(a) == f"assignor({name!r})"
            assert a.assign({"t": 5}, subs) == assignor(name).assign({"t": 5}, subs)
            cols = assign_columns(spelling, {"t": 5}, ["a", "b"], [["t"], ["t"]])
            same = assign_columns(name, {"t": 5}, ["a", "b"], [["t"], ["t"]])
            assert cols.member.tolist() == same.member.tolist() and cols.partition.tolist() == same.partition.tolist()
    consumers = {"C1": {"t": 2}, "C2": {"t": 2}}
    for spelling in ("RANGE", "Range", "RoundRobin", "ROUNDROBIN"):
        assert zk_assign(spelling, {"t": 5}, consumers) == zk_assign(spelling.lower(), {"t": 5}, consumers)
    with pytest.raises(UnknownStrategyError):
        assignor("round-robin")
    with pytest.raises(UnknownStrategyError):
        zk_assign("Sticky", {"t": 1}, consumers)


def test_zk_assign_takes_partitions_first_and_refuses_the_arguments_swapped():
    consumers = {"C1": {"t": 2, "u": 1}, "C2": {"t": 2}}
    partitions = {"t": 5, "u": 3}
    new = zk_assign("range", partitions, consumers)
    assert new["C1-0"] == [
        TopicPartition("t", 0),
        TopicPartition("t", 1),
        TopicPartition("u", 0),
        TopicPartition("u", 1),
        TopicPartition("u", 2),
    ]
    assert zk_assign("range", partitions_per_topic=partitions, consumers=consumers) == new
    with pytest.raises(InvalidInputError, match="partition count of topic 'C1' must be an int"):
        zk_assign("range", consumers, partitions)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match=r"consumers\['t'\] must be a mapping, got int 5"):
        zk_assign("roundrobin", {}, partitions)  # type: ignore[arg-type]
    assert zk_assign("range", {}, consumers) == {"C1-0": [], "C1-1": [], "C2-0": [], "C2-1": []}
    assert zk_assign("range", {}, {}) == {}
