"""Owners of many (group, topic) pairs whose consumers are ranges of one Arrow column of client ids
(`bulk.owners_by_pair_in_column`, what a fleet batch uses) against the same pairs with a Python
list per pair (`bulk.owners_by_pair`), and a snapshot's groups built from that column."""

from __future__ import annotations

import pickle

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqbalance.allocation import bulk
from mqbalance.exceptions import InvalidClientIdError, InvalidInputError, MQBalanceError
from mqbalance.fleet.rocketmq.from_json import snapshot_from_dict
from mqbalance.fleet.rocketmq.snapshot import ConsumerGroup

STRATEGIES = ["AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", {"name": "CONSISTENT_HASH", "virtualNodeCnt": 3}]
# ids that repeat (duplicated processes), sort differently in UTF-16 and UTF-8, or are empty
_id = st.sampled_from(["c1", "c2", "c10", "\U0001f600", "\uff5e", "", "b@1", "b@2"]) | st.text(max_size=4)


@st.composite
def pairs(draw: st.DrawFn) -> tuple[list[str], list[int], list[int], list, list[list[str]], list[int]]:
    """Pairs (topic, queue count, strategy) and the groups' id lists; ``group_of[p]``: the list pair p uses."""
    groups = draw(st.lists(st.lists(_id, max_size=6), min_size=1, max_size=4))
    n = draw(st.integers(1, 6))
    group_of = draw(st.lists(st.integers(0, len(groups) - 1), min_size=n, max_size=n))
    topics, qids, bounds, strategies = [], [], [0], []
    for p in range(n):
        count = draw(st.integers(0, 9))
        order = draw(st.permutations(range(count)))
        topics += [f"T{p}"] * count
        qids += list(order)
        bounds.append(bounds[-1] + count)
        strategies.append(draw(st.sampled_from(STRATEGIES)))
    return topics, qids, bounds, strategies, groups, group_of


def _outcome(call):
    try:
        return call().tolist()
    except MQBalanceError as e:
        return type(e), str(e)


@given(pairs(), st.integers(0, 3), st.booleans())
@settings(max_examples=300, deadline=None)
def test_ranges_of_one_column_give_the_owners_of_lists(case, lead, large) -> None:
    topics, qids, bounds, strategies, groups, group_of = case
    brokers = ["b"] * len(topics)
    # The groups' ids end to end after `lead` unrelated ids, as a slice of a longer array.
    flat = ["x"] * lead + [cid for ids in groups for cid in ids]
    starts = np.cumsum([lead] + [len(ids) for ids in groups])
    column = pa.array(["pad"] + flat, type=pa.large_string() if large else pa.string()).slice(1)
    lists = [groups[g] for g in group_of]
    expected = _outcome(lambda: bulk.owners_by_pair(topics, brokers, qids, bounds, strategies, lists))
    got = _outcome(
        lambda: bulk.owners_by_pair_in_column(
            topics,
            brokers,
            qids,
            bounds,
            strategies,
            column,
            [starts[g] for g in group_of],
            [starts[g + 1] for g in group_of],
        )
    )
    if isinstance(expected, list):
        # positions in the list -> positions in the column
        start_of_row = np.repeat([starts[g] for g in group_of], np.diff(bounds)).tolist()
        expected = [o if o < 0 else o + s for o, s in zip(expected, start_of_row)]
    assert got == expected


def test_bad_ranges_and_ids_are_named() -> None:
    args = (["T"] * 2, ["b"] * 2, [0, 1], [0, 2], ["AVG"])
    with pytest.raises(InvalidInputError, match="id range 0 is 1..4, not within the 3 ids"):
        bulk.owners_by_pair_in_column(*args, pa.array(["a", "b", "c"]), [1], [4])
    with pytest.raises(InvalidInputError, match="id range 0 is 2..1"):
        bulk.owners_by_pair_in_column(*args, pa.array(["a", "b", "c"]), [2], [1])
    with pytest.raises(InvalidClientIdError, match=r"client_ids\[1\] is null"):
        bulk.owners_by_pair_in_column(*args, pa.array(["a", None]), [0], [2])
    with pytest.raises(InvalidClientIdError, match=r"client_ids\[1\] must be a str, got 7"):
        bulk.owners_by_pair_in_column(*args, ["a", 7], [0], [2])
    with pytest.raises(InvalidClientIdError, match="must be strings, got a column of int64"):
        bulk.owners_by_pair_in_column(*args, pa.array([1, 2]), [0], [2])
    # Buffers no Arrow constructor checked: bytes that are not UTF-8.
    offsets = pa.py_buffer(np.array([0, 1, 2], np.int32))
    bad = pa.Array.from_buffers(pa.string(), 2, [None, offsets, pa.py_buffer(b"a\xff")])
    with pytest.raises(InvalidClientIdError, match=r"client_ids\[1\] is not UTF-8"):
        bulk.owners_by_pair_in_column(*args, bad, [0], [2])


@given(st.lists(st.tuples(st.sampled_from("ghk"), _id.filter(bool)), max_size=12))
@settings(max_examples=200, deadline=None)
def test_groups_built_from_the_column_equal_groups_built_from_connections(connections) -> None:
    groups: dict[str, list[dict[str, str]]] = {}
    for g, cid in connections:
        groups.setdefault(g, []).append({"clientId": cid})
    snap = snapshot_from_dict(
        {"topics": {}, "groups": {g: {"subscriptions": [], "connections": c} for g, c in groups.items()}}
    )
    index = snap.group_index()
    assert sorted(index) == sorted(groups)
    for name, conns in groups.items():
        built = index[name]
        ids = [c["clientId"] for c in conns]
        plain = ConsumerGroup.of(name, built.message_model, tuple(built.connections))
        assert built.distinct_id_count == len(set(ids)) == plain.distinct_id_count
        assert built.duplicated_ids == sorted({i for i in ids if ids.count(i) > 1}) == plain.duplicated_ids
        assert built.client_ids == ids == plain.client_ids
        assert built.id_counts == plain.id_counts
        assert [c.client_id for c in built.connections] == ids
        again = pickle.loads(pickle.dumps(built))  # as its connections, not the snapshot's column
        assert again == built and again.id_column is None and again.client_ids == ids
