"""A JSON snapshot is validated by columns (issue 24: entry by entry it cost 2.2 s at 10^6 queues):
the columnar checks give the same snapshot as the entry-by-entry ones on every good input, and on
every bad one the same error, naming the bad value and where it is."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqbalance.exceptions import SnapshotError
from mqbalance.fleet.rocketmq import assignment, checks, from_json, schemas
from mqbalance.fleet.rocketmq import churn as churn_mod
from mqbalance.fleet.rocketmq import facts as facts_mod
from mqbalance.fleet.rocketmq import snapshot as snapshot_model
from mqbalance.fleet.rocketmq import what_if as what_if_mod
from mqbalance.fleet.rocketmq.example import example_pair
from mqbalance.fleet.rocketmq.from_json import snapshot_from_dict


def entry_by_entry(data, source="<snapshot>"):
    """The snapshot the entry-by-entry checks alone build (what ``snapshot_from_dict`` was)."""
    topics = checks.get_field(data, "topics", dict, source)
    qd, br = from_json._queue_rows(topics, source)
    groups = checks.get_field(data, "groups", dict, source)
    cn, sb, specs = from_json._group_rows(groups, source)
    of, er, lt = (from_json._extra_rows(data, source, table) for table in ("offsets", "errors", "lag_times"))
    return snapshot_model.Snapshot(
        source,
        snapshot_model.table_of("queue_data", qd),
        snapshot_model.table_of("connections", cn),
        snapshot_model.table_of("subscriptions", sb),
        snapshot_model.table_of("brokers", br),
        *snapshot_model.strategy_codes(specs),
        snapshot_model.table_of("offsets", of),
        snapshot_model.table_of("errors", er),
        snapshot_model.table_of("lag_times", lt),
    )


def same(a, b):
    assert a == b  # the tables
    assert [a._specs[c] for c in a._spec_codes] == [b._specs[c] for c in b._spec_codes]
    assert a.consumer_groups() == b.consumer_groups()


def fleet():
    """The bundled example fleet without brokerDatas (those are read entry by entry), plus every
    optional shape the columns must read: per-connection strategy objects, a broadcasting group,
    an empty message model, missing optional fields, a group without connections."""
    data = copy.deepcopy(example_pair(7)[1])
    for route in data["topics"].values():
        route.pop("brokerDatas", None)
    groups = data["groups"]
    first = next(iter(groups.values()))
    first["connections"][0]["strategy"] = {"name": "CONSISTENT_HASH", "virtualNodeCnt": 5}
    first["connections"][-1].pop("clientAddr", None)
    first["connections"][-1]["version"] = None
    topic = next(iter(data["topics"]))
    groups["cg-broadcast"] = {
        "messageModel": "BROADCASTING",
        "subscriptions": [topic],
        "connections": [{"clientId": "b1"}],
    }
    groups["cg-empty-model"] = {"messageModel": "", "subscriptions": [topic], "connections": [{"clientId": "e1"}]}
    groups["cg-nobody"] = {"subscriptions": [topic], "strategy": "NO_SUCH_ONE", "connections": []}
    return data


def test_the_columns_read_the_example_fleet_as_the_entries_do():
    data = fleet()
    assert from_json.columnar_queue_data(data["topics"]) is not None  # the columnar path is taken
    assert from_json.columnar_groups(data["groups"]) is not None
    same(snapshot_from_dict(data, "f"), entry_by_entry(data, "f"))


def test_brokerdatas_are_read_as_before():
    data = example_pair(7)[1]
    assert any(route.get("brokerDatas") for route in data["topics"].values())
    same(snapshot_from_dict(data, "f"), entry_by_entry(data, "f"))


#: Values a field may be set to: good ones and every kind of bad one.
ODD = st.sampled_from(
    [None, "", "x", "\ud800", b"x", 0, -1, 2**31, 2**63, 1.0, 1.5, True, [], ["x"], {}, {"name": "AVG"}, "AVG"]
)


def _paths(data):
    """Every (container, key) in the fleet whose value a mutation may replace."""
    out = [(data, "topics"), (data, "groups")]
    for route in data["topics"].values():
        out.append((route, "queueDatas"))
        for q in route["queueDatas"]:
            out += [(q, k) for k in ("brokerName", "readQueueNums", "writeQueueNums", "perm")]
    for g in data["groups"].values():
        out += [(g, k) for k in ("messageModel", "subscriptions", "strategy", "connections")]
        out += [(g["subscriptions"], i) for i in range(len(g["subscriptions"]))]
        for c in g["connections"]:
            out += [(c, k) for k in ("clientId", "clientAddr", "language", "version", "strategy")]
    return out


def small_fleet():
    queue = {"brokerName": "b", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6}
    return {
        "topics": {"T": {"queueDatas": [dict(queue), {**queue, "brokerName": "c"}]}, "U": {"queueDatas": [queue]}},
        "groups": {
            "g": {"subscriptions": ["T", "U"], "connections": [{"clientId": "a", "version": 453}, {"clientId": "b"}]},
            "h": {"messageModel": "BROADCASTING", "subscriptions": ["T"], "connections": [{"clientId": "a"}]},
        },
    }


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 10_000), ODD), min_size=1, max_size=3))
def test_any_mutation_gives_the_same_snapshot_or_the_same_error(mutations):
    """Good or bad, the result of the columns equals the result of the entries: the same snapshot,
    or a :class:`SnapshotError` with the same message (which names the value and its place)."""
    data = small_fleet()
    paths = _paths(data)  # a replaced parent leaves its children's mutations out of the fleet
    for at, value in mutations:
        container, key = paths[at % len(paths)]
        container[key] = copy.deepcopy(value)
    expected: object
    try:
        expected = entry_by_entry(copy.deepcopy(data), "f")
    except SnapshotError as e:
        expected = str(e)
    try:
        got: object = snapshot_from_dict(copy.deepcopy(data), "f")
    except SnapshotError as e:
        got = str(e)
    if isinstance(expected, str):
        assert got == expected
    else:
        assert not isinstance(got, str), got
        same(got, expected)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda d: d["topics"]["T"]["queueDatas"][0].update(readQueueNums=1.5),
            r"readQueueNums: expected int, got 1.5",
        ),
        (lambda d: d["topics"]["T"]["queueDatas"][0].update(perm=True), r"perm: expected int, got True"),
        (lambda d: d["groups"]["g"]["connections"][1].update(clientId="a\udc80"), r"clientId: not valid Unicode"),
        (lambda d: d["groups"]["g"]["connections"][0].update(strategy="NOPE"), r"connections\[0\]\.strategy"),
        (lambda d: d["groups"]["g"].update(subscriptions=["T", "T"]), r"a topic is listed twice"),
        (lambda d: d["groups"]["h"]["connections"].append({"clientId": ""}), r"clientId: must not be empty"),
    ],
)
def test_a_bad_value_is_named_with_its_place(change, message):
    data = small_fleet()
    change(data)
    with pytest.raises(SnapshotError, match=message):
        snapshot_from_dict(json.loads(json.dumps(data)) if "\udc80" not in repr(data) else data, "f")


def _rows(table, keys):
    return sorted(table.to_pylist(), key=lambda r: tuple(str(r[k]) for k in keys))


@pytest.mark.parametrize("slice_queues", [40, 10**6], ids=["many slices", "one slice"])
def test_the_streamed_audit_facts_equal_those_of_the_whole_assignment_table(monkeypatch, slice_queues):
    """``mqbalance assign`` (``snapshot_facts``) streams slices and keeps only their facts: the same
    per-pair facts, loads, busy processes, churn and what-if rows as the whole fleet's assignment
    table assigned at once and counted (what it did before issue 24), however the fleet is sliced."""
    from functools import partial

    previous_data, current_data = example_pair(7)
    now, before = snapshot_from_dict(current_data, "now"), snapshot_from_dict(previous_data, "before")
    candidates = what_if_mod.what_if_candidates("AVG,CONSISTENT_HASH_BOUNDED")
    groups = now.consumer_groups()
    whole = assignment.assign_snapshot(now)
    per_pair, loads, busy = facts_mod.load_facts(*facts_mod.pair_counts(whole), groups)
    churn = churn_mod.churn(whole, assignment.assign_snapshot(before))
    what_if = what_if_mod.what_if(whole, groups, candidates)

    sliced = partial(assignment.pair_slices, max_queues=slice_queues)
    monkeypatch.setattr(facts_mod, "pair_slices", sliced)  # where snapshot_facts looks it up
    monkeypatch.setattr(assignment, "pair_slices", sliced)
    seen = []
    streamed = facts_mod.snapshot_facts(
        now, candidates=candidates, previous=before, progress=lambda d, t: seen.append((d, t))
    )
    if slice_queues < 100:
        assert len(seen) > 5  # really sliced
    assert seen[-1][0] == seen[-1][1] == int(assignment.pair_queue_counts(now.pair_table()).sum()) > 0
    assert _rows(streamed.per_pair, ["group", "topic"]) == _rows(per_pair, ["group", "topic"])
    assert _rows(streamed.loads, ["group", "topic", "load"]) == _rows(loads, ["group", "topic", "load"])
    assert _rows(streamed.busy, ["group"]) == _rows(facts_mod.busy_processes(busy, groups), ["group"])
    moved = {(r["group"], r["topic"]): r["moved"] for r in churn.to_pylist()}
    assert {k: v for k, v in streamed.churn.items() if v} == {k: v for k, v in moved.items() if v}
    assert sum(moved.values()) > 0  # the example fleet changed between the two snapshots
    assert _rows(streamed.what_if, ["group", "topic", "strategy"]) == _rows(
        what_if.cast(schemas.WHAT_IF_SCHEMA), ["group", "topic", "strategy"]
    )
