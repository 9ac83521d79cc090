"""Hypothesis: differential tests against the plain-Python reference, and invariants."""

from __future__ import annotations

from functools import partial

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import reference as ref
from mqbalance import (
    ConsumerIdcsNotSetError,
    IllegalArgumentError,
    MessageQueue,
    bulk,
    sort_client_ids,
    sort_queues,
    strategy,
)

TOPICS = ["T", "TopicTest", "主题", "😀t", "\uff01x", "é"]
BROKERS = ["broker-a", "broker-b", "hz@b1", "sh@b2", "gz@b3", "\uff01@b", "😀@b", "a@b@c", "hz@", "plain"]
IDS = ["10.0.0.7@DEFAULT", "192.168.0.1@12345", "hz@c1", "hz@c2", "sh@c3", "😀@c", "\uff01@c", "gz", " "]

queue_st = st.tuples(st.sampled_from(TOPICS), st.sampled_from(BROKERS), st.integers(0, 40))
queues_st = st.lists(queue_st, min_size=1, max_size=40)
ids_st = st.lists(st.sampled_from(IDS) | st.text(min_size=1, max_size=5), min_size=1, max_size=8)

PAIRS = {
    "AVG": (lambda: strategy("AVG"), ref.avg),
    "AVG_BY_CIRCLE": (lambda: strategy("AVG_BY_CIRCLE"), ref.circle),
    "CONSISTENT_HASH-3": (
        lambda: strategy("CONSISTENT_HASH", virtual_node_cnt=3),
        partial(ref.consistent_hash, vnodes=3),
    ),
    "CONSISTENT_HASH-10": (lambda: strategy("CONSISTENT_HASH"), ref.consistent_hash),
    "CONSISTENT_HASH-latin1": (
        lambda: strategy("CONSISTENT_HASH", virtual_node_cnt=4, charset="ISO-8859-1"),
        partial(ref.consistent_hash, vnodes=4, charset="ISO-8859-1"),
    ),
    "CONSISTENT_HASH-ascii": (
        lambda: strategy("CONSISTENT_HASH", virtual_node_cnt=4, charset="US-ASCII"),
        partial(ref.consistent_hash, vnodes=4, charset="US-ASCII"),
    ),
    "MACHINE_ROOM": (
        lambda: strategy("MACHINE_ROOM", consumer_idcs={"hz", "sh", "\uff01"}),
        partial(ref.machine_room, idcs={"hz", "sh", "\uff01"}),
    ),
    "MACHINE_ROOM-unset": (lambda: strategy("MACHINE_ROOM"), partial(ref.machine_room, idcs=None)),
    "NEARBY-AVG": (lambda: strategy("MACHINE_ROOM_NEARBY", inner=strategy("AVG")), partial(ref.nearby, inner=ref.avg)),
    "NEARBY-CH": (
        lambda: strategy("MACHINE_ROOM_NEARBY", inner=strategy("CONSISTENT_HASH", virtual_node_cnt=2)),
        partial(ref.nearby, inner=partial(ref.consistent_hash, vnodes=2)),
    ),
}
BUILT = {k: (make(), r) for k, (make, r) in PAIRS.items()}


def _call_ref(fn, *args):
    try:
        return ("ok", fn(*args))
    except ref.JavaIllegalArgument as e:
        return ("iae", str(e))
    except ref.JavaNullPointer:
        return ("npe", None)


def _call_ours(s, *args):
    try:
        return ("ok", s.allocate("cg", *args))
    except IllegalArgumentError as e:
        return ("iae", e.java_message)
    except ConsumerIdcsNotSetError:
        return ("npe", None)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(PAIRS)), raw_queues=queues_st, ids=ids_st, java_sort=st.booleans())
def test_differential_against_reference(name, raw_queues, ids, java_sort):
    s, r = BUILT[name]
    if java_sort:
        raw_queues = sorted(raw_queues, key=ref.queue_key)
        ids = sorted(ids, key=ref.utf16)
    mqs = [MessageQueue(*q) for q in raw_queues]
    for cid in [*dict.fromkeys(ids), "not-a-member"]:
        kind, want = _call_ref(r, cid, raw_queues, ids)
        got_kind, got = _call_ours(s, cid, mqs, ids)
        assert got_kind == kind
        if kind == "ok":
            assert got == [mqs[k] for k in want]
        else:
            assert got == want
    owners = _call_ref(ref.owners, r, raw_queues, ids)
    if owners[0] == "ok" and "" not in ids:
        cols = ([q[0] for q in raw_queues], [q[1] for q in raw_queues], [q[2] for q in raw_queues])
        np.testing.assert_array_equal(bulk.owners(s, *cols, ids, presorted=True), owners[1])


def _group(n: int, c: int):
    qs = [MessageQueue("TopicTest", f"broker-{k % 3}", k // 3) for k in range(n)]
    ids = [f"10.0.{j // 256}.{j % 256}@DEFAULT" for j in range(c)]
    return sort_queues(qs), sort_client_ids(ids)


@settings(max_examples=150, deadline=None)
@given(n=st.integers(1, 300), c=st.integers(1, 40), name=st.sampled_from(["AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH"]))
def test_every_queue_owned_exactly_once_without_duplicates(n, c, name):
    qs, ids = _group(n, c)
    got = strategy(name).assign(qs, ids)
    owned = [q for lst in got.values() for q in lst]
    assert sorted(owned) == qs  # each queue exactly once
    if name != "CONSISTENT_HASH":
        sizes = [len(v) for v in got.values()]
        assert max(sizes) - min(sizes) <= 1
        assert sum(sizes) == n


@settings(max_examples=100, deadline=None)
@given(
    raw_queues=queues_st,
    ids=st.lists(st.sampled_from(IDS[:-1]), min_size=1, max_size=8),
    name=st.sampled_from(["AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "MACHINE_ROOM"]),
    seed=st.randoms(use_true_random=False),
)
def test_permuting_inputs_changes_nothing_after_sorting(raw_queues, ids, name, seed):
    s = strategy(name, consumer_idcs={"hz", "sh"}) if name == "MACHINE_ROOM" else strategy(name)
    mqs = [MessageQueue(*q) for q in raw_queues]
    base = s.assign(mqs, ids, java_sort=True)
    seed.shuffle(mqs)
    seed.shuffle(ids)
    assert s.assign(mqs, ids, java_sort=True) == base


@settings(max_examples=100, deadline=None)
@given(n=st.integers(1, 200), c=st.integers(1, 20), joiner=st.text(min_size=1, max_size=12), vnodes=st.integers(1, 20))
def test_consistent_hash_joiner_only_takes(n, c, joiner, vnodes):
    qs, ids = _group(n, c)
    assume(joiner not in ids)
    s = strategy("CONSISTENT_HASH", virtual_node_cnt=vnodes)
    before = {q: cid for cid, lst in s.assign(qs, ids).items() for q in lst}
    after = {q: cid for cid, lst in s.assign(qs, sort_client_ids([*ids, joiner])).items() for q in lst}
    moved = [q for q in qs if before[q] != after[q]]
    assert all(after[q] == joiner for q in moved)  # nobody else gains a queue
    # ... and the joiner gets exactly the queues whose hash lands on one of its arcs.
    want = ref.consistent_hash(
        joiner, [(q.topic, q.broker_name, q.queue_id) for q in qs], sort_client_ids([*ids, joiner]), vnodes
    )
    assert sorted(moved) == sorted(qs[k] for k in want)


def test_consistent_hash_joiner_takes_a_fair_share():
    """Lower bound, deterministic: 4 → 5 consumers over 256 queues moves a real share (>= a quarter of 256/5)."""
    qs, ids = _group(256, 4)
    s = strategy("CONSISTENT_HASH")
    before = {q: cid for cid, lst in s.assign(qs, ids).items() for q in lst}
    after = {q: cid for cid, lst in s.assign(qs, [*ids, "10.9.9.9@DEFAULT"]).items() for q in lst}
    moved = sum(before[q] != after[q] for q in qs)
    assert 12 <= moved <= 110  # fair share is 51; 10 virtual nodes are lumpy (19 move here)


def test_duplicated_id_strands_queues_in_avg():
    qs, _ = _group(9, 3)
    got = strategy("AVG").assign(qs, ["a", "a", "b"])
    assert got == {"a": qs[0:3], "b": qs[6:9]}  # qs[3:6] (the second "a" slot) is consumed by nobody
    np.testing.assert_array_equal(
        bulk.owners(
            "AVG",
            [q.topic for q in qs],
            [q.broker_name for q in qs],
            [q.queue_id for q in qs],
            ["a", "a", "b"],
            presorted=True,
        ),
        [0, 0, 0, -1, -1, -1, 2, 2, 2],
    )


@settings(max_examples=100, deadline=None)
@given(raw_queues=queues_st, ids=ids_st)
def test_whole_group_baselines_match_the_literal_reference(raw_queues, ids):
    """The benchmarks' plain-Python baselines compute what the literal per-client reference does."""
    assume("" not in ids)
    n = len(raw_queues)
    assert ref.group_avg(n, ids) == ref.owners(ref.avg, raw_queues, ids)
    assert ref.group_circle(n, ids) == ref.owners(ref.circle, raw_queues, ids)
    assert ref.group_consistent_hash(raw_queues, ids, 3) == ref.owners(
        partial(ref.consistent_hash, vnodes=3), raw_queues, ids
    )
